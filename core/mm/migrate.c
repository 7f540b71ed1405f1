/* Page migration for compaction: move each isolated frame's contents and identity to a free
 * target frame, under the migrate mode's rules for locked, dirty and writeback frames.
 *
 * Mirrors mm/migrate.c's migrate_pages / unmap_and_move (3.1's bool sync with force = pass > 2,
 * 3.3 / 6.12 enum migrate_mode of include/linux/migrate_mode.h) and fallback_migrate_page's
 * writeout() for a filesystem without ->migratepage (the emulated VFAT stick), plus
 * compaction_alloc / compaction_free / release_freepages of mm/compaction.c. The real work of a
 * move (an unmap + copy + remap of a program page, a page-cache copy) and every writeback wait
 * happen in environment hooks with the mm lock released; the frames involved stay ISOLATED
 * meanwhile so no one else touches them, and their state is re-validated afterwards.
 */
#include <errno.h>

#include "mm/compaction.h"

/* ---- Targets ------------------------------------------------------------------------------ */

/* The isolated targets and the order they are used in:
 *  - 6.12 keeps one list per order (mm/compaction.c cc->freepages[order]): isolate_freepages_block
 *    and fast_isolate_freepages list_add_tail a block on its order's list; compaction_alloc takes
 *    the first block of the smallest order that fits and list_adds the upper halves of a split at
 *    the head of the lower orders' lists; compaction_free list_adds an unused target at the head
 *    of its order's list; release_free_list frees them order by order, each list from its head.
 *  - 6.1 keeps one list of order-0 pages: isolate_freepages ends with split_map_pages, which
 *    list_adds every page of every block, in isolation order, to a fresh list, so the last page
 *    of the block isolated last is used first. isolate_freepages runs only on an empty list
 *    (compaction_alloc), so splitting each block as it is isolated, its pages pushed in
 *    ascending order, gives the same list. compaction_alloc takes the head, compaction_free
 *    list_adds, release_freepages frees each page in list order.
 *  - 3.x keeps one list of order-0 pages too: isolate_freepages_block splits each free block
 *    it finds (split_free_page) and list_adds its pages in ascending order, so the list runs
 *    from the last page of the block isolated last down (3.1 and 3.5 mm/compaction.c, the same
 *    loop); compaction_alloc takes the head (list_entry(cc->freepages.next)) and
 *    release_freepages frees each page in list order. That is 6.1's list, built the same way
 *    here. An unused target goes back to the buddy allocator (below). */
static bool targets_per_order(const struct mm *mm)
{
	return era_modern(mm) && !era_6_1(mm);
}

void init_targets(struct compact_control *cc)
{
	for (unsigned o = 0; o <= MM_MAX_ORDER; o++)
		cc->freelist[o] = cc->freelist_tail[o] = MM_NO_PFN;
}

/* The smallest order with a target held, MM_MAX_ORDER + 1 when none is. */
static unsigned first_target_list(const struct compact_control *cc)
{
	unsigned o = 0;

	while (o <= MM_MAX_ORDER && cc->freelist[o] == MM_NO_PFN)
		o++;
	return o;
}

/* An isolated block of the given order (frame fields only; the caller counts it). */
static void mark_target(struct mm *mm, uint32_t pfn, unsigned order)
{
	struct mm_frame *f = pfn_frame(mm, pfn);

	f->order = (uint8_t)order;
	f->flags = FF_ISOLATED;
}

static void push_target(struct mm *mm, struct compact_control *cc, unsigned list, uint32_t pfn)
{
	pfn_frame(mm, pfn)->next = cc->freelist[list];
	if (cc->freelist[list] == MM_NO_PFN)
		cc->freelist_tail[list] = pfn;
	cc->freelist[list] = pfn;
}

static void append_target(struct mm *mm, struct compact_control *cc, unsigned list, uint32_t pfn)
{
	pfn_frame(mm, pfn)->next = MM_NO_PFN;
	if (cc->freelist[list] == MM_NO_PFN)
		cc->freelist[list] = pfn;
	else
		pfn_frame(mm, cc->freelist_tail[list])->next = pfn;
	cc->freelist_tail[list] = pfn;
}

static uint32_t pop_target(struct mm *mm, struct compact_control *cc, unsigned list)
{
	uint32_t pfn = cc->freelist[list];

	cc->freelist[list] = pfn_frame(mm, pfn)->next;
	if (cc->freelist[list] == MM_NO_PFN)
		cc->freelist_tail[list] = MM_NO_PFN;
	return pfn;
}

/* A buddy block just taken off the free lists becomes a target (the caller counts it). */
void add_target(struct mm *mm, struct compact_control *cc, uint32_t pfn, unsigned order)
{
	if (targets_per_order(mm)) {
		mark_target(mm, pfn, order);
		append_target(mm, cc, order, pfn);
	} else {
		/* 6.1 split_map_pages, 3.x isolate_freepages_block: every page at the head */
		for (uint32_t p = pfn; p < pfn + (1U << order); p++) {
			mark_target(mm, p, 0);
			push_target(mm, cc, 0, p);
		}
	}
}

/* The highest pfn among the targets held (a block counts by its first pfn, as the kernel's
 * release_free_list / release_freepages see it). */
uint32_t highest_target(struct mm *mm, const struct compact_control *cc)
{
	uint32_t high = 0;

	for (unsigned o = 0; o <= MM_MAX_ORDER; o++)
		for (uint32_t pfn = cc->freelist[o]; pfn != MM_NO_PFN;
		     pfn = pfn_frame(mm, pfn)->next)
			if (pfn > high)
				high = pfn;
	return high;
}

/* compaction_alloc: one order-0 target, from the smallest order that has one, splitting a
 * block if needed; runs the free scanner when none is left. */
uint32_t compaction_alloc(struct mm *mm, struct compact_control *cc)
{
	bool per_order = targets_per_order(mm);
	unsigned list = first_target_list(cc);
	uint32_t pfn;
	unsigned order;

	if (list > MM_MAX_ORDER) {
		isolate_freepages(mm, cc);
		list = first_target_list(cc);
	}
	if (list > MM_MAX_ORDER)
		return MM_NO_PFN;
	pfn = pop_target(mm, cc, list);
	order = frame_order(pfn_frame(mm, pfn));
	while (order > 0) {
		uint32_t upper;

		order--;
		upper = pfn + (1U << order);
		mark_target(mm, upper, order);
		push_target(mm, cc, per_order ? order : 0, upper);
	}
	pfn_frame(mm, pfn)->order = 0;
	cc->nr_freepages--;
	return pfn;
}

/* A target that was not used: back to the head of the compaction's order-0 list (6.12 and
 * 6.1 compaction_free) or, in 3.x, freed to the buddy allocator (putback_lru_page(newpage)). */
static void release_target(struct mm *mm, struct compact_control *cc, uint32_t pfn)
{
	struct mm_frame *f = pfn_frame(mm, pfn);

	if (era_modern(mm)) {
		f->state = FS_FREE;
		mark_target(mm, pfn, 0);
		push_target(mm, cc, 0, pfn);
		cc->nr_freepages++;
		return;
	}
	mm->nr_isolated--;
	mm->nr_isolated_free--;
	free_frames(mm, pfn, 0, cc->capc);
}

/* release_freepages: every isolated target goes back to the buddy allocator, order by order,
 * each list from its head (6.12 release_free_list, 6.1 release_freepages). */
void release_freepages(struct mm *mm, struct compact_control *cc)
{
	for (unsigned o = 0; o <= MM_MAX_ORDER; o++) {
		while (cc->freelist[o] != MM_NO_PFN) {
			uint32_t pfn = pop_target(mm, cc, o);
			struct mm_frame *f = pfn_frame(mm, pfn);
			unsigned order = frame_order(f);

			mm->nr_isolated -= 1U << order;
			mm->nr_isolated_free -= 1U << order;
			f->flags = 0;
			f->order = ORDER_TAIL;
			free_one_block(mm, pfn, order, cc->capc);
		}
	}
	cc->nr_freepages = 0;
}

/* ---- Waiting and writing out, lock released --------------------------------------------- */

static void account_wait(struct mm *mm, struct fault_ctx *fc, uint64_t ns, enum mm_cause cause)
{
	struct mm_fault_rec *rec = fc->rec;
	uint64_t us = ns / 1000;

	count_event(mm,
		    cause == MM_CAUSE_RECLAIM_WB_WAIT ? MM_STAT_RECLAIM_WB_WAIT
						      : MM_STAT_COMPACT_WB_WAIT,
		    1);
	fc->cause_ns[cause] += ns;
	fc->hook_ns += ns;
	if (!rec)
		return;
	rec->wb_waits++;
	rec->wb_wait_ns += ns;
	if (us > rec->wb_wait_max_us)
		rec->wb_wait_max_us = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

/* Tell the environment about one blocking wait that just ended (per-wait stall events). */
void mm_report_wait(struct mm *mm, struct fault_ctx *fc, enum mm_wait_kind kind, uint64_t t0,
		    uint64_t ns, uint32_t pfn, uint64_t owner)
{
	struct mm_wait w = {
	    .kind = kind,
	    .t_start = t0,
	    .ns = ns,
	    .owner = owner,
	    .pfn = pfn,
	    .background = fc->background,
	};

	mm_hook_waited(mm, fc->call, &w);
}

/* wait_on_page_writeback for a frame the caller holds isolated: drop the mm lock, block in
 * the environment (bounded by timeout_ns unless 0), retake the lock. Returns 0, -ETIMEDOUT, or
 * -ESTALE (the model was repaired meanwhile: the caller holds nothing any more). */
__stall_frame int wait_on_frame_writeback(struct mm *mm, struct fault_ctx *fc, uint32_t pfn,
					  uint64_t timeout_ns, enum mm_cause cause)
{
	uint64_t t0 = mm_now(mm, fc->call), epoch, ns;
	uint64_t owner = pfn_frame(mm, pfn)->owner;
	bool same;
	int ret;

	if (!mm_has_wait_writeback(mm))
		return -ETIMEDOUT;
	epoch = mm_unlock_for_hook(mm);
	ret = mm_hook_wait_writeback(mm, fc->call, pfn, timeout_ns);
	same = mm_relock_after_hook(mm, epoch);
	ns = mm_now(mm, fc->call) - t0;
	account_wait(mm, fc, ns, cause);
	mm_report_wait(mm, fc,
		       cause == MM_CAUSE_RECLAIM_WB_WAIT ? MM_WAIT_RECLAIM_WRITEBACK
							 : MM_WAIT_COMPACT_WRITEBACK,
		       t0, ns, pfn, owner);
	if (!same)
		return -ESTALE;
	return ret == -ETIMEDOUT ? -ETIMEDOUT : 0;
}

/* writeout(): start writeback of a dirty page-cache frame through ->writepage. Returns 0 if
 * writeback started, -ESTALE if the model was repaired meanwhile. */
__stall_frame static int writeout(struct mm *mm, struct fault_ctx *fc, uint32_t pfn,
				  enum mm_cause cause)
{
	uint64_t owner = pfn_frame(mm, pfn)->owner, t0 = mm_now(mm, fc->call), dt, epoch;
	int ret;

	if (!mm_has_writeout(mm))
		return -EBUSY;
	epoch = mm_unlock_for_hook(mm);
	ret = mm_hook_writeout(mm, fc->call, owner, pfn);
	if (!mm_relock_after_hook(mm, epoch))
		ret = -ESTALE;
	dt = mm_now(mm, fc->call) - t0;
	fc->cause_ns[cause] += dt;
	fc->hook_ns += dt;
	mm_report_wait(mm, fc,
		       cause == MM_CAUSE_COMPACT_WRITEOUT ? MM_WAIT_COMPACT_WRITEOUT
							  : MM_WAIT_RECLAIM_WRITEOUT,
		       t0, dt, pfn, owner);
	if (!ret) {
		count_event(mm,
			    cause == MM_CAUSE_COMPACT_WRITEOUT ? MM_STAT_COMPACT_WRITEOUT
							       : MM_STAT_NR_VMSCAN_WRITE,
			    1);
		if (fc->background)
			count_event(mm, MM_STAT_KSWAPD_WRITE, 1);
	}
	return ret;
}

int reclaim_writeout(struct mm *mm, struct fault_ctx *fc, uint32_t pfn)
{
	return writeout(mm, fc, pfn, MM_CAUSE_RECLAIM);
}

/* ---- Moving one frame ----------------------------------------------------------------------- */

/* The source is done with: migrated, or its owner let it go. */
static void finish_source(struct mm *mm, struct compact_control *cc, uint32_t pfn)
{
	struct mm_frame *f = pfn_frame(mm, pfn);

	f->flags &= (uint8_t) ~(FF_ISOLATED | FF_MIGRATING);
	mm->nr_isolated--;
	frame_free_owned(mm, pfn, cc->capc);
}

/* Give the target the source's identity (the kernel's migrate_page_copy + remap); page cache
 * and foreign frames. */
static void commit_migration(struct mm *mm, struct compact_control *cc, uint32_t src, uint32_t dst)
{
	struct mm_frame *s = pfn_frame(mm, src), *d = pfn_frame(mm, dst);

	d->state = s->state;
	d->owner = s->owner;
	d->flags = (uint8_t)(s->flags & (FF_ACTIVE | FF_REFERENCED | FF_ERROR));
	d->order = ORDER_TAIL;
	d->hnext = 0;
	mm->nr_isolated--; /* the target leaves the isolated free pool */
	mm->nr_isolated_free--;
	if (d->state == FS_FILE) {
		pc_replace(mm, src, dst);
		lru_add(mm, dst);
		mm->nr_file++; /* finish_source below uncounts the source */
		if (s->flags & FF_DIRTY) {
			/* a dirty page moved by ->migratepage (ext4's buffer_migrate_page): the
			 * dirty bit goes with the data (migrate_page_copy); the target joins the
			 * flusher's queue at its end, the source's entry is dropped when met */
			set_page_dirty(mm, dst);
			mm->nr_file_dirty--;
		}
	} else {
		mm->nr_foreign++;
	}
	finish_source(mm, cc, src);
}

/* Run a copy hook with the lock released; charge its time to COMPACT_MIGRATE. Returns the
 * hook's result; *stale says the model was repaired meanwhile. */
static int run_copy_hook(struct mm *mm, struct compact_control *cc, bool file, uint64_t owner,
			 uint32_t src, uint32_t dst, bool *stale)
{
	struct fault_ctx *fc = cc->fc;
	uint64_t t0 = mm_now(mm, fc->call), dt, epoch;
	int ret;

	epoch = mm_unlock_for_hook(mm);
	if (file)
		ret = mm_hook_copy_file_page(mm, fc->call, owner, src, dst);
	else
		ret = mm_hook_migrate_anon(mm, fc->call, owner, src, dst);
	*stale = !mm_relock_after_hook(mm, epoch);
	dt = mm_now(mm, fc->call) - t0;
	fc->cause_ns[MM_CAUSE_COMPACT_MIGRATE] += dt;
	fc->hook_ns += dt;
	if (fc->rec)
		fc->rec->migrate_ns += dt;
	return ret;
}

/* A page-cache copy: the source is marked MIGRATING so page-cache lookups wait (-EAGAIN). */
static int copy_file_frame(struct mm *mm, struct compact_control *cc, uint32_t src, uint32_t dst)
{
	struct mm_frame *s = pfn_frame(mm, src);
	bool stale;
	int ret;

	s->flags |= FF_MIGRATING;
	ret = run_copy_hook(mm, cc, true, s->owner, src, dst, &stale);
	if (stale)
		return -ESTALE;
	s->flags &= (uint8_t)~FF_MIGRATING;
	return ret;
}

/* The model was repaired while migrate_anon ran: it kept both frames as the owner's (it could
 * not know which one the page is in). The hook's result says: 0 moved it (the source is a
 * stale copy), an error left it (the target is); -ENOENT: the owner is gone, and the release of
 * its frames frees both. Nobody else frees the stale frame (the owner never knew it as its
 * page, or knew it only until the move), so free it if it is still the owner's, unheld. */
static void drop_stale_copy(struct mm *mm, uint64_t owner, uint32_t src, uint32_t dst, int ret)
{
	uint32_t stale = ret ? dst : src;
	const struct mm_frame *f = pfn_frame(mm, stale);

	if (ret == -ENOENT || f->state != FS_ANON || f->owner != owner ||
	    (f->flags & (FF_ISOLATED | FF_GONE)))
		return;
	frame_free_owned(mm, stale, NULL);
}

/* A program page: the target takes the page's identity before the hook runs, so that once the
 * owner has switched its mapping to the target, a free of the target arriving before mm
 * relocks is recorded (FF_GONE) and honoured. */
static void anon_prepare(struct mm *mm, uint32_t src, uint32_t dst)
{
	struct mm_frame *s = pfn_frame(mm, src), *d = pfn_frame(mm, dst);

	d->state = FS_ANON;
	d->owner = s->owner;
	d->flags = FF_ISOLATED | FF_MIGRATING;
	mm->nr_isolated_free--;
	mm->nr_anon++;
	s->flags |= FF_MIGRATING;
}

/* The hook has answered ret for src -> dst (the model was not repaired meanwhile). */
static int anon_finish(struct mm *mm, struct compact_control *cc, uint32_t src, uint32_t dst,
		       int ret)
{
	struct mm_frame *s = pfn_frame(mm, src), *d = pfn_frame(mm, dst);

	s->flags &= (uint8_t)~FF_MIGRATING;
	d->flags &= (uint8_t)~FF_MIGRATING;
	if (ret && ret != -ENOENT && !(s->flags & FF_GONE)) {
		/* not moved: the target goes back to being a free target */
		mm->nr_anon--;
		d->state = FS_FREE;
		d->owner = 0;
		d->flags = FF_ISOLATED;
		mm->nr_isolated_free++;
		release_target(mm, cc, dst);
		return ret == -EBUSY ? -EBUSY : -EAGAIN;
	}
	if (ret || (d->flags & FF_GONE)) {
		/* the owner let go of the page: both frames are free */
		d->flags &= (uint8_t)~FF_ISOLATED;
		mm->nr_isolated--;
		frame_free_owned(mm, dst, cc->capc);
	} else {
		d->flags = 0;
		mm->nr_isolated--;
	}
	finish_source(mm, cc, src);
	return 0;
}

static int move_anon_frame(struct mm *mm, struct compact_control *cc, uint32_t src, uint32_t dst)
{
	uint64_t owner = pfn_frame(mm, src)->owner;
	bool stale;
	int ret;

	anon_prepare(mm, src, dst);
	ret = run_copy_hook(mm, cc, false, owner, src, dst, &stale);
	if (stale) {
		drop_stale_copy(mm, owner, src, dst, ret);
		return -ESTALE;
	}
	return anon_finish(mm, cc, src, dst, ret);
}

/* A program page the batch may take: unmap_and_move would go straight to move_anon_frame. */
static bool anon_batchable(const struct mm_frame *f)
{
	return f->state == FS_ANON && !(f->owner & MM_OWNER_FOREIGN) &&
	       !(f->flags & (FF_GONE | FF_LOCKED));
}

/* The modern era's first step of a pass (6.12 mm/migrate.c, whose name a stack shows): every
 * program page of the list gets its target, in list order, and all move in one
 * migrate_anon_batch call - the environment unmaps them all, then copies and maps them all
 * back. rc[i] gets each page's unmap_and_move result, 1 for a frame left to the pass's
 * one-at-a-time loop (page cache, foreign, locked or gone). Returns -ESTALE when the model was
 * repaired meanwhile, else 0. */
__stall_frame static int migrate_pages_batch(struct mm *mm, struct compact_control *cc, unsigned n,
					     int *rc)
{
	uint64_t owner[CC_MIGRATE_MAX];
	uint32_t from[CC_MIGRATE_MAX], to[CC_MIGRATE_MAX];
	int ret[CC_MIGRATE_MAX];
	unsigned idx[CC_MIGRATE_MAX], nb = 0;
	struct fault_ctx *fc = cc->fc;
	uint64_t t0, dt, epoch;
	bool stale;

	for (unsigned i = 0; i < n; i++)
		rc[i] = 1;
	for (unsigned i = 0; i < n; i++) {
		uint32_t src = cc->migratepages[i], dst;

		if (!anon_batchable(pfn_frame(mm, src)))
			continue;
		dst = compaction_alloc(mm, cc);
		if (dst == MM_NO_PFN) {
			rc[i] = -ENOMEM;
			break;
		}
		anon_prepare(mm, src, dst);
		owner[nb] = pfn_frame(mm, src)->owner;
		from[nb] = src;
		to[nb] = dst;
		idx[nb++] = i;
	}
	if (!nb)
		return 0;
	t0 = mm_now(mm, fc->call);
	epoch = mm_unlock_for_hook(mm);
	mm_hook_migrate_anon_batch(mm, fc->call, nb, owner, from, to, ret);
	stale = !mm_relock_after_hook(mm, epoch);
	dt = mm_now(mm, fc->call) - t0;
	fc->cause_ns[MM_CAUSE_COMPACT_MIGRATE] += dt;
	fc->hook_ns += dt;
	if (fc->rec)
		fc->rec->migrate_ns += dt;
	for (unsigned j = 0; j < nb; j++) {
		if (stale)
			drop_stale_copy(mm, owner[j], from[j], to[j], ret[j]);
		else
			rc[idx[j]] = anon_finish(mm, cc, from[j], to[j], ret[j]);
	}
	return stale ? -ESTALE : 0;
}

/* Rules for a page-cache frame under writeback or dirty, per mode and pass. Returns 1 to go
 * on with the copy, or 0 / -errno as unmap_and_move's result. */
static int file_state_rules(struct mm *mm, struct compact_control *cc, uint32_t pfn)
{
	const struct mm_policy *p = &mm->cfg.policy;
	struct mm_frame *f = pfn_frame(mm, pfn);
	int ret;

	if (frame_under_wb(f)) {
		if (cc->mode != MM_MIGRATE_SYNC)
			return -EBUSY; /* ASYNC and SYNC_LIGHT never wait on writeback */
		if (cc->pass < p->sync_wait_from_pass)
			return -EAGAIN;
		ret = wait_on_frame_writeback(mm, cc->fc, pfn, p->wb_wait_max_ns,
					      MM_CAUSE_COMPACT_WB_WAIT);
		if (ret)
			return ret; /* -ETIMEDOUT, or -ESTALE: f is not ours any more */
		if (f->flags & (FF_GONE | FF_LOCKED) || frame_under_wb(f))
			return f->flags & FF_GONE ? 0 : -EAGAIN;
	}
	if ((f->flags & FF_DIRTY) && p->fs == MM_FS_EXT4)
		return 1; /* buffer_migrate_page moves a dirty page with its buffers, no writeout
			   * (a dirty page's buffers are unlocked, so 3.1's blocking lock_buffer
			   * and 3.3's trylock_buffer in ASYNC both get them) */
	if (f->flags & FF_DIRTY) {
		/* vfat: no ->migratepage, fallback_migrate_page needs writeout() */
		if (cc->mode != MM_MIGRATE_SYNC)
			return -EBUSY;
		ret = writeout(mm, cc->fc, pfn, MM_CAUSE_COMPACT_WRITEOUT);
		if (ret)
			return ret == -ESTALE ? -ESTALE : -EBUSY;
		return -EAGAIN; /* migrate it once the write completes */
	}
	return 1;
}

/* unmap_and_move: 0 migrated (or freed under us), -EAGAIN retry in a later pass, -ENOMEM no
 * target, -ESTALE the model was repaired meanwhile (this compaction holds nothing any more),
 * other -errno a permanent failure for this call. */
__stall_frame static int unmap_and_move(struct mm *mm, struct compact_control *cc, uint32_t src)
{
	struct mm_frame *f = pfn_frame(mm, src);
	uint32_t dst;
	int ret;

	if (f->flags & FF_GONE) {
		finish_source(mm, cc, src);
		return 0;
	}
	if (f->flags & FF_LOCKED)
		return -EAGAIN; /* trylock_page failed; direct compaction never sleeps on it */
	if (f->state == FS_FILE) {
		ret = file_state_rules(mm, cc, src);
		if (ret == -ESTALE)
			return ret;
		if (f->flags & FF_GONE) {
			finish_source(mm, cc, src);
			return 0;
		}
		if (ret <= 0)
			return ret;
	}
	dst = compaction_alloc(mm, cc);
	if (dst == MM_NO_PFN)
		return -ENOMEM;
	if (f->state == FS_ANON && !(f->owner & MM_OWNER_FOREIGN))
		return move_anon_frame(mm, cc, src, dst);
	ret = f->state == FS_FILE ? copy_file_frame(mm, cc, src, dst) : 0;
	if (ret == -ESTALE)
		return ret;
	if (f->flags & FF_GONE) {
		release_target(mm, cc, dst);
		finish_source(mm, cc, src); /* removed from the page cache meanwhile */
		return 0;
	}
	if (ret) {
		release_target(mm, cc, dst);
		return ret == -EBUSY ? -EBUSY : -EAGAIN;
	}
	commit_migration(mm, cc, src, dst);
	return 0;
}

/* The model was repaired under this compaction: the repair put back everything it held
 * (sources, targets, a captured block); forget them without touching them. */
void abandon_compaction(struct compact_control *cc)
{
	cc->nr_migratepages = 0;
	init_targets(cc);
	cc->nr_freepages = 0;
	if (cc->capc)
		cc->capc->pfn = MM_NO_PFN;
	cc->stale = cc->contended = true;
}

/* migrate_pages for compaction: up to migrate_passes passes over the isolated frames; frames
 * still failing are put back. Returns the number not migrated, -ENOMEM when targets ran out,
 * or -ESTALE when the model was repaired meanwhile (the compaction then holds nothing).
 *
 * pgmigrate_fail when targets run out: 6.1 and 6.12 mm/migrate.c migrate_pages_batch (the
 * -ENOMEM case: "stats->nr_failed_pages += nr_pages + nr_retry_pages", then out;
 * struct migrate_pages_stats: "Untried folios aren't counted") count the frame that found no
 * target and those that asked for a retry earlier in the same pass, not the frames the pass
 * had not reached yet nor the earlier passes' retries: a compaction whose free scanner met the
 * migrate scanner with 480 frames isolated fails one page, not 480. 3.1-3.3's counter
 * (compact_pagemigrate_failed, mm/compaction.c compact_zone: nr_remaining) is every frame left
 * on the list, untried ones included. */
__stall_frame int migrate_frames(struct mm *mm, struct compact_control *cc, unsigned *nr_succeeded)
{
	unsigned n = cc->nr_migratepages, retry = 1, failed = 0, ok = 0;
	/* 6.1 moves one page at a time: Debian's 6.1.192 mm/migrate.c has migrate_pages_batch
	 * (from 6.1.y), but its pass loop runs migrate_folio_unmap then migrate_folio_move for
	 * each folio; 6.12's unmaps the whole batch first (its unmap_folios list) */
	bool batch = era_modern(mm) && !era_6_1(mm) && mm_has_migrate_anon_batch(mm);
	int ret = 0, done[CC_MIGRATE_MAX];

	/* isolate_frame appended each source: the list's head, the last isolated, comes first */
	for (unsigned i = 0; i < n / 2; i++) {
		uint32_t t = cc->migratepages[i];

		cc->migratepages[i] = cc->migratepages[n - 1 - i];
		cc->migratepages[n - 1 - i] = t;
	}
	for (cc->pass = 0; cc->pass < mm->cfg.policy.migrate_passes && retry; cc->pass++) {
		unsigned keep = 0;

		retry = 0;
		if (batch && migrate_pages_batch(mm, cc, n, done) == -ESTALE) {
			failed += n; /* not migrated; the repair put them back */
			n = 0;
			ret = -ESTALE;
			break;
		}
		for (unsigned i = 0; i < n; i++) {
			uint32_t pfn = cc->migratepages[i];
			int rc;

			if (batch && done[i] != 1)
				rc = done[i]; /* moved (or not) by this pass's batch */
			else
				rc = ret ? -ENOMEM : unmap_and_move(mm, cc, pfn);

			if (rc == -ESTALE) {
				failed +=
				    keep + (n - i); /* not migrated; the repair put them back */
				keep = 0;
				ret = rc;
				break;
			}
			if (rc == 0) {
				ok++;
			} else if (rc == -EAGAIN || rc == -ENOMEM) {
				cc->migratepages[keep++] = pfn;
				retry += rc == -EAGAIN;
				/* this page, this pass's retries; the rest are untried */
				if (rc == -ENOMEM && !ret && era_modern(mm))
					failed += 1 + retry;
				if (rc == -ENOMEM)
					ret = -ENOMEM;
			} else {
				putback_frame(mm, pfn);
				failed++;
			}
		}
		n = keep;
		if (ret)
			break;
	}
	for (unsigned i = 0; i < n; i++)
		putback_frame(mm, cc->migratepages[i]);
	if (ret != -ENOMEM || !era_modern(mm))
		failed += n; /* the last pass's retries (3.x: every frame left) */
	cc->nr_migratepages = 0;
	if (ret == -ESTALE)
		abandon_compaction(cc);
	*nr_succeeded = ok;
	count_event(mm, MM_STAT_PGMIGRATE_SUCCESS, ok);
	count_event(mm, MM_STAT_PGMIGRATE_FAIL, failed);
	if (cc->fc->rec) {
		cc->fc->rec->migrated += ok;
		cc->fc->rec->migrate_failed += failed;
	}
	mm_trace(mm, cc->fc->call, MM_TRACE_MIGRATEPAGES, 0, ok, failed, 0, 0);
	return ret ? ret : (int)failed;
}

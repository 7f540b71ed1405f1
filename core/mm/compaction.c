/* Memory compaction of the zone: the migrate scanner walks up from the start isolating movable
 * frames, the free scanner walks down from the end isolating free frames as targets, and
 * migrate_frames() moves the former into the latter until a block of the requested order is
 * free or the scanners meet.
 *
 * Mirrors mm/compaction.c's compact_zone and its scanners in two eras, 3.1-3.3 and 6.x (6.12's
 * rules, which the linux-6.1 profile runs too, with 6.1's own where noted):
 *  - 3.1-3.3: restart from the zone's ends on every call, one pageblock per
 *    isolate_migratepages call, async scans only MOVABLE blocks, free targets are MOVABLE blocks
 *    or free pageblocks (split_free_page under LOW + 2^order), compact_finished checks the
 *    LOW watermark; deferral is zone-wide (compaction_deferred / defer_compaction).
 *  - 6.12: cached scanner positions per async/sync, pageblock skip bits (reset by kswapd or a
 *    restart) that the migrate scanner sets on a block's first isolation (test_and_set_skip),
 *    async direct skip_on_failure and the free scanner's stride, finish_pageblock rescans,
 *    the fast searches of the free lists before each linear scan (fast_find_migrateblock for
 *    the migrate scanner, fast_isolate_freepages and fast_isolate_around for the free
 *    scanner, with fast_search_fail and freelist_scan_limit), capture of the freed block,
 *    per-order deferral (compact_order_failed). The 6.x rules sit behind predicates of
 *    internal.h (compact_skip_on_first_isolation, compact_fast_*), which say what 6.1 differs in.
 * Isolation follows the era's rules for dirty and writeback page cache (isolate_migratepages:
 * 3.2's async takes clean pages only, commit 39deaf85; 3.3 and 6.12 decide by migrate mode and
 * whether the mapping can migrate a dirty page without blocking); the
 * emulated device's filesystem has no ->migratepage (VFAT), so dirty file frames need writeout.
 */
#include <errno.h>

#include "mm/compaction.h"

enum isolate_result { ISOLATE_ABORT, ISOLATE_NONE, ISOLATE_SUCCESS };

/* ---- Deferral (include/linux/compaction.h, mm/compaction.c) -------------------------------- */

/* compaction_deferred: true means skip this attempt. Has a side effect (compact_considered),
 * so callers call it exactly where the kernel does. 3.x has no per-order tracking. */
bool compaction_deferred(struct mm *mm, unsigned order)
{
	unsigned long limit = 1UL << mm->compact_defer_shift;

	if (era_modern(mm) && order < mm->compact_order_failed)
		return false;
	if (++mm->compact_considered >= limit) {
		mm->compact_considered = (unsigned)limit;
		return false;
	}
	mm_trace(mm, NULL, MM_TRACE_DEFERRED, order, mm->compact_considered,
		 mm->compact_defer_shift, mm->compact_order_failed, 0);
	return true;
}

void defer_compaction(struct mm *mm, unsigned order)
{
	mm->compact_considered = 0;
	if (++mm->compact_defer_shift > MM_COMPACT_MAX_DEFER_SHIFT)
		mm->compact_defer_shift = MM_COMPACT_MAX_DEFER_SHIFT;
	if (order < mm->compact_order_failed)
		mm->compact_order_failed = order;
	mm_trace(mm, NULL, MM_TRACE_DEFER_COMPACTION, order, mm->compact_considered,
		 mm->compact_defer_shift, mm->compact_order_failed, 0);
}

void compaction_defer_reset(struct mm *mm, unsigned order, bool alloc_success)
{
	if (alloc_success) {
		mm->compact_considered = 0;
		mm->compact_defer_shift = 0;
	}
	if (order >= mm->compact_order_failed)
		mm->compact_order_failed = order + 1;
	mm_trace(mm, NULL, MM_TRACE_DEFER_RESET, order, mm->compact_considered,
		 mm->compact_defer_shift, mm->compact_order_failed, 0);
}

/* compaction_restarting: the zone has failed for the longest deferral and is being retried. */
bool compaction_restarting(struct mm *mm, unsigned order)
{
	if (order < mm->compact_order_failed)
		return false;
	return mm->compact_defer_shift == MM_COMPACT_MAX_DEFER_SHIFT &&
	       mm->compact_considered >= 1U << mm->compact_defer_shift;
}

/* ---- Suitability -------------------------------------------------------------------------- */

/* compaction_suitable. 3.x: SKIPPED when order-0 free is below LOW + 2 << order or the failure
 * looks like lack of memory (fragindex <= extfrag_threshold); SUCCESS (3.x's PARTIAL) when
 * the allocation would already succeed; else CONTINUE. 6.12: the watermark is LOW (costly) or
 * MIN + the gap; a low fragindex gives NOT_SUITABLE_ZONE. */
enum mm_compact_result compaction_suitable(struct mm *mm, unsigned order, unsigned alloc_flags)
{
	uint32_t gap = 2U << order;
	int fragindex;

	if (era_modern(mm)) {
		uint32_t mark = order > 3 ? wmark_pages(mm, WMARK_LOW) : wmark_pages(mm, WMARK_MIN);

		if (!zone_watermark_ok(mm, 0, mark + gap, 0))
			return MM_COMPACT_SKIPPED;
		fragindex = fragmentation_index(mm, order);
		if (order > 3 && fragindex >= 0 && fragindex <= (int)mm->cfg.extfrag_threshold)
			return MM_COMPACT_NOT_SUITABLE_ZONE;
		return MM_COMPACT_CONTINUE;
	}
	if (!zone_watermark_ok(mm, 0, wmark_pages(mm, WMARK_LOW) + gap, 0))
		return MM_COMPACT_SKIPPED;
	fragindex = fragmentation_index(mm, order);
	if (fragindex >= 0 && fragindex <= (int)mm->cfg.extfrag_threshold)
		return MM_COMPACT_SKIPPED;
	if (fragindex == -1000 && zone_watermark_ok(mm, order, wmark_pages(mm, WMARK_LOW) + gap, 0))
		return MM_COMPACT_SUCCESS;
	return MM_COMPACT_CONTINUE;
}

static bool suitable(enum mm_compact_result r)
{
	return r == MM_COMPACT_CONTINUE;
}

/* PageLRU for the flush's sample: a program, page-cache or shared-memory page not isolated
 * (PageLRU of a tail page is its head's). */
static bool sample_lru(const struct mm_frame *f)
{
	if (f->flags & FF_ISOLATED)
		return false;
	return f->state == FS_ANON || f->state == FS_FILE || f->state == FS_HUGE ||
	       f->state == FS_MTHP || f->state == FS_SHMEM;
}

/* pageblock_skip_persistent: the block is one compound page of at least pageblock order (a
 * THP), whose skip bit a flush leaves alone. */
static bool pageblock_skip_persistent(struct mm *mm, uint32_t pfn)
{
	const struct mm_frame *f = pfn_frame(mm, pfn);

	return f->state == FS_HUGE ||
	       (f->state == FS_SHMEM && frame_order(f) >= MM_PAGEBLOCK_ORDER);
}

/* __reset_isolation_pfn (6.12 and 6.1 mm/compaction.c, the same in both): clear pfn's block's
 * skip bit only when a sample of every 1 << PAGE_ALLOC_COSTLY_ORDER pages of the block finds an
 * LRU page (check_source) or a buddy page (check_target); a target-only check passes over a
 * block that is not MOVABLE; once both checks are asked for, a block whose bit is already
 * clear counts at once. True when the block counts as cleared. */
static bool reset_isolation_pfn(struct mm *mm, uint32_t pfn, bool check_source, bool check_target)
{
	uint32_t start = pageblock_start(pfn), end;

	if (pfn < mm->zone_start_pfn || pfn >= mm->nr_frames)
		return false;
	if (pageblock_skip_persistent(mm, pfn))
		return false;
	if (check_source && check_target && !pageblock_skip(mm, pfn))
		return true;
	if (!check_source && check_target && pageblock_mt(mm, pfn) != MM_MT_MOVABLE)
		return false;
	if (start < mm->zone_start_pfn)
		start = mm->zone_start_pfn;
	end = pageblock_start(start) + MM_HPAGE_NR - 1;
	if (end > mm->nr_frames - 1)
		end = mm->nr_frames - 1;
	for (uint32_t p = start; p <= end; p += 1U << 3) {
		const struct mm_frame *f = pfn_frame(mm, p);

		if ((check_source && sample_lru(f)) || (check_target && frame_is_buddy(f))) {
			mm->pageblock[p >> MM_PAGEBLOCK_ORDER] &= (uint8_t)~PB_SKIP;
			return true;
		}
	}
	return false;
}

/* __reset_isolation_suitable (6.12 and 6.1 mm/compaction.c): walk the zone from both ends a
 * block at a time, the lower half for sources, the upper half for targets; the first block
 * cleared on each side becomes compact_init_migrate_pfn / compact_init_free_pfn and the cached
 * position (the free side's is that block's last pfn, the zone's end - 1 less whole blocks);
 * where no block was cleared on a side, both positions go to where the walks met. Callers go
 * through reset_isolation_suitable, which holds the kernel's gate. */
static void __reset_isolation_suitable(struct mm *mm)
{
	int64_t migrate_pfn = mm->zone_start_pfn, free_pfn = (int64_t)mm->nr_frames - 1;
	int64_t reset_migrate = free_pfn, reset_free = migrate_pfn;
	bool source_set = false, free_set = false;

	mm->compact_blockskip_flush = false;
	for (; migrate_pfn < free_pfn; migrate_pfn += MM_HPAGE_NR, free_pfn -= MM_HPAGE_NR) {
		if (reset_isolation_pfn(mm, (uint32_t)migrate_pfn, true, source_set) &&
		    migrate_pfn < reset_migrate) {
			source_set = true;
			reset_migrate = migrate_pfn;
			mm->compact_init_migrate_pfn = mm->compact_cached_migrate_pfn[0] =
			    mm->compact_cached_migrate_pfn[1] = (uint32_t)reset_migrate;
		}
		if (reset_isolation_pfn(mm, (uint32_t)free_pfn, free_set, true) &&
		    free_pfn > reset_free) {
			free_set = true;
			reset_free = free_pfn;
			mm->compact_init_free_pfn = mm->compact_cached_free_pfn =
			    (uint32_t)reset_free;
		}
	}
	if (reset_migrate >= reset_free) {
		mm->compact_cached_migrate_pfn[0] = mm->compact_cached_migrate_pfn[1] =
		    (uint32_t)migrate_pfn;
		mm->compact_cached_free_pfn = (uint32_t)free_pfn;
	}
}

/* reset_isolation_suitable: the skip bits are flushed only on a request left by a direct
 * compactor whose scanners met since (compact_blockskip_flush, cleared by the flush and by a
 * successful direct compaction): 6.1 and 6.12 mm/compaction.c __reset_isolation_suitable
 * returns at once without it ("Only flush if a full compaction finished recently"), whether
 * kswapd going to sleep asks (reset_isolation_suitable) or compact_zone when
 * compaction_restarting. */
void reset_isolation_suitable(struct mm *mm)
{
	if (mm->compact_blockskip_flush)
		__reset_isolation_suitable(mm);
}

/* ---- The migrate scanner -------------------------------------------------------------------- */

/* Which isolation filter ISOLATE_ASYNC_MIGRATE / ISOLATE_CLEAN the era applies in this mode:
 * 3.1 isolates everything; 3.2 (ISOLATE_CLEAN) and 3.3 (ISOLATE_ASYNC_MIGRATE, the same for a
 * filesystem without ->migratepage) filter async only; 6.12 filters everything but SYNC. */
bool isolate_skips_dirty_writeback(const struct mm *mm, enum mm_migrate_mode mode)
{
	switch (mm->cfg.policy.era) {
	case MM_ERA_3_1:
		return false;
	case MM_ERA_3_2:
	case MM_ERA_3_3:
		return mode == MM_MIGRATE_ASYNC;
	default:
		return mode != MM_MIGRATE_SYNC;
	}
}

/* too_many_isolated: more isolated than half of what is on the LRUs (anon counted as LRU; so are
 * fs=tmpfs page-cache frames, which the kernel keeps on the anon LRU: include/linux/mm_inline.h
 * folio_is_file_lru is false for a swap-backed folio, 6.1 and 6.12). */
static bool too_many_isolated(const struct mm *mm)
{
	uint32_t lru = mm->nr_lru[0] + mm->nr_lru[1] + mm->nr_anon - mm->nr_anon_huge +
		       mm->nr_foreign + (pc_off_lru(mm) ? mm->nr_file : 0);

	return mm->nr_isolated - mm->nr_isolated_free > lru / 2;
}

/* Is the frame at pfn an LRU page this compaction may isolate? (__isolate_lru_page with the
 * mode's filter.) */
/* Naps one too_many_isolated wait may take before giving up (the kernel loops until the
 * isolated pages drop or a fatal signal arrives; the bound stands in for the signal). */
#define ISOLATED_NAPS_MAX 100

/* The too_many_isolated check at the start of a block: ASYNC aborts; otherwise 3.x
 * isolate_migratepages sleeps in congestion_wait(BLK_RW_ASYNC, HZ/10) and 6.12
 * isolate_migratepages_block in reclaim_throttle(VMSCAN_THROTTLE_ISOLATED), up to HZ/50 (but
 * aborts if it already holds pages), until the count drops. Returns 0 to go on, -EAGAIN to
 * abort (cc->stale set if the model was repaired during a nap). */
static int isolated_throttle(struct mm *mm, struct compact_control *cc)
{
	bool modern = era_modern(mm);
	unsigned naps = 0;

	while (too_many_isolated(mm)) {
		if (cc->mode == MM_MIGRATE_ASYNC || (modern && cc->nr_migratepages))
			return -EAGAIN;
		if (!mm->cfg.policy.reclaim_throttles)
			return 0; /* throttle=no: go on regardless */
		if (naps++ == ISOLATED_NAPS_MAX)
			return -EAGAIN;
		count_event(mm, MM_STAT_THROTTLE_ISOLATED, 1);
		if (throttle_nap(mm, cc->fc, MM_WAIT_COMPACT_ISOLATED,
				 modern ? NSEC_PER_HZ_50 : NSEC_PER_HZ_10, false,
				 MM_CAUSE_COMPACT_THROTTLE)) {
			abandon_compaction(cc);
			return -EAGAIN;
		}
	}
	return 0;
}

static bool isolatable(struct mm *mm, struct compact_control *cc, const struct mm_frame *f)
{
	if (f->flags & (FF_ISOLATED | FF_GONE))
		return false;
	/* an mlocked page is on the unevictable LRU: 6.12 isolate_migratepages() leaves
	 * ISOLATE_UNEVICTABLE out of the mode unless vm.compact_unevictable_allowed, and
	 * isolate_migratepages_block() then fails the folio (folio_test_unevictable; 6.1 the same
	 * with PageUnevictable); 3.x __isolate_lru_page (mm/vmscan.c) never took one for
	 * compaction, the sysctl came with 4.1 ("mm: allow compaction of unevictable pages") */
	if (f->state == FS_ANON)
		return !(f->owner & MM_OWNER_UNEVICTABLE) ||
		       mm->cfg.policy.compact_unevictable_allowed;
	if (f->state != FS_FILE)
		return false;
	if (!isolate_skips_dirty_writeback(mm, cc->mode))
		return true;
	if (frame_under_wb(f))
		return false;
	/* 3.2's ISOLATE_CLEAN takes clean pages only; 3.3's ISOLATE_ASYNC_MIGRATE (and 6.12's
	 * filter) skip a dirty page only if its mapping has no ->migratepage: vfat's
	 * fallback_migrate_page would need writeout, ext4's buffer_migrate_page would not */
	return !(f->flags & FF_DIRTY) ||
	       (mm->cfg.policy.era != MM_ERA_3_2 && mm->cfg.policy.fs == MM_FS_EXT4);
}

static void isolate_frame(struct mm *mm, struct compact_control *cc, uint32_t pfn)
{
	struct mm_frame *f = pfn_frame(mm, pfn);

	if (f->state == FS_FILE)
		lru_del(mm, pfn);
	f->flags |= FF_ISOLATED;
	mm->nr_isolated++;
	/* list_add(&page->lru, &cc->migratepages): at the head, so the list runs from the page
	 * isolated last to the first, and migrate_pages and putback_movable_pages walk it from
	 * the head (3.1 mm/compaction.c isolate_migratepages, 3.5's isolate_migratepages_range,
	 * 6.1 and 6.12 isolate_migratepages_block; 3.1 and v6.1 mm/migrate.c migrate_pages, 6.12
	 * and Debian's 6.1.y migrate_pages_batch: list_for_each_entry_safe). The first source
	 * migrated is the last isolated, and it gets the first target compaction_alloc hands
	 * out. Here the head is the array's end until migrate_frames turns it round, once. */
	cc->migratepages[cc->nr_migratepages++] = pfn;
	count_event(mm, MM_STAT_COMPACT_ISOLATED, 1);
}

/* putback_movable_pages (putback_lru_pages in 3.x): the list from its head, the last isolated
 * (before migrate_frames, which alone puts back after it has turned the list round). */
static void putback_migratepages(struct mm *mm, struct compact_control *cc)
{
	for (unsigned i = cc->nr_migratepages; i-- > 0;)
		putback_frame(mm, cc->migratepages[i]);
	cc->nr_migratepages = 0;
}

/* 3.x isolate_migratepages: from migrate_pfn to the end of its pageblock, one pfn at a time,
 * stopping at COMPACT_CLUSTER_MAX isolated. */
static enum isolate_result isolate_migratepages_3x(struct mm *mm, struct compact_control *cc)
{
	uint32_t pfn = cc->migrate_pfn, end = pageblock_start(pfn) + MM_HPAGE_NR, scanned = 0;

	if (end > cc->free_pfn) {
		cc->migrate_pfn = end;
		return ISOLATE_NONE;
	}
	if (isolated_throttle(mm, cc))
		return ISOLATE_ABORT;
	if (cc->mode == MM_MIGRATE_ASYNC && pageblock_mt(mm, pfn) != MM_MT_MOVABLE)
		pfn = end; /* async: only MOVABLE blocks are migration sources */
	for (; pfn < end; pfn++) {
		const struct mm_frame *f = pfn_frame(mm, pfn);

		scanned++;
		if (f->state == FS_HUGE) {
			pfn = pageblock_start(pfn) + MM_HPAGE_NR - 1;
			continue;
		}
		if (!isolatable(mm, cc, f))
			continue;
		isolate_frame(mm, cc, pfn);
		if (cc->nr_migratepages == MM_COMPACT_CLUSTER_MAX) {
			pfn++;
			break;
		}
	}
	cc->migrate_pfn = pfn;
	cc->total_migrate_scanned += scanned;
	mm_charge(mm, cc->fc->call, MM_COST_SCAN_PFN, scanned);
	return ISOLATE_SUCCESS;
}

/* update_cached_migrate (6.1 and 6.12 mm/compaction.c): where the next async / sync compaction
 * starts. Its first step is "pfn = pageblock_end_pfn(pfn)", ALIGN(pfn + 1, pageblock_nr_pages),
 * and every caller passes a block's end (isolate_migratepages_block's low_pfn == end_pfn, or
 * isolate_migratepages' block_end_pfn): the cached position lands at the end of the block
 * after the one finished, so the next compaction starts a block further on. */
static void update_cached_migrate(struct mm *mm, struct compact_control *cc, uint32_t pfn)
{
	pfn = pageblock_start(pfn) + MM_HPAGE_NR;
	if (pfn > mm->compact_cached_migrate_pfn[0])
		mm->compact_cached_migrate_pfn[0] = pfn;
	if (cc->mode != MM_MIGRATE_ASYNC && pfn > mm->compact_cached_migrate_pfn[1])
		mm->compact_cached_migrate_pfn[1] = pfn;
}

static bool isolation_suitable(const struct mm *mm, const struct compact_control *cc, uint32_t pfn)
{
	return cc->ignore_skip_hint || !pageblock_skip(mm, pfn);
}

/* Scan state of one isolate_migratepages_block call. */
struct mblock_scan {
	uint32_t pfn, end;
	uint32_t next_skip_pfn; /* async direct: end of the current order-aligned chunk */
	bool skip_on_failure;
	bool valid_page;   /* the scan began at the block's first pfn (the kernel's valid_page) */
	bool skip_updated; /* test_and_set_skip ran in this call */
	unsigned nr_isolated;
	uint64_t scanned;
};

/* test_and_set_skip (mm/compaction.c, 6.12): mark the block skipped and say whether it already
 * was; a compaction ignoring skip hints neither reads nor writes the bit. */
static bool test_and_set_skip(struct mm *mm, const struct compact_control *cc, uint32_t pfn)
{
	bool skip;

	if (cc->ignore_skip_hint)
		return false;
	skip = pageblock_skip(mm, pfn);
	if (!skip)
		set_pageblock_skip(mm, pfn);
	return skip;
}

/* A candidate could not be isolated: under skip_on_failure, give back what this chunk isolated
 * and jump to the next chunk. */
static void isolate_fail(struct mm *mm, struct compact_control *cc, struct mblock_scan *s)
{
	if (!s->skip_on_failure)
		return;
	if (s->nr_isolated) {
		putback_migratepages(mm, cc);
		s->nr_isolated = 0;
	}
	if (s->pfn < s->next_skip_pfn) {
		s->pfn = s->next_skip_pfn - 1;
		s->next_skip_pfn += 1U << cc->order;
	}
}

/* The head of the free buddy block that holds pfn (a free frame that is no block's head), or
 * MM_NO_PFN: pfn is in no block on the free lists (it is a migration target, say). */
static uint32_t buddy_block_head(struct mm *mm, uint32_t pfn)
{
	for (unsigned o = 1; o <= MM_MAX_ORDER; o++) {
		uint32_t head = pfn & ~((1U << o) - 1);
		const struct mm_frame *h = pfn_frame(mm, head);

		if (frame_is_buddy(h) && frame_order(h) >= o)
			return head; /* [head, head + 2^order) holds pfn */
	}
	return MM_NO_PFN;
}

/* One pfn of the modern block scan. Returns false to stop the scan (enough isolated). */
static bool scan_one_modern(struct mm *mm, struct compact_control *cc, struct mblock_scan *s)
{
	const struct mm_frame *f = pfn_frame(mm, s->pfn);

	s->scanned++;
	if (frame_is_buddy(f)) {
		unsigned o = frame_order(f);

		s->pfn += (1U << o) - 1;
		/* 6.12 counts the free block's pages as scanned; 6.1 isolate_migratepages_block
		 * steps over it ("low_pfn += (1UL << freepage_order) - 1; continue;") and counts
		 * only the pfn it looked at in compact_migrate_scanned */
		if (!era_6_1(mm))
			s->scanned += (1U << o) - 1;
		return true;
	}
	if (f->state == FS_FREE && !(f->flags & FF_ISOLATED)) {
		/* Inside a free block: the scan resumed (after COMPACT_CLUSTER_MAX) just past the
		 * pages it migrated, and the model freed those at once, merging them with the free
		 * pages ahead. 6.12 frees them to the per-cpu lists (migrate_folio_done ->
		 * folio_put -> free_unref_page_commit), which compact_zone drains only once the
		 * scanner left the block (lru_add_drain_cpu_zone at check_drain): the kernel's
		 * scanner meets the free pages ahead still as the heads of their own buddy blocks
		 * and steps over them (PageBuddy). Step over the merged block; without this, a
		 * tail page is no LRU page, isolate_fail, and async direct compaction would leave
		 * every block after its first 32 pages (skip_on_failure). */
		uint32_t head = buddy_block_head(mm, s->pfn);

		if (head != MM_NO_PFN) {
			uint32_t end = head + (1U << frame_order(pfn_frame(mm, head)));

			if (!era_6_1(mm)) /* as for a buddy block above */
				s->scanned += end - 1 - s->pfn;
			s->pfn = end - 1;
			return true;
		}
	}
	if (f->state == FS_HUGE) {
		/* skip_isolation_on_order: never migrate a pageblock-order THP */
		s->pfn = pageblock_start(s->pfn) + MM_HPAGE_NR - 1;
		isolate_fail(mm, cc, s);
		return true;
	}
	if (f->state == FS_MTHP) {
		/* an mTHP folio: 6.12 would isolate and migrate it whole when its order is below
		 * cc->order; the model does not migrate folios yet (core/mm/README.md) */
		s->pfn = mthp_head(f, s->pfn) + (1U << mthp_order(f)) - 1;
		isolate_fail(mm, cc, s);
		return true;
	}
	if (!isolatable(mm, cc, f)) {
		isolate_fail(mm, cc, s);
		return true;
	}
	/* isolate_migratepages_block (6.12): the first time this call takes the LRU lock for a
	 * candidate, a scan that began at the block's start marks the block skipped, so that no
	 * other compaction scans it meanwhile; one that finds it marked already gives it up
	 * unless it is finishing the block */
	if (compact_skip_on_first_isolation(mm) && s->valid_page && !s->skip_updated) {
		s->skip_updated = true;
		if (era_6_1(mm)) {
			/* 6.1 test_and_set_skip: only a candidate at the block's first pfn tests
			 * and sets the bit, and a set bit ends even a rescan; any other first
			 * candidate leaves the block unmarked, and skip_updated keeps the end of
			 * the scan from marking it (6.12 mm/compaction.c isolate_migratepages_block
			 * marks the block on its first isolation wherever it is: the branch below)
			 */
			if (s->pfn == pageblock_start(s->pfn) &&
			    test_and_set_skip(mm, cc, s->pfn)) {
				s->pfn = s->end;
				return false;
			}
		} else if (test_and_set_skip(mm, cc, s->pfn) && !cc->finish_pageblock) {
			s->pfn = s->end; /* marked by another compaction meanwhile */
			return false;
		}
	}
	isolate_frame(mm, cc, s->pfn);
	s->nr_isolated++;
	if (cc->nr_migratepages >= MM_COMPACT_CLUSTER_MAX && !cc->finish_pageblock) {
		s->pfn++;
		return false;
	}
	return true;
}

/* 6.12 isolate_migratepages_block over [low, end) of one pageblock. */
static int isolate_migratepages_block(struct mm *mm, struct compact_control *cc, uint32_t low,
				      uint32_t end)
{
	struct mblock_scan s = {.pfn = low, .end = end};
	bool at_block_start = low == pageblock_start(low);
	bool first_isolation_rule = compact_skip_on_first_isolation(mm);

	if (cc->direct && cc->mode == MM_MIGRATE_ASYNC && cc->order > 0) {
		s.skip_on_failure = true;
		s.next_skip_pfn = (low & ~((1U << cc->order) - 1)) + (1U << cc->order);
	}
	if (isolated_throttle(mm, cc))
		return -EAGAIN;
	if (at_block_start && !isolation_suitable(mm, cc, low)) {
		/* isolate_migratepages_block (6.1 and 6.12): a block found marked skipped at its
		 * first pfn is given up whole ("low_pfn = end_pfn; goto isolate_abort"), and the
		 * abort path, having isolated nothing, moves the cached position past it
		 * (update_cached_migrate). Reached under 6.1 for every block its
		 * fast_find_migrateblock picked (that search marks it skipped) */
		update_cached_migrate(mm, cc, end);
		cc->total_migrate_scanned++; /* nr_scanned counts the pfn read */
		cc->migrate_pfn = end;
		return 0;
	}
	s.valid_page = at_block_start;
	for (; s.pfn < end; s.pfn++) {
		if (s.skip_on_failure && s.pfn >= s.next_skip_pfn) {
			if (s.nr_isolated)
				break;
			s.next_skip_pfn = (s.pfn & ~((1U << cc->order) - 1)) + (1U << cc->order);
		}
		if (!scan_one_modern(mm, cc, &s))
			break;
	}
	if (s.pfn > end)
		s.pfn = end;
	/* a block scanned to its end with nothing isolated (or finished after a failure) gets
	 * the skip bit: 6.12 sets it here only for a scan from the block's start that did not
	 * test and set it on its first isolation already */
	if (s.pfn == end && (!s.nr_isolated || cc->finish_pageblock)) {
		if (first_isolation_rule ? s.valid_page && !s.skip_updated
					 : at_block_start || cc->finish_pageblock)
			set_pageblock_skip(mm, low);
		update_cached_migrate(mm, cc, end);
	}
	cc->total_migrate_scanned += s.scanned;
	mm_charge(mm, cc->fc->call, MM_COST_SCAN_PFN, s.scanned);
	cc->migrate_pfn = s.pfn;
	return 0;
}

/* suitable_migration_source: not a block held by a THP; async direct compaction only takes
 * blocks of the allocation's migratetype. */
static bool suitable_migration_source(struct mm *mm, struct compact_control *cc, uint32_t block)
{
	if (pfn_frame(mm, block)->state == FS_HUGE)
		return false;
	if (cc->mode != MM_MIGRATE_ASYNC || !cc->direct)
		return true;
	return pageblock_mt(mm, block) == cc->migratetype;
}

#define PAGE_ALLOC_COSTLY_ORDER 3

/* freelist_scan_limit (mm/compaction.c, 6.12): how many free-list entries a fast search may
 * look at, halved by every failed search since the last success. */
static unsigned freelist_scan_limit(const struct compact_control *cc)
{
	unsigned shift = cc->fast_search_fail < 31 ? cc->fast_search_fail : 31;

	return (MM_COMPACT_CLUSTER_MAX >> shift) + 1;
}

/* update_fast_start_pfn / reinit_migrate_pfn (6.12): the lowest free pfn a fast search picked
 * is where the linear scan starts over, once, after a search that found nothing. */
static void update_fast_start_pfn(struct compact_control *cc, uint32_t pfn)
{
	if (cc->fast_start_pfn == MM_NO_PFN)
		return;
	if (!cc->fast_start_pfn || pfn < cc->fast_start_pfn)
		cc->fast_start_pfn = pfn;
}

static uint32_t reinit_migrate_pfn(struct compact_control *cc)
{
	if (!cc->fast_start_pfn || cc->fast_start_pfn == MM_NO_PFN)
		return cc->migrate_pfn;
	cc->migrate_pfn = cc->fast_start_pfn;
	cc->fast_start_pfn = MM_NO_PFN;
	return cc->migrate_pfn;
}

/* fast_find_migrateblock (mm/compaction.c, 6.12): at a pageblock boundary, for an order above
 * PAGE_ALLOC_COSTLY_ORDER and a MOVABLE (or kcompactd) request, take as the next migration
 * source a block not marked skipped that holds a free MOVABLE page of order cc->order-1 down to
 * 3 below high_pfn: the first half of the span to the free scanner at the zone's start, its
 * first eighth elsewhere (a source far up would soon be a target). Entries looked at count as
 * migrate-scanned; the list turns so a found page (or the last looked at) goes to its tail. */
static uint32_t fast_find_migrateblock(struct mm *mm, struct compact_control *cc)
{
	unsigned limit = freelist_scan_limit(cc), nr_scanned = 0;
	uint32_t pfn = cc->migrate_pfn, distance, high_pfn;
	bool found = false;

	if (cc->ignore_skip_hint || (cc->finish_pageblock && !era_6_1(mm)))
		return pfn; /* Debian 6.1.192 fast_find_migrateblock has no finish_pageblock test
			     * (6.12's has: finish_pageblock came in 6.4, mm/compaction.c) */
	if (pfn != mm->zone_start_pfn && pfn != pageblock_start(pfn))
		return pfn; /* a block continued after COMPACT_CLUSTER_MAX */
	if (cc->order <= PAGE_ALLOC_COSTLY_ORDER)
		return pfn;
	if (cc->direct && cc->migratetype != MM_MT_MOVABLE)
		return pfn;
	distance = (cc->free_pfn - cc->migrate_pfn) >> 1;
	if (cc->migrate_pfn != mm->zone_start_pfn)
		distance >>= 2;
	high_pfn = pageblock_start(cc->migrate_pfn + distance);
	for (int order = cc->order - 1;
	     order >= PAGE_ALLOC_COSTLY_ORDER && !found && nr_scanned < limit; order--) {
		uint32_t head = sentinel(mm, SENT_FREE((unsigned)order, MM_MT_MOVABLE));

		if (!mm->nr_free[order])
			continue;
		for (uint32_t fp = pfn_frame(mm, head)->next; fp != head;
		     fp = pfn_frame(mm, fp)->next) {
			if (nr_scanned++ >= limit) {
				flist_rotate_last(mm, head, fp); /* move_freelist_tail */
				break;
			}
			if (fp >= high_pfn || pageblock_skip(mm, fp))
				continue;
			flist_rotate_last(mm, head, fp);
			update_fast_start_pfn(cc, fp);
			pfn = pageblock_start(fp);
			cc->fast_search_fail = 0;
			found = true;
			/* 6.1 (mm/compaction.c fast_find_migrateblock, 6.1.y): the picked block is
			 * marked skipped at once (set_pageblock_skip(freepage)), and 6.1's
			 * isolate_migratepages_block then finds the bit at the block's first pfn
			 * and gives the block up unscanned: the fast search moves the migrate
			 * scanner past blocks and compacts none. 6.1-rc's fix (7efc3b726103,
			 * "fix set skip in fast_find_migrateblock") was reverted for 6.1 and
			 * 6.2 (khugepaged stalled in compaction) and re-applied in 2023 with
			 * finish_pageblock, which is what 6.12 runs */
			if (era_6_1(mm))
				set_pageblock_skip(mm, fp);
			break;
		}
	}
	cc->total_migrate_scanned += nr_scanned;
	mm_charge(mm, cc->fc->call, MM_COST_SCAN_PFN, nr_scanned);
	if (!found) {
		cc->fast_search_fail++;
		pfn = reinit_migrate_pfn(cc);
	}
	return pfn;
}

/* 6.12 isolate_migratepages: the first suitable block from migrate_pfn up, or from the block
 * fast_find_migrateblock picked (its skip bit already checked). */
static enum isolate_result isolate_migratepages_modern(struct mm *mm, struct compact_control *cc)
{
	uint32_t low =
	    compact_fast_find_migrateblock(mm) ? fast_find_migrateblock(mm, cc) : cc->migrate_pfn;
	uint32_t block_end = pageblock_start(low) + MM_HPAGE_NR;
	bool fast_find_block = low != cc->migrate_pfn && !cc->fast_search_fail;

	for (; block_end <= cc->free_pfn;
	     fast_find_block = false, cc->migrate_pfn = low = block_end, block_end += MM_HPAGE_NR) {
		uint32_t block = pageblock_start(low);

		if (low == block && !fast_find_block && !isolation_suitable(mm, cc, block))
			continue;
		if (!suitable_migration_source(mm, cc, block)) {
			update_cached_migrate(mm, cc, block_end);
			continue;
		}
		if (isolate_migratepages_block(mm, cc, low, block_end))
			return ISOLATE_ABORT;
		break;
	}
	return cc->nr_migratepages ? ISOLATE_SUCCESS : ISOLATE_NONE;
}

__stall_frame static enum isolate_result isolate_migratepages(struct mm *mm,
							      struct compact_control *cc)
{
	if (era_modern(mm))
		return isolate_migratepages_modern(mm, cc);
	return isolate_migratepages_3x(mm, cc);
}

/* ---- The free scanner ----------------------------------------------------------------------- */

/* __isolate_free_page (6.12) / split_free_page (3.x): take a buddy block off the free lists as
 * a migration target, unless that drops order-0 free below the era's mark + 2^order. */
static uint32_t isolate_free_block(struct mm *mm, struct compact_control *cc, uint32_t pfn)
{
	struct mm_frame *f = pfn_frame(mm, pfn);
	unsigned order = frame_order(f);
	enum wmark w = era_modern(mm) ? WMARK_MIN : WMARK_LOW;

	if (!zone_watermark_ok(mm, 0, wmark_pages(mm, w) + (1U << order), 0))
		return 0;
	del_free_block(mm, pfn);
	add_target(mm, cc, pfn, order);
	cc->nr_freepages += 1U << order;
	mm->nr_isolated += 1U << order;
	mm->nr_isolated_free += 1U << order;
	count_event(mm, MM_STAT_COMPACT_ISOLATED, 1U << order);
	if (!era_modern(mm) && order >= MM_PAGEBLOCK_ORDER - 1)
		for (uint32_t p = pfn; p < pfn + (1U << order); p += MM_HPAGE_NR)
			set_pageblock_mt(mm, p, MM_MT_MOVABLE);
	return 1U << order;
}

/* isolate_freepages_block: isolate the buddy blocks of [*start, end) with the given stride;
 * non-strict scans stop once enough targets are held. */
static uint32_t isolate_freepages_block(struct mm *mm, struct compact_control *cc, uint32_t *start,
					uint32_t end, unsigned stride, bool whole)
{
	uint32_t pfn = *start, total = 0;
	uint64_t scanned = 0;

	for (; pfn < end; pfn += stride) {
		const struct mm_frame *f;
		uint32_t isolated;

		if (!mm->pb_nbuddy[pfn >> MM_PAGEBLOCK_ORDER]) {
			/* no buddy left in this pageblock: every pfn to its end (or to end) is
			 * scanned and passed over, as the loop would, in one step */
			uint32_t lim = pageblock_start(pfn) + MM_HPAGE_NR, n;

			if (lim > end)
				lim = end;
			n = (lim - pfn + stride - 1) / stride;
			scanned += n;
			pfn += (n - 1) * stride; /* the loop's increment adds the last stride */
			continue;
		}
		f = pfn_frame(mm, pfn);
		scanned++;
		if (!frame_is_buddy(f))
			continue;
		isolated = isolate_free_block(mm, cc, pfn);
		if (!isolated)
			break;
		scanned += isolated - 1;
		total += isolated;
		if (!whole && cc->nr_migratepages <= cc->nr_freepages) {
			pfn += isolated;
			break;
		}
		pfn += isolated - 1;
	}
	if (pfn > end)
		pfn = end;
	*start = pfn;
	cc->total_free_scanned += scanned;
	mm_charge(mm, cc->fc->call, MM_COST_SCAN_PFN, scanned);
	mm_charge(mm, cc->fc->call, MM_COST_ISOLATE, total);
	return total;
}

/* 3.x suitable_migration_target: a MOVABLE block or a free pageblock. */
static bool suitable_target_3x(struct mm *mm, uint32_t block)
{
	const struct mm_frame *f = pfn_frame(mm, block);

	if (frame_is_buddy(f) && frame_order(f) >= MM_PAGEBLOCK_ORDER)
		return true;
	return pageblock_mt(mm, block) == MM_MT_MOVABLE;
}

/* 3.x isolate_freepages: whole blocks downward from free_pfn while targets are short; the
 * scanner restarts next time from the highest block it isolated from. */
static void isolate_freepages_3x(struct mm *mm, struct compact_control *cc)
{
	int64_t pfn = cc->free_pfn, low = (int64_t)cc->migrate_pfn + MM_HPAGE_NR;
	int64_t high = low < pfn ? low : pfn;

	for (; pfn > low && cc->nr_migratepages > cc->nr_freepages; pfn -= MM_HPAGE_NR) {
		uint32_t start = (uint32_t)pfn;

		if (!suitable_target_3x(mm, start))
			continue;
		if (isolate_freepages_block(mm, cc, &start, start + MM_HPAGE_NR, 1, true) &&
		    pfn > high)
			high = pfn;
	}
	cc->free_pfn = (uint32_t)high;
}

/* 6.12 suitable_migration_target: never break up a free block of the requested order. */
static bool suitable_target_modern(struct mm *mm, struct compact_control *cc, uint32_t block)
{
	const struct mm_frame *f = pfn_frame(mm, block);
	unsigned order = cc->order > 0 ? (unsigned)cc->order : MM_PAGEBLOCK_ORDER;

	if (frame_is_buddy(f) && frame_order(f) >= order)
		return false;
	if (cc->mode == MM_MIGRATE_SYNC && cc->whole_zone)
		return true; /* ignore_block_suitable at SYNC_FULL priority */
	return pageblock_mt(mm, block) == MM_MT_MOVABLE;
}

/* update_pageblock_skip for the free scanner: mark and lower the cached free position. */
static void update_free_skip(struct mm *mm, uint32_t block, uint32_t next)
{
	set_pageblock_skip(mm, block);
	if (next < mm->compact_cached_free_pfn)
		mm->compact_cached_free_pfn = next;
}

/* ---- The free scanner's fast search of the free lists (6.12, since 5.1) --------------------- */

/* fast_isolate_around (6.12): the rest of the found page's pageblock, one pfn at a time,
 * except in async direct compaction; a block scanned to its end is marked skipped. */
static void fast_isolate_around(struct mm *mm, struct compact_control *cc, uint32_t pfn)
{
	uint32_t start = pageblock_start(pfn), end = start + MM_HPAGE_NR;

	if (cc->nr_freepages >= cc->nr_migratepages)
		return;
	if (cc->direct && cc->mode == MM_MIGRATE_ASYNC)
		return;
	if (end > mm->nr_frames)
		end = mm->nr_frames;
	isolate_freepages_block(mm, cc, &start, end, 1, false);
	if (start == end)
		set_pageblock_skip(mm, pfn);
}

/* next_search_order (6.12): the orders below cc->order round-robin from search_order; -1 once
 * the search wrapped around (and search_order moves one down for the next call). */
static int next_search_order(struct compact_control *cc, int order)
{
	if (--order < 0)
		order = cc->order - 1;
	if (order == cc->search_order) {
		if (--cc->search_order < 0)
			cc->search_order = cc->order - 1;
		return -1;
	}
	return order;
}

/* One order's MOVABLE free list in fast_isolate_freepages: walked from its tail (the pages
 * queued last, of merges that may grow), taking the first page at or above low_pfn, else the
 * highest at or above min_pfn, in at most *limit entries (halved when a fallback candidate is
 * seen); the list is turned so that the next search starts with what this one did not see.
 * Returns the page or MM_NO_PFN. */
static uint32_t fast_search_freelist(struct mm *mm, struct compact_control *cc, int order,
				     uint32_t low_pfn, uint32_t min_pfn, unsigned *limit,
				     uint32_t *highest, uint64_t *nr_scanned,
				     unsigned *order_scanned)
{
	uint32_t head = sentinel(mm, SENT_FREE((unsigned)order, MM_MT_MOVABLE));
	uint32_t freepage = head, page = MM_NO_PFN, high_pfn = 0;

	for (uint32_t pfn = pfn_frame(mm, head)->prev; pfn != head;
	     pfn = pfn_frame(mm, pfn)->prev) {
		freepage = pfn;
		++*order_scanned;
		++*nr_scanned;
		if (pfn >= *highest)
			*highest = pageblock_start(pfn);
		if (pfn >= low_pfn) {
			cc->fast_search_fail = 0;
			cc->search_order = order;
			page = pfn;
			break;
		}
		if (pfn >= min_pfn && pfn > high_pfn) {
			high_pfn = pfn;
			*limit >>= 1; /* a candidate: shorten the scan */
		}
		if (*order_scanned >= *limit)
			break;
	}
	if (page == MM_NO_PFN && high_pfn)
		freepage = page = high_pfn;
	/* move_freelist_head; a list walked to its end stays as it was */
	if (freepage != head)
		flist_rotate_first(mm, head, freepage);
	return page;
}

/* fast_isolate_freepages (mm/compaction.c, 6.12): before the linear free scanner, look for a
 * target on the MOVABLE free lists of orders below cc->order, preferring the top quarter of the
 * span between the scanners (at worst the top half), and take the rest of its pageblock
 * around it. On a failure at the start of a scan, the free scanner starts at the highest block
 * seen (or, direct, at the top half's lower end); the cached free position follows the
 * highest block seen. Free-list entries looked at count as free pages scanned. */
static void fast_isolate_freepages(struct mm *mm, struct compact_control *cc)
{
	unsigned limit = freelist_scan_limit(cc) >> 1;
	uint64_t nr_scanned = 0;
	uint32_t low_pfn, min_pfn, highest = 0, distance, page = MM_NO_PFN;
	bool scan_start = false;

	if (cc->order <= 0)
		return;
	if (!limit)
		limit = 1;
	if (cc->free_pfn >= mm->compact_init_free_pfn) {
		limit = MM_HPAGE_NR >> 1; /* a deeper search when the scan starts */
		scan_start = true;
	}
	distance = cc->free_pfn - cc->migrate_pfn;
	low_pfn = pageblock_start(cc->free_pfn - (distance >> 2));
	min_pfn = pageblock_start(cc->free_pfn - (distance >> 1));
	if (min_pfn > low_pfn)
		low_pfn = min_pfn;
	if (cc->search_order > cc->order - 1)
		cc->search_order = cc->order - 1;
	for (int order = cc->search_order; page == MM_NO_PFN && order >= 0;
	     order = next_search_order(cc, order)) {
		unsigned order_scanned = 0;

		if (!mm->nr_free[order])
			continue;
		page = fast_search_freelist(mm, cc, order, low_pfn, min_pfn, &limit, &highest,
					    &nr_scanned, &order_scanned);
		if (page != MM_NO_PFN) {
			uint32_t n = isolate_free_block(mm, cc, page);

			if (n) {
				nr_scanned += n - 1;
				mm_charge(mm, cc->fc->call, MM_COST_ISOLATE, n);
			} else {
				order = cc->search_order + 1; /* the watermark: end the search */
				page = MM_NO_PFN;
			}
		}
		if (cc->nr_freepages >= cc->nr_migratepages)
			break;
		if (order_scanned >= limit && (limit >>= 1) == 0)
			limit = 1; /* a smaller scan on the next order */
	}
	if (page == MM_NO_PFN) {
		cc->fast_search_fail++;
		if (scan_start) {
			if (highest >= min_pfn) {
				page = cc->free_pfn = highest;
			} else if (cc->direct && min_pfn < mm->nr_frames) {
				/* pfn_valid: once the free scanner has gone below the migrate
				 * scanner (migration asked for targets after the scanners met)
				 * the distance wraps, as the kernel's unsigned one does */
				if (suitable_target_modern(mm, cc, min_pfn))
					page = min_pfn;
				cc->free_pfn = min_pfn;
			}
		}
	}
	if (highest && highest >= mm->compact_cached_free_pfn)
		mm->compact_cached_free_pfn = highest - MM_HPAGE_NR;
	cc->total_free_scanned += nr_scanned;
	mm_charge(mm, cc->fc->call, MM_COST_SCAN_PFN, nr_scanned);
	if (page != MM_NO_PFN)
		fast_isolate_around(mm, cc, page);
}

/* 6.12 isolate_freepages: blocks downward to the migrate scanner's block, async with a
 * stride that grows over empty blocks. */
static void isolate_freepages_modern(struct mm *mm, struct compact_control *cc)
{
	uint32_t isolate_start = cc->free_pfn;
	int64_t block = pageblock_start(isolate_start);
	uint32_t block_end = (uint32_t)block + MM_HPAGE_NR;
	int64_t low = ((int64_t)cc->migrate_pfn + MM_HPAGE_NR) & ~(int64_t)(MM_HPAGE_NR - 1);
	unsigned stride = cc->mode == MM_MIGRATE_ASYNC ? MM_COMPACT_CLUSTER_MAX : 1;

	for (; block >= low;
	     block_end = (uint32_t)block, block -= MM_HPAGE_NR, isolate_start = (uint32_t)block) {
		uint32_t nr;

		if (!suitable_target_modern(mm, cc, (uint32_t)block) ||
		    !isolation_suitable(mm, cc, (uint32_t)block))
			continue;
		nr = isolate_freepages_block(mm, cc, &isolate_start, block_end, stride, false);
		if (isolate_start == block_end)
			update_free_skip(mm, (uint32_t)block, (uint32_t)(block - MM_HPAGE_NR));
		if (cc->nr_freepages >= cc->nr_migratepages) {
			if (isolate_start >= block_end)
				isolate_start = (uint32_t)(block - MM_HPAGE_NR);
			break;
		} else if (isolate_start < block_end) {
			break; /* isolation failed early (watermark) */
		}
		stride = nr ? 1
			    : (stride << 1 > MM_COMPACT_CLUSTER_MAX ? MM_COMPACT_CLUSTER_MAX
								    : stride << 1);
	}
	cc->free_pfn = isolate_start;
}

__stall_frame void isolate_freepages(struct mm *mm, struct compact_control *cc)
{
	if (!era_modern(mm)) {
		isolate_freepages_3x(mm, cc);
		return;
	}
	if (compact_fast_isolate_freepages(mm)) {
		fast_isolate_freepages(mm, cc);
		if (cc->nr_freepages)
			return;
	}
	isolate_freepages_modern(mm, cc);
}

/* ---- compact_zone ------------------------------------------------------------------------- */

static bool scanners_met(const struct compact_control *cc)
{
	return (cc->free_pfn >> MM_PAGEBLOCK_ORDER) <= (cc->migrate_pfn >> MM_PAGEBLOCK_ORDER);
}

/* extfrag_for_order: % of free memory in blocks smaller than the order (proactive score). */
static unsigned fragmentation_score(struct mm *mm)
{
	uint64_t suitable = 0;

	if (!mm->nr_free_pages)
		return 0;
	for (unsigned o = MM_HPAGE_ORDER; o <= MM_MAX_ORDER; o++)
		suitable += (uint64_t)mm->nr_free[o] << o;
	return (unsigned)((mm->nr_free_pages - suitable) * 100 / mm->nr_free_pages);
}

/* A free block of at least the order the allocation could take (own list or a stealable
 * fallback). */
static bool suitable_page_free(struct mm *mm, const struct compact_control *cc)
{
	for (unsigned o = (unsigned)cc->order; o <= MM_MAX_ORDER; o++) {
		if (mm->nr_free_mt[o][cc->migratetype])
			return true;
		if (era_modern(mm) ? mm->nr_free[o] && (o >= 4 || cc->migratetype != MM_MT_MOVABLE)
				   : o >= MM_PAGEBLOCK_ORDER && mm->nr_free[o])
			return true;
	}
	return false;
}

static enum mm_compact_result compact_finished_3x(struct mm *mm, struct compact_control *cc)
{
	if (cc->free_pfn <= cc->migrate_pfn)
		return MM_COMPACT_COMPLETE;
	if (cc->order < 0)
		return MM_COMPACT_CONTINUE;
	if (!zone_watermark_ok(mm, (unsigned)cc->order,
			       wmark_pages(mm, WMARK_LOW) + (1U << cc->order), 0))
		return MM_COMPACT_CONTINUE;
	return suitable_page_free(mm, cc) ? MM_COMPACT_SUCCESS : MM_COMPACT_CONTINUE;
}

static enum mm_compact_result compact_finished_modern(struct mm *mm, struct compact_control *cc)
{
	if (cc->contended)
		return MM_COMPACT_CONTENDED;
	if (scanners_met(cc)) {
		mm->compact_cached_migrate_pfn[0] = mm->compact_cached_migrate_pfn[1] =
		    mm->zone_start_pfn;
		mm->compact_cached_free_pfn = pageblock_start(mm->nr_frames - 1);
		if (cc->direct)
			mm->compact_blockskip_flush = true;
		return cc->whole_zone ? MM_COMPACT_COMPLETE : MM_COMPACT_PARTIAL_SKIPPED;
	}
	if (cc->proactive) {
		if (mm->kswapd_awake)
			return MM_COMPACT_PARTIAL_SKIPPED;
		return fragmentation_score(mm) > cc->proactive_low ? MM_COMPACT_CONTINUE
								   : MM_COMPACT_SUCCESS;
	}
	if (cc->order < 0 || cc->migrate_pfn % MM_HPAGE_NR)
		return MM_COMPACT_CONTINUE; /* always finish a pageblock */
	/* vm.defrag_mode (6.15 __compact_finished): kcompactd works until HIGH is met in whole
	 * free pageblocks */
	if (defrag_mode(mm) && !cc->direct)
		return zone_watermark_ok_blocks(mm, (unsigned)cc->order,
						wmark_pages(mm, WMARK_HIGH))
			   ? MM_COMPACT_SUCCESS
			   : MM_COMPACT_CONTINUE;
	return suitable_page_free(mm, cc) ? MM_COMPACT_SUCCESS : MM_COMPACT_CONTINUE;
}

static enum mm_compact_result compact_zone_3x(struct mm *mm, struct compact_control *cc)
{
	enum mm_compact_result ret;

	if (cc->order >= 0) {
		ret = compaction_suitable(mm, (unsigned)cc->order, cc->alloc_flags);
		if (!suitable(ret))
			return ret;
	}
	cc->migrate_pfn = mm->zone_start_pfn;
	cc->free_pfn = pageblock_start(mm->nr_frames - 1);
	mm_trace(mm, cc->fc->call, MM_TRACE_COMPACTION_BEGIN, (unsigned)cc->order, cc->migrate_pfn,
		 cc->free_pfn, mm->nr_frames, cc->mode);
	while ((ret = compact_finished_3x(mm, cc)) == MM_COMPACT_CONTINUE) {
		unsigned ok = 0;

		switch (isolate_migratepages(mm, cc)) {
		case ISOLATE_ABORT:
			ret = MM_COMPACT_CONTENDED; /* 3.x's PARTIAL after an aborted isolation */
			putback_migratepages(mm, cc);
			goto out;
		case ISOLATE_NONE:
			continue;
		case ISOLATE_SUCCESS:
			break;
		}
		migrate_frames(mm, cc, &ok);
		count_event(mm, MM_STAT_COMPACT_BLOCKS_MOVED, 1);
		if (cc->stale) {
			ret = MM_COMPACT_CONTENDED; /* repaired under it: it holds nothing */
			goto out;
		}
	}
out:
	release_freepages(mm, cc);
	return ret;
}

/* Scanner start for a modern compaction: cached positions unless whole-zone. */
static void compact_zone_start_modern(struct mm *mm, struct compact_control *cc)
{
	bool sync = cc->mode != MM_MIGRATE_ASYNC;
	uint32_t last = pageblock_start(mm->nr_frames - 1);

	if (cc->whole_zone) {
		cc->migrate_pfn = mm->zone_start_pfn;
		cc->free_pfn = last;
		return;
	}
	cc->migrate_pfn = mm->compact_cached_migrate_pfn[sync];
	cc->free_pfn = mm->compact_cached_free_pfn;
	/* compact_zone (6.12): a cached position outside the zone restarts at its end (a fast
	 * free search can leave it one block below the zone's first) */
	if (cc->free_pfn < mm->zone_start_pfn || cc->free_pfn >= mm->nr_frames)
		cc->free_pfn = mm->compact_cached_free_pfn = last;
	if (cc->migrate_pfn < mm->zone_start_pfn || cc->migrate_pfn >= mm->nr_frames)
		cc->migrate_pfn = mm->compact_cached_migrate_pfn[0] =
		    mm->compact_cached_migrate_pfn[1] = mm->zone_start_pfn;
	if (cc->migrate_pfn <= mm->compact_init_migrate_pfn)
		cc->whole_zone = true;
}

/* The modern loop body after a successful isolation: migrate, and on a mid-block failure
 * rescan the rest of the block so it gets the skip bit. Returns true to rescan. */
static bool migrate_batch_modern(struct mm *mm, struct compact_control *cc, uint32_t *last_migrated,
				 enum mm_compact_result *ret)
{
	unsigned ok = 0;
	int err = migrate_frames(mm, cc, &ok);

	if (!err)
		return false;
	if (err == -ESTALE) {
		*ret = MM_COMPACT_CONTENDED; /* repaired under it: it holds nothing */
		return false;
	}
	if (err == -ENOMEM && !scanners_met(cc)) {
		*ret = MM_COMPACT_CONTENDED;
		cc->contended = true;
		return false;
	}
	if (era_6_1(mm)) {
		/* 6.1 compact_zone: an async direct compaction that failed to migrate a page skips
		 * the rest of the order-aligned block ("cc->migrate_pfn = block_end_pfn(
		 * cc->migrate_pfn - 1, cc->order)", last_migrated_pfn = 0); the rescan of 6.12
		 * came in 6.4 */
		if (cc->direct && cc->mode == MM_MIGRATE_ASYNC && cc->order >= 0) {
			uint32_t size = 1U << cc->order;

			cc->migrate_pfn = ((cc->migrate_pfn - 1) & ~(size - 1)) + size;
			*last_migrated = MM_NO_PFN;
		}
		return false;
	}
	if (cc->migrate_pfn % MM_HPAGE_NR && !cc->ignore_skip_hint && !cc->finish_pageblock &&
	    cc->mode < MM_MIGRATE_SYNC) {
		cc->finish_pageblock = true;
		if (cc->order == MM_HPAGE_ORDER)
			*last_migrated = MM_NO_PFN;
		return true;
	}
	return false;
}

/* check_drain (6.1 and 6.12 compact_zone): the kernel frees migrated sources to the per-cpu
 * lists (migrate_folio_done -> folio_put -> free_unref_page), which compact_zone drains
 * (lru_add_drain_cpu_zone) only once the migrate scanner has left the cc->order-aligned block
 * of the last migration; the drain's __free_one_page is where a freed block is captured
 * (compaction_capture). The model frees a source to the buddy allocator at once and captures
 * there, so a capture counts for the loop only from the drain on. Returns whether the
 * capture is seen now. */
static bool check_drain(struct compact_control *cc, uint32_t *last_migrated)
{
	if (cc->order > 0 && *last_migrated != MM_NO_PFN &&
	    *last_migrated < (cc->migrate_pfn & ~((1U << cc->order) - 1))) {
		*last_migrated = MM_NO_PFN; /* "No more flushing until we migrate again" */
		return cc->capc && cc->capc->pfn != MM_NO_PFN;
	}
	return false;
}

static enum mm_compact_result compact_zone_modern(struct mm *mm, struct compact_control *cc)
{
	enum mm_compact_result ret;
	uint32_t last_migrated = MM_NO_PFN;
	bool update_cached, captured = false;

	if (cc->order >= 0 && !cc->proactive) {
		uint32_t mark = wmark_pages(mm, (enum wmark)(cc->alloc_flags & ALLOC_WMARK_MASK));

		if (zone_watermark_ok(mm, (unsigned)cc->order, mark, cc->alloc_flags))
			return MM_COMPACT_SUCCESS;
		if (!suitable(compaction_suitable(mm, (unsigned)cc->order, cc->alloc_flags)))
			return MM_COMPACT_SKIPPED;
	}
	if (cc->order >= 0 && compaction_restarting(mm, (unsigned)cc->order))
		reset_isolation_suitable(mm);
	cc->fast_start_pfn = 0;
	compact_zone_start_modern(mm, cc);
	update_cached = cc->mode == MM_MIGRATE_ASYNC &&
			mm->compact_cached_migrate_pfn[0] == mm->compact_cached_migrate_pfn[1];
	mm_trace(mm, cc->fc->call, MM_TRACE_COMPACTION_BEGIN, (unsigned)cc->order, cc->migrate_pfn,
		 cc->free_pfn, mm->nr_frames, cc->mode);
	while ((ret = compact_finished_modern(mm, cc)) == MM_COMPACT_CONTINUE) {
		uint32_t iteration_start = cc->migrate_pfn;

		cc->finish_pageblock =
		    last_migrated != MM_NO_PFN &&
		    pageblock_start(last_migrated) == pageblock_start(cc->migrate_pfn);
	rescan:
		switch (isolate_migratepages(mm, cc)) {
		case ISOLATE_ABORT:
			ret = MM_COMPACT_CONTENDED;
			putback_migratepages(mm, cc);
			goto out;
		case ISOLATE_NONE:
			if (update_cached)
				mm->compact_cached_migrate_pfn[1] =
				    mm->compact_cached_migrate_pfn[0];
			goto drain; /* "there might still be unflushed migrations" */
		case ISOLATE_SUCCESS:
			update_cached = false;
			/* 6.12 compact_zone: "last_migrated_pfn = max(cc->zone->zone_start_pfn,
			 * pageblock_start_pfn(cc->migrate_pfn - 1))", the block the batch came
			 * from; 6.1: "last_migrated_pfn = iteration_start_pfn", where this
			 * iteration's scan began - an earlier block when isolate_migratepages
			 * skipped or jumped (fast_find_migrateblock), so check_drain drains right
			 * after that batch. (6.1 reads pfn 0 as none; a real zone never starts
			 * there, the pool does.) */
			last_migrated =
			    era_6_1(mm)
				? iteration_start
				: pageblock_start(cc->migrate_pfn ? cc->migrate_pfn - 1 : 0);
			break;
		}
		if (migrate_batch_modern(mm, cc, &last_migrated, &ret))
			goto rescan;
		if (cc->contended)
			goto out;
		/* 6.12 stops on a captured page before check_drain: a capture made in the drain is
		 * seen after the next batch, which the scanner isolates from the next block */
		if (!era_6_1(mm) && captured) {
			ret = MM_COMPACT_SUCCESS;
			break;
		}
	drain:
		captured = captured || check_drain(cc, &last_migrated);
		/* 6.1 stops on it after check_drain, in the iteration whose drain made it */
		if (era_6_1(mm) && captured) {
			ret = MM_COMPACT_SUCCESS;
			break;
		}
	}
out:
	/* the cached free position goes up to the block of the highest target given back, "so we
	 * don't leave any returned pages behind in the next attempt" (6.12 release_free_list, 6.1
	 * release_freepages return the highest pfn they freed) */
	if (cc->nr_freepages) {
		uint32_t free_pfn = pageblock_start(highest_target(mm, cc));

		release_freepages(mm, cc);
		if (free_pfn > mm->compact_cached_free_pfn)
			mm->compact_cached_free_pfn = free_pfn;
	}
	return ret;
}

/* compact_zone: one compaction run; counts the scanners' work. */
__stall_frame enum mm_compact_result compact_zone(struct mm *mm, struct compact_control *cc)
{
	enum mm_compact_result ret;

	materialise_all(mm); /* the scanners read every frame descriptor in their way */
	ret = era_modern(mm) ? compact_zone_modern(mm, cc) : compact_zone_3x(mm, cc);
	count_event(mm,
		    cc->direct ? MM_STAT_COMPACT_MIGRATE_SCANNED
			       : MM_STAT_COMPACT_DAEMON_MIGRATE_SCANNED,
		    cc->total_migrate_scanned);
	count_event(mm,
		    cc->direct ? MM_STAT_COMPACT_FREE_SCANNED : MM_STAT_COMPACT_DAEMON_FREE_SCANNED,
		    cc->total_free_scanned);
	if (!cc->direct) {
		count_event(mm, MM_STAT_COMPACT_MIGRATE_SCANNED, cc->total_migrate_scanned);
		count_event(mm, MM_STAT_COMPACT_FREE_SCANNED, cc->total_free_scanned);
	}
	mm_trace(mm, cc->fc->call, MM_TRACE_COMPACTION_END, cc->order < 0 ? 0 : (unsigned)cc->order,
		 cc->migrate_pfn, cc->free_pfn, mm->nr_frames, ret);
	return ret;
}

/* try_to_compact_pages for our one zone: the gfp check, the modern deferral check, then
 * compact_zone_order; the modern per-zone defer/reset decisions are taken here. *captured gets
 * a block captured during the run (modern), else MM_NO_PFN. */
__stall_frame enum mm_compact_result try_to_compact_pages(struct mm *mm, struct alloc_ctx *ac,
							  enum mm_migrate_mode mode,
							  uint32_t *captured)
{
	struct capture_control capc = {.order = ac->order, .pfn = MM_NO_PFN};
	struct compact_control cc = {
	    .order = (int)ac->order,
	    .search_order = (int)ac->order,
	    .migratetype = ac->mt,
	    .mode = mode,
	    .alloc_flags = ac->alloc_flags,
	    .direct = true,
	    .fc = ac->fc,
	};
	enum mm_compact_result ret;

	init_targets(&cc);
	*captured = MM_NO_PFN;
	if (!(ac->gfp & GFP_IO) || (!era_modern(mm) && !(ac->gfp & GFP_FS)))
		return MM_COMPACT_SKIPPED;
	if (!era_modern(mm)) {
		count_event(mm, MM_STAT_COMPACT_STALL, 1);
		return compact_zone(mm, &cc);
	}
	if (mode != MM_MIGRATE_SYNC && compaction_deferred(mm, ac->order))
		return MM_COMPACT_DEFERRED;
	if (mode == MM_MIGRATE_SYNC)
		cc.whole_zone = cc.ignore_skip_hint = true; /* MIN_COMPACT_PRIORITY */
	cc.capc = &capc;
	ret = compact_zone(mm, &cc);
	if (capc.pfn != MM_NO_PFN) {
		*captured = capc.pfn;
		ret = MM_COMPACT_SUCCESS;
	}
	if (ret == MM_COMPACT_SUCCESS)
		compaction_defer_reset(mm, ac->order, false);
	else if ((mode != MM_MIGRATE_ASYNC || mm->cfg.policy.async_failure_defers) &&
		 (ret == MM_COMPACT_COMPLETE || ret == MM_COMPACT_PARTIAL_SKIPPED))
		defer_compaction(mm, ac->order);
	return ret;
}

/* ---- Background compaction (kcompactd, proactive) ------------------------------------------ */

/* Is kcompactd's work for order done already (compaction_suit_allocation_order's watermark
 * test in kcompactd_node_suitable / kcompactd_do_work)? At MIN in free pages; under
 * vm.defrag_mode (6.15) at HIGH in whole free pageblocks. */
static bool kcompactd_order_met(struct mm *mm, unsigned order)
{
	if (defrag_mode(mm))
		return zone_watermark_ok_blocks(mm, order, wmark_pages(mm, WMARK_HIGH));
	return zone_watermark_ok(mm, order, wmark_pages(mm, WMARK_MIN), 0);
}

/* kcompactd_do_work: SYNC_LIGHT compaction at kcompactd_max_order, honouring deferral. */
__stall_frame uint64_t kcompactd_do_work(struct mm *mm, void *call)
{
	struct fault_ctx fc = {.call = call};
	unsigned order = mm->kcompactd_max_order;
	struct compact_control cc = {
	    .order = (int)order,
	    .search_order = (int)order,
	    .migratetype = MM_MT_MOVABLE,
	    .mode = MM_MIGRATE_SYNC_LIGHT,
	    .alloc_flags = WMARK_MIN,
	    .fc = &fc,
	};
	enum mm_compact_result ret;

	init_targets(&cc);
	count_event(mm, MM_STAT_COMPACT_DAEMON_WAKE, 1);
	mm->kcompactd_awake = false;
	mm->kcompactd_max_order = 0;
	if (compaction_deferred(mm, order) || kcompactd_order_met(mm, order) ||
	    !suitable(compaction_suitable(mm, order, WMARK_MIN)))
		return 0;
	ret = compact_zone(mm, &cc);
	if (ret == MM_COMPACT_SUCCESS)
		compaction_defer_reset(mm, order, false);
	else if (ret == MM_COMPACT_PARTIAL_SKIPPED || ret == MM_COMPACT_COMPLETE)
		defer_compaction(mm, order);
	return 1;
}

/* wakeup_kcompactd: wake it when an order is failing at MIN but compaction could help. */
void wakeup_kcompactd(struct mm *mm, unsigned order)
{
	if (!mm->cfg.policy.kcompactd)
		return;
	if (order > mm->kcompactd_max_order)
		mm->kcompactd_max_order = order;
	if (mm->kcompactd_awake)
		return;
	if (kcompactd_order_met(mm, order) || !suitable(compaction_suitable(mm, order, WMARK_MIN)))
		return;
	mm->kcompactd_awake = true;
}

/* proactive_compact_node: whole zone, SYNC_LIGHT, skip hints ignored, until the
 * fragmentation score drops to the low threshold. Returns -1 if the score did not call for
 * it, 1 if the score improved, 0 if not. */
int proactive_compact_node(struct mm *mm, void *call)
{
	unsigned low = mm->cfg.policy.proactiveness >= 95 ? 5 : 100 - mm->cfg.policy.proactiveness;
	unsigned high = low + 10 > 100 ? 100 : low + 10, before = fragmentation_score(mm);
	struct fault_ctx fc = {.call = call};
	struct compact_control cc = {
	    .order = -1,
	    .migratetype = MM_MT_MOVABLE,
	    .mode = MM_MIGRATE_SYNC_LIGHT,
	    .alloc_flags = WMARK_MIN,
	    .whole_zone = true,
	    .ignore_skip_hint = true,
	    .proactive = true,
	    .proactive_low = low,
	    .fc = &fc,
	};

	init_targets(&cc);
	if (!mm->cfg.policy.proactiveness || mm->kswapd_awake || before <= high)
		return -1;
	count_event(mm, MM_STAT_COMPACT_DAEMON_WAKE, 1);
	compact_zone(mm, &cc);
	return fragmentation_score(mm) < before;
}

unsigned mm_fragmentation_score(struct mm *mm)
{
	unsigned s;

	mm_lock(mm);
	s = fragmentation_score(mm);
	mm_unlock(mm);
	return s;
}

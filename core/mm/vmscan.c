/* Page reclaim of the page cache: direct reclaim for allocations that failed at MIN, and
 * kswapd.
 *
 * Mirrors mm/vmscan.c of Linux 3.1, 3.2, 3.3 and 6.12:
 *  - do_try_to_free_pages' priority loop (DEF_PRIORITY 12 .. 0), nr_to_reclaim =
 *    SWAP_CLUSTER_MAX counted per pass, get_scan_count's lru >> priority (forced to
 *    SWAP_CLUSTER_MAX when 0 for 3.1/3.2 kswapd, and 3.3 kswapd over an all_unreclaimable
 *    zone: force_scan), shrink_zones'
 *    costly-order skip (3.2: compaction_suitable || compaction_deferred; 3.3:
 *    compaction_ready; 6.12: compaction_ready), shrink_zone / shrink_node with
 *    should_continue_reclaim (reclaim/compaction keeps going until 2 << order pages are
 *    reclaimed or compaction could run);
 *  - isolate_lru_pages: 3.1-3.3 take, for an order > 0, each tail page's inactive page-cache
 *    neighbours in its order-aligned block as well (the order check that stopped this in
 *    reclaim/compaction mode came in 3.4), so a THP's direct reclaim sees recent dirty and
 *    writeback pages next to old clean ones;
 *  - shrink_inactive_list + shrink_page_list: clean unlocked page cache is freed; a referenced
 *    dirty page is kept (PAGEREF_RECLAIM_CLEAN); 3.1 writes dirty pages out from direct reclaim
 *    (pageout); 3.2+ never does (kept, or activated in 6.12); pages under writeback are kept.
 *  - the 3.1-3.4 synchronous second pass (set_reclaim_mode / should_reclaim_stall /
 *    reset_reclaim_mode): for order > PAGE_ALLOC_COSTLY_ORDER, when not every isolated page was
 *    freed and no page in the batch reset the mode, shrink_page_list runs again in
 *    RECLAIM_MODE_SYNC and waits on the writeback of the pages it kept (until v3.5, commit
 *    41ac199 "mm: vmscan: do not stall on writeback during memory compaction");
 *  - kswapd's balance_pgdat to the HIGH watermark at the woken order (order 0 once
 *    compact_gap pages are reclaimed), watermark boost reset, and the 6.12 hand-off to
 *    kcompactd before sleeping; 3.x's loop_again (a round that reclaimed SWAP_CLUSTER_MAX
 *    starts again at DEF_PRIORITY) and its congestion_wait nap after passes below
 *    DEF_PRIORITY - 2.
 * Anonymous memory is never reclaimed (no swap is modelled). 6.12's kswapd does not write
 * dirty pages (the flusher, core/io, does); 3.x's does (reclaim_may_pageout).
 */
#include <errno.h>

#include "mm/internal.h"

#define SWAP_CLUSTER_MAX 32
#define DEF_PRIORITY	 12
#define COSTLY_ORDER	 3

/* reclaim_mode bits (3.x) */
#define RM_SINGLE     0x1
#define RM_ASYNC      0x2
#define RM_SYNC	      0x4
#define RM_COMPACTION 0x8

struct scan_control {
	uint32_t nr_to_reclaim;
	uint32_t nr_scanned;
	uint32_t nr_reclaimed;
	unsigned order;
	unsigned gfp;
	int priority;
	bool kswapd;
	bool compaction_ready; /* shrink_zones skipped the zone for compaction */
	unsigned reclaim_mode; /* 3.x RM_* of the current batch */
	bool stale;	       /* the model was repaired under it: its batch is gone, stop */
	uint32_t nr_dirty;     /* this shrink_page_list: dirty pages met */
	uint32_t nr_congested; /* ... kept because the device was congested */
	uint32_t nr_writeback; /* ... under writeback */
	bool chain;	       /* the batch is one run off the inactive tail, still linked */
	struct fault_ctx *fc;
};

/* PV_STALE: a hook found the model repaired (mm_repair) when it relocked: the batch is gone. */
enum page_verdict { PV_RECLAIMED, PV_KEEP, PV_KEEP_LUMPY, PV_ACTIVATE, PV_STALE };

/* ---- Per-batch reclaim ---------------------------------------------------------------------- */

static void set_reclaim_mode(struct scan_control *sc, bool sync)
{
	unsigned syncmode = sync ? RM_SYNC : RM_ASYNC;

	sc->reclaim_mode = RM_COMPACTION;
	if (sc->order > COSTLY_ORDER)
		sc->reclaim_mode |= syncmode;
	else if (sc->order && sc->priority < DEF_PRIORITY - 2)
		sc->reclaim_mode |= syncmode;
	else
		sc->reclaim_mode = RM_SINGLE | RM_ASYNC;
}

static void reset_reclaim_mode(struct scan_control *sc)
{
	sc->reclaim_mode = RM_SINGLE | RM_ASYNC;
}

/* should_reclaim_stall: a synchronous second pass for lumpy / reclaim-compaction batches that
 * left pages behind. */
static bool should_reclaim_stall(struct mm *mm, struct scan_control *sc, uint32_t taken,
				 uint32_t freed)
{
	if (!mm->cfg.policy.reclaim_waits_writeback || sc->kswapd)
		return false;
	if ((sc->reclaim_mode & RM_SINGLE) || freed == taken)
		return false;
	if (sc->order > COSTLY_ORDER)
		return true;
	return sc->priority <= DEF_PRIORITY / 3;
}

static void reclaim_frame(struct mm *mm, uint32_t pfn)
{
	struct mm_frame *f = pfn_frame(mm, pfn);

	f->flags &= (uint8_t)~FF_ISOLATED;
	mm->nr_isolated--;
	if (!(f->flags & FF_GONE))
		pc_delete(mm, pfn);
	frame_free_owned(mm, pfn, NULL);
}

/* ---- Throttles ------------------------------------------------------------------------------ */

/* congestion_wait / wait_iff_congested / reclaim_throttle: sleep in the environment with the
 * lock dropped, charge the time to cause, and report the wait if it slept. */
__stall_frame int throttle_nap(struct mm *mm, struct fault_ctx *fc, enum mm_wait_kind kind,
			       uint64_t timeout_ns, bool iff_congested, enum mm_cause cause)
{
	uint64_t t0 = mm_now(mm, fc->call), epoch, ns;
	bool same;

	epoch = mm_unlock_for_hook(mm);
	mm_hook_throttle(mm, fc->call, kind, timeout_ns, iff_congested);
	same = mm_relock_after_hook(mm, epoch);
	ns = mm_now(mm, fc->call) - t0;
	fc->cause_ns[cause] += ns;
	fc->hook_ns += ns;
	if (ns) {
		if (kind != MM_WAIT_COMPACT_ISOLATED && kind != MM_WAIT_RECLAIM_ISOLATED)
			count_event(mm, MM_STAT_THROTTLE_CONGESTION, 1);
		mm_report_wait(mm, fc, kind, t0, ns, MM_NO_PFN, 0);
	}
	return same ? 0 : -ESTALE;
}

/* 3.x wait_iff_congested(zone, BLK_RW_ASYNC, HZ/10) (mm/backing-dev.c): sleep only if the zone
 * is flagged ZONE_CONGESTED and some device is congested (the environment checks the second);
 * otherwise cond_resched. */
static void wait_iff_congested(struct mm *mm, struct scan_control *sc)
{
	if (!mm->cfg.policy.reclaim_throttles || !mm->zone_congested)
		return;
	if (throttle_nap(mm, sc->fc, MM_WAIT_RECLAIM_CONGESTED, NSEC_PER_HZ_10, true,
			 MM_CAUSE_RECLAIM_THROTTLE))
		sc->stale = true;
}

/* shrink_inactive_list's too_many_isolated (direct reclaim only: kswapd is exempt): more
 * page-cache pages isolated than on the inactive list. Isolated pages are not counted per LRU
 * here; every isolated frame but compaction's free targets counts. */
static bool reclaim_too_many_isolated(const struct mm *mm, const struct scan_control *sc)
{
	if (sc->kswapd)
		return false;
	return mm->nr_isolated - mm->nr_isolated_free > mm->nr_lru[0];
}

/* The loop before isolating: 3.x congestion_wait(BLK_RW_ASYNC, HZ/10), 6.12
 * reclaim_throttle(VMSCAN_THROTTLE_ISOLATED) up to HZ/50, until the count drops (a fatal signal
 * ends it in the kernel; a bound of 100 naps stands in for it here). */
static void throttle_isolated(struct mm *mm, struct scan_control *sc)
{
	unsigned naps = 0;

	if (!mm->cfg.policy.reclaim_throttles)
		return;
	while (reclaim_too_many_isolated(mm, sc) && naps++ < 100 && !sc->stale) {
		count_event(mm, MM_STAT_THROTTLE_ISOLATED, 1);
		if (throttle_nap(mm, sc->fc, MM_WAIT_RECLAIM_ISOLATED,
				 era_modern(mm) ? NSEC_PER_HZ_50 : NSEC_PER_HZ_10, false,
				 MM_CAUSE_RECLAIM_THROTTLE))
			sc->stale = true;
	}
}

/* ---- Dirty pages ------------------------------------------------------------------------------
 */

/* Does this reclaimer write dirty page cache itself? Direct reclaim: 3.1 only (3.2's
 * ee72886d8ed5 "mm: vmscan: do not writeback filesystem pages in direct reclaim"). kswapd: 3.1
 * always (PF_SWAPWRITE, any unreferenced dirty page it reaches); 3.2 and 3.3 only under
 * pressure, priority < DEF_PRIORITY - 2 (f84f6e2b0868 "mm: vmscan: do not writeback
 * filesystem pages in kswapd except in high priority"); 6.12 not here (see README). */
static bool reclaim_may_pageout(const struct mm *mm, const struct scan_control *sc)
{
	if (!sc->kswapd)
		return mm->cfg.policy.reclaim_writeout;
	switch (mm->cfg.policy.kswapd_write) {
	case MM_KSWAPD_WRITE_ALWAYS:
		return true;
	case MM_KSWAPD_WRITE_PRESSURE:
		return sc->priority < DEF_PRIORITY - 2;
	default:
		return false;
	}
}

/* 3.1-3.4 may_write_to_queue: kswapd (PF_SWAPWRITE) and a costly order ("lumpy reclaim for
 * hugepage often need a lot of write", removed with lumpy reclaim in 3.5) write whatever the
 * queue; anyone else only to a device that is not congested. */
static bool may_write_to_queue(struct mm *mm, const struct scan_control *sc)
{
	return sc->kswapd || sc->order > COSTLY_ORDER || !mm_hook_congested(mm, sc->fc->call);
}

static void set_pg_reclaim(struct mm_frame *f, bool on)
{
	f->order = (uint8_t)(on ? f->order | ORDER_RECLAIM : f->order & ~ORDER_RECLAIM);
}

/* A dirty page found by reclaim (shrink_page_list's PageDirty branch). */
static enum page_verdict dirty_verdict(struct mm *mm, struct scan_control *sc, uint32_t pfn,
				       bool referenced)
{
	struct mm_frame *f = pfn_frame(mm, pfn);
	int ret;

	sc->nr_dirty++;
	if (!reclaim_may_pageout(mm, sc)) {
		if (era_modern(mm))
			return PV_ACTIVATE;
		if (mm->cfg.policy.era != MM_ERA_3_1) {
			/* 3.2 49ea7eb65e7c: reclaim it at once when its writeback ends */
			set_pg_reclaim(f, true);
			count_event(mm, MM_STAT_NR_VMSCAN_IMMEDIATE, 1);
		}
		return PV_KEEP;
	}
	if (referenced || !(sc->gfp & GFP_FS))
		return PV_KEEP; /* PAGEREF_RECLAIM_CLEAN; !may_enter_fs */
	if (!may_write_to_queue(mm, sc)) {
		sc->nr_congested++; /* pageout's PAGE_KEEP */
		return PV_KEEP;
	}
	if (mm->cfg.policy.fs == MM_FS_EXT4)
		return PV_KEEP;	 /* ext4_da_writepage redirties a delalloc page: nothing written */
	set_pg_reclaim(f, true); /* pageout: SetPageReclaim before ->writepage */
	ret = reclaim_writeout(mm, sc->fc, pfn);
	if (ret) {
		set_pg_reclaim(f, false);
		return ret == -ESTALE ? PV_STALE : PV_KEEP;
	}
	if ((sc->reclaim_mode & RM_SYNC) && frame_under_wb(f) &&
	    wait_on_frame_writeback(mm, sc->fc, pfn, 0, MM_CAUSE_RECLAIM_WB_WAIT) == -ESTALE)
		return PV_STALE;
	if (frame_under_wb(f) || (f->flags & (FF_DIRTY | FF_LOCKED)))
		return frame_under_wb(f) ? PV_KEEP_LUMPY : PV_KEEP;
	return PV_RECLAIMED;
}

/* shrink_page_list's decision for one isolated page-cache frame. */
static enum page_verdict shrink_page(struct mm *mm, struct scan_control *sc, uint32_t pfn)
{
	struct mm_frame *f = pfn_frame(mm, pfn);
	bool referenced;

	if (f->flags & FF_GONE)
		return frame_under_wb(f) ? PV_KEEP_LUMPY : PV_RECLAIMED;
	if (f->flags & FF_LOCKED)
		return PV_KEEP; /* trylock_page failed */
	sc->nr_scanned++;
	if (frame_under_wb(f)) {
		sc->nr_writeback++;
		if (!(sc->reclaim_mode & RM_SYNC) || !(sc->gfp & GFP_FS))
			return era_modern(mm) ? PV_ACTIVATE : PV_KEEP_LUMPY;
		if (wait_on_frame_writeback(mm, sc->fc, pfn, 0, MM_CAUSE_RECLAIM_WB_WAIT) ==
		    -ESTALE)
			return PV_STALE;
		if ((f->flags & FF_GONE) && !frame_under_wb(f))
			return PV_RECLAIMED;
		if (frame_under_wb(f) || (f->flags & FF_LOCKED))
			return PV_KEEP;
	}
	referenced = f->flags & FF_REFERENCED; /* PAGEREF_RECLAIM_CLEAN */
	f->flags &= (uint8_t)~FF_REFERENCED;
	if (f->flags & FF_DIRTY)
		return dirty_verdict(mm, sc, pfn, referenced);
	return PV_RECLAIMED;
}

/* One shrink_page_list pass over the batch: frees what it can, compacts the rest in place.
 * Returns the number reclaimed. */
__stall_frame static uint32_t shrink_page_list(struct mm *mm, struct scan_control *sc,
					       uint32_t *pfns, uint32_t *n)
{
	uint32_t kept = 0, reclaimed = 0;

	sc->nr_dirty = sc->nr_congested = 0;
	for (uint32_t i = 0; i < *n; i++) {
		uint32_t pfn = pfns[i];

		switch (shrink_page(mm, sc, pfn)) {
		case PV_RECLAIMED:
			reclaim_frame(mm, pfn);
			reclaimed++;
			continue;
		case PV_ACTIVATE:
			pfn_frame(mm, pfn)->flags |= FF_ACTIVE;
			reset_reclaim_mode(sc);
			break;
		case PV_KEEP:
			reset_reclaim_mode(sc);
			break;
		case PV_KEEP_LUMPY:
			break;
		case PV_STALE:
			sc->stale = true; /* the repair put the batch back: forget it */
			kept = 0;
			goto out;
		}
		pfns[kept++] = pfn;
	}
out:
	*n = kept;
	mm_charge(mm, sc->fc->call, MM_COST_RECLAIM_PAGE, reclaimed);
	/* 3.x: every dirty page it tried to write met a congested device */
	if (!era_modern(mm) && sc->nr_dirty && sc->nr_dirty == sc->nr_congested &&
	    !mm->zone_congested) {
		mm->zone_congested = true;
		count_event(mm, MM_STAT_ZONE_CONGESTED, 1);
	}
	return reclaimed;
}

/* The most one batch can hold: SWAP_CLUSTER_MAX pages from the LRU tail, the last of which
 * may bring the rest of its order-9 block along (isolate_lumpy_neighbours). */
#define MAX_BATCH (SWAP_CLUSTER_MAX + MM_HPAGE_NR)

static void isolate_for_reclaim(struct mm *mm, uint32_t pfn, uint32_t *pfns, uint32_t *taken)
{
	lru_del(mm, pfn);
	pfn_frame(mm, pfn)->flags |= FF_ISOLATED;
	mm->nr_isolated++;
	pfns[(*taken)++] = pfn;
}

/* 3.1-3.3 isolate_lru_pages for order > 0: after each page taken from the LRU tail, the other
 * inactive page-cache pages of its order-aligned block are taken as well, walking up from the
 * block's start: free frames are stepped over, anything else (anon, unmovable, an active or
 * already isolated page, a THP) ends the walk. This ran in RECLAIM_MODE_COMPACTION too: the
 * test was only "if (!order) continue;" until v3.4 (commit fe2c2a106663, "mm: reclaim at order
 * 0 when compaction is enabled", made it skip unless RECLAIM_MODE_LUMPYRECLAIM). Every page
 * taken this way counts against nr_to_scan. Returns the pages it took. */
static uint32_t isolate_lumpy_neighbours(struct mm *mm, struct scan_control *sc, uint32_t tag,
					 uint32_t *pfns, uint32_t *taken)
{
	uint32_t start = tag & ~((1U << sc->order) - 1), end = start + (1U << sc->order), n = 0;

	if (end > mm->nr_frames)
		end = mm->nr_frames;
	for (uint32_t pfn = start; pfn < end; pfn++) {
		const struct mm_frame *f = pfn_frame(mm, pfn);

		if (pfn == tag)
			continue;
		if (f->state == FS_FILE && !(f->flags & (FF_ISOLATED | FF_ACTIVE))) {
			isolate_for_reclaim(mm, pfn, pfns, taken);
			n++;
			continue;
		}
		if (f->state == FS_FREE && !(f->flags & FF_ISOLATED))
			continue; /* a free page (page_count 0): step over it */
		break;
	}
	return n;
}

/* 3.x zone->pages_scanned: shrink_inactive_list and shrink_active_list add the pages
 * isolate_lru_pages scanned (global reclaim, kswapd's and direct), and free_one_page /
 * free_pcppages_bulk (mm/page_alloc.c, 3.1.3, 3.2.0, 3.3.8) clear it and
 * zone->all_unreclaimable on every free to the buddy allocator ("to hold off the 'all pages
 * are pinned' detection logic"). The model clears both lazily: when MM_STAT_PGFREE, which
 * free_frames counts, has moved since the last look. */
static void zone_scan_sync(struct mm *mm)
{
	if (mm->stats[MM_STAT_PGFREE] != mm->pages_scanned_pgfree) {
		mm->pages_scanned_pgfree = mm->stats[MM_STAT_PGFREE];
		mm->pages_scanned = 0;
		mm->all_unreclaimable = false;
	}
}

static void zone_scanned(struct mm *mm, uint32_t n)
{
	zone_scan_sync(mm);
	mm->pages_scanned += n;
}

/* 3.x mm/vmscan.c zone_reclaimable: pages_scanned < zone_reclaimable_pages * 6, the
 * reclaimable pages being the file LRU's (anon's only with swap, which the model has not). */
static bool zone_reclaimable(struct mm *mm)
{
	zone_scan_sync(mm);
	return mm->pages_scanned < ((uint64_t)mm->nr_lru[0] + mm->nr_lru[1]) * 6;
}

static bool zone_all_unreclaimable(struct mm *mm)
{
	zone_scan_sync(mm);
	return mm->all_unreclaimable;
}

/* isolate_lru_pages from the inactive list: up to nr pages from the tail (3.x high-order
 * reclaim adds each one's block neighbours). Returns the number taken. */
static uint32_t isolate_lru_pages(struct mm *mm, struct scan_control *sc, uint32_t nr,
				  uint32_t *pfns)
{
	uint32_t head = sentinel(mm, SENT_LRU_INACTIVE), taken = 0, scan = 0;
	bool lumpy = !era_modern(mm) && sc->order > 0;

	if (nr > SWAP_CLUSTER_MAX)
		nr = SWAP_CLUSTER_MAX;
	sc->chain = !lumpy;
	if (!lumpy) {
		uint32_t first = head, last = head; /* the run: the tail's page, the last taken */

		/* the tail's run taken off as one chain: the same frames, flags and counts as
		 * taking them one by one (isolate_for_reclaim) */
		for (uint32_t pfn = pfn_frame(mm, head)->prev; taken < nr && pfn != head;) {
			struct mm_frame *f = pfn_frame(mm, pfn);

			mm->nr_lru[(f->flags & FF_ACTIVE) ? 1 : 0]--;
			f->flags |= FF_ISOLATED;
			if (!taken)
				first = pfn;
			last = pfn;
			pfns[taken++] = pfn;
			pfn = f->prev;
		}
		mm->nr_isolated += taken;
		if (taken)
			flist_cut(mm, last, first);
		if (!era_modern(mm))
			zone_scanned(mm, taken);
		return taken;
	}
	for (; scan < nr && !flist_empty(mm, head); scan++) {
		uint32_t pfn = pfn_frame(mm, head)->prev;

		isolate_for_reclaim(mm, pfn, pfns, &taken);
		if (lumpy)
			scan += isolate_lumpy_neighbours(mm, sc, pfn, pfns, &taken);
	}
	zone_scanned(mm, scan); /* lumpy: 3.x only; its scan counts the neighbours taken */
	return taken;
}

/* putback_lru_pages for what shrink_page_list kept (3.1/3.2 mm/vmscan.c putback_lru_pages,
 * 3.3 putback_inactive_pages, 6.12 move_folios_to_lru: the first page isolated first, each
 * added at its list's head, include/linux/mm_inline.h add_page_to_lru_list /
 * lruvec_add_folio). Each page goes back to the head of its list (putback_frame), so a batch that
 * is still the chain isolate_lru_pages cut off the inactive tail - nothing freed, every page still
 * inactive page cache of a live owner, the links unchanged - comes back as that chain at the
 * inactive head, in the order the page-by-page putback leaves. */
static void putback_batch(struct mm *mm, struct scan_control *sc, uint32_t *pfns, uint32_t taken,
			  uint32_t left)
{
	bool chain = sc->chain && left == taken && left;

	for (uint32_t i = 0; chain && i < left; i++) {
		const struct mm_frame *f = pfn_frame(mm, pfns[i]);

		chain = f->state == FS_FILE && !(f->flags & (FF_GONE | FF_ACTIVE)) &&
			(i + 1 == left ||
			 (f->prev == pfns[i + 1] && pfn_frame(mm, pfns[i + 1])->next == pfns[i]));
	}
	if (!chain) {
		for (uint32_t i = 0; i < left; i++)
			putback_frame(mm, pfns[i]);
		return;
	}
	for (uint32_t i = 0; i < left; i++)
		pfn_frame(mm, pfns[i])->flags &= (uint8_t) ~(FF_ISOLATED | FF_MIGRATING);
	mm->nr_isolated -= left;
	mm->nr_lru[0] += left;
	flist_splice(mm, sentinel(mm, SENT_LRU_INACTIVE), pfns[left - 1], pfns[0]);
}

/* shrink_inactive_list: isolate up to nr frames from the inactive tail, reclaim them (twice,
 * synchronously, when should_reclaim_stall says so), put the rest back. */
static void shrink_inactive_list(struct mm *mm, struct scan_control *sc, uint32_t nr)
{
	uint32_t pfns[MAX_BATCH], taken, left, freed;

	throttle_isolated(mm, sc);
	if (sc->stale)
		return;
	taken = isolate_lru_pages(mm, sc, nr, pfns);
	mm_charge(mm, sc->fc->call, MM_COST_RECLAIM_PAGE, taken);
	set_reclaim_mode(sc, false);
	left = taken;
	sc->nr_writeback = 0;
	freed = shrink_page_list(mm, sc, pfns, &left);
	if (!sc->stale && should_reclaim_stall(mm, sc, taken, freed)) {
		set_reclaim_mode(sc, true);
		count_event(mm, MM_STAT_PGSCAN_DIRECT_THROTTLE, 1);
		freed += shrink_page_list(mm, sc, pfns, &left);
	}
	sc->nr_reclaimed += freed;
	if (sc->stale)
		return; /* the repair put the batch back */
	putback_batch(mm, sc, pfns, taken, left);
	/* 3.2/3.3 (92df3a723f84 "mm: vmscan: throttle reclaim if encountering too many dirty
	 * pages under writeback"): nap when the batch's writeback share reaches
	 * 1 >> (DEF_PRIORITY - priority) */
	if ((mm->cfg.policy.era == MM_ERA_3_2 || mm->cfg.policy.era == MM_ERA_3_3) &&
	    sc->nr_writeback && sc->nr_writeback >= (taken >> (DEF_PRIORITY - sc->priority)))
		wait_iff_congested(mm, sc);
}

/* shrink_active_list: deactivate up to nr frames from the active tail. */
static void shrink_active_list(struct mm *mm, uint32_t nr)
{
	uint32_t head = sentinel(mm, SENT_LRU_ACTIVE), first = MM_NO_PFN, last = MM_NO_PFN, n = 0;

	/* each page from the active tail to the inactive head, one by one, leaves the run in
	 * its order: it moves as one chain */
	for (uint32_t pfn = pfn_frame(mm, head)->prev; nr-- && pfn != head;) {
		struct mm_frame *f = pfn_frame(mm, pfn);

		mm->nr_lru[(f->flags & FF_ACTIVE) ? 1 : 0]--;
		f->flags &= (uint8_t) ~(FF_ACTIVE | FF_REFERENCED);
		mm->nr_lru[0]++;
		if (last == MM_NO_PFN)
			last = pfn;
		first = pfn;
		pfn = f->prev;
		n++;
	}
	if (!era_modern(mm))
		zone_scanned(mm, n);
	if (first == MM_NO_PFN)
		return;
	flist_cut(mm, first, last);
	flist_splice(mm, sentinel(mm, SENT_LRU_INACTIVE), first, last);
}

/* ---- Reclaim/compaction interplay ------------------------------------------------------------ */

static bool compaction_go(enum mm_compact_result r)
{
	return r == MM_COMPACT_CONTINUE || r == MM_COMPACT_SUCCESS;
}

/* should_continue_reclaim: for reclaim/compaction, keep going until compaction has the 2 <<
 * order pages it needs (3.x: or would go ahead; 6.12: or the allocation could succeed). */
static bool should_continue_reclaim(struct mm *mm, struct scan_control *sc, uint32_t reclaimed)
{
	uint32_t gap = 2U << sc->order, inactive = mm->nr_lru[0];

	if (!reclaimed || sc->kswapd || sc->stale)
		return false;
	if (era_modern(mm)) {
		if (!(sc->order > COSTLY_ORDER || (sc->order && sc->priority < DEF_PRIORITY - 2)))
			return false;
		if (zone_watermark_ok(mm, sc->order, wmark_pages(mm, WMARK_MIN), 0) ||
		    compaction_go(compaction_suitable(mm, sc->order, WMARK_MIN)))
			return false;
		return inactive > gap;
	}
	if (!(sc->reclaim_mode & RM_COMPACTION))
		return false;
	if (sc->nr_reclaimed < gap && inactive > gap)
		return true;
	return !compaction_go(compaction_suitable(mm, sc->order, WMARK_MIN));
}

/* compaction_ready: enough free memory that compaction, not reclaim, should run. 3.3 also
 * consults (and advances) the deferral state. */
static bool compaction_ready(struct mm *mm, struct scan_control *sc)
{
	uint32_t gap = 2U << sc->order;

	if (era_modern(mm)) {
		if (zone_watermark_ok(mm, sc->order, wmark_pages(mm, WMARK_MIN), 0))
			return true;
		if (!compaction_go(compaction_suitable(mm, sc->order, WMARK_MIN)))
			return false;
		return zone_watermark_ok(mm, 0, wmark_pages(mm, WMARK_HIGH) + gap, 0);
	} else {
		uint32_t balance_gap = (mm->nr_frames + 99) / 100;
		bool ok;

		if (balance_gap > wmark_pages(mm, WMARK_LOW))
			balance_gap = wmark_pages(mm, WMARK_LOW);
		ok = zone_watermark_ok(mm, 0, wmark_pages(mm, WMARK_HIGH) + balance_gap + gap, 0);
		if (compaction_deferred(mm, sc->order))
			return ok;
		if (!compaction_go(compaction_suitable(mm, sc->order, WMARK_MIN)))
			return false;
		return ok;
	}
}

/* shrink_zones' costly-order check: skip reclaim because compaction should run instead. */
static bool skip_zone_for_compaction(struct mm *mm, struct scan_control *sc)
{
	if (sc->order <= COSTLY_ORDER || sc->kswapd)
		return false;
	switch (mm->cfg.policy.reclaim_skip) {
	case MM_RECLAIM_SKIP_SUITABLE_OR_DEFERRED:
		return compaction_go(compaction_suitable(mm, sc->order, WMARK_MIN)) ||
		       compaction_deferred(mm, sc->order);
	case MM_RECLAIM_SKIP_READY:
		return compaction_ready(mm, sc);
	default:
		return false;
	}
}

/* get_scan_count's force_scan: may a pass whose lru >> priority is 0 scan SWAP_CLUSTER_MAX
 * anyway?
 *  - 3.1 and 3.2 (mm/vmscan.c get_scan_count, 3.1.3 and 3.2.0): global kswapd always
 *    ("if (scanning_global_lru(sc) && current_is_kswapd()) force_scan = true;") and memcg
 *    reclaim; never global direct reclaim ("Global direct reclaim can go to the next zone and
 *    tends to have no problems"). 3.1 takes SWAP_CLUSTER_MAX split by the anon/file fractions
 *    (nr_force_scan[], all of it file without swap), 3.2 SWAP_CLUSTER_MAX scaled by the same
 *    fraction (1 for file without swap): both 32 file pages here.
 *  - 3.3 (3.3.8 get_scan_count, from b95a2f2d "mm: vmscan: convert global reclaim to per-memcg
 *    LRU lists", v3.3-rc1): "if (current_is_kswapd() && mz->zone->all_unreclaimable)
 *    force_scan = true;" - kswapd forces only over a zone that balance_pgdat found
 *    unreclaimable (zone_reclaimable: pages_scanned >= 6 x reclaimable pages since the last
 *    free) and that no page has been freed to since; direct reclaim never.
 * So a 3.x direct reclaim pass over fewer than 1 << priority inactive pages scans nothing,
 * reclaims nothing, and should_continue_reclaim stops it (no __GFP_REPEAT), and so does 3.3
 * kswapd's over a reclaimable zone. 6.1 and 6.12 mm/vmscan.c get_scan_count have no
 * force_scan at all: after "scan >>= sc->priority" the only floor is
 * "if (!scan && !mem_cgroup_online(memcg)) scan = min(lruvec_size, SWAP_CLUSTER_MAX)", for a
 * deleted cgroup (the root memcg the model stands for is always online; the max(scan,
 * SWAP_CLUSTER_MAX) before the shift is for memory.min/low protection, not modelled), so
 * neither kswapd nor direct reclaim scans a list shorter than 1 << priority. */
static bool force_scan(struct mm *mm, const struct scan_control *sc)
{
	if (!sc->kswapd || era_modern(mm))
		return false;
	if (mm->cfg.policy.era == MM_ERA_3_3)
		return zone_all_unreclaimable(mm);
	return true;
}

/* shrink_zone / shrink_node at sc->priority: passes over lru >> priority, each stopping (below
 * DEF_PRIORITY) once it has itself reclaimed nr_to_reclaim, restarted while
 * should_continue_reclaim says so. */
static void shrink_node(struct mm *mm, struct scan_control *sc)
{
	uint32_t before;

	/* 6.12 shrink_node_memcgs -> shrink_slab: the THP shrinker (split.c) at this priority */
	shrink_thp(mm, sc->priority, sc->fc->call, &sc->stale);
	if (sc->stale)
		return;
	do {
		uint32_t nr_in = mm->nr_lru[0] >> sc->priority,
			 nr_act = mm->nr_lru[1] >> sc->priority;

		before = sc->nr_reclaimed;
		if (!nr_in && mm->nr_lru[0] && force_scan(mm, sc))
			nr_in = mm->nr_lru[0] < SWAP_CLUSTER_MAX ? mm->nr_lru[0] : SWAP_CLUSTER_MAX;
		while ((nr_in || nr_act) && !sc->stale) {
			uint32_t batch;

			if (nr_act) {
				batch = nr_act < SWAP_CLUSTER_MAX ? nr_act : SWAP_CLUSTER_MAX;
				if (mm->nr_lru[1] > mm->nr_lru[0])
					shrink_active_list(mm, batch);
				nr_act -= batch;
			}
			if (nr_in) {
				batch = nr_in < SWAP_CLUSTER_MAX ? nr_in : SWAP_CLUSTER_MAX;
				shrink_inactive_list(mm, sc, batch);
				nr_in -= batch;
			}
			/* the pass's own count, reset at each restart: 3.1 shrink_zone's local
			 * nr_reclaimed, 3.3 shrink_mem_cgroup_zone's, 6.12 shrink_lruvec's */
			if (sc->nr_reclaimed - before >= sc->nr_to_reclaim &&
			    sc->priority < DEF_PRIORITY)
				break;
		}
	} while (should_continue_reclaim(mm, sc, sc->nr_reclaimed - before));
}

static void do_try_to_free_pages(struct mm *mm, struct scan_control *sc)
{
	for (sc->priority = DEF_PRIORITY; sc->priority >= 0; sc->priority--) {
		uint32_t scanned = sc->nr_scanned;

		if (skip_zone_for_compaction(mm, sc)) {
			sc->compaction_ready = true;
			break;
		}
		shrink_node(mm, sc);
		/* an empty LRU still leaves shrink_slab's THP shrinker, whose volume grows as the
		 * priority drops (6.12 shrink_node calls it at every priority) */
		if (sc->nr_reclaimed >= sc->nr_to_reclaim ||
		    (!(mm->nr_lru[0] + mm->nr_lru[1]) && !mm->nr_split_queue) || sc->stale)
			break;
		/* 3.x "Take a nap, wait for some writeback to complete": after a pass that
		 * scanned something at priority < DEF_PRIORITY - 2 */
		if (!era_modern(mm) && sc->nr_scanned != scanned &&
		    sc->priority < DEF_PRIORITY - 2) {
			wait_iff_congested(mm, sc);
			if (sc->stale)
				break;
		}
	}
}

/* try_to_free_pages: direct reclaim for an allocation of ac->order. Returns frames freed. */
__stall_frame uint32_t try_to_free_pages(struct mm *mm, struct alloc_ctx *ac)
{
	struct fault_ctx none = {0};
	struct scan_control sc = {
	    .nr_to_reclaim = SWAP_CLUSTER_MAX,
	    .order = ac->order,
	    .gfp = ac->gfp,
	    .fc = ac->fc ? ac->fc : &none,
	};
	uint32_t scanned;

	count_event(mm, MM_STAT_ALLOCSTALL, 1);
	do_try_to_free_pages(mm, &sc);
	scanned = sc.nr_scanned;
	count_event(mm, MM_STAT_PGSCAN_DIRECT, scanned);
	count_event(mm, MM_STAT_PGSTEAL_DIRECT, sc.nr_reclaimed);
	if (sc.fc->rec)
		sc.fc->rec->reclaimed += sc.nr_reclaimed;
	return sc.nr_reclaimed;
}

/* ---- kswapd -----------------------------------------------------------------------------------
 */

/* 6.15 mm/vmscan.c pgdat_balanced: HIGH at the order; under vm.defrag_mode an order > 0 check
 * counts free memory in whole pageblocks (NR_FREE_PAGES_BLOCKS), so that kswapd, woken at
 * pageblock order, reclaims until compaction has whole blocks to work with. Once balance_pgdat
 * has reclaimed compact_gap and dropped to order 0 the plain count applies and kswapd hands
 * over to kcompactd (the "defrag_mode && order" of Johannes Weiner's fix in the 6.15 series). */
static bool pgdat_balanced(struct mm *mm, unsigned order)
{
	if (defrag_mode(mm) && order)
		return zone_watermark_ok_blocks(mm, order, wmark_pages(mm, WMARK_HIGH));
	return zone_watermark_ok(mm, order, wmark_pages(mm, WMARK_HIGH), 0);
}

/* wakeup_kswapd: 3.x wakes it unless the zone is fine at LOW for the order; 6.12 records the
 * order and, when the zone is balanced at HIGH, hands a no-direct-reclaim caller to
 * kcompactd instead. */
void wakeup_kswapd(struct mm *mm, unsigned order, unsigned gfp)
{
	if (!mm->cfg.policy.kswapd)
		return;
	if (order > mm->kswapd_order)
		mm->kswapd_order = order;
	if (mm->kswapd_awake)
		return;
	if (era_modern(mm)) {
		if (pgdat_balanced(mm, order) && !mm->watermark_boost) {
			if (!(gfp & GFP_DIRECT_RECLAIM))
				wakeup_kcompactd(mm, order);
			return;
		}
	} else if (zone_watermark_ok(mm, order, wmark_pages(mm, WMARK_LOW), 0)) {
		return;
	}
	mm->kswapd_awake = true;
	count_event(mm, MM_STAT_KSWAPD_WAKE, 1);
}

/* 3.x balance_pgdat's "OK, kswapd is getting into trouble. Take a nap": after a pass that
 * scanned below DEF_PRIORITY - 2 and left the zone unbalanced, congestion_wait(BLK_RW_ASYNC,
 * HZ/10) - unless the zone is below MIN at the order (has_under_min_watermark_zone; the
 * kernel counts KSWAPD_SKIP_CONGESTION_WAIT, the model does not). Identical in 3.1.0, 3.2.7
 * and 3.3.8 mm/vmscan.c. */
static bool kswapd_should_nap(struct mm *mm, const struct scan_control *sc, uint32_t round_scanned)
{
	if (!round_scanned || sc->priority >= DEF_PRIORITY - 2)
		return false;
	return zone_watermark_ok(mm, sc->order, wmark_pages(mm, WMARK_MIN), 0);
}

/* 3.x balance_pgdat's end of a round: "goto loop_again" at DEF_PRIORITY once the round has
 * reclaimed SWAP_CLUSTER_MAX ("so kswapd doesn't build up large priorities for example when
 * it is freeing in parallel with allocators"). */
static bool kswapd_loop_again(uint32_t round_reclaimed)
{
	return round_reclaimed >= SWAP_CLUSTER_MAX;
}

/* balance_pgdat: reclaim toward HIGH at the order (dropping to order 0 once compact_gap is
 * reclaimed). Returns frames reclaimed; *again: 3.x, a sweep down to priority 0 left the zone
 * unbalanced (the kernel's cond_resched and "goto loop_again": run again at once, at
 * *again_order).
 *
 * 3.x (mm/vmscan.c balance_pgdat, the same loop in 3.1.0, 3.2.7 and 3.3.8; 3.3 only adds
 * highmem's buffer_heads_over_limit and renames the memcg field): nr_to_reclaim is ULONG_MAX
 * ("kswapd doesn't want to be bailed out while reclaim"), each pass checks the zone, shrinks
 * it, naps (kswapd_should_nap), and a round that reclaimed SWAP_CLUSTER_MAX starts again at
 * DEF_PRIORITY with its counts reset (loop_again: total_scanned = 0, sc.nr_reclaimed = 0);
 * a round that ends short of SWAP_CLUSTER_MAX unbalanced drops to order 0 ("kswapd may
 * infinite loop") and starts again too. 6.12 lowers the priority every pass until balanced. */
__stall_frame static uint32_t balance_pgdat(struct mm *mm, unsigned order, void *call, bool *again,
					    unsigned *again_order)
{
	struct fault_ctx fc = {.call = call, .background = true};
	struct scan_control sc = {
	    .order = order, .gfp = GFP_HIGHUSER_MOVABLE, .kswapd = true, .fc = &fc};
	bool modern = era_modern(mm);
	uint32_t round_scanned = 0, round_start = 0, high = wmark_pages(mm, WMARK_HIGH);

	if (high < SWAP_CLUSTER_MAX)
		high = SWAP_CLUSTER_MAX;

	for (sc.priority = DEF_PRIORITY; sc.priority >= 0; sc.priority--) {
		uint32_t before = sc.nr_scanned;

		if (pgdat_balanced(mm, sc.order) && !mm->watermark_boost)
			break;
		/* 3.x: ULONG_MAX, "kswapd doesn't want to be bailed out while reclaim"; 6.12
		 * kswapd_shrink_node: the high watermark, per pass */
		sc.nr_to_reclaim = modern ? high : UINT32_MAX;
		shrink_node(mm, &sc);
		/* 3.x (3.1.3, 3.2.0, 3.3.8 balance_pgdat): "if (nr_slab == 0 &&
		 * !zone_reclaimable(zone)) zone->all_unreclaimable = 1;" (no 3.x shrinker is
		 * modelled: nr_slab is 0). Only 3.3's force_scan reads the flag; its other uses
		 * (balance_pgdat and shrink_zones skipping such a zone below DEF_PRIORITY,
		 * sleeping_prematurely counting it balanced) are not modelled, in any era. */
		if (!modern && !zone_reclaimable(mm))
			mm->all_unreclaimable = true;
		round_scanned += sc.nr_scanned - before;
		if (sc.order && sc.nr_reclaimed >= 2U << sc.order)
			sc.order = 0;
		if (mm->watermark_boost && pgdat_balanced(mm, 0))
			mm->watermark_boost = 0;
		if ((sc.nr_scanned == before && !mm->nr_lru[0] && !mm->nr_split_queue) || sc.stale)
			break;
		if (modern || (pgdat_balanced(mm, sc.order) && !mm->watermark_boost))
			continue; /* 3.x: balanced, "kswapd: all done" at the loop's top */
		if (mm->cfg.policy.reclaim_throttles && kswapd_should_nap(mm, &sc, round_scanned)) {
			if (throttle_nap(mm, &fc, MM_WAIT_RECLAIM_CONGESTED, NSEC_PER_HZ_10, false,
					 MM_CAUSE_RECLAIM_THROTTLE))
				break; /* the model was repaired under the nap */
		}
		if (kswapd_loop_again(sc.nr_reclaimed - round_start)) {
			round_scanned = 0;
			round_start = sc.nr_reclaimed;
			sc.priority = DEF_PRIORITY + 1; /* the decrement makes it DEF_PRIORITY */
			continue;
		}
		if (!sc.priority) {
			/* out: unbalanced; short of SWAP_CLUSTER_MAX the order drops to 0 */
			*again = true;
			if (sc.nr_reclaimed - round_start < SWAP_CLUSTER_MAX)
				*again_order = 0;
		}
	}
	/* balance_pgdat: a zone at its high watermark is no longer congested */
	if (pgdat_balanced(mm, 0))
		mm->zone_congested = false;
	count_event(mm, MM_STAT_PGSCAN_KSWAPD, sc.nr_scanned);
	count_event(mm, MM_STAT_PGSTEAL_KSWAPD, sc.nr_reclaimed);
	return sc.nr_reclaimed;
}

/* One kswapd run: balance, then go to sleep (6.12: reset skip bits if a direct compactor
 * asked for it, and wake kcompactd for the order). Returns ns until it wants to run again. */
uint64_t kswapd_run(struct mm *mm, void *call)
{
	unsigned order = mm->kswapd_order, again_order = order;
	bool again = false;
	uint32_t reclaimed = balance_pgdat(mm, order, call, &again, &again_order);
	bool balanced = pgdat_balanced(mm, 0);

	mm->watermark_boost = 0;
	mm->kswapd_awake = false;
	mm->kswapd_order = 0;
	if (!reclaimed && !balanced)
		mm->kswapd_failures++;
	else
		mm->kswapd_failures = 0;
	if (era_modern(mm)) {
		reset_isolation_suitable(mm);
		wakeup_kcompactd(mm, order);
	}
	if (again && !balanced) {
		mm->kswapd_awake = true; /* 3.x: cond_resched, then goto loop_again */
		mm->kswapd_order = again_order;
		return 0;
	}
	if (!balanced && reclaimed) {
		mm->kswapd_awake = true; /* kswapd_try_to_sleep's short nap, then again */
		return 100 * 1000000ULL;
	}
	return UINT64_MAX;
}

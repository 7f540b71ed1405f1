/* The allocation paths: fast path at the LOW watermark, then the era's slow path.
 *
 * Mirrors mm/page_alloc.c's __alloc_pages / __alloc_pages_slowpath, __alloc_pages_direct_compact
 * and __alloc_pages_direct_reclaim in the 3.1.0, 3.3.0 and 6.12 variants, and
 * mm/mempolicy.c's alloc_pages_mpol NUMA wrapper for PMD-order allocations. What runs is decided
 * by the gfp mask (built from the policy by fault.c) and the policy's fields; nothing here looks
 * at a profile's name. Every step is recorded in the fault record; time is attributed to the
 * step's own work, to writeback waits, to writeouts and to page copies separately.
 */
#include "mm/internal.h"

#define COSTLY_ORDER 3

/* wake_all_kswapds for the allocation (only when its gfp may wake kswapd); under
 * vm.defrag_mode at max(order, pageblock_order) (6.15 mm/page_alloc.c wake_all_kswapds). */
void wake_all_kswapds(struct mm *mm, struct alloc_ctx *ac)
{
	unsigned order = ac->order;

	if (defrag_mode(mm) && order < MM_PAGEBLOCK_ORDER)
		order = MM_PAGEBLOCK_ORDER;
	wakeup_kswapd(mm, order, ac->gfp);
	fault_step(ac->fc, MM_STEP_WAKE_KSWAPD, 1);
}

static uint32_t freelist_step(struct mm *mm, struct alloc_ctx *ac, unsigned alloc_flags,
			      enum mm_step step)
{
	uint32_t pfn = get_page_from_freelist(mm, ac, alloc_flags);

	fault_step(ac->fc, step, pfn != MM_NO_PFN);
	return pfn;
}

static enum mm_step compact_step(enum mm_migrate_mode mode)
{
	static const enum mm_step steps[] = {
	    [MM_MIGRATE_ASYNC] = MM_STEP_COMPACT_ASYNC,
	    [MM_MIGRATE_SYNC_LIGHT] = MM_STEP_COMPACT_SYNC_LIGHT,
	    [MM_MIGRATE_SYNC] = MM_STEP_COMPACT_SYNC,
	};

	return steps[mode];
}

static enum mm_cause compact_cause(enum mm_migrate_mode mode)
{
	static const enum mm_cause causes[] = {
	    [MM_MIGRATE_ASYNC] = MM_CAUSE_COMPACT_ASYNC,
	    [MM_MIGRATE_SYNC_LIGHT] = MM_CAUSE_COMPACT_SYNC_LIGHT,
	    [MM_MIGRATE_SYNC] = MM_CAUSE_COMPACT_SYNC,
	};

	return causes[mode];
}

/* Time accounting around a compaction or reclaim step. */
struct step_clock {
	uint64_t t0, hooks0;
};

static void step_start(struct mm *mm, struct fault_ctx *fc, struct step_clock *c)
{
	c->t0 = mm_now(mm, fc->call);
	c->hooks0 = fc->hook_ns;
}

/* Returns the step's duration; its own share (without hooks) goes to cause. */
static uint64_t step_end(struct mm *mm, struct fault_ctx *fc, struct step_clock *c,
			 enum mm_cause cause)
{
	uint64_t dt = mm_now(mm, fc->call) - c->t0, hooks = fc->hook_ns - c->hooks0;

	fc->cause_ns[cause] += dt > hooks ? dt - hooks : 0;
	fc->hook_ns = c->hooks0; /* the step's hooks now belong to the step's total */
	return dt;
}

/* After compaction: the captured block, or a freelist attempt; success resets deferral. */
static uint32_t compact_outcome(struct mm *mm, struct alloc_ctx *ac, unsigned alloc_flags,
				enum mm_migrate_mode mode, uint32_t captured)
{
	uint32_t pfn = captured;

	if (era_modern(mm))
		count_event(mm, MM_STAT_COMPACT_STALL, 1);
	if (pfn != MM_NO_PFN)
		count_event(mm, MM_STAT_PGALLOC, 1U << ac->order);
	else
		pfn = get_page_from_freelist(mm, ac, alloc_flags);
	if (pfn != MM_NO_PFN) {
		if (era_modern(mm)) {
			mm->compact_blockskip_flush = false;
			compaction_defer_reset(mm, ac->order, true);
		} else {
			mm->compact_considered = mm->compact_defer_shift = 0;
		}
		count_event(mm, MM_STAT_COMPACT_SUCCESS, 1);
		return pfn;
	}
	count_event(mm, MM_STAT_COMPACT_FAIL, 1);
	if (!era_modern(mm) && (mode != MM_MIGRATE_ASYNC || mm->cfg.policy.async_failure_defers))
		defer_compaction(mm, ac->order);
	return MM_NO_PFN;
}

/* __alloc_pages_direct_compact. 3.x checks deferral here (zone-wide); 6.12 inside
 * try_to_compact_pages, and counts a DEFERRED result as a stall. */
__stall_frame static uint32_t __alloc_pages_direct_compact(struct mm *mm, struct alloc_ctx *ac,
							   unsigned alloc_flags,
							   enum mm_migrate_mode mode,
							   enum mm_compact_result *result)
{
	struct fault_ctx *fc = ac->fc;
	uint32_t pfn = MM_NO_PFN, captured;
	struct step_clock clk;
	uint64_t dt;

	*result = MM_COMPACT_SKIPPED;
	if (!ac->order)
		return MM_NO_PFN;
	if (!era_modern(mm) && compaction_deferred(mm, ac->order)) {
		*result = MM_COMPACT_DEFERRED;
		count_event(mm, MM_STAT_COMPACT_DEFERRED, 1);
		fault_step(fc, MM_STEP_COMPACT_DEFERRED, MM_COMPACT_DEFERRED);
		return MM_NO_PFN;
	}
	step_start(mm, fc, &clk);
	ac->alloc_flags = alloc_flags;
	*result = try_to_compact_pages(mm, ac, mode, &captured);
	if (*result == MM_COMPACT_DEFERRED) {
		count_event(mm, MM_STAT_COMPACT_DEFERRED, 1);
		fault_step(fc, MM_STEP_COMPACT_DEFERRED, MM_COMPACT_DEFERRED);
	} else {
		fault_step(fc, compact_step(mode), *result);
	}
	if (*result != MM_COMPACT_SKIPPED)
		pfn = compact_outcome(mm, ac, alloc_flags, mode, captured);
	dt = step_end(mm, fc, &clk, compact_cause(mode));
	if (fc->rec)
		fc->rec->compact_ns += dt;
	return pfn;
}

/* __alloc_pages_direct_reclaim: reclaim, then one freelist attempt (the drain-and-retry of
 * per-cpu lists has nothing to drain here). *progress (if given) is did_some_progress:
 * try_to_free_pages' pages reclaimed. */
__stall_frame static uint32_t __alloc_pages_direct_reclaim(struct mm *mm, struct alloc_ctx *ac,
							   unsigned alloc_flags, uint32_t *progress)
{
	struct fault_ctx *fc = ac->fc;
	struct step_clock clk;
	uint32_t pfn, reclaimed;
	uint64_t dt;

	step_start(mm, fc, &clk);
	reclaimed = try_to_free_pages(mm, ac);
	if (progress)
		*progress = reclaimed;
	pfn = get_page_from_freelist(mm, ac, alloc_flags);
	fault_step(fc, MM_STEP_RECLAIM, pfn != MM_NO_PFN);
	dt = step_end(mm, fc, &clk, MM_CAUSE_RECLAIM);
	if (fc->rec)
		fc->rec->reclaim_ns += dt;
	return pfn;
}

/* 3.1 / 3.3 slow path for a THP (__alloc_pages_slowpath of 3.1.0 and 3.3.0; 3.3's deferral
 * rules and MIGRATE_SYNC_LIGHT come from Mel Gorman's compaction series of Dec 2011, commit
 * a6bc32b89922 "mm: compaction: introduce sync-light migration for use by compaction"): MIN,
 * async compaction, direct reclaim, the second compaction in the policy's mode. NORETRY: no
 * OOM, no retry loop. */
/* The mode of the compaction after reclaim: the policy's, or the caller's (khugepaged). */
static int second_mode(const struct mm_policy *p, const struct alloc_ctx *ac)
{
	return ac->mode_set ? ac->mode : p->second_mode;
}

static uint32_t slowpath_3x(struct mm *mm, struct alloc_ctx *ac)
{
	const struct mm_policy *p = &mm->cfg.policy;
	unsigned alloc_flags = WMARK_MIN;
	enum mm_compact_result res;
	uint32_t pfn;

	if (ac->gfp & GFP_KSWAPD_RECLAIM)
		wake_all_kswapds(mm, ac);
	pfn = freelist_step(mm, ac, alloc_flags, MM_STEP_FREELIST_MIN);
	if (pfn != MM_NO_PFN || !(ac->gfp & GFP_DIRECT_RECLAIM))
		return pfn;
	pfn = __alloc_pages_direct_compact(mm, ac, alloc_flags, MM_MIGRATE_ASYNC, &res);
	if (pfn != MM_NO_PFN)
		return pfn;
	/* 3.3: a deferred THP (__GFP_NO_KSWAPD) allocation goes to nopage without reclaim */
	if (res == MM_COMPACT_DEFERRED && p->deferred_skips_reclaim &&
	    !(ac->gfp & GFP_KSWAPD_RECLAIM))
		return MM_NO_PFN;
	pfn = __alloc_pages_direct_reclaim(mm, ac, alloc_flags, NULL);
	if (pfn != MM_NO_PFN || second_mode(p, ac) < 0)
		return pfn;
	return __alloc_pages_direct_compact(mm, ac, alloc_flags,
					    (enum mm_migrate_mode)second_mode(p, ac), &res);
}

/* vm.defrag_mode's last resort (6.15 __alloc_pages_slowpath, before __alloc_pages_may_oom):
 * reclaim and compaction did not prevent the fallback, so drop ALLOC_NOFRAGMENT once and try
 * again. Only allocations that would retry and OOM get there: NORETRY and costly ones went to
 * nopage before (so THP faults never steal below a pageblock). The retry's reclaim and
 * compaction rounds are not modelled: one more freelist attempt at MIN. */
static uint32_t defrag_mode_drop(struct mm *mm, struct alloc_ctx *ac, unsigned alloc_flags)
{
	if (!defrag_mode(mm) || !(alloc_flags & ALLOC_NOFRAGMENT) ||
	    !(ac->gfp & GFP_DIRECT_RECLAIM) || (ac->gfp & GFP_NORETRY) || ac->order > COSTLY_ORDER)
		return MM_NO_PFN;
	return freelist_step(mm, ac, alloc_flags & ~ALLOC_NOFRAGMENT, MM_STEP_FREELIST_MIN);
}

/* 6.12 slow path (6.12 __alloc_pages_slowpath). NORETRY and costly non-RETRY_MAYFAIL callers
 * fail after one reclaim + compaction round; THP never escalates to SYNC_FULL. Under
 * vm.defrag_mode (6.15 gfp_to_alloc_flags) the slow path keeps ALLOC_NOFRAGMENT. */
static uint32_t slowpath_modern(struct mm *mm, struct alloc_ctx *ac)
{
	const struct mm_policy *p = &mm->cfg.policy;
	bool can_direct_reclaim = ac->gfp & GFP_DIRECT_RECLAIM;
	bool costly = ac->order > COSTLY_ORDER, noretry = ac->gfp & GFP_NORETRY;
	unsigned alloc_flags = WMARK_MIN;
	int prio = second_mode(p, ac);
	enum mm_compact_result res;
	uint32_t pfn;

	if (defrag_mode(mm))
		alloc_flags |= ALLOC_NOFRAGMENT;
	if (ac->gfp & GFP_KSWAPD_RECLAIM) {
		alloc_flags |= ALLOC_KSWAPD;
		wake_all_kswapds(mm, ac);
	}
	pfn = freelist_step(mm, ac, alloc_flags, MM_STEP_FREELIST_MIN);
	if (pfn != MM_NO_PFN)
		return pfn;
	if (can_direct_reclaim && costly && (ac->gfp & GFP_IO)) {
		pfn = __alloc_pages_direct_compact(mm, ac, alloc_flags, MM_MIGRATE_ASYNC, &res);
		if (pfn != MM_NO_PFN)
			return pfn;
		if (noretry) {
			if (res == MM_COMPACT_SKIPPED || res == MM_COMPACT_DEFERRED)
				return MM_NO_PFN;
			prio = MM_MIGRATE_ASYNC;
		}
	}
	if (alloc_flags & ALLOC_KSWAPD)
		wake_all_kswapds(mm, ac);
	pfn = freelist_step(mm, ac, alloc_flags, MM_STEP_FREELIST_MIN);
	if (pfn != MM_NO_PFN || !can_direct_reclaim)
		return pfn;
	pfn = __alloc_pages_direct_reclaim(mm, ac, alloc_flags, NULL);
	if (pfn != MM_NO_PFN)
		return pfn;
	if (prio >= 0)
		pfn = __alloc_pages_direct_compact(mm, ac, alloc_flags, (enum mm_migrate_mode)prio,
						   &res);
	if (pfn != MM_NO_PFN)
		return pfn;
	return defrag_mode_drop(mm, ac, alloc_flags);
}

__stall_frame static uint32_t __alloc_pages_slowpath(struct mm *mm, struct alloc_ctx *ac)
{
	return era_modern(mm) ? slowpath_modern(mm, ac) : slowpath_3x(mm, ac);
}

/* __alloc_pages: the fast path at LOW (6.12 adds ALLOC_NOFRAGMENT: our zone models a NORMAL zone
 * with a DMA32 zone below it), then the slow path. */
static uint32_t __alloc_pages(struct mm *mm, struct alloc_ctx *ac)
{
	unsigned alloc_flags = WMARK_LOW;
	uint32_t pfn;

	if (era_modern(mm)) {
		alloc_flags |= ALLOC_NOFRAGMENT;
		if (ac->gfp & GFP_KSWAPD_RECLAIM)
			alloc_flags |= ALLOC_KSWAPD;
	}
	pfn = freelist_step(mm, ac, alloc_flags, MM_STEP_FREELIST_LOW);
	if (pfn != MM_NO_PFN)
		return pfn;
	return __alloc_pages_slowpath(mm, ac);
}

/* One pass of __alloc_pages (khugepaged's and MADV_COLLAPSE's __folio_alloc on the node holding
 * most of the range's pages: no THISNODE|NORETRY first pass). */
uint32_t alloc_pages_one_pass(struct mm *mm, struct alloc_ctx *ac)
{
	return __alloc_pages(mm, ac);
}

/* alloc_pages_mpol for a PMD-order allocation: with the NUMA two-pass model, first a
 * THISNODE|NORETRY attempt, then (only for direct-reclaim masks) the full slow path again. */
uint32_t alloc_pages_mpol(struct mm *mm, struct alloc_ctx *ac)
{
	uint32_t pfn;

	if (mm->cfg.policy.numa_two_pass) {
		struct alloc_ctx first = *ac;

		first.gfp |= GFP_THISNODE | GFP_NORETRY;
		pfn = __alloc_pages(mm, &first);
		if (pfn != MM_NO_PFN || !(ac->gfp & GFP_DIRECT_RECLAIM))
			return pfn;
	}
	return __alloc_pages(mm, ac);
}

/* An order-0 allocation (program base page, page cache, recipe frames): LOW, wake kswapd, MIN,
 * direct reclaim (3.x: repeated while it makes progress, rebalance_3x); a program fault may then
 * dip below MIN (where the kernel would swap or OOM-kill rather than fail the fault). Slow
 * steps are recorded in the fault record. */
uint32_t alloc_base_page(struct mm *mm, struct alloc_ctx *ac, bool last_resort)
{
	uint32_t pfn = alloc_base_page_fast(mm, ac);

	if (pfn != MM_NO_PFN)
		return pfn;
	return alloc_base_page_slow(mm, ac, last_resort);
}

uint32_t alloc_base_page_fast(struct mm *mm, struct alloc_ctx *ac)
{
	/* vm.defrag_mode: alloc_flags_nofragment and gfp_to_alloc_flags (6.15) set
	 * ALLOC_NOFRAGMENT for every allocation, fast path and slow path */
	unsigned nofrag = defrag_mode(mm) ? ALLOC_NOFRAGMENT : 0;

	return get_page_from_freelist(mm, ac, WMARK_LOW | nofrag);
}

/* 3.x should_alloc_retry (3.1, 3.2 and 3.3 mm/page_alloc.c): never for __GFP_NORETRY; always
 * for order <= PAGE_ALLOC_COSTLY_ORDER ("means __GFP_NOFAIL"). The costly orders retry only
 * with __GFP_REPEAT or __GFP_NOFAIL, which no modelled caller passes. */
static bool should_alloc_retry_3x(unsigned gfp, unsigned order)
{
	return !(gfp & GFP_NORETRY) && order <= COSTLY_ORDER;
}

/* The order-0 part of the 3.x __alloc_pages_slowpath (3.1, 3.2 and 3.3 mm/page_alloc.c; order
 * 0 skips __alloc_pages_direct_compact): from `rebalance:`, a freelist attempt at MIN, direct
 * reclaim; while reclaim made progress (did_some_progress: pages reclaimed) and
 * should_alloc_retry holds, wait_iff_congested(preferred_zone, BLK_RW_ASYNC, HZ/50) and `goto
 * rebalance`. With no progress the kernel goes to __alloc_pages_may_oom and restarts after the
 * OOM killer has run (a NORETRY caller fails); no swap and no OOM killer are modelled, so that
 * exit is the model's last resort as before: a program fault dips below MIN, other callers
 * fail. Only a __GFP_FS caller without __GFP_NORETRY goes to the OOM path; any other order-0
 * mask retries without progress too (should_alloc_retry). Departures: do_try_to_free_pages'
 * "don't OOM" 1 (nothing reclaimed, but no zone all_unreclaimable) is not modelled: progress is
 * the pages reclaimed; and the rounds are bounded (REBALANCE_MAX_ROUNDS): in the kernel what
 * ends a loop whose freed pages others keep taking is the OOM killer's fatal signal
 * (TIF_MEMDIE), which is not modelled - as throttle_isolated's bound of naps stands in for it. */
#define REBALANCE_MAX_ROUNDS 100
static uint32_t rebalance_3x(struct mm *mm, struct alloc_ctx *ac, unsigned alloc_flags,
			     bool last_resort)
{
	uint32_t pfn, progress;

	for (unsigned round = 0;; round++) {
		pfn = freelist_step(mm, ac, alloc_flags, MM_STEP_FREELIST_MIN);
		if (pfn != MM_NO_PFN || !(ac->gfp & GFP_DIRECT_RECLAIM))
			break;
		pfn = __alloc_pages_direct_reclaim(mm, ac, alloc_flags, &progress);
		if (pfn != MM_NO_PFN || round + 1 == REBALANCE_MAX_ROUNDS)
			break;
		if (!progress && (ac->gfp & GFP_FS) && !(ac->gfp & GFP_NORETRY))
			break; /* __alloc_pages_may_oom: the model's last resort below */
		if (!should_alloc_retry_3x(ac->gfp, ac->order))
			break;
		/* a stale nap (the pool changed while it slept) is what the next round reads */
		if (mm->cfg.policy.reclaim_throttles && mm->zone_congested)
			throttle_nap(mm, ac->fc, MM_WAIT_RECLAIM_CONGESTED, NSEC_PER_HZ_50, true,
				     MM_CAUSE_RECLAIM_THROTTLE);
	}
	if (pfn != MM_NO_PFN || !last_resort)
		return pfn;
	return get_page_from_freelist(mm, ac, ALLOC_NO_WATERMARKS);
}

uint32_t alloc_base_page_slow(struct mm *mm, struct alloc_ctx *ac, bool last_resort)
{
	unsigned nofrag = defrag_mode(mm) ? ALLOC_NOFRAGMENT : 0;
	unsigned alloc_flags = WMARK_MIN | nofrag;
	uint32_t pfn;

	if (ac->gfp & GFP_KSWAPD_RECLAIM) {
		alloc_flags |= ALLOC_KSWAPD;
		wake_all_kswapds(mm, ac);
	}
	if (!era_modern(mm))
		return rebalance_3x(mm, ac, alloc_flags, last_resort);
	pfn = freelist_step(mm, ac, alloc_flags, MM_STEP_FREELIST_MIN);
	if (pfn != MM_NO_PFN)
		return pfn;
	if (ac->gfp & GFP_DIRECT_RECLAIM) {
		pfn = __alloc_pages_direct_reclaim(mm, ac, alloc_flags, NULL);
		if (pfn != MM_NO_PFN)
			return pfn;
		pfn = defrag_mode_drop(mm, ac, alloc_flags);
		if (pfn != MM_NO_PFN)
			return pfn;
	}
	if (!last_resort)
		return MM_NO_PFN;
	return get_page_from_freelist(mm, ac, ALLOC_NO_WATERMARKS);
}

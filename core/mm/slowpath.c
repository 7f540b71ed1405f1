/* The allocation paths: fast path at the LOW watermark, then the era's slow path.
 *
 * Mirrors mm/page_alloc.c's __alloc_pages / __alloc_pages_slowpath (3.1, 3.3 and 6.12 variants,
 * reference §1.3-§1.7) and mm/mempolicy.c's alloc_pages_mpol NUMA wrapper for PMD-order
 * allocations. What the slow path does is decided by the gfp mask (built from the policy by
 * fault.c) and the policy's fields; nothing here looks at a profile's name.
 */
#include "mm/internal.h"

/* wakeup_kswapd for the order; the per-era details of whom it wakes live in vmscan.c. */
void wake_all_kswapds(struct mm *mm, struct alloc_ctx *ac)
{
	if (!mm->cfg.policy.kswapd)
		return;
	if (ac->order > mm->kswapd_order || !mm->kswapd_awake)
		mm->kswapd_order = ac->order > mm->kswapd_order ? ac->order : mm->kswapd_order;
	if (!mm->kswapd_awake) {
		mm->kswapd_awake = true;
		count_event(mm, MM_STAT_KSWAPD_WAKE, 1);
	}
}

static uint32_t freelist_step(struct mm *mm, struct alloc_ctx *ac, unsigned alloc_flags,
			      enum mm_step step)
{
	uint32_t pfn = get_page_from_freelist(mm, ac, alloc_flags);

	fault_step(ac->fc, step, pfn != MM_NO_PFN);
	return pfn;
}

/* The slow path of a costly (THP) allocation. */
static uint32_t __alloc_pages_slowpath(struct mm *mm, struct alloc_ctx *ac)
{
	unsigned alloc_flags = WMARK_MIN;

	if (ac->gfp & GFP_KSWAPD_RECLAIM) {
		alloc_flags |= ALLOC_KSWAPD;
		wake_all_kswapds(mm, ac);
		fault_step(ac->fc, MM_STEP_WAKE_KSWAPD, 1);
	}
	return freelist_step(mm, ac, alloc_flags, MM_STEP_FREELIST_MIN);
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
 * direct reclaim, MIN; a program fault may then dip below MIN (where the kernel would loop and
 * OOM-kill rather than fail the fault). Slow steps are recorded in the fault record. */
uint32_t alloc_base_page(struct mm *mm, struct alloc_ctx *ac, bool last_resort)
{
	unsigned alloc_flags = WMARK_MIN;
	uint32_t pfn = get_page_from_freelist(mm, ac, WMARK_LOW);

	if (pfn != MM_NO_PFN)
		return pfn;
	if (ac->gfp & GFP_KSWAPD_RECLAIM) {
		alloc_flags |= ALLOC_KSWAPD;
		wake_all_kswapds(mm, ac);
	}
	pfn = freelist_step(mm, ac, alloc_flags, MM_STEP_FREELIST_MIN);
	if (pfn != MM_NO_PFN)
		return pfn;
	if (ac->gfp & GFP_DIRECT_RECLAIM) {
		try_to_free_pages(mm, ac);
		pfn = freelist_step(mm, ac, alloc_flags, MM_STEP_FREELIST_MIN);
		if (pfn != MM_NO_PFN)
			return pfn;
	}
	if (!last_resort)
		return MM_NO_PFN;
	return get_page_from_freelist(mm, ac, ALLOC_NO_WATERMARKS);
}

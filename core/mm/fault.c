/* The anonymous page fault: huge (order 9) when the policy allows it and the allocation
 * succeeds, otherwise one 4 KiB frame; with the fault record a stall report reads.
 *
 * Mirrors mm/huge_memory.c (do_huge_pmd_anonymous_page, vma_thp_gfp_mask, the 3.x
 * alloc_hugepage_gfpmask / transparent_hugepage_enabled checks, thp_fault_alloc /
 * thp_fault_fallback) and mm/memory.c's do_anonymous_page for the 4 KiB fallback; between the
 * two, 6.8+'s multi-size THP (mm/memory.c alloc_anon_folio, in mthp.c).
 */
#include <errno.h>
#include <string.h>

#include "mm/internal.h"

/* 3.x GFP_TRANSHUGE: no kswapd wake (__GFP_NO_KSWAPD), NORETRY; __GFP_WAIT only with defrag. */
#define GFP_TRANSHUGE_3X (GFP_IO | GFP_FS | GFP_NORETRY | GFP_NOMEMALLOC | GFP_DIRECT_RECLAIM)
/* 6.12 GFP_TRANSHUGE_LIGHT: no reclaim of any kind. */
#define GFP_TRANSHUGE_LIGHT (GFP_IO | GFP_FS | GFP_NOMEMALLOC)

/* May this fault be a PMD THP: transparent_hugepage/enabled for the VMA (3.x
 * hugepage_vma_check; 6.12 thp_vma_allowable_order(PMD_ORDER), which reads
 * hugepages-2048kB/enabled and inherits the top level). */
static bool thp_vma_allowable(const struct mm_policy *p, const struct mm_fault_req *req)
{
	return req->huge_ok && (mm_thp_allowable_orders(p, req->advice) & (1U << MM_HPAGE_ORDER));
}

/* The gfp mask of the THP allocation: 3.x alloc_hugepage_gfpmask(defrag), 6.12
 * vma_thp_gfp_mask (both in mm/huge_memory.c). */
unsigned thp_gfp_mask(const struct mm_policy *p, enum mm_vma_advice advice)
{
	bool madvised = advice == MM_VMA_HUGEPAGE;

	if (p->era != MM_ERA_MODERN) {
		bool defrag =
		    p->defrag == MM_DEFRAG_ALWAYS || (p->defrag == MM_DEFRAG_MADVISE && madvised);

		return defrag ? GFP_TRANSHUGE_3X : GFP_TRANSHUGE_3X & ~GFP_DIRECT_RECLAIM;
	}
	switch (p->defrag) {
	case MM_DEFRAG_ALWAYS:
		return GFP_TRANSHUGE_LIGHT | GFP_DIRECT_RECLAIM | (madvised ? 0 : GFP_NORETRY);
	case MM_DEFRAG_DEFER:
		return GFP_TRANSHUGE_LIGHT | GFP_KSWAPD_RECLAIM;
	case MM_DEFRAG_DEFER_MADVISE:
		return GFP_TRANSHUGE_LIGHT | (madvised ? GFP_DIRECT_RECLAIM : GFP_KSWAPD_RECLAIM);
	case MM_DEFRAG_MADVISE:
		return GFP_TRANSHUGE_LIGHT | (madvised ? GFP_DIRECT_RECLAIM : 0);
	default:
		return GFP_TRANSHUGE_LIGHT;
	}
}

/* After clear_huge: is the extent still this fault's? It is unless, while the lock was
 * released, the pool was repaired and could not keep it (mm_repair frees a half-written
 * extent) or the owner's frames were released (mm_release_owners). */
static bool extent_still_ours(struct mm *mm, uint32_t head, uint64_t extent_owner)
{
	const struct mm_frame *f = pfn_frame(mm, head);

	return f->state == FS_HUGE && f->owner == extent_owner;
}

/* do_huge_pmd_anonymous_page: allocate, count, clear with the lock released. An extent taken
 * back meanwhile makes the fault fall back to a 4 KiB page. */
__stall_frame static uint32_t
do_huge_pmd_anonymous_page(struct mm *mm, const struct mm_fault_req *req, struct fault_ctx *fc)
{
	struct alloc_ctx ac = {
	    .order = MM_HPAGE_ORDER,
	    .mt = MM_MT_MOVABLE,
	    .gfp = thp_gfp_mask(&mm->cfg.policy, req->advice),
	    .fc = fc,
	};
	uint32_t head = alloc_pages_mpol(mm, &ac);
	uint64_t t0, epoch;

	if (head == MM_NO_PFN) {
		count_event(mm, MM_STAT_THP_FAULT_FALLBACK, 1);
		count_mthp_event(mm, MM_HPAGE_ORDER, MTHP_EV_ANON_FAULT_FALLBACK);
		fault_step(fc, MM_STEP_FALLBACK, 0);
		return MM_NO_PFN;
	}
	mark_allocated(mm, head, MM_HPAGE_ORDER, FS_HUGE, req->extent_owner);
	mm->nr_anon += MM_HPAGE_NR;
	mm->nr_anon_huge += MM_HPAGE_NR;
	count_event(mm, MM_STAT_THP_FAULT_ALLOC, 1);
	count_mthp_event(mm, MM_HPAGE_ORDER, MTHP_EV_ANON_FAULT_ALLOC);
	t0 = mm_now(mm, fc->call);
	epoch = mm_unlock_for_hook(mm);
	mm_hook_clear_huge(mm, fc->call, head, req->extent_owner);
	mm_relock_after_hook(mm, epoch); /* repaired meanwhile or not, the extent tells */
	if (!extent_still_ours(mm, head, req->extent_owner)) {
		count_event(mm, MM_STAT_THP_FAULT_FALLBACK, 1);
		count_mthp_event(mm, MM_HPAGE_ORDER, MTHP_EV_ANON_FAULT_FALLBACK);
		fault_step(fc, MM_STEP_FALLBACK, 0);
		return MM_NO_PFN;
	}
	thp_new_mapped(mm, head);
	fc->rec->zero_ns = mm_now(mm, fc->call) - t0;
	fc->cause_ns[MM_CAUSE_ZEROING] += fc->rec->zero_ns;
	return head;
}

/* do_anonymous_page: one movable frame for the faulting page. */
static uint32_t do_anonymous_page(struct mm *mm, const struct mm_fault_req *req,
				  struct fault_ctx *fc)
{
	struct alloc_ctx ac = {
	    .order = 0,
	    .mt = MM_MT_MOVABLE,
	    .gfp = GFP_HIGHUSER_MOVABLE,
	    .fc = fc,
	};
	uint32_t pfn = alloc_base_page(mm, &ac, true);

	if (pfn == MM_NO_PFN)
		return MM_NO_PFN;
	mark_allocated(mm, pfn, 0, FS_ANON, req->owner);
	if (req->owner & MM_OWNER_FOREIGN)
		mm->nr_foreign++;
	else
		mm->nr_anon++;
	return pfn;
}

/* The largest contributor to the fault's time. */
static enum mm_cause pick_cause(const struct fault_ctx *fc)
{
	enum mm_cause best = MM_CAUSE_NONE;

	for (int c = 1; c < MM_CAUSE_NR; c++)
		if (fc->cause_ns[c] > fc->cause_ns[best])
			best = (enum mm_cause)c;
	return best;
}

int mm_fault(struct mm *mm, const struct mm_fault_req *req, struct mm_fault_res *res, void *call)
{
	struct fault_ctx fc = {.call = call};
	uint32_t pfn = MM_NO_PFN;
	unsigned order = 0;

	if (!mm || !req || !res)
		return -EINVAL;
	memset(res, 0, sizeof(*res));
	fc.rec = &res->rec;
	mm_lock(mm);
	res->rec.t_start = mm_now(mm, call);
	mm_charge(mm, call, MM_COST_FAULT, 1);
	if (thp_vma_allowable(&mm->cfg.policy, req)) {
		/* khugepaged_enter (3.x) / khugepaged_enter_vma (6.12) in
		 * do_huge_pmd_anonymous_page, before the allocation, whatever its result */
		if (mm->cfg.policy.khugepaged)
			khugepaged_enter_locked(mm, req->as_id);
		pfn = do_huge_pmd_anonymous_page(mm, req, &fc);
	}
	if (pfn != MM_NO_PFN) {
		res->outcome = MM_FAULT_HUGE;
		res->order = MM_HPAGE_ORDER;
	} else if (req->orders_ok && req->write && era_modern(mm) &&
		   (pfn = alloc_anon_folio(mm, req, &fc, &order)) != MM_NO_PFN) {
		res->outcome = MM_FAULT_MTHP;
		res->order = (uint8_t)order;
	} else {
		pfn = do_anonymous_page(mm, req, &fc);
		res->outcome = pfn == MM_NO_PFN ? MM_FAULT_NOMEM : MM_FAULT_BASE;
		if (pfn == MM_NO_PFN)
			count_event(mm, MM_STAT_NOMEM_FALLBACK, 1);
	}
	res->pfn = pfn;
	res->rec.outcome = (uint8_t)res->outcome;
	res->rec.order = res->order;
	res->rec.total_ns = mm_now(mm, call) - res->rec.t_start;
	res->rec.cause = (uint8_t)pick_cause(&fc);
	mm_unlock(mm);
	return 0;
}

/* The anonymous page fault: huge (order 9) when the policy allows it and the allocation
 * succeeds, otherwise one 4 KiB frame; with the fault record a stall report reads.
 *
 * Mirrors mm/huge_memory.c (do_huge_pmd_anonymous_page, vma_thp_gfp_mask, the 3.x
 * alloc_hugepage_gfpmask / transparent_hugepage_enabled checks, thp_fault_alloc /
 * thp_fault_fallback) and mm/memory.c's do_anonymous_page for the 4 KiB fallback; between the
 * two, 6.8+'s multi-size THP (mm/memory.c alloc_anon_folio, in mthp.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "mm/internal.h"
#include "thpemu_policy.h"

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

/* The gfp mask of the THP allocation: 3.x alloc_hugepage_gfpmask(defrag), 6.1 and 6.12
 * vma_thp_gfp_mask (all in mm/huge_memory.c; 6.1's is 6.12's, line for line). */
unsigned thp_gfp_mask(const struct mm_policy *p, enum mm_vma_advice advice)
{
	bool madvised = advice == MM_VMA_HUGEPAGE;

	if (p->era < MM_ERA_6_1) {
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

/* A policy plugin's slowpath verdict on the THP allocation of `order` for this fault, applied
 * to the gfp mask (what the RFC's BPF hook would change in vma_thp_gfp_mask's result). */
unsigned fault_thp_gfp(struct mm *mm, const struct mm_fault_req *req, struct fault_ctx *fc,
		       unsigned order)
{
	unsigned gfp = thp_gfp_mask(&mm->cfg.policy, req->advice);
	struct mm_hook_state *hs = fc->pinfo ? mm_hook_state(mm) : NULL;
	int v;

	if (!hs || !hs->h.pl || !hs->h.pl->slowpath)
		return gfp;
	v = hs->h.pl->slowpath(fc->pinfo, order);
	switch (v) {
	case THPEMU_SLOWPATH_DEFAULT:
		return gfp;
	case THPEMU_SLOWPATH_NONE:
		return gfp & ~(unsigned)(GFP_DIRECT_RECLAIM | GFP_KSWAPD_RECLAIM);
	case THPEMU_SLOWPATH_DIRECT:
		return gfp | GFP_DIRECT_RECLAIM;
	default: {
		char msg[160];

		snprintf(msg, sizeof(msg), "slowpath returned %d (not an enum thpemu_slowpath)", v);
		count_event(mm, MM_STAT_PLUGIN_ERRORS, 1);
		if (!hs->err_noted && hs->h.note) {
			hs->err_noted = true;
			hs->h.note(hs->h.cookie, msg);
		}
		return gfp;
	}
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
	    .gfp = fault_thp_gfp(mm, req, fc, MM_HPAGE_ORDER),
	    .fc = fc,
	};
	uint32_t head = alloc_pages_mpol(mm, &ac);
	uint64_t t0, epoch, ahead;

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
	ahead = mm_hook_clear_huge(mm, fc->call, head, req->extent_owner);
	mm_relock_after_hook(mm, epoch); /* repaired meanwhile or not, the extent tells */
	if (!extent_still_ours(mm, head, req->extent_owner)) {
		count_event(mm, MM_STAT_THP_FAULT_FALLBACK, 1);
		count_mthp_event(mm, MM_HPAGE_ORDER, MTHP_EV_ANON_FAULT_FALLBACK);
		fault_step(fc, MM_STEP_FALLBACK, 0);
		return MM_NO_PFN;
	}
	thp_new_mapped(mm, head);
	fc->rec->zero_ns = mm_now(mm, fc->call) - t0 + ahead;
	fc->ahead_ns += ahead;
	fc->cause_ns[MM_CAUSE_ZEROING] += fc->rec->zero_ns;
	return head;
}

/* The huge zero folio for a read fault (6.12 mm/huge_memory.c do_huge_pmd_anonymous_page with
 * transparent_hugepage/use_zero_page at its default 1: mm_get_huge_zero_folio). The first use
 * allocates it (get_huge_zero_page: folio_alloc((GFP_TRANSHUGE | __GFP_ZERO) & ~__GFP_MOVABLE,
 * HPAGE_PMD_ORDER), thp_zero_page_alloc); it is kept from then on (its shrinker frees it only
 * when no mm maps it: not modelled). A failure counts thp_zero_page_alloc_failed and
 * thp_fault_fallback, and the fault takes the 4 KiB path. 3.x has none: the huge zero page
 * came with 3.8 (Kirill Shutemov's series), and 3.1-3.7 allocated a THP for a read fault as
 * for a write. */
static bool get_huge_zero_folio(struct mm *mm, struct fault_ctx *fc)
{
	struct alloc_ctx ac = {
	    .order = MM_HPAGE_ORDER,
	    .mt = MM_MT_UNMOVABLE,
	    .gfp = GFP_TRANSHUGE_LIGHT | GFP_DIRECT_RECLAIM, /* GFP_TRANSHUGE */
	    .fc = fc,
	};
	uint32_t head;

	if (mm->huge_zero_pfn != MM_NO_PFN)
		return true;
	head = alloc_pages_mpol(mm, &ac);
	if (head == MM_NO_PFN) {
		count_event(mm, MM_STAT_THP_ZERO_PAGE_ALLOC_FAILED, 1);
		count_event(mm, MM_STAT_THP_FAULT_FALLBACK, 1);
		return false;
	}
	mark_allocated(mm, head, MM_HPAGE_ORDER, FS_UNMOVABLE, 0);
	mm->nr_unmovable += MM_HPAGE_NR;
	mm->huge_zero_pfn = head;
	count_event(mm, MM_STAT_THP_ZERO_PAGE_ALLOC, 1);
	return true;
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

/* ---- Policy plugin (thpemu_policy.h) ------------------------------------------------------
 * The hook sits where 6.12 chooses a fault's folio order: before do_huge_pmd_anonymous_page
 * (mm/huge_memory.c, guarded by thp_vma_allowable_order(PMD_ORDER)) and alloc_anon_folio
 * (mm/memory.c, orders from thp_vma_allowable_orders, tried highest first) - the spot of the
 * BPF RFC's get_suggested_order (2025). The plugin's list replaces both; its answer is checked
 * because a wrong order would break the frame model. */

static const char *const era_names[] = {
    [MM_ERA_3_1] = "linux-3.1", [MM_ERA_3_2] = "linux-3.2", [MM_ERA_3_3] = "linux-3.3",
    [MM_ERA_6_1] = "linux-6.1", [MM_ERA_MODERN] = "modern",
};

int mm_set_policy_hook(struct mm *mm, const struct mm_policy_hook *hook)
{
	struct mm_hook_state *hs;

	if (!mm || !(hs = mm_hook_state(mm)))
		return -EINVAL;
	if (hook && (!hook->pl || hook->pl->abi_version != THPEMU_POLICY_ABI_VERSION ||
		     !hook->pl->select_orders))
		return -EINVAL;
	mm_lock(mm);
	memset(hs, 0, sizeof(*hs));
	if (hook)
		hs->h = *hook;
	mm_unlock(mm);
	return 0;
}

static void plugin_note(struct mm_hook_state *hs, bool *noted, const char *msg)
{
	if (*noted || !hs->h.note)
		return;
	*noted = true;
	hs->h.note(hs->h.cookie, msg);
}

/* prctl(PR_SET_THP_DISABLE) keeps this VMA from THP (6.18 vma_thp_disabled, checked first in
 * __thp_vma_allowable_orders: no order at all, whoever chooses). MADV_NOHUGEPAGE alone is left
 * to mm_thp_allowable_orders as before (a plugin may still be offered order 9 there). */
static bool process_thp_disabled(const struct mm_fault_req *req)
{
	return req->thp_disable != MM_THP_DISABLE_NONE &&
	       mm_vma_thp_disabled(req->advice, req->thp_disable, false);
}

/* The plugin's view of the fault. possible: 0 always, 9 when huge_ok, 2..8 from orders_ok on
 * a modern-era write fault (as mm_fault would consider them). */
static void plugin_info(struct mm *mm, const struct mm_fault_req *req, void *call,
			struct thpemu_fault_info *in)
{
	const struct mm_policy *p = &mm->cfg.policy;

	memset(in, 0, sizeof(*in));
	in->size = sizeof(*in);
	in->advice = (uint32_t)req->advice;
	in->addr = req->addr;
	in->region_start = req->region_start;
	in->region_len = req->region_len;
	in->possible_orders = 1U | (req->huge_ok ? 1U << MM_HPAGE_ORDER : 0);
	if (req->write && era_has_mthp(mm))
		in->possible_orders |=
		    req->orders_ok & ((1U << MM_HPAGE_ORDER) - (1U << MM_MTHP_MIN_ORDER));
	in->allowed_orders =
	    process_thp_disabled(req) ? 0 : mm_thp_allowable_orders(p, req->advice);
	for (unsigned o = 0; o < MM_NR_ORDERS && o < THPEMU_POLICY_NR_ORDERS; o++)
		in->nr_free[o] = mm->nr_free[o];
	in->frag_index_9 = fragmentation_index(mm, MM_HPAGE_ORDER);
	in->recent_stall_ns = mm->stall_sum;
	in->now_ns = mm_now(mm, call);
	in->era = era_names[p->era];
	in->policy = p->name;
	in->write = req->write;
}

/* Ask select_orders; check the answer. Returns the number of orders in list (0 = order 0 at
 * once), or -1 for the built-in decision (no opinion, or nonsense). */
static int plugin_orders(struct mm *mm, struct mm_hook_state *hs,
			 const struct thpemu_fault_info *in, void *call,
			 uint8_t list[MM_HPAGE_ORDER + 1])
{
	const unsigned max = MM_HPAGE_ORDER + 1;
	uint64_t t0 = mm_now(mm, call), dt;
	int n = hs->h.pl->select_orders(in, list, max);
	unsigned seen = 0;
	char msg[200];

	count_event(mm, MM_STAT_PLUGIN_CALLS, 1);
	dt = mm_now(mm, call) - t0;
	if (dt > THPEMU_POLICY_OVERTIME_NS) {
		count_event(mm, MM_STAT_PLUGIN_OVERTIME, 1);
		snprintf(msg, sizeof(msg),
			 "select_orders took %llu us (bound %llu us; later ones counted in "
			 "plugin_overtime)",
			 (unsigned long long)(dt / 1000),
			 (unsigned long long)(THPEMU_POLICY_OVERTIME_NS / 1000));
		plugin_note(hs, &hs->slow_noted, msg);
	}
	if (n < 0)
		return -1;
	msg[0] = 0;
	if ((unsigned)n > max)
		snprintf(msg, sizeof(msg), "select_orders returned %d orders (max %u)", n, max);
	for (int i = 0; !msg[0] && i < n; i++) {
		unsigned o = list[i];

		if (o > MM_HPAGE_ORDER || !(in->possible_orders & (1U << o)))
			snprintf(msg, sizeof(msg),
				 "select_orders chose order %u, not possible here (possible "
				 "orders 0x%x)",
				 o, in->possible_orders);
		else if (seen & (1U << o))
			snprintf(msg, sizeof(msg), "select_orders chose order %u twice", o);
		seen |= 1U << o;
	}
	if (msg[0]) {
		size_t len = strlen(msg);

		snprintf(msg + len, sizeof(msg) - len,
			 "; built-in decision used (later ones counted in plugin_errors)");
		count_event(mm, MM_STAT_PLUGIN_ERRORS, 1);
		plugin_note(hs, &hs->err_noted, msg);
		return -1;
	}
	return n;
}

/* The plugin's orders, in its order, then order 0. */
static uint32_t fault_plugin_orders(struct mm *mm, const struct mm_fault_req *req,
				    struct fault_ctx *fc, const uint8_t *list, int n,
				    struct mm_fault_res *res)
{
	for (int i = 0; i < n && list[i] != 0; i++) {
		unsigned o = list[i];
		uint32_t pfn;

		if (o == MM_HPAGE_ORDER) {
			if (mm->cfg.policy.khugepaged)
				khugepaged_enter_locked(mm, req->as_id);
			pfn = do_huge_pmd_anonymous_page(mm, req, fc);
			if (pfn != MM_NO_PFN) {
				res->outcome = MM_FAULT_HUGE;
				res->order = MM_HPAGE_ORDER;
				return pfn;
			}
		} else if ((pfn = alloc_anon_folio_order(mm, req, fc, o)) != MM_NO_PFN) {
			res->outcome = MM_FAULT_MTHP;
			res->order = (uint8_t)o;
			return pfn;
		}
	}
	return MM_NO_PFN;
}

/* The last THPEMU_POLICY_STALL_WINDOW faults' compaction + reclaim time (recent_stall_ns). */
static void stall_window_add(struct mm *mm, const struct mm_fault_rec *rec)
{
	uint64_t v = rec->compact_ns + rec->reclaim_ns;
	unsigned i = mm->stall_pos++ % THPEMU_POLICY_STALL_WINDOW;

	mm->stall_sum += v - mm->stall_ring[i];
	mm->stall_ring[i] = v;
}

int mm_fault(struct mm *mm, const struct mm_fault_req *req, struct mm_fault_res *res, void *call)
{
	struct fault_ctx fc = {.call = call};
	struct thpemu_fault_info info;
	uint8_t list[MM_HPAGE_ORDER + 1];
	uint32_t pfn = MM_NO_PFN;
	unsigned order = 0;
	int n = -1; /* the plugin's order count; -1: the built-in decision */
	struct mm_hook_state *hs;
	enum mm_fault_outcome zero = MM_FAULT_BASE; /* MM_FAULT_HUGE_ZERO once mapped */

	struct mm_fault_req dreq;

	if (!mm || !req || !res)
		return -EINVAL;
	if (process_thp_disabled(req) || (req->write && req->wp_zero != MM_WP_NONE)) {
		/* the process's prctl: a 4 KiB page, nothing larger. A write to a zero-page
		 * mapping: the PTE (or PMD) is not none, so no THP and no mTHP; mm/memory.c
		 * do_wp_page -> wp_page_copy allocates the page as do_anonymous_page would */
		dreq = *req;
		dreq.huge_ok = false;
		dreq.orders_ok = 0;
		req = &dreq;
	}
	memset(res, 0, sizeof(*res));
	fc.rec = &res->rec;
	mm_lock(mm);
	res->rec.t_start = mm_now(mm, call);
	mm_charge(mm, call, MM_COST_FAULT, 1);
	hs = mm_hook_state(mm);
	if (hs && hs->h.pl) {
		plugin_info(mm, req, call, &info);
		fc.pinfo = &info;
		n = plugin_orders(mm, hs, &info, call, list);
	}
	if (req->write && req->wp_zero == MM_WP_HUGE_ZERO) {
		/* 6.12 do_huge_pmd_wp_page: a huge zero PMD goes to fallback, __split_huge_pmd
		 * (__split_huge_pmd_locked counts thp_split_pmd before it sees the zero PMD, then
		 * __split_huge_zero_page_pmd maps 512 zero-page PTEs), VM_FAULT_FALLBACK, and the
		 * write is do_wp_page's. After 6.12 ("mm: Allocate THP on hugezeropage wp-fault",
		 * Dev Jain) the write allocates a THP instead: no profile models that yet. */
		count_event(mm, MM_STAT_THP_SPLIT_PMD, 1);
		res->zero_split = true;
	}
	if (n >= 0) {
		pfn = fault_plugin_orders(mm, req, &fc, list, n, res);
	} else if (thp_vma_allowable(&mm->cfg.policy, req)) {
		/* khugepaged_enter (3.x) / khugepaged_enter_vma (6.12) in
		 * do_huge_pmd_anonymous_page, before the allocation, whatever its result */
		if (mm->cfg.policy.khugepaged)
			khugepaged_enter_locked(mm, req->as_id);
		if (!req->write && req->zero_ok && era_modern(mm)) {
			if (get_huge_zero_folio(mm, &fc))
				zero = MM_FAULT_HUGE_ZERO;
		} else {
			pfn = do_huge_pmd_anonymous_page(mm, req, &fc);
		}
	}
	if (zero == MM_FAULT_HUGE_ZERO) {
		res->outcome = MM_FAULT_HUGE_ZERO;
		res->order = MM_HPAGE_ORDER;
	} else if (n < 0 && pfn == MM_NO_PFN && !req->write && req->zero_ok) {
		/* mm/memory.c do_anonymous_page, a read fault (3.x and 6.12 alike): the zero
		 * page's PTE (my_zero_pfn), no allocation */
		res->outcome = MM_FAULT_ZERO;
	} else if (n >= 0 && pfn != MM_NO_PFN) {
		/* outcome and order set by fault_plugin_orders */
	} else if (pfn != MM_NO_PFN) {
		res->outcome = MM_FAULT_HUGE;
		res->order = MM_HPAGE_ORDER;
	} else if (n < 0 && req->orders_ok && req->write && era_has_mthp(mm) &&
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
	res->rec.total_ns = mm_now(mm, call) - res->rec.t_start + fc.ahead_ns;
	res->rec.cause = (uint8_t)pick_cause(&fc);
	stall_window_add(mm, &res->rec);
	mm_unlock(mm);
	return 0;
}

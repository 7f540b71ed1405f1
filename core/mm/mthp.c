/* Multi-size THP for anonymous memory (6.8+): the fault-time order choice below the PMD size,
 * the mTHP folio in the frame model, its partial unmap, deferred split and free, and the
 * per-size statistics.
 *
 * Mirrors Linux 6.12: mm/memory.c alloc_anon_folio (the orders a write fault may take: allowed
 * by the per-size settings, naturally aligned inside the VMA (thp_vma_suitable_orders), all PTEs
 * none (pte_range_none); allocated highest first with vma_thp_gfp_mask, anon_fault_fallback per
 * failed order, then order 0) and do_anonymous_page (anon_fault_alloc, folio_zero_user, set_ptes
 * without the deferred split queue); mm/rmap.c __folio_remove_rmap (a partially unmapped large
 * folio goes to deferred_split_folio(folio, true)); mm/huge_memory.c deferred_split_folio
 * (split_deferred, nr_anon_partially_mapped), split_huge_page_to_list_to_order (split,
 * split_failed, nr_anon) and the hugepages-<size>kB/stats files (sum_mthp_stat).
 *
 * An mTHP folio of order k is 2^k FS_MTHP frames, naturally aligned, every frame carrying k in
 * its order byte; owners are consecutive. Like a PTE-mapped THP (split.c) the head carries
 * FF_THP_QUEUED / FF_THP_PARTIAL, an unmapped subpage FF_THP_UNMAPPED, the head's hnext counts
 * them. Compaction does not migrate mTHP folios (6.12 would: see core/mm/README.md).
 * No memcg: anon_fault_fallback_charge stays 0.
 */
#include <errno.h>
#include <string.h>

#include "mm/internal.h"

/* After clear_folio: is the folio still this fault's (mm_release_owners may have taken it)? */
static bool folio_still_ours(struct mm *mm, uint32_t head, unsigned order, uint64_t owner)
{
	const struct mm_frame *f = pfn_frame(mm, head);

	return f->state == FS_MTHP && mthp_order(f) == order && f->owner == owner;
}

/* One order's allocation for a fault: one pass of __alloc_pages (vma_alloc_folio: the NUMA
 * THISNODE|NORETRY pass is for the PMD order only, 6.12 alloc_pages_mpol), the folio set up,
 * counted, and zeroed with the lock released. */
static uint32_t alloc_one_order(struct mm *mm, const struct mm_fault_req *req, struct fault_ctx *fc,
				unsigned order, uint64_t owner)
{
	struct alloc_ctx ac = {
	    .order = order,
	    .mt = MM_MT_MOVABLE,
	    .gfp = fault_thp_gfp(mm, req, fc, order),
	    .fc = fc,
	};
	uint32_t head = alloc_pages_one_pass(mm, &ac), n = 1U << order;
	uint64_t t0, epoch, dt;

	if (head == MM_NO_PFN)
		return MM_NO_PFN;
	mark_allocated(mm, head, order, FS_MTHP, owner);
	for (uint32_t i = 0; i < n; i++)
		pfn_frame(mm, head + i)->order = (uint8_t)order;
	mm->nr_anon += n;
	mm->nr_anon_mthp += n;
	mm->nr_mthp[order]++;
	t0 = mm_now(mm, fc->call);
	epoch = mm_unlock_for_hook(mm);
	mm_hook_clear_folio(mm, fc->call, head, order, owner);
	mm_relock_after_hook(mm, epoch);
	if (!folio_still_ours(mm, head, order, owner))
		return MM_NO_PFN;
	dt = mm_now(mm, fc->call) - t0;
	fc->rec->zero_ns += dt;
	fc->cause_ns[MM_CAUSE_ZEROING] += dt;
	return head;
}

uint32_t alloc_anon_folio(struct mm *mm, const struct mm_fault_req *req, struct fault_ctx *fc,
			  unsigned *order)
{
	uint64_t off = req->owner - req->extent_owner;
	unsigned orders = mm_thp_allowable_orders(&mm->cfg.policy, req->advice) & req->orders_ok;

	/* below the PMD size, from order 2 (order 1 is not an anon mTHP size) */
	orders &= (1U << MM_HPAGE_ORDER) - (1U << MM_MTHP_MIN_ORDER);
	if (!orders || off >= MM_HPAGE_NR)
		return MM_NO_PFN;
	/* orders_ok already says "inside the VMA and all PTEs none", so the highest allowed order
	 * is the kernel's first pte_range_none hit; every lower one is none as well */
	for (unsigned o = MM_HPAGE_ORDER - 1; o >= MM_MTHP_MIN_ORDER; o--) {
		uint64_t owner = req->extent_owner + (off & ~((1ULL << o) - 1));
		uint32_t head;

		if (!(orders & (1U << o)))
			continue;
		head = alloc_one_order(mm, req, fc, o, owner);
		if (head != MM_NO_PFN) {
			count_mthp_event(mm, o, MTHP_EV_ANON_FAULT_ALLOC);
			*order = o;
			return head;
		}
		count_mthp_event(mm, o, MTHP_EV_ANON_FAULT_FALLBACK);
	}
	return MM_NO_PFN;
}

uint32_t alloc_anon_folio_order(struct mm *mm, const struct mm_fault_req *req, struct fault_ctx *fc,
				unsigned order)
{
	uint64_t off = req->owner - req->extent_owner;
	uint64_t owner = req->extent_owner + (off & ~((1ULL << order) - 1));
	uint32_t head = alloc_one_order(mm, req, fc, order, owner);

	count_mthp_event(
	    mm, order, head != MM_NO_PFN ? MTHP_EV_ANON_FAULT_ALLOC : MTHP_EV_ANON_FAULT_FALLBACK);
	return head;
}

/* Off the split queue, partial state dropped (the folio goes away or is split). */
static void mthp_forget(struct mm *mm, uint32_t head)
{
	struct mm_frame *hf = pfn_frame(mm, head);

	thp_queue_del(mm, head);
	if (hf->flags & FF_THP_PARTIAL)
		mm->nr_mthp_partial[mthp_order(hf)]--;
	hf->flags &= (uint8_t) ~(FF_THP_QUEUED | FF_THP_PARTIAL);
}

void mthp_free_folio(struct mm *mm, uint32_t head)
{
	unsigned order = mthp_order(pfn_frame(mm, head));
	uint32_t n = 1U << order;

	mthp_forget(mm, head);
	mm->nr_anon -= n;
	mm->nr_anon_mthp -= n;
	mm->nr_mthp[order]--;
	free_frames(mm, head, order, NULL);
}

unsigned mthp_split_locked(struct mm *mm, uint32_t head)
{
	unsigned order = mthp_order(pfn_frame(mm, head));
	uint32_t n = 1U << order;
	uint64_t unmapped[MM_HPAGE_NR / 2 / 64 + 1] = {0};

	mthp_forget(mm, head);
	for (uint32_t i = 0; i < n; i++) {
		struct mm_frame *f = pfn_frame(mm, head + i);

		if (f->flags & FF_THP_UNMAPPED)
			unmapped[i / 64] |= 1ULL << (i % 64);
		f->state = FS_ANON;
		f->flags = 0;
		f->hnext = 0;
		f->order = ORDER_TAIL;
	}
	mm->nr_anon_mthp -= n;
	mm->nr_mthp[order]--;
	count_mthp_event(mm, order, MTHP_EV_SPLIT);
	return split_free_unmapped(mm, head, n, unmapped);
}

/* zap_pte_range -> __folio_remove_rmap of one page of an mTHP folio: the folio becomes
 * partially mapped and waits on the deferred split queue; its last page frees it whole. */
void mthp_unmap_subpage(struct mm *mm, uint32_t pfn)
{
	struct mm_frame *f = pfn_frame(mm, pfn);
	uint32_t head = mthp_head(f, pfn);
	struct mm_frame *hf = pfn_frame(mm, head);

	if (f->flags & FF_THP_UNMAPPED)
		return; /* freed already */
	f->flags |= FF_THP_UNMAPPED;
	if (++hf->hnext == 1U << mthp_order(hf)) {
		mthp_free_folio(mm, head);
		return;
	}
	if (!mm->cfg.policy.deferred_split) {
		mthp_split_locked(mm, head); /* no queue: split at once */
		return;
	}
	thp_queue_add(mm, head, true);
}

int mm_get_mthp_stats(struct mm *mm, unsigned order, struct mm_mthp_stats *out)
{
	const uint64_t *ev;

	if (!mm || !out || order < MM_MTHP_MIN_ORDER || order > MM_HPAGE_ORDER)
		return -EINVAL;
	mm_lock(mm);
	ev = mm->mthp_events[order];
	memset(out, 0, sizeof(*out));
	out->anon_fault_alloc = ev[MTHP_EV_ANON_FAULT_ALLOC];
	out->anon_fault_fallback = ev[MTHP_EV_ANON_FAULT_FALLBACK];
	out->split = ev[MTHP_EV_SPLIT];
	out->split_failed = ev[MTHP_EV_SPLIT_FAILED];
	out->split_deferred = ev[MTHP_EV_SPLIT_DEFERRED];
	out->shmem_alloc = ev[MTHP_EV_SHMEM_ALLOC];
	out->shmem_fallback = ev[MTHP_EV_SHMEM_FALLBACK];
	if (order == MM_HPAGE_ORDER) {
		out->nr_anon = mm->nr_anon_huge / MM_HPAGE_NR;
		out->nr_anon_partially_mapped = mm->nr_partially_mapped;
	} else {
		out->nr_anon = mm->nr_mthp[order];
		out->nr_anon_partially_mapped = mm->nr_mthp_partial[order];
	}
	mm_unlock(mm);
	return 0;
}

unsigned mm_anon_folio_order(struct mm *mm, uint32_t pfn)
{
	unsigned order = 0;

	if (!mm || pfn >= mm->nr_frames)
		return 0;
	mm_lock(mm);
	/* no mTHP frame anywhere (mm_check holds nr_anon_mthp to their count): the frame's
	 * descriptor need not be read */
	if (mm->nr_anon_mthp && pfn_frame(mm, pfn)->state == FS_MTHP)
		order = mthp_order(pfn_frame(mm, pfn));
	mm_unlock(mm);
	return order;
}

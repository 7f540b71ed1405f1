/* Shared memory: the shmem THP decision of each era and the frames of shmem objects.
 *
 * Mirrors Linux 6.12 mm/shmem.c: __shmem_huge_global_enabled (the mount's huge= against the
 * object's size and the VMA's advice; shmem_enabled deny and force above every mount),
 * shmem_allowable_huge_orders (the per-size shmem_enabled masks for anonymous shmem, the PMD
 * size alone for other shmem files), shmem_suitable_orders (no page of the object already in
 * the aligned range), shmem_alloc_and_add_folio (highest order first, THP_FILE_FALLBACK for the
 * PMD size and shmem_fallback per size on failure, then order 0) and shmem_get_folio_gfp
 * (THP_FILE_ALLOC, shmem_alloc); mm/memory.c do_set_pmd (THP_FILE_MAPPED). Linux 6.1
 * mm/shmem.c shmem_is_huge and shmem_alloc_hugefolio: the PMD size only, allocated whatever the
 * VMA's alignment (6.1 has no shmem_suitable_orders), a range with a page in it skipped without
 * a fallback count. 3.x: shmem pages are 4 KiB (shmem THP came in 4.8, 800d8c63b2e9).
 *
 * Holes and truncation (mm_shmem_punch): 6.12 and 6.1 mm/shmem.c shmem_undo_range frees the
 * whole pages of the range and splits a large folio the range covers in part (mm/truncate.c
 * truncate_inode_partial_folio -> split_folio, to 4 KiB: THP_SPLIT_PAGE, NR_SHMEM_THPS falls in
 * split_huge_page_to_list_to_order); 3.x frees 4 KiB pages (no shmem THP).
 *
 * The internal mount (MAP_SHARED anonymous, memfd, SysV shm) takes shmem_enabled as its huge=
 * when it is one of never/always/within_size/advise (6.12 shmem_init and shmem_enabled_store:
 * SHMEM_SB(shm_mnt->mnt_sb)->huge = shmem_huge when shmem_huge > SHMEM_HUGE_DENY); under deny or
 * force the model takes never for it, as at boot (the kernel keeps the last value written).
 *
 * Frames: FS_SHMEM, owner MM_OWNER_SHMEM(object, index), each in the page-cache index (so a
 * second fault of a cached page finds it), the folio order in every frame's order byte. They
 * are on no list: a shmem folio is swap-backed, so 6.12 keeps it on the anon LRU
 * (include/linux/mm_inline.h folio_is_file_lru), which without swap is never reclaimed. The
 * kernel migrates shmem folios (shmem_aops.migrate_folio = migrate_folio); the model does not:
 * compaction finds them not isolatable, as unmovable frames (core/mm/README.md says why).
 */
#include <errno.h>
#include <string.h>

#include "mm/internal.h"

#define PMD_BIT (1U << MM_HPAGE_ORDER)

static uint64_t round_up_pow2(uint64_t v, unsigned order)
{
	uint64_t n = 1ULL << order;

	return (v + n - 1) & ~(n - 1);
}

/* The mount's huge= for this kind of shmem. */
static unsigned mount_huge(const struct mm_policy *p, enum mm_shmem_kind kind)
{
	if (kind == MM_SHMEM_TMPFS)
		return p->tmpfs_huge;
	return p->shmem_enabled <= MM_SHMEM_HUGE_ADVISE ? p->shmem_enabled : MM_SHMEM_HUGE_NEVER;
}

/* 6.12 __shmem_huge_global_enabled (6.1 shmem_is_huge: the same rules) for a fault (write_end
 * 0), after the VMA checks the callers made: may the PMD size be used at index? force is
 * shmem_huge_force: MADV_COLLAPSE's VMA check (thp_vma_allowable_order without
 * TVA_ENFORCE_SYSFS) passes it, so every mount's huge= but deny says yes. */
static bool shmem_huge_global_enabled(const struct mm_policy *p, const struct mm_shmem_vma *v,
				      uint64_t index, bool force)
{
	if (p->shmem_enabled == MM_SHMEM_HUGE_DENY)
		return false;
	if (force || p->shmem_enabled == MM_SHMEM_HUGE_FORCE)
		return true;
	switch (mount_huge(p, v->kind)) {
	case MM_SHMEM_HUGE_ALWAYS:
		return true;
	case MM_SHMEM_HUGE_WITHIN_SIZE:
		if (v->i_size_pages >= round_up_pow2(index + 1, MM_HPAGE_ORDER))
			return true;
		/* fallthrough */
	case MM_SHMEM_HUGE_ADVISE:
		return v->advice == MM_VMA_HUGEPAGE;
	default:
		return false;
	}
}

/* The per-size masks of 6.12 (huge_shmem_orders_always, _madvise, _inherit, _within_size). */
static uint16_t size_mask(const struct mm_policy *p, enum mm_shmem_size which)
{
	uint16_t m = 0;

	for (unsigned o = MM_POLICY_MTHP_MIN_ORDER; o <= MM_POLICY_PMD_ORDER; o++)
		if (p->shmem_hugepages[o] == which)
			m |= (uint16_t)(1U << o);
	return m;
}

/* 6.12 shmem_allowable_huge_orders(inode, vma, index, 0, force); forced is also the prctl's
 * forced collapse (as for anonymous memory: khugepaged.c vma_allowable). */
static uint16_t allowable_orders(const struct mm_policy *p, const struct mm_shmem_vma *v,
				 uint64_t index, bool force)
{
	uint16_t mask, within;
	bool global;

	if (!p || !v || p->era < MM_ERA_6_1)
		return 0;
	/* 6.12 vma_thp_disabled (6.1 shmem_is_huge: VM_NOHUGEPAGE, MMF_DISABLE_THP) */
	if (mm_vma_thp_disabled(v->advice, v->thp_disable, force))
		return 0;
	global = shmem_huge_global_enabled(p, v, index, force);
	if (p->era == MM_ERA_6_1 || v->kind != MM_SHMEM_ANON)
		/* 6.1 shmem_is_huge; 6.12 "for tmpfs, we now only support PMD sized THP" */
		return global ? PMD_BIT : 0;
	if (p->shmem_enabled == MM_SHMEM_HUGE_DENY)
		return 0;
	if (p->shmem_enabled == MM_SHMEM_HUGE_FORCE)
		return size_mask(p, MM_SHMEM_SIZE_INHERIT);
	mask = size_mask(p, MM_SHMEM_SIZE_ALWAYS);
	/* within_size sizes: all of them once the highest one that fits inside i_size does */
	within = size_mask(p, MM_SHMEM_SIZE_WITHIN_SIZE);
	for (int o = MM_POLICY_PMD_ORDER; o >= MM_POLICY_MTHP_MIN_ORDER; o--) {
		if (!(within & (1U << o)))
			continue;
		if (v->i_size_pages >= round_up_pow2(index + 1, (unsigned)o)) {
			mask |= within;
			break;
		}
	}
	if (v->advice == MM_VMA_HUGEPAGE)
		mask |= size_mask(p, MM_SHMEM_SIZE_ADVISE);
	if (global)
		mask |= size_mask(p, MM_SHMEM_SIZE_INHERIT);
	return mask;
}

uint16_t mm_shmem_allowable_orders(const struct mm_policy *p, const struct mm_shmem_vma *v,
				   uint64_t index)
{
	return allowable_orders(p, v, index, false);
}

/* Is any page of [first, first + n) of the object cached (xa_find ... XA_PRESENT)? */
static bool range_cached(struct mm *mm, uint32_t object, uint64_t first, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		if (pc_lookup(mm, MM_OWNER_SHMEM(object, first + i)) != MM_NO_PFN)
			return true;
	return false;
}

static void add_folio(struct mm *mm, uint32_t head, unsigned order, uint64_t owner)
{
	uint32_t n = 1U << order;

	mark_allocated(mm, head, order, FS_SHMEM, owner);
	for (uint32_t i = 0; i < n; i++) {
		pfn_frame(mm, head + i)->order = (uint8_t)order;
		pc_insert(mm, head + i);
	}
	mm->nr_shmem += n;
	if (order == MM_HPAGE_ORDER)
		mm->nr_shmem_huge += n;
}

/* shmem_alloc_and_add_folio's large orders: highest first; NO_PFN when none was had. */
static uint32_t alloc_large(struct mm *mm, const struct mm_shmem_req *req, struct fault_ctx *fc,
			    uint16_t orders, unsigned *order)
{
	unsigned gfp = thp_gfp_mask(&mm->cfg.policy, req->vma.advice);

	for (int o = MM_HPAGE_ORDER; o >= MM_MTHP_MIN_ORDER; o--) {
		uint64_t first = req->index & ~((1ULL << o) - 1);
		struct alloc_ctx ac = {
		    .order = (unsigned)o, .mt = MM_MT_MOVABLE, .gfp = gfp, .fc = fc};
		uint32_t head;

		if (!(orders & (1U << o)))
			continue;
		if (range_cached(mm, req->object, first, 1ULL << o)) {
			/* 6.12 shmem_suitable_orders drops it and goes on with the next order;
			 * 6.1's shmem_alloc_hugefolio returns NULL before counting a fallback */
			continue;
		}
		/* the PMD size goes through alloc_pages_mpol's THISNODE|NORETRY pass (6.12
		 * folio_alloc_mpol, 6.1 vma_alloc_folio(hugepage)); smaller ones take one pass */
		head =
		    o == MM_HPAGE_ORDER ? alloc_pages_mpol(mm, &ac) : alloc_pages_one_pass(mm, &ac);
		/* the allocation may have dropped the lock (reclaim, compaction): another fault
		 * may have filled part of the range meanwhile (the kernel's add_to_page_cache
		 * then fails with -EEXIST and the fault repeats); give the block back */
		if (head != MM_NO_PFN && range_cached(mm, req->object, first, 1ULL << o)) {
			free_frames(mm, head, (unsigned)o, NULL);
			continue;
		}
		if (head != MM_NO_PFN) {
			add_folio(mm, head, (unsigned)o, MM_OWNER_SHMEM(req->object, first));
			*order = (unsigned)o;
			return head;
		}
		if (o == MM_HPAGE_ORDER)
			count_event(mm, MM_STAT_THP_FILE_FALLBACK, 1);
		count_mthp_event(mm, (unsigned)o, MTHP_EV_SHMEM_FALLBACK);
		fault_step(fc, MM_STEP_FALLBACK, 0);
	}
	return MM_NO_PFN;
}

int mm_shmem_fault(struct mm *mm, const struct mm_shmem_req *req, struct mm_fault_res *res,
		   void *call)
{
	struct fault_ctx fc = {.call = call};
	const struct mm_policy *p;
	uint32_t pfn = MM_NO_PFN, cached;
	unsigned order = 0;
	uint16_t orders;
	int ret = 0;

	if (!mm || !req || !res || !req->object || req->object > MM_SHMEM_MAX_OBJECT ||
	    req->index >= (1ULL << 36))
		return -EINVAL;
	p = &mm->cfg.policy;
	memset(res, 0, sizeof(*res));
	fc.rec = &res->rec;
	mm_lock(mm);
	res->rec.t_start = mm_now(mm, call);
	mm_charge(mm, call, MM_COST_FAULT, 1);
	cached = pc_lookup(mm, MM_OWNER_SHMEM(req->object, req->index));
	if (cached != MM_NO_PFN) {
		res->pfn = cached;
		res->order = (uint8_t)frame_order(pfn_frame(mm, cached));
		ret = -EEXIST;
		goto out;
	}
	orders = mm_shmem_allowable_orders(p, &req->vma, req->index);
	if (p->era == MM_ERA_MODERN)
		orders &= req->orders_ok; /* thp_vma_suitable_orders (6.12 only) */
	if (orders)
		pfn = alloc_large(mm, req, &fc, orders, &order);
	if (pfn != MM_NO_PFN) {
		if (order == MM_HPAGE_ORDER) {
			count_event(mm, MM_STAT_THP_FILE_ALLOC, 1);
			/* finish_fault -> do_set_pmd maps a PMD-size folio by a PMD when the
			 * VMA can hold it there (6.12 and 6.1 mm/memory.c) */
			if (req->orders_ok & PMD_BIT)
				count_event(mm, MM_STAT_THP_FILE_MAPPED, 1);
		}
		count_mthp_event(mm, order, MTHP_EV_SHMEM_ALLOC);
		res->outcome = order == MM_HPAGE_ORDER ? MM_FAULT_HUGE : MM_FAULT_MTHP;
		res->order = (uint8_t)order;
	} else {
		struct alloc_ctx ac = {
		    .order = 0, .mt = MM_MT_MOVABLE, .gfp = GFP_HIGHUSER_MOVABLE, .fc = &fc};

		pfn = alloc_base_page(mm, &ac, true);
		cached = pc_lookup(mm, MM_OWNER_SHMEM(req->object, req->index));
		if (pfn != MM_NO_PFN && cached != MM_NO_PFN) {
			/* filled by another fault while reclaim had the lock released */
			free_frames(mm, pfn, 0, NULL);
			res->pfn = cached;
			res->order = (uint8_t)frame_order(pfn_frame(mm, cached));
			ret = -EEXIST;
			goto out;
		}
		if (pfn == MM_NO_PFN) {
			res->outcome = MM_FAULT_NOMEM;
			count_event(mm, MM_STAT_NOMEM_FALLBACK, 1);
		} else {
			add_folio(mm, pfn, 0, MM_OWNER_SHMEM(req->object, req->index));
			res->outcome = MM_FAULT_BASE;
		}
	}
	res->pfn = pfn;
out:
	res->rec.outcome = (uint8_t)res->outcome;
	res->rec.order = res->order;
	res->rec.total_ns = mm_now(mm, call) - res->rec.t_start;
	mm_unlock(mm);
	return ret;
}

/* Is frame f a page of object (any folio order)? */
static bool of_object(const struct mm_frame *f, uint32_t object)
{
	return f->state == FS_SHMEM && MM_OWNER_FILE_ID(f->owner & ~MM_OWNER_SHMEM_BITS) == object;
}

/* truncate_inode_folio: the folio at head leaves the page cache and its frames are freed. */
static uint32_t free_folio(struct mm *mm, uint32_t head, unsigned order)
{
	uint32_t n = 1U << order;

	for (uint32_t i = 0; i < n; i++)
		pc_delete(mm, head + i);
	mm->nr_shmem -= n;
	if (order == MM_HPAGE_ORDER)
		mm->nr_shmem_huge -= n;
	free_frames(mm, head, order, NULL);
	return n;
}

/* split_folio (6.12 mm/huge_memory.c split_huge_page_to_list_to_order, new_order 0): the
 * folio's pages become 4 KiB folios in place, each already indexed under its own cookie;
 * NR_SHMEM_THPS falls by the PMD-size folio's pages, THP_SPLIT_PAGE and the order's split
 * stat count. The model's split never fails (no extra references are modelled). */
static void split_folio(struct mm *mm, uint32_t head, unsigned order)
{
	uint32_t n = 1U << order;

	for (uint32_t i = 0; i < n; i++)
		pfn_frame(mm, head + i)->order = 0;
	if (order == MM_HPAGE_ORDER) {
		mm->nr_shmem_huge -= n;
		count_event(mm, MM_STAT_THP_SPLIT_PAGE, 1);
	}
	count_mthp_event(mm, order, MTHP_EV_SPLIT);
}

/* The head frame and order of the folio holding pfn, a page of the object at index. */
static uint32_t folio_of(struct mm *mm, uint32_t pfn, uint64_t index, unsigned *order)
{
	*order = frame_order(pfn_frame(mm, pfn));
	return pfn - (uint32_t)(index & ((1ULL << *order) - 1));
}

/* truncate_inode_partial_folio on the page at index: a large folio that [start, end) does not
 * cover whole is split (the bytes outside the whole pages are zeroed by the kernel; the model
 * holds no data). */
static void split_partial(struct mm *mm, uint32_t object, uint64_t index, uint64_t start,
			  uint64_t end)
{
	uint32_t pfn = pc_lookup(mm, MM_OWNER_SHMEM(object, index)), head;
	uint64_t first;
	unsigned order;

	if (pfn == MM_NO_PFN)
		return;
	head = folio_of(mm, pfn, index, &order);
	first = index & ~((1ULL << order) - 1);
	if (order && (first < start || first + (1ULL << order) > end))
		split_folio(mm, head, order);
}

/* The page at index, if cached, leaves the page cache with its whole folio when the folio is
 * inside [start, end), else alone after a split. Returns the index after what was handled. */
static uint64_t punch_page(struct mm *mm, uint32_t object, uint64_t index, uint64_t start,
			   uint64_t end, uint32_t *freed)
{
	uint32_t pfn = pc_lookup(mm, MM_OWNER_SHMEM(object, index)), head;
	uint64_t first;
	unsigned order;

	if (pfn == MM_NO_PFN)
		return index + 1;
	head = folio_of(mm, pfn, index, &order);
	first = index & ~((1ULL << order) - 1);
	if (order && (first < start || first + (1ULL << order) > end)) {
		split_folio(mm, head, order);
		head = pfn;
		order = 0;
		first = index;
	}
	*freed += free_folio(mm, head, order);
	return first + (1ULL << order);
}

uint32_t mm_shmem_punch(struct mm *mm, uint32_t object, uint64_t lstart, uint64_t lend)
{
	uint64_t start, end, max = 1ULL << 36;
	uint32_t freed = 0;

	if (!mm || !object || object > MM_SHMEM_MAX_OBJECT || lend < lstart)
		return 0;
	/* 6.12 shmem_undo_range: whole pages [start, end); lend -1 is "to the end" */
	start = (lstart + MM_PAGE_SIZE - 1) / MM_PAGE_SIZE;
	end = lend == UINT64_MAX ? max : (lend + 1) / MM_PAGE_SIZE;
	if (start > max)
		return 0;
	if (end > max)
		end = max;
	if (end < start) /* inside one page: nothing whole goes */
		end = start;
	mm_lock(mm);
	/* the partial folios at both ends (shmem_get_partial_folio on lstart's and lend's page)
	 * are split even when no whole page of them goes: a punch of a few bytes splits a THP */
	if (lstart / MM_PAGE_SIZE < max)
		split_partial(mm, object, lstart / MM_PAGE_SIZE, start, end);
	if (lend != UINT64_MAX && lend / MM_PAGE_SIZE < max)
		split_partial(mm, object, lend / MM_PAGE_SIZE, start, end);
	if (end - start <= mm->nr_frames) { /* a range smaller than the pool: by index */
		for (uint64_t i = start; i < end;)
			i = punch_page(mm, object, i, start, end, &freed);
	} else { /* to the end of the file: every frame of the object at or after start */
		for (uint32_t pfn = 0; pfn < mm->nr_frames; pfn++) {
			struct mm_frame *f = pfn_frame(mm, pfn);
			uint64_t index;

			if (pfn >= mm->fresh_pfn && pfn < mm->fresh_end) {
				pfn = mm->fresh_end - 1; /* never touched: nobody's */
				continue;
			}
			if (!of_object(f, object))
				continue;
			index = MM_OWNER_FILE_INDEX(f->owner);
			if (index >= start && index < end)
				punch_page(mm, object, index, start, end, &freed);
		}
	}
	mm_unlock(mm);
	return freed;
}

uint32_t mm_shmem_release(struct mm *mm, uint32_t object)
{
	uint32_t freed = 0;

	if (!mm || !object || object > MM_SHMEM_MAX_OBJECT)
		return 0;
	mm_lock(mm);
	for (uint32_t pfn = 0; pfn < mm->nr_frames;) {
		struct mm_frame *f = pfn_frame(mm, pfn);
		unsigned order;

		if (pfn >= mm->fresh_pfn && pfn < mm->fresh_end) {
			pfn = mm->fresh_end; /* never touched: nobody's */
			continue;
		}
		if (!of_object(f, object)) {
			pfn++;
			continue;
		}
		order = frame_order(f);
		freed += free_folio(mm, pfn, order);
		pfn += 1U << order;
	}
	mm_unlock(mm);
	return freed;
}

/* ---- khugepaged and MADV_COLLAPSE: collapse_file -------------------------------------------- */

/* 6.12 __thp_vma_allowable_orders for a shmem VMA outside a fault: shmem_allowable_huge_orders
 * (inode, vma, vma->vm_pgoff, 0, !enforce_sysfs) & PMD, the VMA aligned with its page index
 * (thp_vma_suitable_order: the caller's vma_ok). 6.1 hugepage_vma_check: transhuge_vma_suitable,
 * then shmem_huge_enabled -> shmem_is_huge(vma, inode, vma->vm_pgoff, !enforce_sysfs).
 * khugepaged enforces sysfs (TVA_ENFORCE_SYSFS); MADV_COLLAPSE does not (tva_flags 0). */
bool mm_shmem_collapse_allowable(const struct mm_policy *p, const struct mm_collapse_scan *s,
				 bool khugepaged)
{
	if (!p || !s || !s->shmem_object || !s->vma_ok)
		return false;
	return allowable_orders(p, &s->shmem_vma, s->shmem_pgoff, !khugepaged) & PMD_BIT;
}

/* 6.12 khugepaged_enter_vma (called from __mmap_region and hugepage_madvise) for a shmem
 * mapping: the mm enters khugepaged's list when khugepaged may run at all
 * (hugepage_pmd_enabled: the anonymous PMD size's setting, in 6.12 even for shmem) and the VMA
 * passes thp_vma_allowable_order(TVA_ENFORCE_SYSFS, PMD_ORDER). 6.1 the same from mmap_region
 * and hugepage_madvise (hugepage_flags_enabled, hugepage_vma_check). */
int mm_khugepaged_enter_shmem(struct mm *mm, uint32_t as_id, const struct mm_shmem_vma *v,
			      uint64_t pgoff)
{
	int ret = 0;

	if (!mm || !v)
		return -EINVAL;
	mm_lock(mm);
	if (thp_pmd_enabled(&mm->cfg.policy) &&
	    (allowable_orders(&mm->cfg.policy, v, pgoff, false) & PMD_BIT))
		ret = khugepaged_enter_locked(mm, as_id);
	mm_unlock(mm);
	return ret;
}

/* What hpage_collapse_scan_file's walk of the page cache finds in [start, start + 512). */
struct file_scan {
	unsigned present; /* pages of small folios (6.12: present += folio_nr_pages) */
	bool pmd_folio;	  /* a PMD-size folio at start: "Maybe PMD-mapped" */
	bool compound;	  /* 6.1: a large folio smaller than the PMD size (SCAN_PAGE_COMPOUND) */
};

/* No swap entries (no swap: max_ptes_swap never applies); every folio is on the LRU and has
 * no other reference (folio_test_lru, is_refcount_suitable: nothing pins a frame here). */
static void scan_file(struct mm *mm, uint32_t object, uint64_t start, struct file_scan *fs)
{
	memset(fs, 0, sizeof(*fs));
	for (uint64_t i = 0; i < MM_HPAGE_NR;) {
		uint32_t pfn = pc_lookup(mm, MM_OWNER_SHMEM(object, start + i));
		unsigned order;

		if (pfn == MM_NO_PFN) {
			i++;
			continue;
		}
		order = frame_order(pfn_frame(mm, pfn));
		if (order == MM_HPAGE_ORDER) {
			fs->pmd_folio = true;
			return;
		}
		if (order && mm->cfg.policy.era == MM_ERA_6_1) {
			fs->compound = true; /* 6.1 PageTransCompound: "TODO: khugepaged should
					      * compact smaller compound pages" */
			return;
		}
		fs->present += 1U << order;
		i = ((start + i) | ((1ULL << order) - 1)) + 1 - start;
	}
}

/* The range's small folios leave the page cache and go back to the buddy (collapse_file, after
 * the new folio took their place: folio_put_refs of each). */
static void free_small_folios(struct mm *mm, uint32_t object, uint64_t start)
{
	for (uint64_t i = 0; i < MM_HPAGE_NR;) {
		uint32_t pfn = pc_lookup(mm, MM_OWNER_SHMEM(object, start + i)), head, n;
		unsigned order;

		if (pfn == MM_NO_PFN) {
			i++;
			continue;
		}
		order = frame_order(pfn_frame(mm, pfn));
		n = 1U << order;
		head = pfn - (uint32_t)((start + i) & (n - 1));
		for (uint32_t k = 0; k < n; k++)
			pc_delete(mm, head + k);
		mm->nr_shmem -= n;
		free_frames(mm, head, order, NULL);
		i = ((start + i) | (n - 1)) + 1 - start;
	}
}

/* A PMD-size folio is at the range's start already (SCAN_PTE_MAPPED_HUGEPAGE): the mapping maps
 * it by a PMD (do_set_pmd at its fault), or has no page table there after a collapse
 * (retract_page_tables). 6.12 khugepaged_scan_mm_slot calls collapse_pte_mapped_thp(mm, addr,
 * false), which gives SCAN_PMD_MAPPED, or SCAN_SUCCEED for a pmd_none, and turns
 * SCAN_PMD_MAPPED into SCAN_SUCCEED: khugepaged_pages_collapsed counts the range again at every
 * visit. 6.1 khugepaged_scan_mm_slot asks find_pmd_or_thp_or_none, which gives SCAN_PMD_MAPPED
 * (or SCAN_PMD_NULL), not SCAN_SUCCEED: nothing counted. MADV_COLLAPSE (madvise_collapse ->
 * collapse_pte_mapped_thp(mm, addr, true)): success either way. */
static enum mm_scan_result pte_mapped_hugepage(struct mm *mm, bool khugepaged)
{
	if (!khugepaged || mm->cfg.policy.era == MM_ERA_6_1)
		return MM_SCAN_PMD_MAPPED;
	count_event(mm, MM_STAT_KHUGEPAGED_PAGES_COLLAPSED, 1);
	return MM_SCAN_SUCCEED;
}

/* 6.12 / 6.1 hpage_collapse_scan_file, then collapse_file. The emulated collapse is the page
 * cache's: the new PMD-size folio takes the object's index entries of the whole range (holes
 * included: shmem_charge(nr_none), NR_SHMEM += nr_none), the old folios are freed, the data is
 * wherever the caller keeps it. */
enum mm_scan_result shmem_collapse_range(struct mm *mm, const struct mm_collapse_scan *s,
					 bool khugepaged, struct fault_ctx *fc)
{
	const struct mm_policy *p = &mm->cfg.policy;
	uint32_t object = s->shmem_object, head;
	uint64_t start = s->shmem_index;
	struct file_scan fs;

	scan_file(mm, object, start, &fs);
	if (fs.pmd_folio)
		return pte_mapped_hugepage(mm, khugepaged);
	if (fs.compound)
		return MM_SCAN_PAGE_COMPOUND;
	/* only khugepaged looks at max_ptes_none (cc->is_khugepaged) */
	if (khugepaged && fs.present < MM_HPAGE_NR - p->max_ptes_none) {
		count_event(mm, MM_STAT_THP_SCAN_EXCEED_NONE_PTE, 1);
		return MM_SCAN_EXCEED_NONE_PTE;
	}
	/* collapse_file: alloc_charge_folio first, with khugepaged's gfp or GFP_TRANSHUGE */
	head = collapse_alloc_block(mm, khugepaged, fc);
	if (head == MM_NO_PFN)
		return MM_SCAN_ALLOC_HUGE_PAGE_FAIL;
	/* collapse_file locks each page after the allocation (which may have released the lock:
	 * reclaim, compaction): what it finds now is what it collapses */
	scan_file(mm, object, start, &fs);
	if (fs.pmd_folio || fs.compound || !fs.present) {
		free_frames(mm, head, MM_HPAGE_ORDER, NULL);
		if (fs.pmd_folio)
			return pte_mapped_hugepage(mm, khugepaged);
		/* "Stop if extent has been truncated or hole-punched, and is now completely
		 * empty" (MADV_COLLAPSE of a never-touched range gets here) */
		return fs.compound ? MM_SCAN_PAGE_COMPOUND : MM_SCAN_TRUNCATED;
	}
	free_small_folios(mm, object, start);
	add_folio(mm, head, MM_HPAGE_ORDER, MM_OWNER_SHMEM(object, start));
	/* 6.12 khugepaged_scan_mm_slot: SCAN_SUCCEED -> ++khugepaged_pages_collapsed; for
	 * MADV_COLLAPSE collapse_file returns SCAN_PTE_MAPPED_HUGEPAGE and
	 * collapse_pte_mapped_thp maps it: a success */
	if (khugepaged)
		count_event(mm, MM_STAT_KHUGEPAGED_PAGES_COLLAPSED, 1);
	return MM_SCAN_SUCCEED;
}

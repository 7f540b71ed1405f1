/* khugepaged and MADV_COLLAPSE: the registered address spaces, the paced scan, the rules a 2 MiB
 * range must meet, and the collapse allocation with each era's gfp mask.
 *
 * Mirrors mm/huge_memory.c of Linux 3.1-3.3 (khugepaged lived there: khugepaged_enter,
 * khugepaged_loop / khugepaged_do_scan with CONFIG_NUMA, khugepaged_scan_mm_slot,
 * khugepaged_scan_pmd, collapse_huge_page, alloc_hugepage_gfpmask) and mm/khugepaged.c of 6.12
 * (khugepaged_enter_vma, khugepaged_do_scan, khugepaged_scan_mm_slot, hpage_collapse_scan_pmd,
 * __collapse_huge_page_isolate's limits, alloc_charge_folio, collapse_huge_page,
 * madvise_collapse and madvise_collapse_errno). A range of a shmem mapping goes through
 * hpage_collapse_scan_file / collapse_file instead (shmem.c: shmem_collapse_range).
 *
 * The address-space side (which ranges a process has and what they hold, and the collapse
 * itself: copy, zero, remap) belongs to the process whose memory it is; mm reaches it through
 * the khugepaged_scan hook (one visit of one address space) and the walker the owner gives
 * mm_khugepaged_scan_mm. mm keeps the mm_slot list, the cursor, the pacing and the rules.
 */
#include <errno.h>
#include <string.h>

#include "mm/internal.h"

/* 3.x GFP_TRANSHUGE (include/linux/gfp.h of 3.1, with __GFP_NO_KSWAPD: no kswapd bit here);
 * 6.12 GFP_TRANSHUGE_LIGHT and GFP_TRANSHUGE = LIGHT | __GFP_DIRECT_RECLAIM. */
#define GFP_TRANSHUGE_3X    (GFP_IO | GFP_FS | GFP_NORETRY | GFP_NOMEMALLOC | GFP_DIRECT_RECLAIM)
#define GFP_TRANSHUGE_LIGHT (GFP_IO | GFP_FS | GFP_NOMEMALLOC)
#define GFP_TRANSHUGE	    (GFP_TRANSHUGE_LIGHT | GFP_DIRECT_RECLAIM)

const char *mm_scan_result_name(enum mm_scan_result r)
{
	static const char *const names[MM_SCAN_NR] = {
	    [MM_SCAN_FAIL] = "fail",
	    [MM_SCAN_SUCCEED] = "succeed",
	    [MM_SCAN_PMD_NULL] = "pmd_null",
	    [MM_SCAN_PMD_MAPPED] = "pmd_mapped",
	    [MM_SCAN_EXCEED_NONE_PTE] = "exceed_none_pte",
	    [MM_SCAN_EXCEED_SWAP_PTE] = "exceed_swap_pte",
	    [MM_SCAN_EXCEED_SHARED_PTE] = "exceed_shared_pte",
	    [MM_SCAN_VMA_CHECK] = "vma_check_failed",
	    [MM_SCAN_PAGE_LOCK] = "page_locked",
	    [MM_SCAN_ALLOC_HUGE_PAGE_FAIL] = "alloc_huge_page_failed",
	    [MM_SCAN_PAGE_RO] = "page_ro",
	    [MM_SCAN_COPY_FAIL] = "copy_failed",
	    [MM_SCAN_TRUNCATED] = "truncated",
	    [MM_SCAN_PAGE_COMPOUND] = "page_compound",
	};

	return (unsigned)r < MM_SCAN_NR ? names[r] : "?";
}

/* 6.12 madvise_collapse_errno; SCAN_PMD_MAPPED is a success for madvise_collapse. Our
 * COPY_FAIL (the range changed under the collapse) is transient: -EAGAIN. 6.1's
 * madvise_collapse_errno (mm/khugepaged.c) has no SCAN_EXCEED_NONE_PTE case: holes a
 * userfaultfd-armed range cannot fill give -EINVAL there, -EBUSY in 6.12. */
int mm_scan_result_errno(const struct mm_policy *p, enum mm_scan_result r)
{
	switch (r) {
	case MM_SCAN_SUCCEED:
	case MM_SCAN_PMD_MAPPED:
		return 0;
	case MM_SCAN_ALLOC_HUGE_PAGE_FAIL:
		return -ENOMEM;
	case MM_SCAN_EXCEED_NONE_PTE:
		return p->era == MM_ERA_6_1 ? -EINVAL : -EBUSY;
	case MM_SCAN_PAGE_LOCK:
	case MM_SCAN_COPY_FAIL:
		return -EAGAIN;
	default:
		return -EINVAL;
	}
}

/* ---- The mm_slot list ------------------------------------------------------------------------ */

static int slot_find(const struct mm *mm, uint32_t as_id)
{
	for (uint32_t i = 0; i < mm->khp.nr; i++)
		if (mm->khp.ids[i] == as_id + 1)
			return (int)i;
	return -1;
}

/* khugepaged_enter / __khugepaged_enter: a new mm_slot goes to the list's tail. */
int khugepaged_enter_locked(struct mm *mm, uint32_t as_id)
{
	if (as_id == UINT32_MAX)
		return -EINVAL;
	if (slot_find(mm, as_id) >= 0)
		return 0;
	if (mm->khp.nr >= MM_KHUGEPAGED_SLOTS)
		return -ENOSPC;
	if (mm->khp.cursor == mm->khp.nr)
		mm->khp.cursor++; /* the cursor stays at the list head, behind the new slot */
	mm->khp.ids[mm->khp.nr++] = as_id + 1;
	return 0;
}

int mm_khugepaged_enter(struct mm *mm, uint32_t as_id)
{
	int ret;

	mm_lock(mm);
	ret = khugepaged_enter_locked(mm, as_id);
	mm_unlock(mm);
	return ret;
}

static void slot_remove(struct mm *mm, uint32_t i)
{
	memmove(&mm->khp.ids[i], &mm->khp.ids[i + 1], (mm->khp.nr - i - 1) * sizeof(uint32_t));
	mm->khp.nr--;
	if (mm->khp.cursor > i) {
		mm->khp.cursor--;
	} else if (mm->khp.cursor == i) {
		mm->khp.addr = 0; /* the cursor moves on to the next mm (collect_mm_slot) */
	}
}

void mm_khugepaged_exit(struct mm *mm, uint32_t as_id)
{
	int i;

	mm_lock(mm);
	i = slot_find(mm, as_id);
	if (i >= 0)
		slot_remove(mm, (uint32_t)i);
	mm_unlock(mm);
}

/* ---- The rules ----------------------------------------------------------------------------- */

/* hugepage_vma_check (3.x) / thp_vma_allowable_order (6.12) for a range of the VMA. */
static bool vma_allowable(const struct mm_policy *p, const struct mm_collapse_scan *s,
			  bool khugepaged)
{
	/* 6.18 vma_thp_disabled: the process's prctl; MADV_COLLAPSE is a forced collapse, which
	 * PR_THP_DISABLE_EXCEPT_ADVISED lets through (21c94e7e73e4) */
	if (mm_vma_thp_disabled(s->advice, s->thp_disable, !khugepaged))
		return false;
	if (!khugepaged)
		return true; /* MADV_COLLAPSE ignores enabled (tva_flags = 0) */
	/* 6.12 collapses to the PMD order only: hugepages-2048kB/enabled (inherit by default) */
	return mm_thp_allowable_orders(p, s->advice) & (1U << MM_HPAGE_ORDER);
}

static enum mm_scan_result collapse_check(struct mm *mm, const struct mm_collapse_scan *s,
					  bool khugepaged)
{
	const struct mm_policy *p = &mm->cfg.policy;

	if (!s->vma_ok || !vma_allowable(p, s, khugepaged))
		return MM_SCAN_VMA_CHECK;
	if (s->huge)
		return MM_SCAN_PMD_MAPPED;
	if (s->pmd_none)
		return MM_SCAN_PMD_NULL;
	if (s->busy)
		return MM_SCAN_PAGE_LOCK;
	/* A zero-page PTE (a read first touch). 3.x: present but not writable, so the scan gives
	 * up (3.2 mm/huge_memory.c khugepaged_scan_pmd and __collapse_huge_page_isolate:
	 * "!pte_present(pteval) || !pte_write(pteval)" -> out_unmap). 6.12: a hole like a none
	 * PTE (mm/khugepaged.c hpage_collapse_scan_pmd and __collapse_huge_page_isolate:
	 * "pte_none(pteval) || is_zero_pfn(pte_pfn(pteval))" counts none_or_zero; the copy clears
	 * the subpage, __collapse_huge_page_copy_succeeded). */
	if (s->zero && p->era < MM_ERA_6_1)
		return MM_SCAN_PAGE_RO;
	if (!khugepaged)
		return s->present + s->shared ? MM_SCAN_SUCCEED : MM_SCAN_EXCEED_NONE_PTE;
	/* __collapse_huge_page_isolate / hpage_collapse_scan_pmd: the limits, then "referenced":
	 * anonymous pages are never aged here (no swap, no anon LRU scan), so a mapped page is
	 * young since its fault */
	if (s->none + s->zero > p->max_ptes_none) {
		count_event(mm, MM_STAT_THP_SCAN_EXCEED_NONE_PTE, 1);
		return MM_SCAN_EXCEED_NONE_PTE;
	}
	if (s->swap > p->max_ptes_swap) {
		count_event(mm, MM_STAT_THP_SCAN_EXCEED_SWAP_PTE, 1);
		return MM_SCAN_EXCEED_SWAP_PTE;
	}
	if (s->shared > p->max_ptes_shared) {
		count_event(mm, MM_STAT_THP_SCAN_EXCEED_SHARED_PTE, 1);
		return MM_SCAN_EXCEED_SHARED_PTE;
	}
	if (!s->present && !s->shared)
		return MM_SCAN_EXCEED_NONE_PTE; /* nothing referenced */
	return MM_SCAN_SUCCEED;
}

enum mm_scan_result mm_collapse_check(struct mm *mm, const struct mm_collapse_scan *scan,
				      bool khugepaged)
{
	enum mm_scan_result r;

	mm_lock(mm);
	r = collapse_check(mm, scan, khugepaged);
	mm_unlock(mm);
	return r;
}

/* ---- The allocation ------------------------------------------------------------------------- */

/* alloc_hugepage_gfpmask(khugepaged_defrag()) of 3.x; 6.12 alloc_charge_folio's
 * "khugepaged_defrag() ? GFP_TRANSHUGE : GFP_TRANSHUGE_LIGHT" for khugepaged and always
 * GFP_TRANSHUGE for MADV_COLLAPSE. */
void collapse_alloc_ctx(const struct mm_policy *p, bool khugepaged, struct alloc_ctx *ac)
{
	bool defrag = !khugepaged || p->khugepaged_defrag;

	if (p->era < MM_ERA_6_1)
		ac->gfp = defrag ? GFP_TRANSHUGE_3X : GFP_TRANSHUGE_3X & ~GFP_DIRECT_RECLAIM;
	else
		ac->gfp = defrag ? GFP_TRANSHUGE : GFP_TRANSHUGE_LIGHT;
	ac->mode_set = khugepaged;
	ac->mode = p->khugepaged_mode;
}

uint32_t collapse_alloc_block(struct mm *mm, bool khugepaged, struct fault_ctx *fc)
{
	struct alloc_ctx ac = {.order = MM_HPAGE_ORDER, .mt = MM_MT_MOVABLE, .fc = fc};
	uint32_t head;

	collapse_alloc_ctx(&mm->cfg.policy, khugepaged, &ac);
	head = alloc_pages_one_pass(mm, &ac);
	if (head == MM_NO_PFN) {
		count_event(mm, MM_STAT_THP_COLLAPSE_ALLOC_FAILED, 1);
		if (khugepaged)
			mm->khp.alloc_failed = true;
		return MM_NO_PFN;
	}
	count_event(mm, MM_STAT_THP_COLLAPSE_ALLOC, 1);
	return head;
}

static uint32_t collapse_alloc_locked(struct mm *mm, uint64_t extent_owner, bool khugepaged,
				      struct fault_ctx *fc)
{
	uint32_t head = collapse_alloc_block(mm, khugepaged, fc);

	if (head == MM_NO_PFN)
		return MM_NO_PFN;
	mark_allocated(mm, head, MM_HPAGE_ORDER, FS_HUGE, extent_owner);
	mm->nr_anon += MM_HPAGE_NR;
	mm->nr_anon_huge += MM_HPAGE_NR;
	/* not mapped by a PMD until the owner's collapse is done */
	pfn_frame(mm, head)->flags |= FF_THP_PTE;
	mm->nr_huge_pte += MM_HPAGE_NR;
	return head;
}

int mm_collapse_alloc(struct mm *mm, uint64_t extent_owner, bool khugepaged, uint32_t *head,
		      struct mm_fault_rec *rec, void *call)
{
	struct fault_ctx fc = {.rec = rec, .call = call};

	if (rec)
		memset(rec, 0, sizeof(*rec));
	mm_lock(mm);
	if (rec)
		rec->t_start = mm_now(mm, call);
	*head = collapse_alloc_locked(mm, extent_owner, khugepaged, &fc);
	if (rec)
		rec->total_ns = mm_now(mm, call) - rec->t_start;
	mm_unlock(mm);
	return *head == MM_NO_PFN ? -ENOMEM : 0;
}

/* Is the block at head still the one allocated for extent_owner (mm_repair or the reaper may
 * have taken it back while the lock was released)? */
static bool block_still_ours(struct mm *mm, uint32_t head, uint64_t extent_owner)
{
	const struct mm_frame *f = pfn_frame(mm, head);

	return f->state == FS_HUGE && f->owner == extent_owner;
}

static void collapse_done_locked(struct mm *mm, uint32_t head, bool khugepaged, bool ok)
{
	struct mm_frame *hf = pfn_frame(mm, head);

	if (!ok) {
		thp_forget(mm, head);
		mm->nr_anon -= MM_HPAGE_NR;
		mm->nr_anon_huge -= MM_HPAGE_NR;
		free_frames(mm, head, MM_HPAGE_ORDER, NULL);
		return;
	}
	if (hf->flags & FF_THP_PTE) {
		hf->flags &= (uint8_t)~FF_THP_PTE;
		mm->nr_huge_pte -= MM_HPAGE_NR;
	}
	if (khugepaged)
		count_event(mm, MM_STAT_KHUGEPAGED_PAGES_COLLAPSED, 1);
	thp_new_mapped(mm, head);
}

void mm_collapse_done(struct mm *mm, uint32_t head, bool khugepaged, bool ok)
{
	mm_lock(mm);
	if (head < mm->nr_frames && head % MM_HPAGE_NR == 0 &&
	    pfn_frame(mm, head)->state == FS_HUGE)
		collapse_done_locked(mm, head, khugepaged, ok);
	mm_unlock(mm);
}

/* collapse_huge_page: allocate (the lock held by mm), collapse through the owner's walker with
 * the lock released, map or give the block back. Called and returns with the lock held. */
static enum mm_scan_result collapse_huge_page(struct mm *mm, const struct mm_khugepaged_walker *w,
					      uint64_t addr, const struct mm_collapse_scan *s,
					      bool khugepaged, struct fault_ctx *fc)
{
	uint32_t head = collapse_alloc_locked(mm, s->extent_owner, khugepaged, fc);
	uint64_t epoch;
	int rc;

	if (head == MM_NO_PFN)
		return MM_SCAN_ALLOC_HUGE_PAGE_FAIL;
	epoch = mm_unlock_for_hook(mm);
	rc = w->collapse(w->arg, addr, s, head, fc->call);
	mm_relock_after_hook(mm, epoch);
	if (!block_still_ours(mm, head, s->extent_owner))
		return MM_SCAN_COPY_FAIL; /* repaired or reaped meanwhile: nothing of it is ours */
	collapse_done_locked(mm, head, khugepaged, rc == 0);
	return rc == 0 ? MM_SCAN_SUCCEED : MM_SCAN_COPY_FAIL;
}

/* ---- The owner's half of a visit ---------------------------------------------------------------
 */

int mm_khugepaged_scan_mm(struct mm *mm, const struct mm_khugepaged_walker *w, uint64_t *addr,
			  unsigned budget, bool *done, void *call)
{
	struct fault_ctx fc = {.call = call};
	unsigned progress = 0;

	*done = false;
	while (progress < budget) {
		struct mm_collapse_scan s;
		uint64_t a = *addr;
		enum mm_scan_result r;

		if (w->next_range(w->arg, &a, &s)) {
			*done = true;
			break;
		}
		*addr = a + MM_HPAGE_SIZE;
		mm_lock(mm);
		if (s.shmem_object) {
			/* vma->vm_file (6.12 and 6.1 khugepaged_scan_mm_slot): the VMA check
			 * (skip: progress++), then hpage_collapse_scan_file with mmap_lock
			 * released, so the visit ends after the range whatever it gave
			 * (mmap_locked = false -> breakouterloop_mmap_lock) */
			if (!mm_shmem_collapse_allowable(&mm->cfg.policy, &s, true)) {
				progress++;
				mm_unlock(mm);
				continue;
			}
			progress += MM_HPAGE_NR;
			count_event(mm, MM_STAT_KHUGEPAGED_PAGES_SCANNED, MM_HPAGE_NR);
			shmem_collapse_range(mm, &s, true, &fc);
			mm_unlock(mm);
			break;
		}
		if (!s.vma_ok) { /* not a whole range of one VMA: hstart/hend never reach it */
			mm_unlock(mm);
			continue;
		}
		if (!vma_allowable(&mm->cfg.policy, &s, true)) {
			/* 6.12 / 3.x "skip_vma: progress++": per range here (a region is one VMA
			 * only while its advice is uniform) */
			progress++;
			mm_unlock(mm);
			continue;
		}
		progress += MM_HPAGE_NR; /* whatever the range holds */
		count_event(mm, MM_STAT_KHUGEPAGED_PAGES_SCANNED, MM_HPAGE_NR);
		r = collapse_check(mm, &s, true);
		if (r == MM_SCAN_SUCCEED) {
			/* collapse_huge_page drops mmap_lock: the visit ends after it */
			collapse_huge_page(mm, w, a, &s, true, &fc);
			mm_unlock(mm);
			break;
		}
		mm_unlock(mm);
	}
	return (int)progress;
}

enum mm_scan_result mm_madv_collapse(struct mm *mm, const struct mm_khugepaged_walker *w,
				     uint64_t addr, struct mm_fault_rec *rec, void *call)
{
	struct fault_ctx fc = {.rec = rec, .call = call};
	struct mm_collapse_scan s;
	enum mm_scan_result r;
	uint64_t a = addr;

	if (rec)
		memset(rec, 0, sizeof(*rec));
	if (w->next_range(w->arg, &a, &s) || a != addr)
		return MM_SCAN_VMA_CHECK; /* not a whole managed 2 MiB range */
	mm_lock(mm);
	if (rec)
		rec->t_start = mm_now(mm, call);
	count_event(mm, MM_STAT_MADV_COLLAPSE, 1);
	if (s.shmem_object) { /* madvise_collapse: vma->vm_file -> hpage_collapse_scan_file */
		r = mm_shmem_collapse_allowable(&mm->cfg.policy, &s, false)
			? shmem_collapse_range(mm, &s, false, &fc)
			: MM_SCAN_VMA_CHECK;
	} else {
		r = collapse_check(mm, &s, false);
		if (r == MM_SCAN_SUCCEED)
			r = collapse_huge_page(mm, w, addr, &s, false, &fc);
	}
	if (rec)
		rec->total_ns = mm_now(mm, call) - rec->t_start;
	mm_unlock(mm);
	return r;
}

/* ---- The thread --------------------------------------------------------------------------------
 */

static bool khugepaged_runs(struct mm *mm)
{
	const struct mm_policy *p = &mm->cfg.policy;

	return p->khugepaged && thp_pmd_enabled(p) && mm_has_khugepaged_scan(mm);
}

/* khugepaged_scan_mm_slot's caller side: one visit of the slot at the cursor. Called and
 * returns with the lock held; returns the progress. */
static unsigned visit_slot(struct mm *mm, unsigned budget, unsigned *pass, void *call)
{
	uint32_t i = mm->khp.cursor, as_id;
	uint64_t addr, epoch;
	bool done = false;
	int rc;

	if (i >= mm->khp.nr) { /* at the list head: a pass starts */
		(*pass)++;
		mm->khp.cursor = i = 0;
		mm->khp.addr = 0;
		if (*pass >= 2 || !mm->khp.nr)
			return budget;
	}
	as_id = mm->khp.ids[i] - 1;
	addr = mm->khp.addr;
	mm->khp.alloc_failed = false;
	epoch = mm_unlock_for_hook(mm);
	rc = mm_hook_khugepaged_scan(mm, call, as_id, &addr, budget - 1, &done);
	mm_relock_after_hook(mm, epoch);
	/* the slot may have moved while the lock was released (an exit before it) */
	i = (uint32_t)slot_find(mm, as_id);
	if (rc == -ENOENT || (int)i < 0) {
		if ((int)i >= 0)
			slot_remove(mm, i);
		return 1;
	}
	mm->khp.cursor = i;
	if (done) {
		mm->khp.cursor = i + 1;
		mm->khp.addr = 0;
		if (mm->khp.cursor >= mm->khp.nr)
			count_event(mm, MM_STAT_KHUGEPAGED_FULL_SCANS, 1);
	} else {
		mm->khp.addr = addr;
	}
	return 1 + (unsigned)(rc > 0 ? rc : 0); /* +1 for the mm itself */
}

uint64_t mm_khugepaged(struct mm *mm, void *call)
{
	const struct mm_policy *p = &mm->cfg.policy;
	unsigned progress, pass, pages = p->pages_to_scan ? p->pages_to_scan : 1;
	bool wait = true;
	uint64_t now, next;

	mm_lock(mm);
	if (!khugepaged_runs(mm) || !mm->khp.nr || mm->khp.running) {
		mm_unlock(mm);
		return UINT64_MAX;
	}
	now = mm_now(mm, call);
	if (now < mm->khp.next_ns) {
		mm_unlock(mm);
		return mm->khp.next_ns - now;
	}
	mm->khp.running = true;
	progress = 0;
	pass = 0;		/* pass_through_head */
	if (mm->khp.resuming) { /* 6.12: back from alloc_sleep inside a wake */
		progress = mm->khp.resume_progress;
		pass = mm->khp.resume_pass;
		wait = false;
		mm->khp.resuming = false;
	}
	next = p->scan_sleep_ns;
	/* khugepaged_do_scan */
	while (progress < pages && mm->khp.nr) {
		progress += visit_slot(mm, pages - progress, &pass, call);
		if (!mm->khp.alloc_failed || progress >= pages)
			continue;
		if (p->era < MM_ERA_6_1) {
			/* 3.x CONFIG_NUMA: the wake ends, khugepaged_loop sleeps scan_sleep, then
			 * khugepaged_alloc_sleep before the next scan */
			next = p->scan_sleep_ns + p->alloc_sleep_ns;
			break;
		}
		if (!wait)
			break; /* 6.12: a second failure in a wake ends it */
		/* 6.12: khugepaged_alloc_sleep, then the same wake goes on */
		mm->khp.resuming = true;
		mm->khp.resume_progress = progress;
		mm->khp.resume_pass = (uint8_t)pass;
		next = p->alloc_sleep_ns;
		break;
	}
	mm->khp.alloc_failed = false;
	mm->khp.running = false;
	mm->khp.next_ns = mm_now(mm, call) + next;
	mm_unlock(mm);
	return next ? next : 1;
}

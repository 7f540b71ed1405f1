/* Simulated processes with anonymous memory: a mapping faulted extent by extent, the program's
 * writes between faults, munmap and exit, and the owner's side of page migration.
 *
 * The first touch of an empty, wholly mapped 2 MiB extent asks mm for a huge page
 * (do_huge_pmd_anonymous_page); if mm falls back, the extent gets a page table and every later
 * touch of it is a base fault (do_anonymous_page), as in the kernel. Each fault's latency is the
 * actor's virtual time across mm_fault plus, for a base page, zeroing it. Owner cookies are
 * pid << 32 | page index, so a huge extent's pages have consecutive cookies as mm.h requires.
 *
 * The mapping is a core/addrspace region, so munmap (a partial one splits a huge extent first) and
 * the owner's side of migration follow the rules the live emulator and the replay use. A fault that
 * mm served outside the pool leaves the page as it was (the next touch faults again).
 *
 * Migration (the migrate_anon hook): the copy takes migrate-page of virtual time during which
 * the owner may unmap the page or exit; the hook then reports -ENOENT so mm frees both frames
 * (mm.h's rule for munmap racing compaction).
 *
 * khugepaged (the khugepaged_scan hook): a process is khugepaged's address space `pid` (its
 * faults pass as_id = pid, so mm registers it at its first THP-eligible fault, as
 * do_huge_pmd_anonymous_page calls khugepaged_enter; exit calls mm_khugepaged_exit, as
 * exit_mmap calls khugepaged_exit). A visit walks the region with mm_khugepaged_scan_mm: each
 * 2 MiB extent is described by as_collapse_scan, and a collapse claims it (as_collapse_claim:
 * every page MIGRATING, as collapse_huge_page holds mmap_lock for write and has cleared the
 * PMD), copies the present pages (copy-4k each) and zeroes the holes (clear-4k each) in the
 * khugepaged actor's time (mm/khugepaged.c: __collapse_huge_page_copy), then commits it
 * (as_collapse_commit: the old frames go back). Meanwhile the program's touches of the extent
 * and its munmap/exit of it wait, as a fault on the cleared PMD and munmap wait on mmap_lock.
 *
 * Zero pages (sim_config.zero_page, `thpemu sim --zero-page`, on by default, as the live
 * emulator's --zero-page): a read first touch (proc_read_range) asks mm with zero_ok and takes no
 * frame where the era maps a zero page: MM_FAULT_ZERO (mm/memory.c do_anonymous_page's read
 * path, my_zero_pfn: 3.x and 6.12) makes the page ZERO, MM_FAULT_HUGE_ZERO (6.12
 * mm/huge_memory.c do_huge_pmd_anonymous_page with use_zero_page: the huge zero folio mapped by
 * a PMD) makes the extent ZERO, and later reads of it take no fault. 3.1-3.3 have no huge zero
 * page (it came with 3.8), so mm gives a read of a THP-eligible extent a THP as for a write. The
 * first write to a zero page is a fault of its own (req.wp_zero): MM_WP_ZERO (do_wp_page ->
 * wp_page_copy, a zeroed 4 KiB page: clear-4k), MM_WP_HUGE_ZERO (6.12 do_huge_pmd_wp_page ->
 * __split_huge_pmd: the extent's other pages map the 4 KiB zero page, as_zero_split, and the
 * write takes a 4 KiB page). A zero page costs no clear (nothing is allocated; the huge zero
 * folio's one-time allocation is mm's, counted thp_zero_page_alloc), as on the live path. Off,
 * a read is decided and accounted as a write. The built-in scenarios' programs write every page
 * they touch first (usemem, mmtests' thpcompact and thpchallenge: memset or a store), so they
 * never read first and never meet a zero page.
 *
 * The underused split (the split_underused hook, 6.12 deferred_split_scan -> thp_underused):
 * a simulated program writes every page it touches (non-zero data), so a subpage is zero-filled
 * iff it was not written since its frame was zeroed: a huge fault zeroes all 512, a collapse
 * the holes. proc.c keeps that as one bit per page (`written`).
 */
#include "sim/sim_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define PROC_PID_MAX ((1u << 29) - 1) /* keep cookies clear of the FILE and FOREIGN bits */

static uint64_t cookie(const struct sim_proc *p, uint32_t page)
{
	return (uint64_t)p->pid << 32 | page;
}

static void proc_free(struct sim_proc *p)
{
	free(p->as.pstate);
	free(p->written);
	free(p);
}

static bool page_written(const struct sim_proc *p, uint32_t page)
{
	return p->written[page / 8] & (1u << (page % 8));
}

static void page_set_written(struct sim_proc *p, uint32_t page, bool on)
{
	if (on)
		p->written[page / 8] |= (uint8_t)(1u << (page % 8));
	else
		p->written[page / 8] &= (uint8_t) ~(1u << (page % 8));
}

/* page_set_written(p, page, on) for pages [first, first + n). */
static void pages_set_written(struct sim_proc *p, uint32_t first, uint32_t n, bool on)
{
	uint32_t i = first, end = first + n;

	for (; i < end && i % 8; i++)
		page_set_written(p, i, on);
	if (end - i >= 8) {
		memset(&p->written[i / 8], on ? 0xff : 0, (end - i) / 8);
		i += (end - i) / 8 * 8;
	}
	for (; i < end; i++)
		page_set_written(p, i, on);
}

struct sim_proc *proc_create(struct sim_world *w, uint64_t bytes, enum mm_vma_advice advice)
{
	struct sim_proc *p;
	void *mem = NULL;
	unsigned slot;

	for (slot = 0; slot < SIM_MAX_PROCS && w->procs[slot]; slot++)
		;
	if (slot == SIM_MAX_PROCS || bytes == 0)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->npages = (uint32_t)((bytes + MM_PAGE_SIZE - 1) / MM_PAGE_SIZE);
	if (as_region_geometry(&p->as, PROC_MAP_BASE, PROC_MAP_BASE,
			       PROC_MAP_BASE + (uint64_t)p->npages * MM_PAGE_SIZE) ||
	    !(mem = calloc(1, as_region_meta_size(&p->as))) ||
	    !(p->written = calloc(1, p->npages / 8 + 1))) {
		free(mem);
		free(p);
		return NULL;
	}
	as_region_attach(&p->as, mem);
	p->as.single = true; /* the simulator's one thread */
	w->next_pid = w->next_pid >= PROC_PID_MAX ? 1 : w->next_pid + 1;
	p->pid = w->next_pid;
	p->advice = advice;
	sim_waitq_init(&p->collapse_wq);
	w->procs[slot] = p;
	return p;
}

struct sim_proc *proc_lookup(struct sim_world *w, uint32_t pid)
{
	for (unsigned i = 0; i < SIM_MAX_PROCS; i++)
		if (w->procs[i] && w->procs[i]->pid == pid)
			return w->procs[i];
	return NULL;
}

static void proc_reap(struct sim_world *w, struct sim_proc *p)
{
	for (unsigned i = 0; i < SIM_MAX_PROCS; i++) {
		if (w->procs[i] == p) {
			w->procs[i] = NULL;
			break;
		}
	}
	proc_free(p);
}

/* A call that held an exited process (a migration copy, a khugepaged visit) lets go of it. */
static void proc_put(struct sim_world *w, struct sim_proc *p)
{
	if (p->exited && p->migrating == 0 && p->scanning == 0)
		proc_reap(w, p);
}

/* Extent e is being collapsed: the program's access waits until khugepaged lets go (a fault on
 * the cleared PMD, or munmap, waits on mmap_lock; mm/khugepaged.c collapse_huge_page holds it
 * for write from pmdp_collapse_flush to set_pmd_at). */
static void wait_collapse(struct sim_task *t, struct sim_proc *p, uint32_t e)
{
	while (AS_X_STATE(as_xstate(&p->as, e)) == AS_X_COLLAPSING)
		sim_wait(t->a, &p->collapse_wq, SIM_NO_TIMEOUT);
}

void proc_free_all(struct sim_world *w)
{
	for (unsigned i = 0; i < SIM_MAX_PROCS; i++) {
		if (w->procs[i])
			proc_free(w->procs[i]);
		w->procs[i] = NULL;
	}
}

/* The first write to a zero page, decided (res): the page gets its frame, zeroed (mm/memory.c
 * wp_page_copy: vma_alloc_zeroed_movable_folio for a zero-pfn PTE, 3.x and 6.12 alike:
 * clear-4k); a write to the huge zero PMD split it first (res.zero_split: 6.12
 * do_huge_pmd_wp_page -> __split_huge_pmd -> __split_huge_zero_page_pmd), its other pages now
 * mapping the 4 KiB zero page. A write served outside the pool leaves the page ZERO (the next
 * write faults again, as a first touch served outside the pool stays EMPTY). */
static void proc_wp_zero(struct sim_world *w, struct sim_task *t, struct sim_proc *p, uint32_t page,
			 enum mm_wp_zero wp, const struct mm_fault_res *res)
{
	struct as_region *r = &p->as;
	uint32_t e = page / MM_HPAGE_NR;

	if (res->zero_split || wp == MM_WP_HUGE_ZERO)
		as_zero_split(r, e); /* EMPTY pages of the extent (this one too) -> ZERO */
	if (res->outcome == MM_FAULT_BASE) {
		sim_charge(t->a, w->cfg->costs.ns[SIM_COST_CLEAR_4K]);
		as_fault_base(r, page, res->pfn, false);
	}
	w->zero.wp_faults++;
}

/* What a touch of page `page` must ask mm: MM_WP_NONE for a first touch, else the zero page the
 * page maps (a write to it is a fault of its own). */
static enum mm_wp_zero zero_mapped(const struct sim_proc *p, uint32_t page)
{
	if (AS_X_STATE(as_xstate(&p->as, page / MM_HPAGE_NR)) == AS_X_ZERO)
		return MM_WP_HUGE_ZERO;
	return AS_P_STATE(as_pstate(&p->as, page)) == AS_P_ZERO ? MM_WP_ZERO : MM_WP_NONE;
}

void proc_fault(struct sim_world *w, struct sim_task *t, struct sim_proc *p, uint32_t page,
		bool write)
{
	struct as_region *r = &p->as;
	uint32_t first = page & ~(MM_HPAGE_NR - 1), e = page / MM_HPAGE_NR;
	enum mm_wp_zero wp = write ? zero_mapped(p, page) : MM_WP_NONE;
	struct mm_fault_req req = {
	    .owner = cookie(p, page),
	    .extent_owner = cookie(p, first),
	    .advice = p->advice,
	    .write = write,
	    .zero_ok = !write && w->cfg->zero_page,
	    .wp_zero = wp,
	    .as_id = p->pid,
	    .addr = PROC_MAP_BASE + (uint64_t)page * MM_PAGE_SIZE,
	    .region_start = PROC_MAP_BASE,
	    .region_len = (uint64_t)p->npages * MM_PAGE_SIZE,
	};
	struct mm_fault_res res;
	uint64_t t0 = task_now(t);

	req.huge_ok = AS_X_STATE(as_xstate(r, e)) == AS_X_EMPTY;
	/* mTHP candidates (6.12 alloc_anon_folio: thp_vma_suitable_order, pte_range_none); mm
	 * reads them in the modern era only (the 3.x kernels have no mTHP), so only then is the
	 * walk of the surrounding pages worth its cost */
	req.orders_ok =
	    w->mmcfg.policy.era == MM_ERA_MODERN && wp == MM_WP_NONE ? as_mthp_orders(r, page) : 0;
	t->fault_t0 = t0 ? t0 : 1;
	t->fault_wb[0] = t->fault_wb[1] = (struct sim_wait_stat){0};
	if (mm_fault(w->mm, &req, &res, t) != 0) {
		t->fault_t0 = 0;
		return;
	}
	t->fault_t0 = 0;
	if (req.huge_ok) {
		w->extents++;
		w->extents_huge += res.outcome == MM_FAULT_HUGE;
	}
	if (wp != MM_WP_NONE) {
		proc_wp_zero(w, t, p, page, wp, &res);
		world_record_fault(w, t, &res, task_now(t) - t0, p->pid,
				   PROC_MAP_BASE + (uint64_t)page * MM_PAGE_SIZE);
		return;
	}
	switch (res.outcome) {
	case MM_FAULT_HUGE:
		as_fault_huge(r, e, res.pfn);
		pages_set_written(p, first, MM_HPAGE_NR, false); /* all 512 zeroed (clear_huge) */
		break;
	case MM_FAULT_BASE:
		sim_charge(t->a, w->cfg->costs.ns[SIM_COST_CLEAR_4K]);
		as_fault_base(r, page, res.pfn, true);
		break;
	case MM_FAULT_NOMEM:
		break;	    /* served outside the pool: nothing to track */
	case MM_FAULT_ZERO: /* no frame, nothing cleared: the shared zero page's PTE */
		as_fault_zero(r, page, true);
		w->zero.faults++;
		break;
	case MM_FAULT_HUGE_ZERO: /* the huge zero folio's PMD over the whole extent */
		as_fault_huge_zero(r, e, page);
		w->zero.huge_faults++;
		break;
	case MM_FAULT_MTHP: {
		/* the folio's 2^k pages zeroed (folio_zero_user) and mapped by set_ptes at once */
		uint32_t n = 1U << res.order, p0 = page & ~(n - 1);

		sim_charge(t->a, w->cfg->costs.ns[SIM_COST_CLEAR_4K] << res.order);
		as_fault_mthp(r, page, res.order, res.pfn, true);
		pages_set_written(p, p0, n, false);
		break;
	}
	}
	world_record_fault(w, t, &res, task_now(t) - t0, p->pid,
			   PROC_MAP_BASE + (uint64_t)page * MM_PAGE_SIZE);
	if (req.huge_ok)
		world_wake_khugepaged(w); /* khugepaged_enter may have registered p */
}

void proc_touch_range(struct sim_world *w, struct sim_task *t, struct sim_proc *p, uint32_t first,
		      uint32_t n)
{
	const uint64_t leash = 1000000; /* keep the actor within a millisecond of the machine */
	uint64_t touch = w->cfg->costs.ns[SIM_COST_TOUCH_4K];
	uint32_t end = first + n > p->npages ? p->npages : first + n;

	for (uint32_t i = first; i < end;) {
		uint32_t x = i / MM_HPAGE_NR, k = (x + 1) * MM_HPAGE_NR - i;
		uint64_t debt;

		wait_collapse(t, p, x);
		if (AS_X_STATE(as_xstate(&p->as, x)) != AS_X_HUGE) {
			uint8_t ps = AS_P_STATE(as_pstate(&p->as, i));

			/* a first touch, or the first write to a zero page */
			if (ps == AS_P_EMPTY || ps == AS_P_ZERO)
				proc_fault(w, t, p, i, true);
			page_set_written(p, i, true);
			sim_charge(t->a, touch);
			if (sim_actor_debt(t->a) >= leash)
				sim_settle(t->a);
			i++;
			continue;
		}
		/* A huge extent: none of its pages faults and nothing else runs until the actor
		 * settles, so the touches up to the next settle (or the extent's end) are one
		 * step: the same bits, the same debt, the same settle as page by page. */
		if (k > end - i)
			k = end - i;
		debt = sim_actor_debt(t->a);
		if (debt >= leash)
			k = 1;
		else if (touch && (leash - debt + touch - 1) / touch < k)
			k = (uint32_t)((leash - debt + touch - 1) / touch);
		pages_set_written(p, i, k, true);
		sim_charge(t->a, touch * k);
		if (sim_actor_debt(t->a) >= leash)
			sim_settle(t->a);
		i += k;
	}
	sim_settle(t->a);
}

void proc_read_range(struct sim_world *w, struct sim_task *t, struct sim_proc *p, uint32_t first,
		     uint32_t n)
{
	const uint64_t leash = 1000000; /* as proc_touch_range */
	uint64_t touch = w->cfg->costs.ns[SIM_COST_TOUCH_4K];
	uint32_t end = first + n > p->npages ? p->npages : first + n;

	for (uint32_t i = first; i < end; i++) {
		uint32_t x = i / MM_HPAGE_NR;
		uint8_t xs;

		wait_collapse(t, p, x);
		xs = AS_X_STATE(as_xstate(&p->as, x));
		/* a huge or huge-zero PMD, a zero page or a frame: mapped, no fault */
		if (xs != AS_X_HUGE && xs != AS_X_ZERO &&
		    AS_P_STATE(as_pstate(&p->as, i)) == AS_P_EMPTY)
			proc_fault(w, t, p, i, false);
		sim_charge(t->a, touch);
		if (sim_actor_debt(t->a) >= leash)
			sim_settle(t->a);
	}
	sim_settle(t->a);
}

void proc_unmap_range(struct sim_world *w, struct sim_task *t, struct sim_proc *p, uint32_t first,
		      uint32_t n)
{
	struct as_mm_ctx ctx = {w->mm, t}; /* frames go back in the unmapping task's time */
	const struct as_env env = as_mm_env(&ctx);
	uint32_t end = first + n > p->npages ? p->npages : first + n;
	struct as_counts c = {0};

	/* extent by extent, in address order, as zap_pmd_range walks the range */
	for (uint32_t i = first; i < end;) {
		uint32_t next = (i & ~(MM_HPAGE_NR - 1)) + MM_HPAGE_NR;

		if (next > end)
			next = end;
		wait_collapse(t, p, i / MM_HPAGE_NR);
		as_release(&env, &p->as, i, next, true, &c);
		i = next;
	}
}

/* __mmput: khugepaged_exit before exit_mmap, which waits for a collapse in flight (mmap_lock). */
void proc_exit(struct sim_world *w, struct sim_task *t, struct sim_proc *p)
{
	p->exiting = true;
	mm_khugepaged_exit(w->mm, p->pid);
	proc_unmap_range(w, t, p, 0, p->npages);
	sim_settle(t->a);
	p->exited = true;
	proc_put(w, p);
}

int proc_migrate(struct sim_world *w, struct sim_task *t, uint64_t owner, uint32_t from,
		 uint32_t to)
{
	struct sim_proc *p = proc_lookup(w, (uint32_t)(owner >> 32));
	uint32_t page = (uint32_t)owner;
	int rc;

	if (!p || p->exited)
		return -ENOENT;
	rc = as_migrate_claim(&p->as, page, from);
	if (rc)
		return rc;
	p->migrating++;
	if (t && t->a) {
		sim_charge(t->a, w->cfg->costs.ns[SIM_COST_MIGRATE_PAGE]);
		sim_settle(t->a); /* the owner may unmap or exit meanwhile */
	}
	p->migrating--;
	rc = as_migrate_freed(&p->as, page);
	if (p->exited) {
		proc_put(w, p);
		return -ENOENT; /* mm frees both frames */
	}
	if (rc == 0)
		as_migrate_commit(&p->as, page, to);
	return rc;
}

/* ---- khugepaged ------------------------------------------------------------------------------ */

struct khd_walk {
	struct sim_world *w;
	struct sim_proc *p;
};

/* The first extent starting at or after *addr (the region's virtual addresses). */
static int walk_next_range(void *arg, uint64_t *addr, struct mm_collapse_scan *scan)
{
	struct khd_walk *k = arg;
	struct sim_proc *p = k->p;
	struct as_region *r = &p->as;
	uint64_t e = 0;

	if (p->exiting)
		return -ENOENT; /* khugepaged_scan_mm_slot: hpage_collapse_test_exit */
	if (*addr > r->ext_base)
		e = (*addr - r->ext_base + MM_HPAGE_SIZE - 1) / MM_HPAGE_SIZE;
	if (e >= r->nexts)
		return -ENOENT;
	*addr = as_ext_addr(r, (uint32_t)e);
	as_collapse_scan(r, (uint32_t)e, cookie(p, as_page_of(r, *addr)), scan);
	return 0;
}

/* collapse_huge_page's part under mmap_lock for write (mm/khugepaged.c): the range is claimed,
 * re-checked (__collapse_huge_page_isolate: more holes or shared pages than the scan judged
 * is a changed range), copied and zeroed (__collapse_huge_page_copy), then mapped. */
static int walk_collapse(void *arg, uint64_t addr, const struct mm_collapse_scan *scan,
			 uint32_t head, void *call)
{
	struct khd_walk *k = arg;
	struct sim_world *w = k->w;
	struct sim_proc *p = k->p;
	struct sim_task *t = call;
	struct as_region *r = &p->as;
	struct as_mm_ctx ctx = {w->mm, t};
	const struct as_env env = as_mm_env(&ctx);
	uint32_t e = as_ext_of(r, addr), p0 = as_page_of(r, addr);
	uint32_t holes = 0, shared = 0;
	uint64_t hole[MM_HPAGE_NR / 64] = {0};
	struct as_counts c = {0};
	int rc;

	if (p->exiting || as_collapse_claim(r, e) != 0)
		return -EAGAIN;
	for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
		if (as_pstate(r, p0 + i) & AS_P_HOLE) {
			hole[i / 64] |= 1ULL << (i % 64);
			holes++;
		} else if (as_pfn(r, p0 + i) == MM_NO_PFN) {
			shared++;
		}
	}
	if (holes > scan->none || shared > scan->shared) {
		as_collapse_cancel(&env, r, e, &c);
		sim_wake_all(w->e, &p->collapse_wq);
		return -EAGAIN;
	}
	if (t && t->a) {
		sim_charge(t->a,
			   (uint64_t)(MM_HPAGE_NR - holes) * w->cfg->costs.ns[SIM_COST_COPY_4K] +
			       (uint64_t)holes * w->cfg->costs.ns[SIM_COST_CLEAR_4K]);
		sim_settle(t->a); /* the program's touches of the range wait meanwhile */
	}
	if (p->exited) { /* cannot happen: exit waits for the collapse; kept for safety */
		as_collapse_cancel(&env, r, e, &c);
		rc = -EAGAIN;
	} else {
		rc = as_collapse_commit(&env, r, e, head, &c);
	}
	if (rc == 0)
		for (uint32_t i = 0; i < MM_HPAGE_NR; i++)
			if (hole[i / 64] & (1ULL << (i % 64)))
				page_set_written(p, p0 + i, false); /* cleared */
	sim_wake_all(w->e, &p->collapse_wq);
	return rc ? -EAGAIN : 0;
}

int proc_khugepaged_scan(struct sim_world *w, struct sim_task *t, uint32_t pid, uint64_t *addr,
			 unsigned budget, bool *done)
{
	struct sim_proc *p = proc_lookup(w, pid);
	struct khd_walk k = {w, p};
	const struct mm_khugepaged_walker walker = {&k, walk_next_range, walk_collapse};
	int rc;

	if (!p || p->exiting)
		return -ENOENT;
	p->scanning++; /* the visit may sleep (allocation, copy): p stays until it returns */
	rc = mm_khugepaged_scan_mm(w->mm, &walker, addr, budget, done, t);
	p->scanning--;
	proc_put(w, p);
	return rc;
}

/* 6.12 mm/huge_memory.c thp_underused, with the shrinker's split (deferred_split_scan ->
 * split_folio, zero subpages remapped to the zero page and freed). The content check reads
 * subpages until it can decide (more than max_ptes_none zero-filled, or 512 - max_ptes_none
 * holding data): touch-4k each. */
int proc_split_underused(struct sim_world *w, struct sim_task *t, uint64_t extent_owner,
			 uint32_t head)
{
	struct sim_proc *p = proc_lookup(w, (uint32_t)(extent_owner >> 32));
	uint32_t page = (uint32_t)extent_owner, e, nr_zero = 0, filled = 0, read = 0;
	unsigned max_none = mm_policy(w->mm)->max_ptes_none;
	bool zero[MM_HPAGE_NR], decided;
	struct as_mm_ctx ctx = {w->mm, t};
	const struct as_env env = as_mm_env(&ctx);
	struct as_counts c = {0};
	int rc;

	if (!p || p->exiting || page >= p->npages || page % MM_HPAGE_NR)
		return -ENOENT;
	e = as_ext_of(&p->as, as_page_addr(&p->as, page));
	if (AS_X_STATE(as_xstate(&p->as, e)) != AS_X_HUGE || as_pfn(&p->as, page) != head)
		return -ENOENT;
	decided = max_none >= MM_HPAGE_NR - 1; /* 511: false without reading anything */
	for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
		zero[i] = !page_written(p, page + i);
		nr_zero += zero[i];
		if (decided)
			continue;
		read++;
		if (zero[i])
			decided = nr_zero > max_none;
		else
			decided = ++filled >= MM_HPAGE_NR - max_none;
	}
	if (t && t->a)
		sim_charge(t->a, (uint64_t)read * w->cfg->costs.ns[SIM_COST_TOUCH_4K]);
	if (!mm_thp_underused(w->mm, nr_zero))
		return 0;
	rc = as_split_underused(&env, &p->as, e, zero, &c);
	return rc < 0 ? rc : 1;
}

/* Simulated processes with anonymous memory: a mapping faulted extent by extent, the program's
 * writes between faults, munmap and exit, and the owner's side of page migration.
 *
 * The first touch of an empty, wholly mapped 2 MiB extent asks mm for a huge page
 * (do_huge_pmd_anonymous_page); if mm falls back, the extent gets a page table and every later
 * touch of it is a base fault (do_anonymous_page), as in the kernel. Each fault's latency is the
 * actor's virtual time across mm_fault plus, for a base page, zeroing it. Owner cookies are
 * pid << 32 | page index, so a huge extent's pages have consecutive cookies as mm.h requires.
 *
 * The mapping is a core/as region, so munmap (a partial one splits a huge extent first) and the
 * owner's side of migration follow the rules the live emulator and the replay use. A fault that
 * mm served outside the pool leaves the page as it was (the next touch faults again).
 *
 * Migration (the migrate_anon hook): the copy takes migrate-page of virtual time during which
 * the owner may unmap the page or exit; the hook then reports -ENOENT so mm frees both frames
 * (mm.h's rule for munmap racing compaction).
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
	free(p);
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
	    !(mem = calloc(1, as_region_meta_size(&p->as)))) {
		free(p);
		return NULL;
	}
	as_region_attach(&p->as, mem);
	w->next_pid = w->next_pid >= PROC_PID_MAX ? 1 : w->next_pid + 1;
	p->pid = w->next_pid;
	p->advice = advice;
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

void proc_free_all(struct sim_world *w)
{
	for (unsigned i = 0; i < SIM_MAX_PROCS; i++) {
		if (w->procs[i])
			proc_free(w->procs[i]);
		w->procs[i] = NULL;
	}
}

void proc_fault(struct sim_world *w, struct sim_task *t, struct sim_proc *p, uint32_t page)
{
	struct as_region *r = &p->as;
	uint32_t first = page & ~(MM_HPAGE_NR - 1), e = page / MM_HPAGE_NR;
	struct mm_fault_req req = {
	    .owner = cookie(p, page),
	    .extent_owner = cookie(p, first),
	    .advice = p->advice,
	    .write = true,
	};
	struct mm_fault_res res;
	uint64_t t0 = task_now(t);

	req.huge_ok = AS_X_STATE(as_xstate(r, e)) == AS_X_EMPTY;
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
	switch (res.outcome) {
	case MM_FAULT_HUGE:
		as_fault_huge(r, e, res.pfn);
		break;
	case MM_FAULT_BASE:
		sim_charge(t->a, w->cfg->costs.ns[SIM_COST_CLEAR_4K]);
		as_fault_base(r, page, res.pfn, true);
		break;
	case MM_FAULT_NOMEM:
		break; /* served outside the pool: nothing to track */
	}
	world_record_fault(w, t, &res, task_now(t) - t0, p->pid,
			   PROC_MAP_BASE + (uint64_t)page * MM_PAGE_SIZE);
}

void proc_touch_range(struct sim_world *w, struct sim_task *t, struct sim_proc *p, uint32_t first,
		      uint32_t n)
{
	uint64_t touch = w->cfg->costs.ns[SIM_COST_TOUCH_4K];
	uint32_t end = first + n > p->npages ? p->npages : first + n;

	for (uint32_t i = first; i < end; i++) {
		if (AS_P_STATE(as_pstate(&p->as, i)) == AS_P_EMPTY &&
		    AS_X_STATE(as_xstate(&p->as, i / MM_HPAGE_NR)) != AS_X_HUGE)
			proc_fault(w, t, p, i);
		sim_charge(t->a, touch);
		/* keep the actor within a millisecond of the rest of the machine */
		if (sim_actor_debt(t->a) >= 1000000)
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
		as_release(&env, &p->as, i, next, true, &c);
		i = next;
	}
}

void proc_exit(struct sim_world *w, struct sim_task *t, struct sim_proc *p)
{
	proc_unmap_range(w, t, p, 0, p->npages);
	sim_settle(t->a);
	p->exited = true;
	if (p->migrating == 0)
		proc_reap(w, p);
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
		if (p->migrating == 0)
			proc_reap(w, p);
		return -ENOENT; /* mm frees both frames */
	}
	if (rc == 0)
		as_migrate_commit(&p->as, page, to);
	return rc;
}

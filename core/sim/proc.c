/* Simulated processes with anonymous memory: a mapping faulted extent by extent, the program's
 * writes between faults, munmap and exit, and the owner's side of page migration.
 *
 * The first touch of an empty, wholly mapped 2 MiB extent asks mm for a huge page
 * (do_huge_pmd_anonymous_page); if mm falls back, the extent gets a page table and every later
 * touch of it is a base fault (do_anonymous_page), as in the kernel. Each fault's latency is the
 * actor's virtual time across mm_fault plus, for a base page, zeroing it. Owner cookies are
 * pid << 32 | page index, so a huge extent's pages have consecutive cookies as mm.h requires.
 *
 * Migration (the migrate_anon hook): the copy takes migrate-page of virtual time during which
 * the owner may exit; the owner then leaves the page alone and the hook reports -ENOENT so mm
 * frees both frames (mm.h's rule for munmap racing compaction).
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
	free(p->pfn);
	free(p->flags);
	free(p);
}

struct sim_proc *proc_create(struct sim_world *w, uint64_t bytes, enum mm_vma_advice advice)
{
	struct sim_proc *p;
	unsigned slot;

	for (slot = 0; slot < SIM_MAX_PROCS && w->procs[slot]; slot++)
		;
	if (slot == SIM_MAX_PROCS || bytes == 0)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->npages = (uint32_t)((bytes + MM_PAGE_SIZE - 1) / MM_PAGE_SIZE);
	p->pfn = malloc((size_t)p->npages * sizeof(*p->pfn));
	p->flags = calloc(p->npages, 1);
	if (!p->pfn || !p->flags) {
		proc_free(p);
		return NULL;
	}
	for (uint32_t i = 0; i < p->npages; i++)
		p->pfn[i] = MM_NO_PFN;
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

static bool extent_empty(const struct sim_proc *p, uint32_t first)
{
	for (uint32_t i = 0; i < MM_HPAGE_NR; i++)
		if (p->pfn[first + i] != MM_NO_PFN)
			return false;
	return true;
}

void proc_fault(struct sim_world *w, struct sim_task *t, struct sim_proc *p, uint32_t page)
{
	uint32_t first = page & ~(MM_HPAGE_NR - 1);
	struct mm_fault_req req = {
	    .owner = cookie(p, page),
	    .extent_owner = cookie(p, first),
	    .advice = p->advice,
	    .write = true,
	};
	struct mm_fault_res res;
	uint64_t t0 = task_now(t);

	req.huge_ok = first + MM_HPAGE_NR <= p->npages && extent_empty(p, first);
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
		for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
			p->pfn[first + i] = res.pfn + i;
			p->flags[first + i] |= PROC_HUGE;
		}
		break;
	case MM_FAULT_BASE:
		sim_charge(t->a, w->cfg->costs.ns[SIM_COST_CLEAR_4K]);
		p->pfn[page] = res.pfn;
		break;
	case MM_FAULT_NOMEM:
		break; /* served outside the pool: nothing to track */
	}
	/* each process's mapping is modelled at the same address, 0x7f0000000000 */
	world_record_fault(w, t, &res, task_now(t) - t0, p->pid,
			   0x7f0000000000ULL + (uint64_t)page * MM_PAGE_SIZE);
}

void proc_touch_range(struct sim_world *w, struct sim_task *t, struct sim_proc *p, uint32_t first,
		      uint32_t n)
{
	uint64_t touch = w->cfg->costs.ns[SIM_COST_TOUCH_4K];
	uint32_t end = first + n > p->npages ? p->npages : first + n;

	for (uint32_t i = first; i < end; i++) {
		if (p->pfn[i] == MM_NO_PFN && !(p->flags[i] & PROC_HUGE))
			proc_fault(w, t, p, i);
		sim_charge(t->a, touch);
		/* keep the actor within a millisecond of the rest of the machine */
		if (sim_actor_debt(t->a) >= 1000000)
			sim_settle(t->a);
	}
	sim_settle(t->a);
}

/* Split the huge extent starting at first into base pages (partial munmap of a THP). */
static void proc_split(struct sim_world *w, struct sim_proc *p, uint32_t first)
{
	if (mm_anon_split(w->mm, p->pfn[first]) != 0)
		return;
	for (uint32_t i = 0; i < MM_HPAGE_NR; i++)
		p->flags[first + i] &= (uint8_t)~PROC_HUGE;
}

static void free_page(struct sim_world *w, struct sim_task *t, struct sim_proc *p, uint32_t i)
{
	if (p->pfn[i] != MM_NO_PFN && !(p->flags[i] & PROC_MIGRATING))
		mm_anon_free(w->mm, p->pfn[i], 0, t);
	p->pfn[i] = MM_NO_PFN;
}

void proc_unmap_range(struct sim_world *w, struct sim_task *t, struct sim_proc *p, uint32_t first,
		      uint32_t n)
{
	uint32_t end = first + n > p->npages ? p->npages : first + n;

	for (uint32_t i = first; i < end;) {
		uint32_t ext = i & ~(MM_HPAGE_NR - 1);

		if (p->flags[i] & PROC_HUGE) {
			if (i == ext && ext + MM_HPAGE_NR <= end) { /* the whole extent goes */
				mm_anon_free(w->mm, p->pfn[ext], MM_HPAGE_ORDER, t);
				for (uint32_t k = 0; k < MM_HPAGE_NR; k++) {
					p->pfn[ext + k] = MM_NO_PFN;
					p->flags[ext + k] = 0;
				}
				i = ext + MM_HPAGE_NR;
				continue;
			}
			proc_split(w, p, ext);
			if (p->flags[i] & PROC_HUGE) { /* split refused: drop the whole extent */
				mm_anon_free(w->mm, p->pfn[ext], MM_HPAGE_ORDER, t);
				for (uint32_t k = 0; k < MM_HPAGE_NR; k++) {
					p->pfn[ext + k] = MM_NO_PFN;
					p->flags[ext + k] = 0;
				}
				i = ext + MM_HPAGE_NR;
				continue;
			}
		}
		free_page(w, t, p, i);
		i++;
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

	if (!p || p->exited || page >= p->npages || p->pfn[page] != from)
		return -ENOENT;
	if (p->flags[page] & (PROC_HUGE | PROC_MIGRATING))
		return -EBUSY;
	p->flags[page] |= PROC_MIGRATING;
	p->migrating++;
	if (t && t->a) {
		sim_charge(t->a, w->cfg->costs.ns[SIM_COST_MIGRATE_PAGE]);
		sim_settle(t->a); /* the owner may unmap or exit meanwhile */
	}
	p->migrating--;
	p->flags[page] &= (uint8_t)~PROC_MIGRATING;
	if (p->exited || p->pfn[page] != from) {
		if (p->exited && p->migrating == 0)
			proc_reap(w, p);
		return -ENOENT; /* mm frees both frames */
	}
	p->pfn[page] = to;
	return 0;
}

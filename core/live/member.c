/* A managed process on a shared machine (core/machine): joining it, asking other processes to
 * migrate their pages, serving their requests for ours, and a fork child joining as itself.
 *
 * A process started under `thpemu run` (THPEMU_MACHINE) does not make a pool of its own: it maps
 * the machine's segment, binds its own mm environment to the machine's mm (mm_attach: function
 * pointers are per process) and takes a slot, which every owner cookie of its pages carries
 * (region.c). Its handler threads fault against the shared mm under the machine's robust lock;
 * the host runs the kernel threads and io.
 *
 * Compaction anywhere on the machine may pick a frame of this process. Only this process can
 * unmap its page (UFFDIO_MOVE is refused across mms, process_madvise refuses MADV_DONTNEED), so
 * the picker asks: the request goes to this process's mailbox and the background thread here
 * (the agent) migrates the page exactly as a local compaction would (migrate.c), while the
 * picker waits with the frames isolated, as mm's [unlocked] migrate_anon hook allows. A
 * process that does not answer in time (stopped, or swamped) makes the page busy, as a page the
 * kernel cannot isolate; one that is gone makes it -ENOENT (mm frees both frames).
 *
 * khugepaged is the host's thread (one for the machine); its visit of this process comes as a
 * request too (MACHINE_REQ_KHUGEPAGED), and the agent scans and collapses our ranges itself
 * (collapse.c), since only this process can move a THP into its own mapping.
 *
 * A fork child: the kernel dropped the child's userfaultfd registrations (no EVENT_FORK), so its
 * untouched pages are plain anonymous memory and its touched ones are copies of its parent's.
 * The child joins as a process of its own (a new slot, userfaultfd, threads) and adopts every
 * mapping it inherited: pages present at the fork stay present and are not its frames (they
 * are the parent's, shared copy-on-write: the machine does not count them twice), pages never
 * touched are first touches through the machine, like any other.
 */
#include "live/uffd_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/sys.h"

#define REQUEST_TIMEOUT_NS  (200 * 1000000ULL) /* a stopped owner: the page is busy */
#define AGENT_SLICE_NS	    (100 * 1000000ULL) /* the agent's other duties come round */
#define WRITEOUT_TIMEOUT_NS (1000 * 1000000ULL)

static uffd_machine_stop_fn stop_hook;

void uffd_set_machine_stop_hook(uffd_machine_stop_fn fn)
{
	__atomic_store_n(&stop_hook, fn, __ATOMIC_RELEASE);
}

static bool machine_stopping(const struct machine *m)
{
	return __atomic_load_n(&m->hdr->stopping, __ATOMIC_ACQUIRE) != 0;
}

static int repair_mm(void *arg)
{
	return mm_repair(arg);
}

/* The same process before an exec (its pid, another slot) is gone: its address space was
 * replaced, so its frames go back (the host reaps the slot). */
static void leave_previous_images(struct uffd_live *lv)
{
	int pid = (int)sys_getpid();

	for (int s = 1; s < MACHINE_MAX_PROCS; s++) {
		const struct machine_slot *sl = machine_slot(&lv->mach, s);

		if (s != lv->mslot && sl && sl->pid == pid &&
		    __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) == MACHINE_SLOT_LIVE)
			machine_slot_leave(&lv->mach, s);
	}
}

/* Bind to the machine's mm and take a slot (the segment is mapped). */
static int join_mapped(struct uffd_live *lv, char *err, size_t errlen)
{
	struct machine_hdr *h = lv->mach.hdr;
	int rc;

	if (machine_stopping(&lv->mach)) { /* its host would only wait for us to leave again */
		snprintf(err, errlen, "machine %s is being stopped", lv->cfg.machine);
		return -ESHUTDOWN;
	}
	if (machine_tainted(&lv->mach)) {
		snprintf(err, errlen, "machine %s: its model was damaged by a dead process",
			 lv->cfg.machine);
		return -EUCLEAN;
	}
	lv->mm = machine_at(&lv->mach, __atomic_load_n(&h->mm_off, __ATOMIC_ACQUIRE));
	lv->wq = machine_at(&lv->mach, h->waitq_off);
	lv->rqs = h->rqs_off ? machine_at(&lv->mach, __atomic_load_n(&h->rqs_off, __ATOMIC_ACQUIRE))
			     : NULL;
	if (!lv->mm || !lv->wq) {
		snprintf(err, errlen, "machine %s is not ready", lv->cfg.machine);
		return -EAGAIN;
	}
	rc = mm_attach(lv->mm, &lv->env);
	if (rc < 0) {
		snprintf(err, errlen, "machine %s: cannot bind the model: %s", lv->cfg.machine,
			 strerror(-rc));
		return rc;
	}
	lv->mach.repair = repair_mm;
	lv->mach.repair_arg = lv->mm;
	rc = machine_slot_take_named(&lv->mach, lv->stats->comm); /* identified: stats_init */
	if (rc < 0) {
		snprintf(err, errlen, "machine %s: no free process slot (%d processes)",
			 lv->cfg.machine, MACHINE_MAX_PROCS - 1);
		mm_detach(lv->mm);
		return rc;
	}
	lv->mslot = rc;
	lv->on_machine = true;
	leave_previous_images(lv);
	return 0;
}

int uffd_machine_join(struct uffd_live *lv, const struct uffd_live *parent, char *err,
		      size_t errlen)
{
	int rc;

	lv->env.ops = &uffd_env_ops;
	lv->env.priv = lv;
	if (parent) { /* a fork child: the segment is mapped already */
		lv->mach = parent->mach;
		machine_forked_child(&lv->mach);
	} else {
		rc = machine_attach(lv->cfg.machine, &lv->mach, err, errlen);
		if (rc < 0)
			return rc;
	}
	rc = join_mapped(lv, err, errlen);
	if (rc < 0 && !parent)
		machine_detach(&lv->mach);
	return rc;
}

void uffd_machine_leave(struct uffd_live *lv)
{
	if (!lv->on_machine)
		return;
	mm_khugepaged_exit(lv->mm, (uint32_t)lv->mslot); /* khugepaged_exit */
	machine_slot_leave(&lv->mach, lv->mslot);	 /* the host gives our frames back */
	mm_detach(lv->mm);
	lv->on_machine = false;
}

int uffd_machine_request(struct uffd_live *lv, struct uffd_worker *w, int slot, uint32_t op,
			 uint64_t owner, uint32_t from, uint32_t to)
{
	uint64_t timeout = op == MACHINE_REQ_WRITEOUT ? WRITEOUT_TIMEOUT_NS : REQUEST_TIMEOUT_NS;
	int rc;

	(void)w;
	if (op == MACHINE_REQ_MIGRATE)
		UFFD_COUNT(lv, machine_requests);
	rc = machine_request(&lv->mach, slot, op, owner, from, to, timeout);
	if (op == MACHINE_REQ_MIGRATE && rc < 0 && rc != -ENOENT)
		UFFD_COUNT(lv, machine_request_busy);
	return rc;
}

int uffd_machine_copy_file(struct uffd_live *lv, uint32_t from, uint32_t to)
{
	uint8_t *arena = machine_arena(&lv->mach);
	uint32_t n = mm_nr_frames(lv->mm);

	if (!arena || from >= n || to >= n)
		return -EINVAL;
	memcpy(arena + (size_t)to * UFFD_PAGE_SIZE, arena + (size_t)from * UFFD_PAGE_SIZE,
	       UFFD_PAGE_SIZE);
	return 0;
}

/* The machine is being stopped: the process steps aside, once. Not here: stepping aside joins
 * this very thread, so the hook hands it to a thread of its own. */
static void tell_stopping(struct uffd_live *lv)
{
	uffd_machine_stop_fn fn = __atomic_load_n(&stop_hook, __ATOMIC_ACQUIRE);

	if (!lv->on_machine || lv->machine_stop_told || !machine_stopping(&lv->mach))
		return;
	lv->machine_stop_told = true;
	if (fn)
		fn();
}

/* The agent: serve the machine's requests for our pages for up to one slice. */
void uffd_machine_serve(struct uffd_live *lv, struct uffd_worker *w, uint64_t slice_ns)
{
	uint64_t owner;
	uint32_t op, from, to;

	if (!slice_ns || slice_ns > AGENT_SLICE_NS)
		slice_ns = AGENT_SLICE_NS;
	while (machine_serve_wait(&lv->mach, lv->mslot, &lv->agent_stop, slice_ns, &op, &owner,
				  &from, &to)) {
		int rc = -EINVAL;

		uint64_t reply = 0;

		if (op == MACHINE_REQ_MIGRATE) {
			rc = uffd_migrate_page(w, owner, from, to);
			UFFD_COUNT(lv, machine_served);
		} else if (op == MACHINE_REQ_SPLIT) {
			rc = uffd_split_underused(w, owner, from);
		} else if (op == MACHINE_REQ_KHUGEPAGED) { /* the host's khugepaged visits us */
			bool done = false;

			rc = uffd_khugepaged_visit(w, &owner, from, &done);
			reply = (owner & ~1ULL) | (done ? 1 : 0);
		}
		machine_serve_reply(&lv->mach, lv->mslot, rc, reply);
		slice_ns = 1; /* drain what is queued, then go back to the other duties */
	}
	tell_stopping(lv);
}

void uffd_machine_kick(struct uffd_live *lv)
{
	__atomic_fetch_or(&lv->agent_stop, 1, __ATOMIC_ACQ_REL);
	if (lv->on_machine)
		machine_serve_kick(&lv->mach, lv->mslot);
}

void uffd_machine_poke(struct uffd_live *lv)
{
	__atomic_fetch_or(&lv->agent_stop, UFFD_AGENT_POKE, __ATOMIC_ACQ_REL);
	if (lv->on_machine)
		machine_serve_kick(&lv->mach, lv->mslot);
}

/* ---- a fork child ---------------------------------------------------------------------------- */

/* Adopt [lo, hi) of an inherited region, split around pages that were unmapped (GONE). */
static void adopt_region(struct uffd_live *lv, const struct uffd_region *old)
{
	uint32_t n = (uint32_t)((old->hi - old->lo) / UFFD_PAGE_SIZE);
	uint32_t first = as_page_of(&old->as, old->lo);

	for (uint32_t p = first; p < first + n;) {
		uint32_t q = p;

		while (q < first + n && AS_P_STATE(as_pstate(&old->as, q)) != AS_P_GONE)
			q++;
		if (q > p) {
			uint64_t present = 0;

			uffd_adopt_range(lv, (void *)as_page_addr(&old->as, p),
					 (size_t)(q - p) * UFFD_PAGE_SIZE, old->prot, &present);
			uffd_stat_add(&lv->stats->host.fork_inherited_pages, present);
		}
		p = q > p ? q : p + 1;
	}
}

void uffd_machine_adopt_inherited(struct uffd_live *lv, const struct uffd_live *parent)
{
	const struct uffd_table *t = &parent->table;

	/* the parent's table is a copy nobody else uses now: read it without its lock (a
	 * parent thread may have held it at the fork, and it stays held in this copy) */
	for (unsigned i = 0; i < t->n; i++) {
		const struct uffd_region *r = t->sorted[i];

		if (!r->dead && !r->failed)
			adopt_region(lv, r);
	}
}

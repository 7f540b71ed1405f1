/* Scenario thpcompact: mmtests' thpcompact (formerly thpscale), fragmentation made inside the
 * process.
 *
 * Each of N threads maps its share of anon-fraction of the pool with MADV_HUGEPAGE and writes
 * it all, unmaps the first half of every aligned 2 MiB (splitting the THPs: half-full
 * pageblocks that are migration sources), reads its part of a file (a quarter of its share) so
 * page cache fills the holes, then, after a barrier, faults a second mapping of half its share
 * extent by extent: these faults are the measured ones. An iteration ends with everything
 * unmapped and the file dropped from the page cache; iterations repeat on the same pool until
 * the duration has passed, and the run ends with the last complete iteration. The file is read
 * without device I/O (it lives on a fast disk in mmtests; the device is not the subject here).
 */
#include "sim/sim_internal.h"

#include <errno.h>
#include <stdlib.h>

static const struct sim_param_def params[] = {
    {"threads", SIM_P_ACTORS, "4", "worker threads"},
    {"anon", SIM_P_FRACTION, "80%", "first mappings together, as a fraction of the pool"},
    {"madvise", SIM_P_BOOL, "1", "the measured mapping has MADV_HUGEPAGE"},
    {"init", SIM_P_STRING, "", "initial pool state: an mm_fragment recipe (empty: all free)"},
};

struct barrier {
	unsigned n, waiting;
	uint64_t gen;
	struct sim_waitq wq;
};

static void barrier_wait(struct barrier *b, struct sim_actor *a)
{
	uint64_t gen = b->gen;

	sim_settle(a);
	if (++b->waiting == b->n) {
		b->waiting = 0;
		b->gen++;
		sim_wake_all(sim_actor_engine(a), &b->wq);
		return;
	}
	while (b->gen == gen)
		sim_wait(a, &b->wq, SIM_NO_TIMEOUT);
}

struct tc_shared {
	struct barrier bar;
	uint32_t file_id; /* this iteration's file */
	uint64_t thread_bytes;
	bool stop;
};

struct tc_worker {
	struct sim_task task;
	struct sim_world *w;
	struct tc_shared *sh;
	unsigned idx;
};

/* munmap the first half of every aligned 2 MiB of p. */
static void punch_holes(struct sim_world *w, struct sim_task *t, struct sim_proc *p)
{
	for (uint32_t e = 0; e + MM_HPAGE_NR / 2 <= p->npages; e += MM_HPAGE_NR)
		proc_unmap_range(w, t, p, e, MM_HPAGE_NR / 2);
}

static void read_file_part(struct sim_world *w, struct sim_task *t, struct tc_shared *sh,
			   unsigned idx)
{
	uint32_t first = (uint32_t)(sh->thread_bytes / MM_PAGE_SIZE) * idx;
	uint32_t n = (uint32_t)(sh->thread_bytes / 4 / MM_PAGE_SIZE);

	for (uint32_t i = 0; i < n; i++)
		file_read_page(w, t, sh->file_id, first + i, false);
	sim_settle(t->a);
}

static void tc_iteration(struct tc_worker *k)
{
	struct sim_world *w = k->w;
	struct tc_shared *sh = k->sh;
	struct sim_task *t = &k->task;
	enum mm_vma_advice adv = sim_param_u(w, "madvise") ? MM_VMA_HUGEPAGE : MM_VMA_DEFAULT;
	struct sim_proc *first, *second;

	first = proc_create(w, sh->thread_bytes, MM_VMA_HUGEPAGE);
	second = proc_create(w, sh->thread_bytes / 2, adv);
	if (first) {
		proc_touch_range(w, t, first, 0, first->npages);
		punch_holes(w, t, first);
	}
	read_file_part(w, t, sh, k->idx);
	barrier_wait(&sh->bar, t->a);
	if (second) /* fault and write each extent of the second mapping: the measured faults */
		proc_touch_range(w, t, second, 0, second->npages);
	barrier_wait(&sh->bar, t->a);
	if (first)
		proc_exit(w, t, first);
	if (second)
		proc_exit(w, t, second);
}

static void tc_worker_fn(struct sim_actor *a, void *arg)
{
	struct tc_worker *k = arg;
	struct sim_world *w = k->w;
	struct tc_shared *sh = k->sh;

	for (;;) {
		if (k->idx == 0) {
			uint32_t pages = (uint32_t)(sh->thread_bytes / MM_PAGE_SIZE) * sh->bar.n;

			sh->stop = w->iterations > 0 && sim_now(w->e) >= w->end_ns;
			if (!sh->stop)
				sh->file_id = file_new(w, pages);
		}
		barrier_wait(&sh->bar, a);
		if (sh->stop)
			break;
		tc_iteration(k);
		barrier_wait(&sh->bar, a);
		if (k->idx == 0) {
			file_delete(w, sh->file_id); /* echo 3 > drop_caches, for this file */
			w->iterations++;
		}
	}
	if (k->idx == 0) {
		w->finished = true;
		sim_stop(w->e);
	}
}

static int thpcompact_start(struct sim_world *w, char *err, size_t errlen)
{
	unsigned n = (unsigned)sim_param_u(w, "threads");
	uint64_t pool = (uint64_t)mm_nr_frames(w->mm) * MM_PAGE_SIZE;
	const char *init = sim_param_s(w, "init");
	struct tc_shared *sh;
	struct tc_worker *k;
	int rc = 0;

	if (n == 0) {
		snprintf(err, errlen, "threads: must be at least 1");
		return -EINVAL;
	}
	rc = world_apply_recipe(w, init, err, errlen);
	if (rc)
		return rc;
	sh = calloc(1, sizeof(*sh) + n * sizeof(*k));
	if (!sh)
		return -ENOMEM;
	w->scen_state = sh;
	k = (struct tc_worker *)(sh + 1);
	sh->bar.n = n;
	sh->thread_bytes =
	    (uint64_t)(sim_param_f(w, "anon") * (double)pool) / n & ~(MM_HPAGE_SIZE - 1);
	if (sh->thread_bytes < 2 * MM_HPAGE_SIZE) {
		snprintf(err, errlen,
			 "threads: %u threads leave less than 4 MiB each of a %llu MiB pool", n,
			 (unsigned long long)(pool >> 20));
		return -EINVAL;
	}
	for (unsigned i = 0; i < n && rc == 0; i++) {
		k[i] = (struct tc_worker){.w = w, .sh = sh, .idx = i};
		rc = world_spawn(w, &k[i].task, "thpcompact", 0, tc_worker_fn, &k[i]);
	}
	return rc;
}

const struct sim_scenario sim_scen_thpcompact = {
    .name = "thpcompact",
    .summary = "mmtests thpcompact: fill, punch half of every 2 MiB, page cache in the holes, "
	       "fault half the size",
    .pool_bytes = 1ULL << 30,
    .duration_ns = 10ULL * 1000000000ULL,
    .params = params,
    .nparams = sizeof(params) / sizeof(params[0]),
    .start = thpcompact_start,
    .runs_to_completion = true,
};

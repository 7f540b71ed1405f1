/* Scenario thpchallenge-fio: mmtests' thpchallenge with the fio-random-reader-inefficient
 * challenge, fragmentation made from outside the THP workload.
 *
 * Setup writes many small files (64 KiB, together 150 % of the pool) through the page cache, so
 * reclaim interleaves their pages with everything else; they are on the device and clean. Then
 * fio jobs read them randomly in the background (4 KiB synchronous reads, 16 per file before
 * switching file: file_service_type=random:16), allocating page cache on every miss, and after
 * a warm-up as long as the setup took, THP threads fault their share of anon-fraction of the
 * pool extent by extent, unmap it and start again, until the duration has passed.
 */
#include "sim/sim_internal.h"

#include <errno.h>
#include <stdlib.h>

static const struct sim_param_def params[] = {
    {"threads", SIM_P_ACTORS, "4", "THP workload threads"},
    {"anon", SIM_P_FRACTION, "80%", "THP working set, as a fraction of the pool (all threads)"},
    {"madvise", SIM_P_BOOL, "1", "the THP mappings have MADV_HUGEPAGE"},
    {"file-size", SIM_P_SIZE, "64K", "size of each fio file"},
    {"file-pct", SIM_P_COUNT, "150", "fio files written at setup, in % of the pool"},
    {"readers", SIM_P_ACTORS, "4", "fio random-read jobs"},
    {"warmup", SIM_P_DURATION, "0", "reader warm-up before the THP threads (0: as long as setup)"},
    {"init", SIM_P_STRING, "", "initial pool state: an mm_fragment recipe (empty: all free)"},
};

struct tf_state {
	struct sim_task setup;
	struct sim_world *w;
	uint32_t first_id, nfiles, file_pages;
	unsigned nthreads;
	uint64_t thread_bytes;
	struct tf_thp {
		struct sim_task task;
		struct sim_world *w;
		uint64_t bytes;
	} thp[];
};

static void thp_fn(struct sim_actor *a, void *arg)
{
	struct tf_thp *k = arg;
	struct sim_world *w = k->w;
	enum mm_vma_advice adv = sim_param_u(w, "madvise") ? MM_VMA_HUGEPAGE : MM_VMA_DEFAULT;

	for (;;) {
		struct sim_proc *p = proc_create(w, k->bytes, adv);

		if (!p) {
			sim_sleep(a, 100000000ULL);
			continue;
		}
		proc_touch_range(w, &k->task, p, 0, p->npages);
		proc_exit(w, &k->task, p);
	}
}

static void setup_fn(struct sim_actor *a, void *arg)
{
	struct tf_state *st = arg;
	struct sim_world *w = st->w;
	uint64_t warmup = sim_param_u(w, "warmup");

	for (uint32_t f = 0; f < st->nfiles; f++) {
		uint32_t id = file_new(w, st->file_pages);

		if (f == 0)
			st->first_id = id;
		for (uint32_t i = 0; i < st->file_pages; i++)
			file_read_page(w, &st->setup, id, i, false);
		if (sim_actor_debt(a) >= 1000000)
			sim_settle(a);
	}
	sim_settle(a);
	if (warmup == 0)
		warmup = sim_now(w->e);
	readers_spawn(w, (unsigned)sim_param_u(w, "readers"), st->first_id, st->nfiles,
		      sim_now(w->e));
	for (unsigned i = 0; i < st->nthreads; i++) {
		st->thp[i] = (struct tf_thp){.w = w, .bytes = st->thread_bytes};
		world_spawn(w, &st->thp[i].task, "thpchallenge", sim_now(w->e) + warmup, thp_fn,
			    &st->thp[i]);
	}
}

static int thpchallenge_start(struct sim_world *w, char *err, size_t errlen)
{
	unsigned n = (unsigned)sim_param_u(w, "threads");
	uint64_t pool = (uint64_t)mm_nr_frames(w->mm) * MM_PAGE_SIZE;
	uint64_t fsize = sim_param_u(w, "file-size");
	const char *init = sim_param_s(w, "init");
	struct tf_state *st;
	int rc;

	if (n == 0 || fsize < MM_PAGE_SIZE) {
		snprintf(err, errlen, "%s",
			 n == 0 ? "threads: must be at least 1" : "file-size: must be at least 4K");
		return -EINVAL;
	}
	rc = world_apply_recipe(w, init, err, errlen);
	if (rc)
		return rc;
	st = calloc(1, sizeof(*st) + n * sizeof(st->thp[0]));
	if (!st)
		return -ENOMEM;
	w->scen_state = st;
	st->w = w;
	st->nthreads = n;
	st->file_pages = (uint32_t)(fsize / MM_PAGE_SIZE);
	st->nfiles = (uint32_t)(pool / 100 * sim_param_u(w, "file-pct") / fsize);
	st->thread_bytes =
	    (uint64_t)(sim_param_f(w, "anon") * (double)pool) / n & ~(MM_PAGE_SIZE - 1);
	if (st->thread_bytes == 0) {
		snprintf(err, errlen, "anon: leaves no memory for the THP threads");
		return -EINVAL;
	}
	return world_spawn(w, &st->setup, "fio-setup", 0, setup_fn, st);
}

const struct sim_scenario sim_scen_thpchallenge = {
    .name = "thpchallenge-fio",
    .summary = "mmtests thpchallenge: THP faults while fio randomly reads many 64 KiB files",
    .pool_bytes = 1ULL << 30,
    .duration_ns = 60ULL * 1000000000ULL,
    .params = params,
    .nparams = sizeof(params) / sizeof(params[0]),
    .start = thpchallenge_start,
};

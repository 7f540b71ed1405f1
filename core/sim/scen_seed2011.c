/* Scenario seed-2011: the report that started it all (Mel Gorman, linux-mm, Nov 2011).
 *
 * Short-lived processes (usemem) map tens of MiB of anonymous memory, fault it extent by extent
 * with MADV_HUGEPAGE, hold it briefly and exit, while a postmark-like writer streams files
 * through the page cache to a slow USB stick: dirty pages pile up to the dirty limit, the
 * flusher keeps the stick's queue full, and pages sit under writeback for seconds. A THP fault
 * that runs sync compaction (3.1/3.2) meets those pages: it waits on their writeback, or writes
 * dirty ones out itself and then waits behind the whole queue.
 *
 * The defaults and where they come from:
 *  - the writer is mmtests' postmark of the time (config of mmtests 0.02, Oct 2011, the suite
 *    Mel's stall monitor watch-dstate joined on 11 Nov 2011): 5000 files of 5 KiB-512 KiB,
 *    about 1.3 GB, so a working set larger than the machine's memory (125 % of the default
 *    1 GiB pool): page cache fills memory, free memory stays near the watermarks, and every
 *    THP fault past the free lists needs reclaim and compaction;
 *  - vm.dirty_ratio 20 and dirty_background_ratio 10 (the 3.x defaults), nr_requests 128
 *    (BLKDEV_MAX_RQ), requests of at most 120 KiB (usb-storage's max_sectors of 240);
 *  - the machine "up for a while" (init) and the usemem sizes and timing are assumptions: the
 *    report gives no figures for them (core/sim/README.md).
 */
#include "sim/sim_internal.h"

#include <errno.h>
#include <stdlib.h>

static const struct sim_param_def params[] = {
    {"init", SIM_P_STRING, "anon:30%,pagecache:50%,unmovable:0.2%",
     "initial pool state: an mm_fragment recipe (empty: all free)"},
    {"usemem-procs", SIM_P_COUNT, "4", "usemem processes running at once"},
    {"usemem-min", SIM_P_FRACTION, "1.5%", "smallest usemem mapping, fraction of the pool"},
    {"usemem-max", SIM_P_FRACTION, "6%", "largest usemem mapping, fraction of the pool"},
    {"usemem-hold", SIM_P_DURATION, "2s", "mean time a process holds its memory (50-150%)"},
    {"usemem-gap", SIM_P_DURATION, "1s", "mean pause before the next process starts (50-150%)"},
    {"usemem-start", SIM_P_DURATION, "10s", "when usemem starts (the writer runs from 0)"},
    {"madvise", SIM_P_BOOL, "1", "usemem maps with MADV_HUGEPAGE"},
    {"writer-set", SIM_P_RATIO, "125%",
     "the writer's files together, as a ratio of the pool (then it deletes a random one per "
     "new); 2011 mmtests postmark: 5000 files of 5K-512K"},
    {"file-min", SIM_P_SIZE, "5K", "smallest file written (mmtests postmark 2011: 5120)"},
    {"file-max", SIM_P_SIZE, "512K", "largest file written (mmtests postmark 2011: 524288)"},
    {"dirty-ratio", SIM_P_FRACTION, "20%", "vm.dirty_ratio"},
    {"dirty-background-ratio", SIM_P_FRACTION, "10%", "vm.dirty_background_ratio"},
    {"nr-requests", SIM_P_COUNT, "128", "block queue depth: writeback requests in flight"},
    {"max-request", SIM_P_SIZE, "120K", "largest request (USB storage max_sectors_kb)"},
};

struct usemem {
	struct sim_task task;
	struct sim_world *w;
	uint64_t start;
};

/* A uniformly random duration between 50 % and 150 % of mean. */
static uint64_t jittered(struct sim_world *w, uint64_t mean)
{
	return mean / 2 + rng_below(&w->rng, mean + 1);
}

static void usemem_fn(struct sim_actor *a, void *arg)
{
	struct usemem *u = arg;
	struct sim_world *w = u->w;
	double pool = (double)mm_nr_frames(w->mm) * MM_PAGE_SIZE;
	uint64_t min = (uint64_t)(sim_param_f(w, "usemem-min") * pool);
	uint64_t max = (uint64_t)(sim_param_f(w, "usemem-max") * pool);
	enum mm_vma_advice adv = sim_param_u(w, "madvise") ? MM_VMA_HUGEPAGE : MM_VMA_DEFAULT;

	if (max < min)
		max = min;
	sim_sleep(a, u->start);
	for (;;) {
		uint64_t bytes = (min + rng_below(&w->rng, max - min + 1)) & ~(MM_PAGE_SIZE - 1);
		struct sim_proc *p = proc_create(w, bytes ? bytes : MM_PAGE_SIZE, adv);

		if (p) {
			proc_touch_range(w, &u->task, p, 0, p->npages);
			sim_sleep(a, jittered(w, sim_param_u(w, "usemem-hold")));
			proc_exit(w, &u->task, p);
		}
		sim_sleep(a, jittered(w, sim_param_u(w, "usemem-gap")));
	}
}

static void flusher_params(struct sim_world *w)
{
	w->fl.p.dirty_ratio = (unsigned)(sim_param_f(w, "dirty-ratio") * 100 + 0.5);
	w->fl.p.background_ratio = (unsigned)(sim_param_f(w, "dirty-background-ratio") * 100 + 0.5);
}

static int seed2011_start(struct sim_world *w, char *err, size_t errlen)
{
	unsigned n = (unsigned)sim_param_u(w, "usemem-procs");
	uint64_t start = sim_param_u(w, "usemem-start");
	const char *init = sim_param_s(w, "init");
	struct usemem *u;
	int rc;

	rc = world_apply_recipe(w, init, err, errlen);
	if (rc)
		return rc;
	flusher_init(w, (unsigned)sim_param_u(w, "nr-requests"),
		     (unsigned)(sim_param_u(w, "max-request") / MM_PAGE_SIZE));
	flusher_params(w);
	flusher_start_kupdate(w);
	rc = writer_spawn(w);
	if (rc)
		return rc;
	u = calloc(n ? n : 1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	w->scen_state = u;
	for (unsigned i = 0; i < n && rc == 0; i++) {
		u[i].w = w;
		/* stagger the first processes over one gap so they do not move in lockstep */
		u[i].start = start + rng_below(&w->rng, sim_param_u(w, "usemem-gap") + 1);
		rc = world_spawn(w, &u[i].task, "usemem", sim_now(w->e), usemem_fn, &u[i]);
	}
	return rc;
}

const struct sim_scenario sim_scen_seed2011 = {
    .name = "seed-2011",
    .summary = "usemem processes fault THPs while postmark writes to a slow USB stick",
    .pool_bytes = 1ULL << 30,
    .duration_ns = 600ULL * 1000000000ULL,
    .params = params,
    .nparams = sizeof(params) / sizeof(params[0]),
    .start = seed2011_start,
};

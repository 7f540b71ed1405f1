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
 *
 * Scenario mel-2011: Mel Gorman's own run as far as the sources say. His patch mail ("mm: Do
 * not stall in synchronous compaction for THP allocations", linux-mm, 10 Nov 2011) ran postmark
 * "while short-lived processes created anonymous mapping" because stalls did not show for him
 * writing to USB; mmtests' postmark writes to $SHELLPACK_TEMP, the test partition
 * (shellpack-bench-postmark, mmtests 0b671037). So the same usemem and writer, on a 2011
 * desktop disk (the device preset sata-hdd-2011, an assumption) with a file system that has
 * ->migratepage (ext3, ext4 and xfs all use buffer_migrate_page in 3.x: fs=ext4), requests of at
 * most BLK_DEF_MAX_SECTORS (1024 sectors, 3.2 include/linux/blkdev.h). The scenario brings that
 * device and file system unless --device or --fs are given (sim_config_scenario_machine).
 *
 * Scenario seed-2011-long: the same machine and writer, but the process keeps its memory. The
 * answer to the report (Mel Gorman, Andrea Arcangeli, David Rientjes, Nov 2011) was about time:
 * a THP fault that gives up early (the nostall patch) leaves the range 4 KiB, and khugepaged
 * collapses it later, in the background, if the process lives long enough. So one process
 * (`hold-procs`) maps `hold-size` of the pool with MADV_HUGEPAGE at `hold-start`, faults it,
 * and keeps it (`hold`, 0: to the end of the run), writing it all again every `rewrite` (a
 * program working on its data: its touches of a range being collapsed wait for khugepaged).
 * The sizes let khugepaged at its defaults (scan_sleep 10 s, pages_to_scan 4096: 8 ranges of
 * 2 MiB per wake, ~1.6 MiB/s; mm/khugepaged.c khugepaged_do_scan) scan the whole 256 MiB
 * mapping of the default 1 GiB pool in ~160 s, so the 10-minute run holds 3 full scans when
 * allocations succeed, or shows alloc_sleep's 60 s back-off when they fail. No short-lived
 * usemem by default (`usemem-procs` 0): the pool's anon memory at the end is the held mapping.
 */
#include "sim/sim_internal.h"

#include <errno.h>
#include <stdlib.h>

/* The parameters both scenarios share, after usemem-procs (whose default differs). */
/* clang-format off */
#define INIT_PARAM                                                                                 \
	{"init", SIM_P_STRING, "anon:30%,pagecache:50%,unmovable:0.2%",                            \
	 "initial pool state: an mm_fragment recipe (empty: all free)"}
#define SEED2011_PARAMS                                                                            \
	{"usemem-min", SIM_P_FRACTION, "1.5%", "smallest usemem mapping, fraction of the pool"},   \
	{"usemem-max", SIM_P_FRACTION, "6%", "largest usemem mapping, fraction of the pool"},      \
	{"usemem-hold", SIM_P_DURATION, "2s", "mean time a process holds its memory (50-150%)"},   \
	{"usemem-gap", SIM_P_DURATION, "1s",                                                       \
	 "mean pause before the next process starts (50-150%)"},                                   \
	{"usemem-start", SIM_P_DURATION, "10s", "when usemem starts (the writer runs from 0)"},    \
	{"madvise", SIM_P_BOOL, "1", "usemem maps with MADV_HUGEPAGE"},                            \
	{"writer-set", SIM_P_RATIO, "125%",                                                        \
	 "the writer's files together, as a ratio of the pool (then it deletes a random one per "  \
	 "new); 2011 mmtests postmark: 5000 files of 5K-512K"},                                    \
	{"file-min", SIM_P_SIZE, "5K", "smallest file written (mmtests postmark 2011: 5120)"},     \
	{"file-max", SIM_P_SIZE, "512K", "largest file written (mmtests postmark 2011: 524288)"},   \
	{"dirty-ratio", SIM_P_FRACTION, "20%", "vm.dirty_ratio"},                                  \
	{"dirty-background-ratio", SIM_P_FRACTION, "10%", "vm.dirty_background_ratio"},            \
	{"nr-requests", SIM_P_COUNT, "128", "block queue depth: writeback requests in flight"}
#define USB_MAX_REQUEST                                                                            \
	{"max-request", SIM_P_SIZE, "120K", "largest request (USB storage max_sectors_kb)"}
/* clang-format on */

static const struct sim_param_def params[] = {
    INIT_PARAM,
    {"usemem-procs", SIM_P_ACTORS, "4", "usemem processes running at once"},
    SEED2011_PARAMS,
    USB_MAX_REQUEST,
};

/* mel-2011: the same machine and usemem, postmark on the test partition's disk. */
static const struct sim_param_def mel_params[] = {
    INIT_PARAM,
    {"usemem-procs", SIM_P_ACTORS, "4", "usemem processes running at once"},
    SEED2011_PARAMS,
    {"max-request", SIM_P_SIZE, "512K",
     "largest request (a SATA disk: BLK_DEF_MAX_SECTORS, 1024 sectors, include/linux/blkdev.h)"},
};

static const struct sim_param_def long_params[] = {
    INIT_PARAM,
    {"usemem-procs", SIM_P_ACTORS, "0", "short-lived usemem processes running at once"},
    SEED2011_PARAMS,
    USB_MAX_REQUEST,
    {"hold-procs", SIM_P_ACTORS, "1", "long-lived processes (each maps, faults and keeps)"},
    {"hold-size", SIM_P_FRACTION, "25%",
     "each long-lived mapping, fraction of the pool (25% of 1G: 128 ranges, one full "
     "khugepaged scan in ~160 s at the defaults while its allocations succeed; each failure "
     "costs alloc_sleep, 60 s)"},
    {"hold-start", SIM_P_DURATION, "10s", "when the long-lived processes map and fault"},
    {"hold", SIM_P_DURATION, "0s",
     "how long they keep their memory once faulted (0: to the end of the run)"},
    {"writer-stop", SIM_P_DURATION, "0s",
     "when the writer stops (an rsync that ends; 0: it streams to the end of the run); its "
     "dirty pages are then written back and memory settles"},
    {"rewrite", SIM_P_DURATION, "30s",
     "period of a pass writing the whole mapping again (0: never); a touch of a range "
     "khugepaged is collapsing waits"},
};

extern const struct sim_scenario sim_scen_seed2011_long;

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

/* seed-2011-long's process: map, fault, keep (rewriting it every `rewrite`), exit after `hold`
 * (0: never). */
static void hold_fn(struct sim_actor *a, void *arg)
{
	struct usemem *u = arg;
	struct sim_world *w = u->w;
	double pool = (double)mm_nr_frames(w->mm) * MM_PAGE_SIZE;
	uint64_t bytes = (uint64_t)(sim_param_f(w, "hold-size") * pool) & ~(MM_PAGE_SIZE - 1);
	uint64_t hold = sim_param_u(w, "hold"), rewrite = sim_param_u(w, "rewrite"), until;
	enum mm_vma_advice adv = sim_param_u(w, "madvise") ? MM_VMA_HUGEPAGE : MM_VMA_DEFAULT;
	struct sim_waitq never;
	struct sim_proc *p;

	sim_waitq_init(&never);
	sim_sleep(a, u->start);
	p = proc_create(w, bytes ? bytes : MM_PAGE_SIZE, adv);
	if (!p)
		return;
	proc_touch_range(w, &u->task, p, 0, p->npages);
	until = hold ? sim_now(w->e) + hold : UINT64_MAX;
	for (;;) {
		uint64_t now = sim_now(w->e);

		if (now >= until)
			break;
		if (rewrite && rewrite < until - now) {
			sim_sleep(a, rewrite);
			proc_touch_range(w, &u->task, p, 0, p->npages);
		} else if (until == UINT64_MAX) {
			sim_wait(a, &never, SIM_NO_TIMEOUT); /* keeps it to the end of the run */
		} else {
			sim_sleep(a, until - now);
		}
	}
	proc_exit(w, &u->task, p);
}

static void flusher_params(struct sim_world *w)
{
	w->fl.p.dirty_ratio = (unsigned)(sim_param_f(w, "dirty-ratio") * 100 + 0.5);
	w->fl.p.background_ratio = (unsigned)(sim_param_f(w, "dirty-background-ratio") * 100 + 0.5);
}

static int seed2011_start(struct sim_world *w, char *err, size_t errlen)
{
	unsigned n = (unsigned)sim_param_u(w, "usemem-procs");
	bool lng = w->cfg->scenario == &sim_scen_seed2011_long;
	unsigned nh = lng ? (unsigned)sim_param_u(w, "hold-procs") : 0;
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
	if (lng)
		w->writer_stop_ns = sim_param_u(w, "writer-stop");
	rc = writer_spawn(w);
	if (rc)
		return rc;
	u = calloc(n + nh ? n + nh : 1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	w->scen_state = u;
	for (unsigned i = 0; i < n && rc == 0; i++) {
		u[i].w = w;
		/* stagger the first processes over one gap so they do not move in lockstep */
		u[i].start = start + rng_below(&w->rng, sim_param_u(w, "usemem-gap") + 1);
		rc = world_spawn(w, &u[i].task, "usemem", sim_now(w->e), usemem_fn, &u[i]);
	}
	for (unsigned i = n; i < n + nh && rc == 0; i++) {
		u[i].w = w;
		u[i].start = sim_param_u(w, "hold-start");
		rc = world_spawn(w, &u[i].task, "usemem-hold", sim_now(w->e), hold_fn, &u[i]);
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

/* Mel Gorman's own run as far as the sources say (core/sim/README.md, mel-2011): postmark on
 * mmtests' test partition (a disk with a file system that has ->migratepage), not a USB stick. */
const struct sim_scenario sim_scen_mel2011 = {
    .name = "mel-2011",
    .summary = "Mel Gorman's Nov 2011 stall test: usemem processes fault THPs while postmark "
	       "writes to the test partition (a 2011 desktop disk, ext3/ext4)",
    .pool_bytes = 1ULL << 30,
    .duration_ns = 600ULL * 1000000000ULL,
    .params = mel_params,
    .nparams = sizeof(mel_params) / sizeof(mel_params[0]),
    .start = seed2011_start,
    .device = "sata-hdd-2011",
    .fs_set = true,
    .fs = MM_FS_EXT4,
};

const struct sim_scenario sim_scen_seed2011_long = {
    .name = "seed-2011-long",
    .summary = "seed-2011 with a long-lived process: it faults 25% of the pool and keeps it "
	       "while the writer streams, so khugepaged has minutes to collapse its 4 KiB ranges",
    .pool_bytes = 1ULL << 30,
    .duration_ns = 600ULL * 1000000000ULL,
    .params = long_params,
    .nparams = sizeof(long_params) / sizeof(long_params[0]),
    .start = seed2011_start,
};

/* Scenario writeback-cp: Mel Gorman's "writebackCP" test (mmtests thpavail, 21 Nov 2011, the
 * figures of the sync-light series "Reduce compaction-related stalls and improve asynchronous
 * migration of dirty pages", linux-mm 22 Nov 2011).
 *
 * Per iteration (mmtests shellpack-bench-thpavail, commit c85a0092):
 *  1. settle: sync, drop caches, until nr_dirty <= 1024 pages;
 *  2. a reader copies a large device to /dev/null (`cp /dev/sda /dev/null` in a loop that
 *     restarts it) and a writer copies /dev/zero to a file on a VFAT USB stick (`cp /dev/zero
 *     mnt` in a loop: the file grows until the stick is full, then cp starts again);
 *  3. once MemFree is below MemTotal / 6 (polled every second) and 2 s later, `alloc` maps
 *     MemTotal bytes of private anonymous memory (no madvise: THP enabled=always, the 3.x
 *     default) and writes one byte per 4 KiB page; its elapsed time (/usr/bin/time) and its
 *     thp_fault_alloc / thp_fault_fallback deltas are the result;
 *  4. the reader and the writer are killed and the file removed.
 *
 * The defaults and their sources: 5 iterations (Mel's run; mmtests' default was 10); the pool
 * 2 GiB (his "hydra": thp_fault_alloc + thp_fault_fallback = ~1006 extents of 2 MiB per
 * iteration, so MemTotal ~2 GiB); the stick usb2-stick-2011 (the sim's --device default) with
 * vfat (the policy's fs, --fs). Not sourced (the posting gives no figures): the read device's
 * bandwidth (`reader-bw`, a 2011 SATA disk's sequential read), its size (`reader-size`), and
 * the stick's capacity (`writer-size`, where cp's file stops growing).
 */
#include "sim/sim_internal.h"

#include <errno.h>
#include <stdlib.h>

#define NS		1000000000ULL
#define POLL_NS		NS		   /* the script's `sleep 1` between MemFree checks */
#define SETTLE_DIRTY	1024		   /* nr_dirty the settle loop waits for */
#define READ_BATCH	32		   /* pages per read(): cp's 128 KiB buffer, readahead */
#define WCP_DURATION_NS (6ULL * 3600 * NS) /* no iteration starts after this */

static const struct sim_param_def params[] = {
    {"iterations", SIM_P_COUNT, "5", "iterations (Mel Gorman's Nov 2011 run: 5)"},
    {"anon-size", SIM_P_RATIO, "100%",
     "alloc's mapping, a ratio of the pool (thpavail: MemTotal, the size of memory)"},
    {"start-free", SIM_P_FRACTION, "16.67%",
     "alloc starts once free memory is below this fraction of the pool, 2 s later "
     "(thpavail: MemFree < MemTotal / 6)"},
    {"start-delay", SIM_P_DURATION, "2s", "the script's sleep between the threshold and alloc"},
    {"madvise", SIM_P_BOOL, "0",
     "alloc maps with MADV_HUGEPAGE (thpavail does not: enabled=always, the 3.x default)"},
    {"reader-bw", SIM_P_SIZE, "100M",
     "bytes per second the reader's device delivers (cp /dev/sda /dev/null; not sourced: a "
     "2011 SATA disk's sequential read)"},
    {"reader-size", SIM_P_RATIO, "1000%",
     "the read device's size as a ratio of the pool; cp starts again at its end (not "
     "sourced: a disk much larger than memory)"},
    {"writer-size", SIM_P_SIZE, "4G",
     "the stick's free space: cp /dev/zero's file grows to it, then cp starts again (not "
     "sourced: a 2011 USB stick)"},
    {"dirty-ratio", SIM_P_FRACTION, "20%", "vm.dirty_ratio (3.x default)"},
    {"dirty-background-ratio", SIM_P_FRACTION, "10%", "vm.dirty_background_ratio (3.x default)"},
    {"nr-requests", SIM_P_COUNT, "128", "block queue depth: writeback requests in flight"},
    {"max-request", SIM_P_SIZE, "120K", "largest request (USB storage max_sectors_kb)"},
    {"init", SIM_P_STRING, "", "initial pool state: an mm_fragment recipe (empty: all free)"},
};

struct wcp {
	struct sim_world *w;
	struct sim_task main, reader, writer;
	bool stop;		 /* the reader and the writer are killed */
	unsigned parked;	 /* of them, how many have stopped */
	struct sim_waitq run_wq; /* they wait here while stopped */
	struct sim_waitq main_wq;
	uint32_t rfile, wfile; /* the device the reader reads, the file on the stick */
	uint32_t rpages, wpages, rpos, wpos;
	uint64_t read_ns; /* device time of one READ_BATCH */
};

/* Stop point of the reader and the writer: park while they are killed. */
static void maybe_park(struct wcp *st, struct sim_actor *a)
{
	if (!st->stop)
		return;
	st->parked++;
	sim_wake_all(st->w->e, &st->main_wq);
	while (st->stop)
		sim_wait(a, &st->run_wq, SIM_NO_TIMEOUT);
}

/* cp /dev/sda /dev/null: sequential reads through the block device's page cache. */
static void reader_fn(struct sim_actor *a, void *arg)
{
	struct wcp *st = arg;
	struct sim_world *w = st->w;

	for (;;) {
		maybe_park(st, a);
		if (st->rpos + READ_BATCH > st->rpages)
			st->rpos = 0; /* cp reached the end: loopcp.sh starts it again */
		for (uint32_t i = 0; i < READ_BATCH; i++) {
			file_read_page(w, &st->reader, st->rfile, st->rpos + i, false);
			w->reader.reads++;
		}
		st->rpos += READ_BATCH;
		sim_sleep(a, st->read_ns);
	}
}

/* cp /dev/zero mnt: one file written sequentially until the stick is full, then again. */
static void writer_fn(struct sim_actor *a, void *arg)
{
	struct wcp *st = arg;
	struct sim_world *w = st->w;
	uint64_t dirtied = 0;

	for (;;) {
		maybe_park(st, a);
		if (st->wpos == st->wpages) { /* ENOSPC: cp fails, the loop starts it again */
			file_delete(w, st->wfile);
			w->writer.files_deleted++;
			st->wfile = file_new(w, st->wpages);
			w->writer.files_created++;
			st->wpos = 0;
		}
		for (uint32_t i = 0; i < WBT_RATELIMIT_PAGES && st->wpos < st->wpages; i++) {
			if (file_write_page(w, &st->writer, st->wfile, st->wpos++) == 0)
				dirtied++;
		}
		balance_dirty_pages(w, &st->writer, dirtied);
		dirtied = 0;
	}
}

static void counts(struct sim_world *w, struct mm_counts *c)
{
	mm_get_counts(w->mm, c);
}

/* Kill the reader and the writer and wait until both have stopped. */
static void kill_io(struct wcp *st, struct sim_actor *a)
{
	st->stop = true;
	while (st->parked < 2)
		sim_wait(a, &st->main_wq, SIM_NO_TIMEOUT);
}

static void start_io(struct wcp *st)
{
	st->stop = false;
	st->parked = 0;
	sim_wake_all(st->w->e, &st->run_wq);
}

/* sync; echo 3 > drop_caches until nr_dirty <= 1024: the files are gone from the page cache and
 * their writeback has drained. */
static void settle(struct wcp *st, struct sim_actor *a)
{
	struct sim_world *w = st->w;
	struct mm_counts c;

	if (st->rfile)
		file_delete(w, st->rfile);
	for (counts(w, &c); c.file_dirty + c.file_writeback > SETTLE_DIRTY; counts(w, &c))
		sim_sleep(a, POLL_NS);
	st->rfile = file_new(w, st->rpages);
	if (st->rfile)
		file_get(w, st->rfile)->bdev = true; /* cp reads /dev/sda: GFP_USER page cache */
	st->wfile = file_new(w, st->wpages);
	w->writer.files_created++;
	st->rpos = st->wpos = 0;
}

static void record_iteration(struct sim_world *w, uint64_t t0, const uint64_t *before)
{
	uint64_t after[MM_STAT_NR];
	struct sim_iter *it;

	if (w->niter >= SIM_MAX_ITERS)
		return;
	mm_get_stats(w->mm, after);
	it = &w->iter[w->niter++];
	it->start_ns = t0;
	it->elapsed_ns = sim_now(w->e) - t0;
	it->thp_fault_alloc = after[MM_STAT_THP_FAULT_ALLOC] - before[MM_STAT_THP_FAULT_ALLOC];
	it->thp_fault_fallback =
	    after[MM_STAT_THP_FAULT_FALLBACK] - before[MM_STAT_THP_FAULT_FALLBACK];
}

static void main_fn(struct sim_actor *a, void *arg)
{
	struct wcp *st = arg;
	struct sim_world *w = st->w;
	uint64_t pool = (uint64_t)mm_nr_frames(w->mm) * MM_PAGE_SIZE;
	uint64_t bytes =
	    (uint64_t)(sim_param_f(w, "anon-size") * (double)pool) & ~(MM_PAGE_SIZE - 1);
	uint64_t threshold = (uint64_t)(sim_param_f(w, "start-free") * (double)mm_nr_frames(w->mm));
	enum mm_vma_advice adv = sim_param_u(w, "madvise") ? MM_VMA_HUGEPAGE : MM_VMA_DEFAULT;
	uint64_t n = sim_param_u(w, "iterations"), before[MM_STAT_NR];

	for (uint64_t i = 0; i < n && (i == 0 || sim_now(w->e) < w->end_ns); i++) {
		struct mm_counts c;
		struct sim_proc *p;
		uint64_t t0;

		settle(st, a);
		start_io(st);
		for (counts(w, &c); c.free >= threshold; counts(w, &c))
			sim_sleep(a, POLL_NS);
		sim_sleep(a, sim_param_u(w, "start-delay"));
		mm_get_stats(w->mm, before);
		t0 = sim_now(w->e);
		p = proc_create(w, bytes ? bytes : MM_PAGE_SIZE, adv);
		if (p) {
			proc_touch_range(w, &st->main, p, 0, p->npages);
			proc_exit(w, &st->main, p);
		}
		sim_settle(a);
		record_iteration(w, t0, before);
		w->iterations++;
		kill_io(st, a);
		file_delete(w, st->wfile); /* rm mnt/zero */
	}
	w->finished = true;
	sim_stop(w->e);
}

static uint32_t pages_of(uint64_t bytes)
{
	uint64_t n = bytes / MM_PAGE_SIZE;

	if (n < READ_BATCH)
		n = READ_BATCH;
	return n > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)n;
}

static int writebackcp_start(struct sim_world *w, char *err, size_t errlen)
{
	uint64_t pool = (uint64_t)mm_nr_frames(w->mm) * MM_PAGE_SIZE;
	uint64_t bw = sim_param_u(w, "reader-bw");
	struct wcp *st;
	int rc;

	if (bw < MM_PAGE_SIZE) {
		snprintf(err, errlen, "reader-bw: must be at least 4K (bytes per second)");
		return -EINVAL;
	}
	if (sim_param_u(w, "iterations") == 0) {
		snprintf(err, errlen, "iterations: must be at least 1");
		return -EINVAL;
	}
	rc = world_apply_recipe(w, sim_param_s(w, "init"), err, errlen);
	if (rc)
		return rc;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	w->scen_state = st;
	st->w = w;
	sim_waitq_init(&st->run_wq);
	sim_waitq_init(&st->main_wq);
	st->rpages = pages_of((uint64_t)(sim_param_f(w, "reader-size") * (double)pool));
	st->wpages = pages_of(sim_param_u(w, "writer-size"));
	st->read_ns = (uint64_t)READ_BATCH * MM_PAGE_SIZE * NS / bw;
	st->stop = true; /* until the first iteration's settle */
	flusher_init(w, (unsigned)sim_param_u(w, "nr-requests"),
		     (unsigned)(sim_param_u(w, "max-request") / MM_PAGE_SIZE));
	w->fl.p.dirty_ratio = (unsigned)(sim_param_f(w, "dirty-ratio") * 100 + 0.5);
	w->fl.p.background_ratio = (unsigned)(sim_param_f(w, "dirty-background-ratio") * 100 + 0.5);
	flusher_start_kupdate(w);
	rc = world_spawn(w, &st->reader, "cp-read", 0, reader_fn, st);
	if (rc == 0)
		rc = world_spawn(w, &st->writer, "cp-write", 0, writer_fn, st);
	if (rc == 0)
		rc = world_spawn(w, &st->main, "alloc", 0, main_fn, st);
	return rc;
}

const struct sim_scenario sim_scen_writebackcp = {
    .name = "writeback-cp",
    .summary = "Mel Gorman's writebackCP (mmtests thpavail, Nov 2011): a reader and cp to a "
	       "USB stick fill memory, then alloc faults a mapping the size of memory",
    .pool_bytes = 2ULL << 30,
    .duration_ns = WCP_DURATION_NS,
    .params = params,
    .nparams = sizeof(params) / sizeof(params[0]),
    .start = writebackcp_start,
    .runs_to_completion = true,
};

/* The host of a shared machine (core/machine): the process that makes the machine and runs what
 * the kernel runs once per machine, not once per process.
 *
 * `thpemu run` hosts the machine of its program tree. The host creates the segment, the pool
 * (core/mm, placed in the segment and bound to the host's own environment), the writeback wait
 * queues and the page-cache arena; applies the fragmentation recipe; and runs four things on
 * threads of its own: the kernel threads (mm_background: kswapd, kcompactd, proactive
 * compaction), the writeback engine and dirtier (core/io, whose arena is the segment's, so any
 * process's compaction can copy a page-cache page), a keeper that answers requests made to the
 * machine itself (sync compaction's writeout() of a dirty page, from any process) and reaps
 * processes that are gone (their frames go back), and a sampler of the THP coverage over time
 * (obs/coverage.h). Every managed process finds the machine through THPEMU_MACHINE.
 */
#ifndef THPEMU_CLI_HOST_H
#define THPEMU_CLI_HOST_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "env/env.h"
#include "io/io.h"
#include "machine/machine.h"
#include "mm/mm.h"
#include "obs/coverage.h"
#include "util/json.h"

struct run_host {
	struct machine m;
	struct mm *mm;
	struct mm_env env;	  /* env/host.c, on member */
	struct env_member member; /* the host as a process of its machine */
	struct waitq *wq;
	struct io *io;
	struct io_stats io_stats;
	pthread_t kthread, keeper;
	bool kthread_started, keeper_started;
	uint32_t stop;	      /* futex word: the threads stop */
	uint32_t kwake;	      /* futex word: wakes the kernel threads' sleep */
	uint64_t reaped;      /* processes whose frames the keeper gave back */
	uint64_t frames_back; /* ... and how many frames */
	char note[320];	      /* what the report should say about the machine ("" = nothing) */
	/* Called on the keeper thread for every process reaped, before its slot is freed (a
	 * daemon lists the processes its machine had, however short-lived). Set it after start. */
	void (*on_reap)(void *arg, int slot);
	void *on_reap_arg;
	/* AnonHugePages coverage, sampled by a thread of its own (RUN_HOST_COV_INTERVAL) */
	pthread_t covthread;
	bool covthread_started;
	pthread_t khugepaged; /* mm_khugepaged: visits processes through their mailboxes */
	bool khugepaged_started;
	pthread_mutex_t cov_lock;
	struct obs_coverage cov;
	/* records made ahead for the run's processes (run_host_spares): in this directory, from
	 * this time on (CLOCK_MONOTONIC ns, 0: none) */
	char spare_dir[4096];
	uint64_t spares_from_ns;
	uint32_t spare_slots0; /* live slots when it was asked for (the machine's own) */
};

#define RUN_HOST_COV_INTERVAL (10 * 1000000ULL) /* wall time; thinned past 2000 samples */

/* Create the machine for cfg (pool, policy, fragment, device, dirty) and start its threads;
 * sets THPEMU_MACHINE for the processes started afterwards. 0, or -errno with err set. */
int run_host_start(struct run_host *h, const struct config *cfg, char *err, size_t errlen);
/* Keep statistics records made ahead in dir, the run directory (report/stats.h:
 * UFFD_STATS_SPARES), from one keeper tick on: a process that starts then claims one instead of
 * creating its own. Called once, after run_host_start. */
void run_host_spares(struct run_host *h, const char *dir);
/* Stop the dirtier and the flusher (writes in flight get drain_ns) and the threads; the
 * machine's state stays readable. */
void run_host_stop(struct run_host *h, uint64_t drain_ns);
/* The machine's counters now: vmstat, frame counts, io statistics. */
void run_host_stats(struct run_host *h, uint64_t *vmstat, struct mm_counts *counts,
		    struct io_stats *io);
/* Start the coverage series again from now (run_host_start starts one: `thpemu run` restarts
 * it when the program starts). */
void run_host_coverage_start(struct run_host *h);
/* End the series now and copy it out (the program has ended: its memory is going back to the
 * pool, so the last sample taken while it ran is the end's). */
void run_host_coverage(struct run_host *h, struct obs_coverage *out);
/* The machine's memory at its largest into mem (core/report: uffd_census_peak_words), where the
 * processes that lived at the same time held more than the largest one alone. */
struct uffd_census;
void run_host_mem_peak(struct run_host *h, struct uffd_census *mem);
/* Check the shared model (mm_check) after the run: 0 if consistent, 1 if not checked (a pool
 * above 4 GiB that was never repaired: the walk would cost seconds), <0 if inconsistent. */
int run_host_check(struct run_host *h, char *why, size_t len);
void run_host_destroy(struct run_host *h);
/* The machine's real writers (thpemu-fusedev) as the JSON object key, for reports. */
void run_host_writers_json(struct json_w *jw, const char *key, const struct machine_writers *w);

#endif

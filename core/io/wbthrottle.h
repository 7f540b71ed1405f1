/* Dirty throttling: one balance_dirty_pages() call as a pure state machine (no syscalls, no
 * clock, no sleeping), shared by the live dirtier (core/io/dirtier.c) and the simulator's
 * writer (core/sim/writer.c). The caller samples the page cache, does what a step asks (wake
 * the flusher, pause the writer) with its own clock and its own sleep, and steps again.
 *
 * Mirrors mm/page-writeback.c of Linux 3.2 (IO-less dirty throttling, the thresholds and the
 * control line are core/io/wbmodel):
 *   - balance_dirty_pages_ratelimited_nr(): a writer checks every ratelimit pages (32,
 *     3.2's default ratelimit_pages floor) it dirtied;
 *   - balance_dirty_pages(): each pass reads global_page_state(NR_FILE_DIRTY) +
 *     NR_WRITEBACK against global_dirty_limits(); over the background threshold it wakes the
 *     flusher (bdi_start_background_writeback); at or below the freerun ceiling the writer
 *     goes on; above it the writer sleeps one pause (io_schedule_timeout, at most MAX_PAUSE)
 *     and the call ends, unless dirty + writeback were at or over the hard limit, when it
 *     loops and pauses again as for a full ratelimit of pages (dirty_exceeded).
 */
#ifndef THPEMU_IO_WBTHROTTLE_H
#define THPEMU_IO_WBTHROTTLE_H

#include <stdbool.h>
#include <stdint.h>

#include "io/wbmodel.h"

#define WBT_RATELIMIT_PAGES 32 /* pages dirtied between balance_dirty_pages() calls */

/* One call of balance_dirty_pages(). */
struct wbt_bdp {
	uint64_t dirtied;     /* pages the next pause is for */
	uint64_t nr;	      /* last sample: dirty + writeback pages */
	struct wbm_thresh th; /* last sample: the thresholds */
	bool over_limit;      /* last sample at or over the hard limit: pause again after */
};

/* What throttling cost a writer. */
struct wbt_stats {
	uint64_t throttles;	  /* pauses */
	uint64_t throttle_ns;	  /* their total */
	uint64_t throttle_max_ns; /* the longest */
};

/* What the writer does after a sample. */
struct wbt_step {
	bool kick;	   /* wake background writeback (dirty pages over the threshold) */
	uint64_t pause_ns; /* sleep this long, then wbt_bdp_paused(); 0: the call is over */
};

void wbt_bdp_start(struct wbt_bdp *b, uint64_t dirtied);
/* One pass on a sample of the page cache: dirtyable = free + page-cache pages, nr_dirty dirty
 * (not yet under writeback), nr_writeback under writeback; bw_bps is the device's estimated
 * write bandwidth (core/io/wbmodel's wbm_bw). */
struct wbt_step wbt_bdp_step(const struct wbm_params *p, struct wbt_bdp *b, uint64_t dirtyable,
			     uint64_t nr_dirty, uint64_t nr_writeback, uint64_t bw_bps);
/* The writer slept the step's pause_ns: count it in st. True when it must step again (the
 * sample was at or over the hard limit), false when the call is over. */
bool wbt_bdp_paused(struct wbt_bdp *b, uint64_t pause_ns, struct wbt_stats *st);

#endif

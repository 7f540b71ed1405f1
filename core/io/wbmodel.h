/* Writeback model: the dirty-page throttling and flusher rules of the page cache, as pure
 * functions (no syscalls, no clock, no allocation) shared by the simulator and the live dirtier.
 *
 * Mirrors mm/page-writeback.c of Linux 3.2 (IO-less dirty throttling) and the flusher rules of
 * fs/fs-writeback.c:
 *   - global_dirty_limits(): background and dirty thresholds as ratios of dirtyable memory
 *     (free + page cache; anonymous memory is not dirtyable), background halved if not below;
 *   - balance_dirty_pages(): below the freerun ceiling (thresh + bg) / 2 a writer runs free;
 *     above it the writer is paused so that it dirties at ratelimit * pos_ratio, with the
 *     global control line pos_ratio = 1 + ((setpoint - dirty) / (limit - setpoint))^3 around
 *     setpoint = (freerun + limit) / 2, each pause bounded by MAX_PAUSE (200 ms);
 *   - over_bground_thresh(): background writeback runs while dirty pages exceed bg_thresh;
 *   - wb_kupdate: every dirty_writeback_interval, pages dirtied longer than dirty_expire ago
 *     are written;
 *   - bdi_update_write_bandwidth(): a smoothed estimate of the device's write bandwidth from
 *     completions, refreshed at most every 200 ms.
 */
#ifndef THPEMU_IO_WBMODEL_H
#define THPEMU_IO_WBMODEL_H

#include <stdbool.h>
#include <stdint.h>

#define WBM_MAX_PAUSE_NS   200000000ULL	 /* MAX_PAUSE: HZ/5 */
#define WBM_BW_INTERVAL_NS 200000000ULL	 /* BANDWIDTH_INTERVAL */
#define WBM_BW_PERIOD_NS   3000000000ULL /* smoothing period of the bandwidth estimate */
#define WBM_AGE_SLOTS	   64

struct wbm_params {
	unsigned background_ratio; /* vm.dirty_background_ratio, % (default 10) */
	unsigned dirty_ratio;	   /* vm.dirty_ratio, % (default 20) */
	uint64_t expire_ns;	   /* vm.dirty_expire_centisecs (default 30 s) */
	uint64_t interval_ns;	   /* vm.dirty_writeback_centisecs (default 5 s) */
	uint64_t max_pause_ns;	   /* bound of one throttling pause (default MAX_PAUSE) */
};

void wbm_params_default(struct wbm_params *p);

struct wbm_thresh {
	uint64_t background; /* pages: background writeback starts above this */
	uint64_t dirty;	     /* pages: the hard limit (dirty + writeback) */
	uint64_t freerun;    /* pages: writers are not throttled at or below this */
	uint64_t setpoint;   /* pages: the throttling control line's balance point */
};

/* Thresholds for `dirtyable` pages of dirtyable memory (free + file). */
void wbm_thresholds(const struct wbm_params *p, uint64_t dirtyable, struct wbm_thresh *t);
/* Background writeback wanted: dirty (not yet under writeback) pages above the threshold. */
bool wbm_over_background(const struct wbm_thresh *t, uint64_t nr_dirty);
/* How many dirty pages one flusher pass writes: the excess over the background threshold
 * (fs/fs-writeback.c: wb_check_background_flush) or the expired ones (wb_check_old_data_flush,
 * the kupdate pass), whichever is more. The live flusher and the simulator's both ask this; when
 * a kupdate pass is due is theirs (expired = 0 between passes). */
uint64_t wbm_flush_want(const struct wbm_thresh *t, uint64_t nr_dirty, uint64_t expired);
/* Global position ratio in 1/1024 units (0 .. 2048) for nr = dirty + writeback pages. */
uint64_t wbm_pos_ratio(const struct wbm_thresh *t, uint64_t nr);
/* How long a writer that dirtied `dirtied` pages since its last check must pause, given
 * nr = dirty + writeback pages and its share of the device bandwidth (bytes/s). 0 = no pause
 * (at or below freerun). Never more than p->max_pause_ns. */
uint64_t wbm_pause_ns(const struct wbm_params *p, const struct wbm_thresh *t, uint64_t nr,
		      uint64_t dirtied, uint64_t ratelimit_bps);

/* Age of dirty data: pages dirtied per time slot over the last WBM_AGE_SLOTS slots. */
struct wbm_age {
	uint64_t slot_ns;		/* width of a slot */
	uint64_t newest;		/* slot number (time / slot_ns) of counts[newest % N] */
	uint64_t counts[WBM_AGE_SLOTS]; /* pages dirtied in each slot */
};

void wbm_age_init(struct wbm_age *a, uint64_t slot_ns);
void wbm_age_dirtied(struct wbm_age *a, uint64_t now, uint64_t pages);
/* Pages dirtied within the last window_ns (rounded up to whole slots). */
uint64_t wbm_age_recent(struct wbm_age *a, uint64_t now, uint64_t window_ns);
/* Of nr_dirty dirty pages, how many were dirtied more than expire_ns ago (written oldest
 * first, the rest are the most recent ones). */
uint64_t wbm_age_expired(struct wbm_age *a, uint64_t now, uint64_t nr_dirty, uint64_t expire_ns);

/* Smoothed write bandwidth of a device (bytes/s) from its completed-bytes counter. */
struct wbm_bw {
	uint64_t last_t;     /* time of the last update */
	uint64_t last_bytes; /* completed bytes then */
	uint64_t bw;	     /* current estimate */
};

void wbm_bw_init(struct wbm_bw *b, uint64_t now, uint64_t initial_bps);
void wbm_bw_update(struct wbm_bw *b, uint64_t now, uint64_t completed_bytes);

#endif

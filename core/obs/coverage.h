/* THP coverage over time: how much of the managed anonymous memory is mapped huge (the emulated
 * AnonHugePages, mm_counts.anon_pmd, against mm_counts.anon), sampled over a run.
 *
 * The driver samples at its own pace (the simulator on a virtual-time timer, `thpemu run`'s host
 * on its kernel thread); a sample is kept when the interval has passed since the first one on
 * the grid t0 + k * interval. At OBS_COV_MAX_SAMPLES kept samples every other one is dropped and
 * the interval doubles, so a run of any length keeps at most that many, evenly spaced.
 *
 * Every sample (kept or not) feeds the time-weighted coverage: the integral of huge/anon over
 * the run, each sample's value holding until the next, divided by the time during which there
 * was managed anonymous memory at all (anon > 0): time before the program mapped anything, or
 * after it gave everything back, counts for nothing. The end coverage is that of the last
 * sample whose anon was at least half the run's peak: a program unmaps its working set before
 * it exits (or exits, and its memory goes back), and what is left then (a few malloc pages) is
 * not what it ran with.
 *
 * Plain data without pointers (it may be copied whole); not thread-safe: the caller serialises.
 *
 * JSON ("coverage"): {"interval_ms", "samples": [[t_ms, anon_huge_kb, anon_kb], ...],
 * "end_pct", "end_t_ms", "time_weighted_pct", "anon_ms"} — t_ms from the run's start, 3
 * decimals; the percentages 2 decimals, 0 when there never was anonymous memory (end_t_ms then
 * null); end_t_ms the end sample's time; anon_ms the time with anon > 0 (the time-weighted
 * mean's denominator).
 */
#ifndef THPEMU_OBS_COVERAGE_H
#define THPEMU_OBS_COVERAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "util/json.h"

#define OBS_COV_MAX_SAMPLES 2000

struct obs_cov_sample {
	uint64_t t_ns;	     /* since t0 */
	uint32_t huge, anon; /* frames (4 KiB) */
};

struct obs_coverage {
	uint64_t t0_ns;	      /* the run's start, in the driver's clock */
	uint64_t interval_ns; /* between kept samples (doubles when thinned) */
	uint32_t n;	      /* kept samples */
	struct obs_cov_sample s[OBS_COV_MAX_SAMPLES];
	bool have_last;		    /* a sample was taken (kept or not) */
	struct obs_cov_sample last; /* ... the latest: it holds until the next */
	bool have_end;
	struct obs_cov_sample end; /* the latest with anon >= peak / 2 */
	uint32_t peak;		   /* the most anon of any sample */
	double area_ns;		   /* integral of huge/anon over time (ns) */
	uint64_t anon_ns;	   /* time with anon > 0 */
};

/* Start a series at t0_ns (in the driver's clock) with interval_ns (> 0) between kept samples. */
void obs_coverage_init(struct obs_coverage *c, uint64_t t0_ns, uint64_t interval_ns);
/* When the next kept sample is due (the driver's clock). */
uint64_t obs_coverage_next(const struct obs_coverage *c);
/* Take a sample at now (>= t0 and the previous sample; earlier ones are ignored). Kept when due
 * (or when it is the first); every sample counts in the time-weighted coverage. */
void obs_coverage_sample(struct obs_coverage *c, uint64_t now_ns, uint32_t huge, uint32_t anon);
/* The last sample, at the end of the run: always kept (thinning first if full). */
void obs_coverage_finish(struct obs_coverage *c, uint64_t now_ns, uint32_t huge, uint32_t anon);

/* End the series at now without a new sample: the last one holds until now (`thpemu run`: the
 * program has exited and its memory is going back to the pool; a sample now would see that). */
void obs_coverage_close(struct obs_coverage *c, uint64_t now_ns);

/* Percentages (0..100); 0 when anon was never above 0. */
double obs_coverage_end_pct(const struct obs_coverage *c);
double obs_coverage_tw_pct(const struct obs_coverage *c);

/* Write "coverage": {...} (above) into the current JSON object. */
void obs_report_coverage(struct json_w *w, const struct obs_coverage *c);

#endif

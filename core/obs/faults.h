/* Per-run fault aggregation and the report sections every run kind shares.
 *
 * `thpemu sim`, `thpemu run` (the preload library) and `thpemu ab` all describe faults with the
 * same JSON keys, written by these functions:
 *   "faults"          {total, huge, base, nomem, huge_pct}
 *   "latency_us"      {huge, base, both} each {count, mean, p50, p90, p99, p999, max}
 *   "latency_bands"   {huge, base, both} each {"<10us", "10-100us", "100us-1ms", "1-10ms",
 *                      "10-100ms", "100ms-1s", ">=1s"} counts
 *   "latency_cdf"     {huge, base, both} each [[upper_us, cumulative_fraction], ...] (non-empty
 *                      buckets only; for plots)
 *   "latency_hist"    {huge, base, both} each [[lo_ns, hi_ns, count], ...] (non-empty buckets,
 *                      exact counts: runs merge and rank tests use them)
 *   "writeback_waits" {count, total_ms, max_ms}
 *   "time_ms"         {compaction, reclaim, writeback_wait, migrate, zeroing} summed over faults
 *   "vmstat"          {kernel-named counters}
 * Recording is lock-free and allocation-free (fault path safe). "faults.base" counts every
 * fault not served huge, NOMEM included; "nomem" says how many of those the pool could not serve.
 * Output is deterministic: same records, same bytes (fixed decimals: 3 for us and ms, 2 for
 * huge_pct, 6 for CDF fractions). Empty classes report zeros and an empty CDF.
 */
#ifndef THPEMU_OBS_FAULTS_H
#define THPEMU_OBS_FAULTS_H

#include <stdint.h>

#include "mm/mm.h"
#include "obs/hist.h"
#include "util/json.h"

enum obs_class { OBS_HUGE, OBS_BASE, OBS_NCLASS };

/* Latency bands (the "frequency of faults in latency bands" of THP papers, decade-wide),
 * counted exactly rather than from buckets. */
enum obs_band {
	OBS_BAND_10US,	 /* < 10 us */
	OBS_BAND_100US,	 /* 10 us .. < 100 us */
	OBS_BAND_1MS,	 /* 100 us .. < 1 ms */
	OBS_BAND_10MS,	 /* 1 ms .. < 10 ms */
	OBS_BAND_100MS,	 /* 10 ms .. < 100 ms */
	OBS_BAND_1S,	 /* 100 ms .. < 1 s */
	OBS_BAND_SLOWER, /* >= 1 s */
	OBS_NBANDS,
};

/* Plain data without pointers: it may live in a MAP_SHARED file that outlives the process. */
struct obs_faults {
	struct obs_hist lat[OBS_NCLASS];	/* service latency per outcome class */
	uint64_t bands[OBS_NCLASS][OBS_NBANDS]; /* fault counts per latency band */
	uint64_t nomem;		 /* MM_FAULT_NOMEM faults (counted in base latency too) */
	uint64_t wb_waits;	 /* writeback waits, summed over faults */
	uint64_t wb_wait_ns;	 /* time in those waits */
	uint64_t wb_wait_max_ns; /* longest single wait (us resolution, from the record) */
	uint64_t compact_ns, reclaim_ns, migrate_ns, zero_ns; /* summed mm_fault_rec times */
};

/* The band a latency falls in, and the band's JSON key ("<10us", ..., ">=1s"). */
enum obs_band obs_band_of(uint64_t ns);
const char *obs_band_name(enum obs_band b);

void obs_faults_init(struct obs_faults *f);
/* Record one fault: its mm record and the latency the caller measured for it (live: message
 * read to wake-up; sim: virtual service time). Lock-free. */
void obs_faults_record(struct obs_faults *f, const struct mm_fault_rec *rec, uint64_t latency_ns);
void obs_faults_merge(struct obs_faults *dst, const struct obs_faults *src);

/* Write the sections listed above (all but vmstat) into the current JSON object. */
void obs_report_faults(struct json_w *w, const struct obs_faults *f);
/* Write "vmstat": {name: value, ...} in mm_stat_names order. */
void obs_report_vmstat(struct json_w *w, const uint64_t stats[MM_STAT_NR]);

#endif

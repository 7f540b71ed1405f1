/* Per-run fault aggregation and the report sections every run kind shares.
 *
 * `thpemu sim`, `thpemu run` (the preload library) and `thpemu ab` all describe faults with the
 * same JSON keys, written by these functions:
 *   "faults"          {total, huge, base, mthp, nomem, huge_pct}
 *   "latency_us"      {huge, base, mthp, both} each {count, mean, p50, p90, p99, p999, max}
 *   "latency_bands"   {huge, base, mthp, both} each {"<10us", "10-100us", "100us-1ms", "1-10ms",
 *                      "10-100ms", "100ms-1s", ">=1s"} counts
 *   "latency_cdf"     {huge, base, mthp, both} each [[upper_us, cumulative_fraction], ...]
 * (non-empty buckets only; for plots) "latency_hist"    {huge, base, mthp, both} each [[lo_ns,
 * hi_ns, count], ...] (non-empty buckets, exact counts: runs merge and rank tests use them)
 *   "writeback_waits" {count, total_ms, max_ms}
 *   "time_ms"         {compaction, reclaim, writeback_wait, migrate, zeroing} summed over faults
 *   "vmstat"          {kernel-named counters}
 * Recording is lock-free and allocation-free (fault path safe). "faults.base" counts every
 * fault served with one 4 KiB page, NOMEM included ("nomem" says how many of those the pool could
 * not serve); "faults.mthp" those served by a multi-size THP folio (orders 2..8); total is the
 * three. The per-size "mthp" section is obs/mthp.h's.
 * Output is deterministic: same records, same bytes (fixed decimals: 3 for us and ms, 2 for
 * huge_pct, 6 for CDF fractions). Empty classes report zeros and an empty CDF.
 */
#ifndef THPEMU_OBS_FAULTS_H
#define THPEMU_OBS_FAULTS_H

#include <stdint.h>

#include "mm/mm.h"
#include "obs/hist.h"
#include "util/json.h"

/* huge: a PMD THP (order 9); base: 4 KiB (NOMEM included); mthp: an mTHP folio (orders 2..8,
 * 6.8+), per order in lat_order. */
enum obs_class { OBS_HUGE, OBS_BASE, OBS_MTHP, OBS_NCLASS };
#define OBS_MTHP_MIN_ORDER 2 /* MM_MTHP_MIN_ORDER */
#define OBS_MTHP_MAX_ORDER 8 /* MM_HPAGE_ORDER - 1 */
#define OBS_MTHP_NORDERS   (OBS_MTHP_MAX_ORDER - OBS_MTHP_MIN_ORDER + 1)

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
	struct obs_hist lat[OBS_NCLASS];	     /* service latency per outcome class */
	uint64_t bands[OBS_NCLASS][OBS_NBANDS];	     /* fault counts per latency band */
	struct obs_hist lat_order[OBS_MTHP_NORDERS]; /* OBS_MTHP faults per folio order (2..8) */
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
/* The same on memory known to be zero (a fresh mapping or file): only the non-zero fields are
 * written, so the pages no fault ever reaches are never touched. */
void obs_faults_init_zeroed(struct obs_faults *f);
/* Record one fault: its mm record and the latency the caller measured for it (live: message
 * read to wake-up; sim: virtual service time). Lock-free. */
void obs_faults_record(struct obs_faults *f, const struct mm_fault_rec *rec, uint64_t latency_ns);
/* A fault recorded with latency `was` took `latency_ns` after all (live: counted before the
 * ioctl that woke its thread, its latency known after it). */
void obs_faults_amend(struct obs_faults *f, const struct mm_fault_rec *rec, uint64_t was,
		      uint64_t latency_ns);
void obs_faults_merge(struct obs_faults *dst, const struct obs_faults *src);

/* The latency_us object shape of one histogram; over_us (>= 0) is subtracted from every
 * statistic but count, clamped at 0 (kernel_latency_us: net of the emulation). */
void obs_report_summary(struct json_w *w, const char *key, const struct obs_hist *h,
			double over_us);
/* The union of the classes' histograms ("both"). */
void obs_faults_both(const struct obs_faults *f, struct obs_hist *both);

/* Write the sections listed above (all but vmstat) into the current JSON object. */
void obs_report_faults(struct json_w *w, const struct obs_faults *f);
/* Write "vmstat": {name: value, ...} in mm_stat_names order. */
void obs_report_vmstat(struct json_w *w, const uint64_t stats[MM_STAT_NR]);

#endif

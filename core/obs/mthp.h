/* Multi-size THP (6.8+) report section, shared by `thpemu run` and `thpemu sim`.
 *
 *   "mthp": {"delivery": "per-PTE" | "model", "coverage_pct": <% of the anon pages faulted in
 *            that mTHP folios mapped>,
 *            "sizes": {"16kB": {...}, ..., "2048kB": {...}}}
 * every size 16kB..2048kB present, each
 *   {"order", "setting": "always|inherit|madvise|never", "faults", "anon_fault_alloc",
 *    "anon_fault_fallback", "anon_fault_fallback_charge", "split", "split_deferred", "nr_anon",
 *    "nr_anon_partially_mapped", "latency_us": {latency_us shape}
 *    [, "kernel_latency_us": {latency_us shape}]}
 * 2048kB is the PMD size: its faults and latencies are the huge class's, its counters the THP
 * ones (mm_get_mthp_stats order 9). Written only for eras with mTHP (the modern profiles).
 */
#ifndef THPEMU_OBS_MTHP_H
#define THPEMU_OBS_MTHP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "mm/mm.h"
#include "mm/mm_policy.h"
#include "obs/faults.h"
#include "util/json.h"

#define OBS_MTHP_PMD_ORDER 9

/* Plain data (it lives in the live run's MAP_SHARED statistics file). Index: the order. */
struct obs_mthp {
	uint8_t era_has_mthp;				 /* the policy's era has mTHP (6.8+) */
	uint8_t setting[OBS_MTHP_PMD_ORDER + 1];	 /* enum mm_thp_size per order 2..9 */
	struct mm_mthp_stats st[OBS_MTHP_PMD_ORDER + 1]; /* orders 2..9 */
};

/* Fill m from the policy (settings) and mm's per-size statistics. Not fault-path safe (it
 * takes mm's lock). */
void obs_mthp_snapshot(struct obs_mthp *m, const struct mm_policy *p, struct mm *mm);
/* Fold a snapshot of a pool about to be dropped into the run's totals (sim iterations): events
 * add up, gauges are the latest pool's (dst's are replaced by src's). */
void obs_mthp_accumulate(struct obs_mthp *dst, const struct obs_mthp *src);
/* Add the processes' statistics up (a run's report over several processes): events and gauges
 * (each process has its own pool) add; dst takes src's settings if it has none. */
void obs_mthp_merge(struct obs_mthp *dst, const struct obs_mthp *src);
/* The text report's lines, one per size 16kB..1024kB that served any fault:
 * "<prefix>mTHP 64kB: N faults (alloc A, fallback F), p50 X us (per fault<note>)\n". */
void obs_mthp_text(FILE *out, const char *prefix, const struct obs_mthp *m,
		   const struct obs_faults *f, const char *note);
/* The setting's name: "never", "always", "madvise", "inherit". */
const char *obs_mthp_setting_name(unsigned setting);
/* Write "mthp" (see above) if m's era has mTHP; nothing otherwise. kernel_over_us >= 0 adds
 * "kernel_latency_us" per size (latencies less that overhead); < 0 leaves it out. */
void obs_report_mthp(struct json_w *w, const struct obs_mthp *m, const struct obs_faults *f,
		     const char *delivery, double kernel_over_us);

#endif

/* Log-linear latency histogram (HdrHistogram-like, fixed size, no allocation).
 *
 * Values are nanoseconds. Values below OBS_HIST_SUB are counted exactly (bucket = value); above
 * that, each power-of-two range [2^k, 2^(k+1)) is split into OBS_HIST_SUB linear sub-buckets, so
 * a reported percentile is within 1/OBS_HIST_SUB (~3 %) of the true sample, and never below it.
 * Range: 0 ns .. 63 * 2^41 ns (~38 h); larger values land in the last (open-ended) bucket and
 * still update max.
 * Recording is lock-free (relaxed atomics) and safe from the fault path and several threads.
 * Percentiles of an empty histogram are 0, never garbage (HdrHistogram_c#116).
 * Percentile definition: the value at quantile q is the sample of rank ceil(q * count) (rank 1
 * for q = 0), reported as the highest value of its bucket, clamped to the recorded max.
 */
#ifndef THPEMU_OBS_HIST_H
#define THPEMU_OBS_HIST_H

#include <stdbool.h>
#include <stdint.h>

#define OBS_HIST_SUB_BITS 5
#define OBS_HIST_SUB	  (1U << OBS_HIST_SUB_BITS)
#define OBS_HIST_EXPS	  43
#define OBS_HIST_BUCKETS  (OBS_HIST_EXPS * OBS_HIST_SUB)

struct obs_hist {
	uint64_t count;
	uint64_t sum; /* ns */
	uint64_t min; /* UINT64_MAX when empty */
	uint64_t max;
	uint64_t counts[OBS_HIST_BUCKETS];
};

/* Summary in the report's latency_us shape. */
struct obs_hist_summary {
	uint64_t count;
	double mean, p50, p90, p99, p999, max; /* in the unit asked for */
};

void obs_hist_init(struct obs_hist *h);
void obs_hist_record(struct obs_hist *h, uint64_t ns); /* lock-free */
/* A sample recorded as `was` is `ns` (>= was) after all: moved to its bucket, the sum and the
 * maximum corrected (lock-free). The minimum keeps `was` if it was the smallest. */
void obs_hist_amend(struct obs_hist *h, uint64_t was, uint64_t ns);
/* dst += src. src may be recorded into concurrently (its counts are read atomically). */
void obs_hist_merge(struct obs_hist *dst, const struct obs_hist *src);
/* Value at quantile q in [0, 1] (upper edge of the bucket holding it, clamped to max). */
uint64_t obs_hist_quantile(const struct obs_hist *h, double q);
double obs_hist_mean(const struct obs_hist *h);
/* Summary with values divided by unit_ns (1000 for microseconds). */
void obs_hist_summarise(const struct obs_hist *h, uint64_t unit_ns, struct obs_hist_summary *s);
/* Bucket index and bounds, for writing CDFs. lo and hi are both inclusive. */
unsigned obs_hist_bucket(uint64_t ns);
uint64_t obs_hist_bucket_lo(unsigned b);
uint64_t obs_hist_bucket_hi(unsigned b);

#endif

/* Log-linear latency histogram (see hist.h).
 *
 * Models nothing in the kernel: it is the measuring instrument. The bucket scheme is
 * HdrHistogram's with 5 sub-bucket bits: exact below 32 ns, then 32 linear sub-buckets per
 * power of two. Every field is updated with relaxed atomics so any number of handler threads can
 * record into one histogram while a reporter reads it; the reporter sees a slightly stale but
 * self-consistent-enough view (it re-derives the total from the bucket counts).
 */
#include "obs/hist.h"

#include <string.h>

#define LOAD(p)	  __atomic_load_n((p), __ATOMIC_RELAXED)
#define ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)

void obs_hist_init(struct obs_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

unsigned obs_hist_bucket(uint64_t ns)
{
	unsigned msb, group, sub;

	if (ns < OBS_HIST_SUB)
		return (unsigned)ns;
	msb = 63U - (unsigned)__builtin_clzll(ns);
	group = msb - OBS_HIST_SUB_BITS + 1;
	if (group >= OBS_HIST_EXPS)
		return OBS_HIST_BUCKETS - 1;
	sub = (unsigned)(ns >> (msb - OBS_HIST_SUB_BITS)) - OBS_HIST_SUB;
	return group * OBS_HIST_SUB + sub;
}

uint64_t obs_hist_bucket_lo(unsigned b)
{
	unsigned group = b / OBS_HIST_SUB, sub = b % OBS_HIST_SUB;

	if (group == 0)
		return sub;
	return (uint64_t)(OBS_HIST_SUB + sub) << (group - 1);
}

uint64_t obs_hist_bucket_hi(unsigned b)
{
	unsigned group = b / OBS_HIST_SUB;

	if (b >= OBS_HIST_BUCKETS - 1)
		return UINT64_MAX; /* the overflow bucket is open-ended */
	if (group == 0)
		return b;
	return obs_hist_bucket_lo(b) + (1ULL << (group - 1)) - 1;
}

static void atomic_min(uint64_t *p, uint64_t v)
{
	uint64_t cur = LOAD(p);

	while (v < cur &&
	       !__atomic_compare_exchange_n(p, &cur, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static void atomic_max(uint64_t *p, uint64_t v)
{
	uint64_t cur = LOAD(p);

	while (v > cur &&
	       !__atomic_compare_exchange_n(p, &cur, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

void obs_hist_record(struct obs_hist *h, uint64_t ns)
{
	ADD(&h->counts[obs_hist_bucket(ns)], 1);
	ADD(&h->sum, ns);
	atomic_min(&h->min, ns);
	atomic_max(&h->max, ns);
	ADD(&h->count, 1);
}

void obs_hist_amend(struct obs_hist *h, uint64_t was, uint64_t ns)
{
	unsigned a = obs_hist_bucket(was), b = obs_hist_bucket(ns);

	if (a != b) {
		ADD(&h->counts[b], 1);
		__atomic_fetch_sub(&h->counts[a], 1, __ATOMIC_RELAXED);
	}
	ADD(&h->sum, ns - was);
	atomic_max(&h->max, ns);
}

void obs_hist_merge(struct obs_hist *dst, const struct obs_hist *src)
{
	for (unsigned b = 0; b < OBS_HIST_BUCKETS; b++) {
		uint64_t n = LOAD(&src->counts[b]);

		if (n)
			ADD(&dst->counts[b], n);
	}
	ADD(&dst->sum, LOAD(&src->sum));
	ADD(&dst->count, LOAD(&src->count));
	atomic_min(&dst->min, LOAD(&src->min));
	atomic_max(&dst->max, LOAD(&src->max));
}

/* Total from the buckets: consistent with the walk in obs_hist_quantile even while recorders
 * run (h->count may be ahead of or behind the buckets by in-flight records). */
static uint64_t bucket_total(const struct obs_hist *h)
{
	uint64_t total = 0;

	for (unsigned b = 0; b < OBS_HIST_BUCKETS; b++)
		total += LOAD(&h->counts[b]);
	return total;
}

static uint64_t rank_for(double q, uint64_t total)
{
	double r;

	if (!(q > 0)) /* also catches NaN */
		return 1;
	if (q >= 1)
		return total;
	r = q * (double)total;
	if (r <= 1)
		return 1;
	/* ceil, but exact products (0.5 * 10) must not round up to the next rank */
	return (uint64_t)r + ((double)(uint64_t)r < r);
}

uint64_t obs_hist_quantile(const struct obs_hist *h, double q)
{
	uint64_t total = bucket_total(h), rank, seen = 0, max = LOAD(&h->max);

	if (total == 0)
		return 0;
	rank = rank_for(q, total);
	for (unsigned b = 0; b < OBS_HIST_BUCKETS; b++) {
		seen += LOAD(&h->counts[b]);
		if (seen >= rank) {
			uint64_t hi = obs_hist_bucket_hi(b);

			return hi < max ? hi : max;
		}
	}
	return max;
}

double obs_hist_mean(const struct obs_hist *h)
{
	uint64_t n = LOAD(&h->count);

	return n ? (double)LOAD(&h->sum) / (double)n : 0.0;
}

void obs_hist_summarise(const struct obs_hist *h, uint64_t unit_ns, struct obs_hist_summary *s)
{
	double u = unit_ns ? (double)unit_ns : 1.0;

	s->count = LOAD(&h->count);
	if (s->count == 0) {
		*s = (struct obs_hist_summary){0};
		return;
	}
	s->mean = obs_hist_mean(h) / u;
	s->p50 = (double)obs_hist_quantile(h, 0.50) / u;
	s->p90 = (double)obs_hist_quantile(h, 0.90) / u;
	s->p99 = (double)obs_hist_quantile(h, 0.99) / u;
	s->p999 = (double)obs_hist_quantile(h, 0.999) / u;
	s->max = (double)LOAD(&h->max) / u;
}

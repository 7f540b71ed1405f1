/* Per-run fault aggregation and the shared report sections (see faults.h).
 *
 * Models the accounting side of the kernel's fault path: what /proc/vmstat's thp_fault_alloc /
 * thp_fault_fallback say in counts, plus the latency distribution that mmtests thpscale
 * measures per fault ("fault-huge", "fault-base", "fault-both"). Recording happens on handler
 * threads (live) or the simulator loop, so it is relaxed atomics only; writing the report is
 * done once, off the fault path.
 */
#include "obs/faults.h"

#include <string.h>

#define LOAD(p)	  __atomic_load_n((p), __ATOMIC_RELAXED)
#define ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)

static const char *const band_names[OBS_NBANDS] = {
    [OBS_BAND_10US] = "<10us",	[OBS_BAND_100US] = "10-100us", [OBS_BAND_1MS] = "100us-1ms",
    [OBS_BAND_10MS] = "1-10ms", [OBS_BAND_100MS] = "10-100ms", [OBS_BAND_1S] = "100ms-1s",
    [OBS_BAND_SLOWER] = ">=1s",
};

static const char *const class_names[OBS_NCLASS] = {
    [OBS_HUGE] = "huge",
    [OBS_BASE] = "base",
    [OBS_MTHP] = "mthp",
};

enum obs_band obs_band_of(uint64_t ns)
{
	uint64_t edge = 10000; /* 10 us */
	unsigned b = 0;

	while (b < OBS_BAND_SLOWER && ns >= edge) {
		edge *= 10;
		b++;
	}
	return (enum obs_band)b;
}

const char *obs_band_name(enum obs_band b)
{
	return b < OBS_NBANDS ? band_names[b] : "?";
}

void obs_faults_init(struct obs_faults *f)
{
	memset(f, 0, sizeof(*f));
	obs_faults_init_zeroed(f);
}

void obs_faults_init_zeroed(struct obs_faults *f)
{
	for (int c = 0; c < OBS_NCLASS; c++)
		f->lat[c].min = UINT64_MAX; /* obs_hist_init's only non-zero field */
	for (int k = 0; k < OBS_MTHP_NORDERS; k++)
		f->lat_order[k].min = UINT64_MAX;
}

static void atomic_max(uint64_t *p, uint64_t v)
{
	uint64_t cur = LOAD(p);

	while (v > cur &&
	       !__atomic_compare_exchange_n(p, &cur, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static int class_of(const struct mm_fault_rec *rec)
{
	return rec->outcome == MM_FAULT_HUGE ? OBS_HUGE
	       : rec->outcome == MM_FAULT_MTHP && rec->order >= OBS_MTHP_MIN_ORDER &&
		       rec->order <= OBS_MTHP_MAX_ORDER
		   ? OBS_MTHP
		   : OBS_BASE;
}

void obs_faults_amend(struct obs_faults *f, const struct mm_fault_rec *rec, uint64_t was,
		      uint64_t latency_ns)
{
	int c = class_of(rec);
	enum obs_band a = obs_band_of(was), b = obs_band_of(latency_ns);

	obs_hist_amend(&f->lat[c], was, latency_ns);
	if (c == OBS_MTHP)
		obs_hist_amend(&f->lat_order[rec->order - OBS_MTHP_MIN_ORDER], was, latency_ns);
	if (a != b) {
		ADD(&f->bands[c][b], 1);
		__atomic_fetch_sub(&f->bands[c][a], 1, __ATOMIC_RELAXED);
	}
}

void obs_faults_record(struct obs_faults *f, const struct mm_fault_rec *rec, uint64_t latency_ns)
{
	int c = class_of(rec);

	obs_hist_record(&f->lat[c], latency_ns);
	if (c == OBS_MTHP)
		obs_hist_record(&f->lat_order[rec->order - OBS_MTHP_MIN_ORDER], latency_ns);
	ADD(&f->bands[c][obs_band_of(latency_ns)], 1);
	if (rec->outcome == MM_FAULT_NOMEM)
		ADD(&f->nomem, 1);
	if (rec->wb_waits) {
		ADD(&f->wb_waits, rec->wb_waits);
		ADD(&f->wb_wait_ns, rec->wb_wait_ns);
		atomic_max(&f->wb_wait_max_ns, (uint64_t)rec->wb_wait_max_us * 1000);
	}
	if (rec->compact_ns)
		ADD(&f->compact_ns, rec->compact_ns);
	if (rec->reclaim_ns)
		ADD(&f->reclaim_ns, rec->reclaim_ns);
	if (rec->migrate_ns)
		ADD(&f->migrate_ns, rec->migrate_ns);
	if (rec->zero_ns)
		ADD(&f->zero_ns, rec->zero_ns);
}

void obs_faults_merge(struct obs_faults *dst, const struct obs_faults *src)
{
	for (int c = 0; c < OBS_NCLASS; c++) {
		obs_hist_merge(&dst->lat[c], &src->lat[c]);
		for (int b = 0; b < OBS_NBANDS; b++)
			ADD(&dst->bands[c][b], LOAD(&src->bands[c][b]));
	}
	for (int k = 0; k < OBS_MTHP_NORDERS; k++)
		obs_hist_merge(&dst->lat_order[k], &src->lat_order[k]);
	ADD(&dst->nomem, LOAD(&src->nomem));
	ADD(&dst->wb_waits, LOAD(&src->wb_waits));
	ADD(&dst->wb_wait_ns, LOAD(&src->wb_wait_ns));
	atomic_max(&dst->wb_wait_max_ns, LOAD(&src->wb_wait_max_ns));
	ADD(&dst->compact_ns, LOAD(&src->compact_ns));
	ADD(&dst->reclaim_ns, LOAD(&src->reclaim_ns));
	ADD(&dst->migrate_ns, LOAD(&src->migrate_ns));
	ADD(&dst->zero_ns, LOAD(&src->zero_ns));
}

/* ---- Report ----------------------------------------------------------------------------- */

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

static void report_counts(struct json_w *w, const struct obs_faults *f)
{
	uint64_t huge = LOAD(&f->lat[OBS_HUGE].count), base = LOAD(&f->lat[OBS_BASE].count);
	uint64_t mthp = LOAD(&f->lat[OBS_MTHP].count);
	uint64_t total = huge + base + mthp;

	jw_obj_begin(w, "faults");
	jw_u64(w, "total", total);
	jw_u64(w, "huge", huge);
	jw_u64(w, "base", base);
	jw_u64(w, "mthp", mthp);
	jw_u64(w, "nomem", LOAD(&f->nomem));
	jw_dbl(w, "huge_pct", total ? (double)huge * 100.0 / (double)total : 0.0, 2);
	jw_obj_end(w);
}

static double net(uint64_t count, double v, double over)
{
	return count && v > over ? v - over : 0.0;
}

void obs_report_summary(struct json_w *w, const char *key, const struct obs_hist *h, double over_us)
{
	struct obs_hist_summary s;

	obs_hist_summarise(h, 1000, &s);
	jw_obj_begin(w, key);
	jw_u64(w, "count", s.count);
	jw_dbl(w, "mean", net(s.count, s.mean, over_us), 3);
	jw_dbl(w, "p50", net(s.count, s.p50, over_us), 3);
	jw_dbl(w, "p90", net(s.count, s.p90, over_us), 3);
	jw_dbl(w, "p99", net(s.count, s.p99, over_us), 3);
	jw_dbl(w, "p999", net(s.count, s.p999, over_us), 3);
	jw_dbl(w, "max", net(s.count, s.max, over_us), 3);
	jw_obj_end(w);
}

static void report_summary(struct json_w *w, const char *key, const struct obs_hist *h)
{
	obs_report_summary(w, key, h, 0.0);
}

void obs_faults_both(const struct obs_faults *f, struct obs_hist *both)
{
	obs_hist_init(both);
	for (int c = 0; c < OBS_NCLASS; c++)
		obs_hist_merge(both, &f->lat[c]);
}

static void report_bands(struct json_w *w, const char *key, const uint64_t *bands)
{
	jw_obj_begin(w, key);
	for (int b = 0; b < OBS_NBANDS; b++)
		jw_u64(w, band_names[b], LOAD(&bands[b]));
	jw_obj_end(w);
}

static void report_cdf(struct json_w *w, const char *key, const struct obs_hist *h)
{
	uint64_t total = 0, seen = 0, max = LOAD(&h->max);

	for (unsigned b = 0; b < OBS_HIST_BUCKETS; b++)
		total += LOAD(&h->counts[b]);
	jw_arr_begin(w, key);
	for (unsigned b = 0; b < OBS_HIST_BUCKETS && total; b++) {
		uint64_t n = LOAD(&h->counts[b]), hi = obs_hist_bucket_hi(b);

		if (!n)
			continue;
		seen += n;
		jw_arr_begin(w, NULL);
		jw_dbl(w, NULL, (double)(hi < max ? hi : max) / 1000.0, 3);
		jw_dbl(w, NULL, (double)seen / (double)total, 6);
		jw_arr_end(w);
	}
	jw_arr_end(w);
}

/* Exact bucket counts, for merging runs and rank statistics (thpemu ab): [[lo_ns, hi_ns, n]],
 * non-empty buckets only; every sample of a bucket lies in [lo_ns, hi_ns]. */
static void report_hist(struct json_w *w, const char *key, const struct obs_hist *h)
{
	jw_arr_begin(w, key);
	for (unsigned b = 0; b < OBS_HIST_BUCKETS; b++) {
		uint64_t n = LOAD(&h->counts[b]);

		if (!n)
			continue;
		jw_arr_begin(w, NULL);
		jw_u64(w, NULL, obs_hist_bucket_lo(b));
		jw_u64(w, NULL, obs_hist_bucket_hi(b));
		jw_u64(w, NULL, n);
		jw_arr_end(w);
	}
	jw_arr_end(w);
}

/* latency_us, latency_bands, latency_cdf and latency_hist, each with "huge", "base" and
 * "both". */
static void report_latency(struct json_w *w, const struct obs_faults *f,
			   const struct obs_hist *both)
{
	uint64_t both_bands[OBS_NBANDS];

	jw_obj_begin(w, "latency_us");
	for (int c = 0; c < OBS_NCLASS; c++)
		report_summary(w, class_names[c], &f->lat[c]);
	report_summary(w, "both", both);
	jw_obj_end(w);

	for (int b = 0; b < OBS_NBANDS; b++) {
		both_bands[b] = 0;
		for (int c = 0; c < OBS_NCLASS; c++)
			both_bands[b] += LOAD(&f->bands[c][b]);
	}
	jw_obj_begin(w, "latency_bands");
	for (int c = 0; c < OBS_NCLASS; c++)
		report_bands(w, class_names[c], f->bands[c]);
	report_bands(w, "both", both_bands);
	jw_obj_end(w);

	jw_obj_begin(w, "latency_cdf");
	for (int c = 0; c < OBS_NCLASS; c++)
		report_cdf(w, class_names[c], &f->lat[c]);
	report_cdf(w, "both", both);
	jw_obj_end(w);

	jw_obj_begin(w, "latency_hist");
	for (int c = 0; c < OBS_NCLASS; c++)
		report_hist(w, class_names[c], &f->lat[c]);
	report_hist(w, "both", both);
	jw_obj_end(w);
}

static void report_times(struct json_w *w, const struct obs_faults *f)
{
	jw_obj_begin(w, "writeback_waits");
	jw_u64(w, "count", LOAD(&f->wb_waits));
	jw_dbl(w, "total_ms", ms(LOAD(&f->wb_wait_ns)), 3);
	jw_dbl(w, "max_ms", ms(LOAD(&f->wb_wait_max_ns)), 3);
	jw_obj_end(w);

	jw_obj_begin(w, "time_ms");
	jw_dbl(w, "compaction", ms(LOAD(&f->compact_ns)), 3);
	jw_dbl(w, "reclaim", ms(LOAD(&f->reclaim_ns)), 3);
	jw_dbl(w, "writeback_wait", ms(LOAD(&f->wb_wait_ns)), 3);
	jw_dbl(w, "migrate", ms(LOAD(&f->migrate_ns)), 3);
	jw_dbl(w, "zeroing", ms(LOAD(&f->zero_ns)), 3);
	jw_obj_end(w);
}

void obs_report_faults(struct json_w *w, const struct obs_faults *f)
{
	struct obs_hist both; /* ~11 KiB on the reporter's stack, never on the fault path */

	obs_faults_both(f, &both);
	report_counts(w, f);
	report_latency(w, f, &both);
	report_times(w, f);
}

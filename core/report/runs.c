/* Reading reports back, the compared metrics, and the A/B comparison (see runs.h). */
#include "report/runs.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/text.h"

const char *const rd_class_names[RD_NCLASS] = {"huge", "base", "both"};

#define LAT(cls, q, h)                                                                             \
	{                                                                                          \
		"fault-" cls "-" q, "us", "latency_us." cls "." q, true, 0, h                      \
	}
/* mTHP per folio size: the report's "mthp.sizes.SIZE" (mthp_stats of
 * /sys/kernel/mm/transparent_hugepage/hugepages-SIZE/stats) */
#define MTHP(sz, h)                                                                                \
	{"mthp-" sz "-alloc", "", "mthp.sizes." sz ".anon_fault_alloc", false, 0, h},              \
	    {"mthp-" sz "-fallback", "", "mthp.sizes." sz ".anon_fault_fallback", true, 0, ""},    \
	{                                                                                          \
		"mthp-" sz "-p50", "us", "mthp.sizes." sz ".latency_us.p50", true, 0, ""           \
	}
const struct rd_metric rd_metrics[] = {
    LAT("both", "mean", "fault service latency, every fault"),
    LAT("both", "p50", ""),
    LAT("both", "p90", ""),
    LAT("both", "p99", ""),
    LAT("both", "p999", ""),
    LAT("both", "max", ""),
    LAT("huge", "mean", "faults served with a 2 MiB page"),
    LAT("huge", "p50", ""),
    LAT("huge", "p99", ""),
    LAT("huge", "max", ""),
    LAT("base", "mean", "faults served with a 4 KiB page"),
    LAT("base", "p50", ""),
    LAT("base", "p99", ""),
    LAT("base", "max", ""),
    {"kernel-both-p50", "us", "kernel_latency_us.both.p50", true, 0,
     "live runs: latency net of the emulation (less the start-up probe's bare handler service): "
     "what the emulated kernel's work cost, to hold against a native kernel"},
    {"kernel-both-p99", "us", "kernel_latency_us.both.p99", true, 0, ""},
    {"kernel-huge-p50", "us", "kernel_latency_us.huge.p50", true, 0, ""},
    {"kernel-base-p50", "us", "kernel_latency_us.base.p50", true, 0, ""},
    {"huge-pct", "%", "faults.huge_pct", false, 0, "share of faults served huge"},
    {"coverage-end", "%", "coverage.end_pct", false, 0,
     "AnonHugePages / managed anon at the end (the last sample with anon)"},
    {"coverage-tw", "%", "coverage.time_weighted_pct", false, 0,
     "AnonHugePages / managed anon, time-weighted over the run"},
    {"faults", "", "faults.total", true, 0, "first-touch faults"},
    {"stall-count", "", "stalls.count", true, 0,
     "per-fault stalls: faults slower than the stall threshold"},
    {"stall-total", "ms", "stalls.total_ms", true, 0, "their service time"},
    {"wait-stalls", "", "stalls.waits.count", true, 0,
     "per-wait stall events: single waits (writeback, writeout, congestion nap) at least the "
     "threshold, as Mel Gorman's 2011 monitor counted"},
    {"wait-stall-total", "ms", "stalls.waits.total_ms", true, 0, "their summed length"},
    {"wait-stall-max", "ms", "stalls.waits.max_ms", true, 0, "the longest of them"},
    {"wb-waits", "", "writeback_waits.count", true, 0, "waits on writeback inside faults"},
    {"wb-wait-total", "ms", "writeback_waits.total_ms", true, 0, "time in those waits"},
    {"compaction-time", "ms", "time_ms.compaction", true, 0, "time in direct compaction"},
    {"reclaim-time", "ms", "time_ms.reclaim", true, 0, "time in direct reclaim"},
    {"compact-efficiency", "%", NULL, false, 1, "mmtests: compact_success / compact_stall"},
    {"scan-efficiency", "%", NULL, false, 2,
     "mmtests: compact_migrate_scanned / compact_free_scanned"},
    {"wall", "s", "program.wall_s", true, 0, "the program's wall time"},
    /* mTHP: present only in reports of eras with multi-size THP (the "mthp" key) */
    {"mthp-faults", "", "faults.mthp", false, 0,
     "faults served by an mTHP folio (16 KiB .. 1 MiB, orders 2..8)"},
    {"mthp-coverage", "%", "mthp.coverage_pct", false, 0,
     "share of the anonymous pages faulted that mTHP folios mapped"},
    MTHP("16kB", "per size (sysfs hugepages-SIZE): anon_fault_alloc, anon_fault_fallback, "
		 "p50 fault latency (us); listed for sizes with activity on either side"),
    MTHP("32kB", ""),
    MTHP("64kB", ""),
    MTHP("128kB", ""),
    MTHP("256kB", ""),
    MTHP("512kB", ""),
    MTHP("1024kB", ""),
    MTHP("2048kB", ""),
};
const size_t rd_nmetrics = sizeof(rd_metrics) / sizeof(rd_metrics[0]);

/* ---- reading -----------------------------------------------------------------------------------
 */

static json_t *at(json_t *root, const char *path)
{
	char key[64];
	json_t *v = root;

	while (v && *path) {
		const char *dot = strchr(path, '.');
		size_t len = dot ? (size_t)(dot - path) : strlen(path);

		if (len >= sizeof(key))
			return NULL;
		memcpy(key, path, len);
		key[len] = '\0';
		v = json_is_object(v) ? json_object_get(v, key) : NULL;
		path += len + (dot ? 1 : 0);
	}
	return v;
}

bool rd_counted(const struct rd_run *r)
{
	return r->ok && !r->warmup && r->root;
}

double rd_num(json_t *root, const char *path)
{
	json_t *v = at(root, path);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Busiest first: more faults, then the lower pid (entries without numbers last). */
int rd_by_faults(const void *x, const void *y)
{
	json_t *a = *(json_t *const *)x, *b = *(json_t *const *)y;
	double fa = rd_num(a, "faults.total"), fb = rd_num(b, "faults.total");
	double pa = rd_num(a, "pid"), pb = rd_num(b, "pid");

	fa = isnan(fa) ? -1 : fa;
	fb = isnan(fb) ? -1 : fb;
	if (fa != fb)
		return fa < fb ? 1 : -1;
	pa = isnan(pa) ? -1 : pa;
	pb = isnan(pb) ? -1 : pb;
	return (pa > pb) - (pa < pb);
}

const char *rd_str(json_t *root, const char *path)
{
	return json_string_value(at(root, path));
}

const char *rd_kind(json_t *root)
{
	const char *k = rd_str(root, "kind");

	if (k)
		return k;
	k = rd_str(root, "thpemu");
	return k && !strcmp(k, "sim") ? "sim" : NULL;
}

/* A count or bound of a histogram bucket: an integer 0..max, else -1. */
static int64_t bucket_int(json_t *v, int64_t max)
{
	json_int_t x = json_is_integer(v) ? json_integer_value(v) : -1;

	return x >= 0 && x <= max ? (int64_t)x : -1;
}

/* Read a "latency_hist" array: [lo, hi, n] per non-empty bucket of obs/hist.h's grid, lo
 * increasing. 0, or -EINVAL with the reason in why (anything else is not a histogram thpemu
 * wrote, and its counts would drive the renderers: one --mmtests line per fault). */
static int load_hist(struct rd_hist *h, json_t *arr, char *why, size_t whylen)
{
	size_t n = json_array_size(arr);

	memset(h, 0, sizeof(*h));
	if (arr && !json_is_array(arr)) {
		snprintf(why, whylen, "not an array");
		return -EINVAL;
	}
	if (n > OBS_HIST_BUCKETS) {
		snprintf(why, whylen, "%zu buckets (a histogram has %u)", n, OBS_HIST_BUCKETS);
		return -EINVAL;
	}
	h->b = calloc(n ? n : 1, sizeof(*h->b));
	if (!h->b)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(arr, i);
		int64_t lo = bucket_int(json_array_get(e, 0), INT64_MAX);
		int64_t hi = bucket_int(json_array_get(e, 1), INT64_MAX);
		int64_t cnt = bucket_int(json_array_get(e, 2), (int64_t)RD_FAULTS_MAX);
		unsigned b = lo < 0 ? 0 : obs_hist_bucket((uint64_t)lo);

		if (json_array_size(e) != 3 || lo < 0 || hi < 0 || cnt < 0 ||
		    obs_hist_bucket_lo(b) != (uint64_t)lo ||
		    obs_hist_bucket_hi(b) != (uint64_t)hi ||
		    (i && (uint64_t)lo <= h->b[i - 1].lo)) {
			snprintf(why, whylen,
				 "bucket %zu is not [lo, hi, count] of the bucket grid "
				 "in increasing order with a count 0..2^40",
				 i);
			return -EINVAL;
		}
		h->b[i] = (struct rd_bucket){(uint64_t)lo, (uint64_t)hi, (uint64_t)cnt};
		h->total += (uint64_t)cnt;
		h->n++;
	}
	if (h->total > RD_FAULTS_MAX) {
		snprintf(why, whylen, "%llu faults (a run has at most 2^40)",
			 (unsigned long long)h->total);
		return -EINVAL;
	}
	return 0;
}

/* A small integer of a report (an exit status, a run number), def if absent or out of range. */
static int small_int(json_t *v, int def)
{
	json_int_t x = json_is_integer(v) ? json_integer_value(v) : def;

	return x >= -1000000 && x <= 1000000 ? (int)x : def;
}

/* ---- numbers where thpemu writes numbers -------------------------------------------------------
 * A report's renderers read these as numbers; thpemu always writes a number there (an empty
 * class has 0), so a null or a string is a report thpemu did not write (hand-edited, damaged):
 * refused with the field named, as a histogram off the grid is. A section or value that is
 * absent (an older report) stays absent. */

/* Sections whose every value, through nested objects, is a number. */
static const char *const numeric_sections[] = {"faults", "latency_us", "kernel_latency_us",
					       "writeback_waits", "vmstat"};
/* Single values, where present. */
static const char *const numeric_values[] = {
    "stalls.count",	     "stalls.total_ms",		"stalls.waits.count",
    "stalls.waits.total_ms", "stalls.waits.max_ms",	"stalls.waits.threshold_ms",
    "stalls.faults.max_ms",  "coverage.end_pct",	"coverage.time_weighted_pct",
    "program.wall_s",	     "memory.processes",	"memory.anon_program_bytes",
    "memory.managed_share",  "memory.anon_thpemu_bytes"};
/* In each entry of "processes". */
static const char *const numeric_proc_sections[] = {"faults", "latency_us", "stalls"};

static const char *json_kind(json_t *v)
{
	return json_is_null(v)	    ? "null"
	       : json_is_string(v)  ? "a string"
	       : json_is_boolean(v) ? "a boolean"
	       : json_is_array(v)   ? "an array"
	       : json_is_object(v)  ? "an object"
				    : "not a number";
}

/* The first value under v (an object of numbers, nested) that is not a number: its path
 * (appended to path) and v, or NULL. */
static json_t *non_number(json_t *v, char *path, size_t len)
{
	const char *key;
	json_t *e;
	size_t n = strlen(path);

	if (json_is_number(v))
		return NULL;
	if (!json_is_object(v))
		return v;
	json_object_foreach(v, key, e)
	{
		json_t *bad;

		snprintf(path + n, len - n, ".%s", key);
		if ((bad = non_number(e, path, len)))
			return bad;
	}
	path[n] = '\0';
	return NULL;
}

static int refuse_non_number(const char *source, const char *path, json_t *bad, char *err,
			     size_t errlen)
{
	snprintf(err, errlen, "%.600s: %s is %s, not a number (thpemu writes a number there)",
		 source, path, json_kind(bad));
	return -EINVAL;
}

static int check_numbers(json_t *root, const char *source, char *err, size_t errlen)
{
	char path[256];
	json_t *v, *bad, *procs = json_object_get(root, "processes");

	for (size_t i = 0; i < sizeof(numeric_sections) / sizeof(numeric_sections[0]); i++) {
		snprintf(path, sizeof(path), "%s", numeric_sections[i]);
		v = json_object_get(root, path);
		if (v && (bad = non_number(v, path, sizeof(path))))
			return refuse_non_number(source, path, bad, err, errlen);
	}
	for (size_t i = 0; i < sizeof(numeric_values) / sizeof(numeric_values[0]); i++)
		if ((v = at(root, numeric_values[i])) && !json_is_number(v))
			return refuse_non_number(source, numeric_values[i], v, err, errlen);
	for (size_t k = 0; json_is_array(procs) && k < json_array_size(procs); k++)
		for (size_t i = 0; i < sizeof(numeric_proc_sections) / sizeof(char *); i++) {
			snprintf(path, sizeof(path), "processes[%zu].%s", k,
				 numeric_proc_sections[i]);
			v = json_object_get(json_array_get(procs, k), numeric_proc_sections[i]);
			if (v && (bad = non_number(v, path, sizeof(path))))
				return refuse_non_number(source, path, bad, err, errlen);
		}
	return 0;
}

int rd_run_from_json(struct rd_run *r, json_t *root, const char *source, char *err, size_t errlen)
{
	const char *kind = rd_kind(root);
	const char *policy =
	    kind && !strcmp(kind, "sim") ? rd_str(root, "policy") : rd_str(root, "config.policy");

	const char *mlabel = rd_str(root, "matrix.policy.label"); /* a thpemu matrix cell's */

	if (check_numbers(root, source, err, errlen) < 0)
		return -EINVAL;
	r->root = json_incref(root);
	snprintf(r->source, sizeof(r->source), "%s", source);
	if (!r->label[0])
		snprintf(r->label, sizeof(r->label), "%s", mlabel ? mlabel : policy ? policy : "?");
	for (int c = 0; c < RD_NCLASS; c++) {
		char path[32], why[160];
		int rc;

		snprintf(path, sizeof(path), "latency_hist.%s", rd_class_names[c]);
		rc = load_hist(&r->hist[c], at(root, path), why, sizeof(why));
		if (rc == -EINVAL)
			snprintf(err, errlen, "%.600s: %s: %s", source, path, why);
		if (rc)
			return rc;
	}
	if (!r->wall_s)
		r->wall_s = rd_num(root, "program.wall_s");
	return 0;
}

void rd_run_free(struct rd_run *r)
{
	json_decref(r->root);
	for (int c = 0; c < RD_NCLASS; c++)
		free(r->hist[c].b);
	memset(r, 0, sizeof(*r));
}

static int push_run(struct rd_run **runs, size_t *n, struct rd_run **out)
{
	struct rd_run *p = realloc(*runs, (*n + 1) * sizeof(*p));

	if (!p)
		return -ENOMEM;
	*runs = p;
	*out = memset(&p[(*n)++], 0, sizeof(*p));
	return 0;
}

static int load_ab(json_t *root, const char *path, struct rd_run **runs, size_t *n, char *err,
		   size_t errlen)
{
	json_t *arr = json_object_get(root, "runs");
	const char *labels[2] = {rd_str(root, "config.a.label"), rd_str(root, "config.b.label")};

	for (size_t i = 0; i < json_array_size(arr); i++) {
		json_t *e = json_array_get(arr, i), *rep = json_object_get(e, "report");
		const char *side = json_string_value(json_object_get(e, "side"));
		struct rd_run *r;
		char src[sizeof(r->source)];

		if (push_run(runs, n, &r))
			return -ENOMEM;
		r->side = side && !strcmp(side, "B");
		r->index = small_int(json_object_get(e, "index"), 0);
		r->ok = json_is_true(json_object_get(e, "ok"));
		r->warmup = json_is_true(json_object_get(e, "warmup"));
		r->exit_status = small_int(json_object_get(e, "exit_status"), -1);
		r->wall_s = json_number_value(json_object_get(e, "wall_s"));
		snprintf(r->note, sizeof(r->note), "%s",
			 json_string_value(json_object_get(e, "note")) ?: "");
		snprintf(r->label, sizeof(r->label), "%s",
			 labels[r->side] ?: (r->side ? "B" : "A"));
		snprintf(src, sizeof(src), "%.500s: %s run %d", path, r->side ? "B" : "A",
			 r->index);
		if (!json_is_object(rep))
			memcpy(r->source, src, sizeof(r->source) - 1);
		else if (rd_run_from_json(r, rep, src, err, errlen) < 0)
			return -EINVAL;
	}
	return 0;
}

int rd_load(const char *path, struct rd_run **runs, size_t *n, char *err, size_t errlen)
{
	json_error_t je;
	json_t *root = json_load_file(path, 0, &je);
	const char *kind;
	struct rd_run *r;
	int rc = 0;

	if (!root) {
		snprintf(err, errlen, "%s: not a readable JSON report (%s, line %d)", path, je.text,
			 je.line);
		return -EINVAL;
	}
	kind = rd_kind(root);
	if (!kind || (strcmp(kind, "run") && strcmp(kind, "sim") && strcmp(kind, "ab"))) {
		snprintf(err, errlen, "%s: not a thpemu run, sim or ab report", path);
		rc = -EINVAL;
	} else if (!strcmp(kind, "ab")) {
		rc = load_ab(root, path, runs, n, err, errlen);
	} else if ((rc = push_run(runs, n, &r)) == 0) {
		r->side = -1;
		r->ok = true;
		r->exit_status = small_int(at(root, "program.exit_status"), -1);
		rc = rd_run_from_json(r, root, path, err, errlen);
	}
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	json_decref(root);
	return rc;
}

size_t rd_labels(const struct rd_run *runs, size_t n, const char **out, size_t max)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		size_t j;

		for (j = 0; j < k && strcmp(out[j], runs[i].label); j++)
			;
		if (j == k && k < max)
			out[k++] = runs[i].label;
	}
	return k;
}

/* ---- metrics ------------------------------------------------------------------------------------
 */

static double ratio_pct(json_t *root, const char *num, const char *den)
{
	double a = rd_num(root, num), b = rd_num(root, den);

	if (isnan(a) || isnan(b))
		return NAN;
	return b > 0 ? a * 100.0 / b : NAN;
}

double rd_metric(const struct rd_run *r, const struct rd_metric *m)
{
	if (!r->root)
		return NAN;
	if (m->derived == 1)
		return ratio_pct(r->root, "vmstat.compact_success", "vmstat.compact_stall");
	if (m->derived == 2)
		return ratio_pct(r->root, "vmstat.compact_migrate_scanned",
				 "vmstat.compact_free_scanned");
	if (!strcmp(m->name, "wall") && r->wall_s > 0)
		return r->wall_s;
	/* eras without mTHP write faults.mthp = 0 but no "mthp": they have no mTHP to compare */
	if (!strncmp(m->name, "mthp-", 5) && !rd_has_mthp(r))
		return NAN;
	if (strstr(m->path, "latency_us.")) {
		/* a class (or an mTHP size) without faults has no latency: its "count" beside */
		char cnt[64];
		const char *dot = strrchr(m->path, '.');

		snprintf(cnt, sizeof(cnt), "%.*s.count", (int)(dot - m->path), m->path);
		if (!(rd_num(r->root, cnt) > 0))
			return NAN;
	}
	return rd_num(r->root, m->path);
}

const char *const rd_mthp_sizes[RD_MTHP_NSIZES] = {"16kB",  "32kB",  "64kB",   "128kB",
						   "256kB", "512kB", "1024kB", "2048kB"};

bool rd_has_mthp(const struct rd_run *r)
{
	return r->root && json_is_object(at(r->root, "mthp"));
}

bool rd_mthp_size_active(const struct rd_run *r, const char *size)
{
	static const char *const keys[] = {"faults", "anon_fault_alloc", "anon_fault_fallback",
					   "anon_fault_fallback_charge"};
	char path[96];

	if (!rd_has_mthp(r))
		return false;
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		snprintf(path, sizeof(path), "mthp.sizes.%s.%s", size, keys[k]);
		if (rd_num(r->root, path) > 0)
			return true;
	}
	return false;
}

const char *const rd_order_names[RD_ORDERS] = {"4kB",	"16kB",	 "32kB",   "64kB",  "128kB",
					       "256kB", "512kB", "1024kB", "2048kB"};

int rd_order_of(int row)
{
	return row ? row + 1 : 0;
}

/* A latency of a report's object at prefix ("latency_us.base"), NaN when it counts no fault. */
static double lat_at(json_t *root, const char *prefix, const char *q)
{
	char path[128];

	snprintf(path, sizeof(path), "%.96s.count", prefix);
	if (!(rd_num(root, path) > 0))
		return NAN;
	snprintf(path, sizeof(path), "%.96s.%.16s", prefix, q);
	return rd_num(root, path);
}

bool rd_order_mix(const struct rd_run *r, struct rd_order_mix *m)
{
	double v;

	if (!rd_has_mthp(r))
		return false;
	memset(m, 0, sizeof(*m));
	v = rd_num(r->root, "faults.base");
	m->faults[0] = m->pages[0] = v > 0 ? v : 0;
	m->p50[0] = lat_at(r->root, "latency_us.base", "p50");
	m->p99[0] = lat_at(r->root, "latency_us.base", "p99");
	m->shown[0] = true;
	for (int i = 1; i < RD_ORDERS; i++) {
		const char *size = rd_mthp_sizes[i - 1];
		bool pmd = i == RD_ORDERS - 1;
		char path[96];

		snprintf(path, sizeof(path), "mthp.sizes.%s.faults", size);
		v = rd_num(r->root, path);
		if (pmd && !(v > 0)) /* the PMD size: the report's huge faults */
			v = rd_num(r->root, "faults.huge");
		m->faults[i] = v > 0 ? v : 0;
		m->pages[i] = m->faults[i] * (double)(1u << rd_order_of(i));
		snprintf(path, sizeof(path), "mthp.sizes.%s.latency_us", size);
		m->p50[i] = lat_at(r->root, path, "p50");
		m->p99[i] = lat_at(r->root, path, "p99");
		if (pmd && isnan(m->p50[i])) {
			m->p50[i] = lat_at(r->root, "latency_us.huge", "p50");
			m->p99[i] = lat_at(r->root, "latency_us.huge", "p99");
		}
		m->shown[i] = pmd || rd_mthp_size_active(r, size);
	}
	for (int i = 0; i < RD_ORDERS; i++)
		m->total_pages += m->pages[i];
	return true;
}

const char *rd_metric_mthp_size(const struct rd_metric *m, char *buf, size_t len)
{
	const char *p = m->path && !strncmp(m->path, "mthp.sizes.", 11) ? m->path + 11 : NULL;
	const char *dot = p ? strchr(p, '.') : NULL;

	if (!dot || (size_t)(dot - p) >= len)
		return NULL;
	snprintf(buf, len, "%.*s", (int)(dot - p), p);
	return buf;
}

static double mean_of(const struct rd_run *runs, size_t n, const char *label,
		      const struct rd_metric *m, const char *path)
{
	double sum = 0, v;
	size_t cnt = 0;

	for (size_t i = 0; i < n; i++) {
		if (!rd_counted(&runs[i]) || strcmp(runs[i].label, label))
			continue;
		v = m ? rd_metric(&runs[i], m) : rd_num(runs[i].root, path);
		if (!isnan(v)) {
			sum += v;
			cnt++;
		}
	}
	return cnt ? sum / (double)cnt : NAN;
}

double rd_mean_metric(const struct rd_run *runs, size_t n, const char *label,
		      const struct rd_metric *m)
{
	return mean_of(runs, n, label, m, NULL);
}

double rd_mean_num(const struct rd_run *runs, size_t n, const char *label, const char *path)
{
	return mean_of(runs, n, label, NULL, path);
}

/* Relative change of B against A, positive when B is better (mmtests' sign convention, without
 * its special cases for zeros: a drop to 0 is -100 %, a change from 0 has no percentage). */
static double change_pct(double b, double a, bool lower_is_better)
{
	if (a == b)
		return 0;
	if (a == 0)
		return NAN;
	return (lower_is_better ? a - b : b - a) * 100.0 / fabs(a);
}

/* ---- comparison ---------------------------------------------------------------------------------
 */

static bool counts(const struct rd_run *r, const char *la, const char *lb, int *side)
{
	if (!rd_counted(r))
		return false;
	if (!strcmp(r->label, la))
		*side = 0;
	else if (!strcmp(r->label, lb))
		*side = 1;
	else
		return false;
	return true;
}

static int compare_metric(const struct rd_run *runs, size_t n, const char *la, const char *lb,
			  struct cmp_result *c, struct cmp_metric *m)
{
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wanalyzer-malloc-leak"
#endif
	/* false positive (gcc 12 -fanalyzer): c->m[] keeps both, cmp_free frees them */
	m->a = calloc(n + 1, sizeof(double));
	m->b = calloc(n + 1, sizeof(double));
	if (!m->a || !m->b)
		return -ENOMEM;
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
	for (size_t i = 0; i < n; i++) {
		double v;
		int side;

		if (!counts(&runs[i], la, lb, &side) || isnan(v = rd_metric(&runs[i], m->def)))
			continue;
		if (side == 0)
			m->a[m->na++] = v;
		else
			m->b[m->nb++] = v;
	}
	m->have_a = m->na && !obs_stats_multiops(m->a, m->na, m->def->lower_is_better, &m->ma);
	m->have_b = m->nb && !obs_stats_multiops(m->b, m->nb, m->def->lower_is_better, &m->mb);
	if (!m->have_a || !m->have_b)
		return 0;
	m->diff = m->mb.amean - m->ma.amean;
	m->change_pct = change_pct(m->mb.amean, m->ma.amean, m->def->lower_is_better);
	m->cidiff = obs_stats_cidiff(m->mb.amean, m->mb.meanci, m->ma.amean, m->ma.meanci);
	/* with one value on a side the bootstrap interval has zero width: no interval at all,
	 * rather than one that looks real */
	if (c->why[0] || m->na < OBS_STATS_MIN_RUNS || m->nb < OBS_STATS_MIN_RUNS)
		return 0;
	m->have_ci = obs_stats_bootstrap_diff(m->a, m->na, m->b, m->nb, c->resamples, 0.95, c->seed,
					      &m->ci) == 0;
	/* a difference is real when its interval excludes 0 (and it is not 0 itself) */
	m->significant = m->have_ci && m->diff != 0 && (m->ci.lo > 0 || m->ci.hi < 0);
	return 0;
}

/* Merge the histograms of one side's runs onto a common bucket grid (every report uses the
 * same buckets: their lo values identify them). */
struct pooled {
	uint64_t lo, hi, a, b;
};

static int cmp_pooled(const void *x, const void *y)
{
	const struct pooled *p = x, *q = y;

	return p->lo < q->lo ? -1 : p->lo > q->lo;
}

static double pooled_q(const struct pooled *p, size_t n, uint64_t total, bool side_b, double q)
{
	uint64_t rank = (uint64_t)ceil(q * (double)total), seen = 0;

	if (!total)
		return NAN;
	if (rank == 0)
		rank = 1;
	for (size_t i = 0; i < n; i++) {
		seen += side_b ? p[i].b : p[i].a;
		if (seen >= rank)
			return (double)p[i].hi / 1000.0;
	}
	return (double)p[n - 1].hi / 1000.0;
}

static int compare_dist(const struct rd_run *runs, size_t n, const char *la, const char *lb,
			int cls, const struct cmp_result *c, struct cmp_dist *d)
{
	size_t cap = 0, np = 0;
	struct pooled *p = NULL;
	uint64_t *ca, *cb;

	for (size_t i = 0; i < n; i++)
		cap += runs[i].hist[cls].n;
	p = calloc(cap + 1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		int side;

		if (!counts(&runs[i], la, lb, &side))
			continue;
		for (size_t k = 0; k < runs[i].hist[cls].n; k++) {
			const struct rd_bucket *b = &runs[i].hist[cls].b[k];

			p[np++] = (struct pooled){b->lo, b->hi, side ? 0 : b->n, side ? b->n : 0};
		}
	}
	qsort(p, np, sizeof(*p), cmp_pooled);
	{ /* fold equal buckets */
		size_t w = 0;

		for (size_t i = 0; i < np; i++) {
			if (w && p[w - 1].lo == p[i].lo) {
				p[w - 1].a += p[i].a;
				p[w - 1].b += p[i].b;
			} else {
				p[w++] = p[i];
			}
		}
		np = w;
	}
	for (size_t i = 0; i < np; i++) {
		d->na += p[i].a;
		d->nb += p[i].b;
	}
	d->a_p50 = pooled_q(p, np, d->na, false, 0.5);
	d->b_p50 = pooled_q(p, np, d->nb, true, 0.5);
	d->a_p99 = pooled_q(p, np, d->na, false, 0.99);
	d->b_p99 = pooled_q(p, np, d->nb, true, 0.99);
	ca = malloc((np + 1) * sizeof(*ca));
	cb = malloc((np + 1) * sizeof(*cb));
	if (ca && cb) {
		for (size_t i = 0; i < np; i++) {
			ca[i] = p[i].a;
			cb[i] = p[i].b;
		}
		d->tested = obs_stats_mann_whitney_grouped(ca, cb, np, &d->mw) == 0;
		if (d->tested) {
			d->prob_a_greater = d->mw.u_a / ((double)d->na * (double)d->nb);
			/* faults of one run are not independent samples of the setting:
			 * one run per side says nothing of run-to-run spread */
			d->significant = !c->why[0] && d->mw.p < 0.05;
		}
	}
	free(ca);
	free(cb);
	free(p);
	return 0;
}

static int compare_vmstat(const struct rd_run *runs, size_t n, const char *la, const char *lb,
			  struct cmp_result *c)
{
	json_t *first = NULL;
	const char *key;
	json_t *v;

	for (size_t i = 0; i < n && !first; i++) {
		int side;

		if (counts(&runs[i], la, lb, &side))
			first = json_object_get(runs[i].root, "vmstat");
	}
	if (!json_is_object(first))
		return 0;
	c->vm = calloc(json_object_size(first) + 1, sizeof(*c->vm));
	if (!c->vm)
		return -ENOMEM;
	json_object_foreach(first, key, v)
	{
		struct cmp_vmstat *e = &c->vm[c->nvm++];
		char path[96];

		snprintf(path, sizeof(path), "vmstat.%s", key);
		e->key = key;
		e->a = rd_mean_num(runs, n, la, path);
		e->b = rd_mean_num(runs, n, lb, path);
	}
	return 0;
}

/* ---- programs: the runs' processes per comm ------------------------------------------------- */

struct comm_obs {
	size_t comm; /* index in c->comm */
	int side;
	double p50, faults;
};

static int by_comm_side_p50(const void *x, const void *y)
{
	const struct comm_obs *a = x, *b = y;

	if (a->comm != b->comm)
		return a->comm < b->comm ? -1 : 1;
	if (a->side != b->side)
		return a->side - b->side;
	return (a->p50 > b->p50) - (a->p50 < b->p50);
}

static double comm_busy(const struct cmp_comm *c)
{
	return c->faults[0] > c->faults[1] ? c->faults[0] : c->faults[1];
}

static int by_busy_comm(const void *x, const void *y)
{
	const struct cmp_comm *a = x, *b = y;

	if (comm_busy(a) != comm_busy(b))
		return comm_busy(a) < comm_busy(b) ? 1 : -1;
	return strcmp(a->comm, b->comm);
}

static size_t comm_index(struct cmp_result *c, const char *name)
{
	for (int pass = 0; pass < 2; pass++) {
		for (size_t k = 0; k < c->ncomm; k++)
			if (!strcmp(c->comm[k].comm, name))
				return k;
		if (c->ncomm < CMP_COMMS_MAX || pass)
			break;
		name = "(others)";
	}
	snprintf(c->comm[c->ncomm].comm, sizeof(c->comm->comm), "%s", name);
	return c->ncomm++;
}

/* A number of a process entry that counts: finite and not negative, else 0. */
static double entry_num(json_t *e, const char *path)
{
	double v = rd_num(e, path);

	return isfinite(v) && v > 0 ? v : 0;
}

/* The median of a sorted run of observations, weighted by faults; NaN without faults. */
static double weighted_median(const struct comm_obs *o, size_t n)
{
	double total = 0, seen = 0;

	for (size_t i = 0; i < n; i++)
		total += o[i].faults;
	for (size_t i = 0; total > 0 && i < n; i++) {
		seen += o[i].faults;
		if (seen >= total / 2)
			return o[i].p50;
	}
	return NAN;
}

static int compare_comms(const struct rd_run *runs, size_t n, const char *la, const char *lb,
			 struct cmp_result *c)
{
	size_t nobs = 0, cap = 0, runs_side[2] = {c->runs_a, c->runs_b};
	struct comm_obs *o;
	bool several = false;

	for (size_t i = 0; i < n; i++) {
		int side;
		size_t np = json_array_size(json_object_get(runs[i].root, "processes"));

		if (counts(&runs[i], la, lb, &side)) {
			cap += np;
			several |= np > 1;
		}
	}
	if (!several)
		return 0;
	c->comm = calloc(CMP_COMMS_MAX + 1, sizeof(*c->comm));
	o = calloc(cap, sizeof(*o));
	if (!c->comm || !o) {
		free(o);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *arr = json_object_get(runs[i].root, "processes");
		int side;

		if (!counts(&runs[i], la, lb, &side))
			continue;
		for (size_t k = 0; k < json_array_size(arr); k++) {
			json_t *e = json_array_get(arr, k);
			const char *name = json_string_value(json_object_get(e, "comm"));
			struct comm_obs *ob = &o[nobs++];
			struct cmp_comm *cc;

			ob->comm = comm_index(c, name ? name : "?");
			ob->side = side;
			ob->faults = entry_num(e, "faults.total");
			ob->p50 = entry_num(e, "latency_us.p50");
			cc = &c->comm[ob->comm];
			cc->procs[side] += 1;
			cc->faults[side] += ob->faults;
		}
	}
	qsort(o, nobs, sizeof(*o), by_comm_side_p50);
	for (size_t i = 0; i < c->ncomm; i++)
		c->comm[i].p50_us[0] = c->comm[i].p50_us[1] = NAN;
	for (size_t i = 0, j; i < nobs; i = j) {
		for (j = i; j < nobs && o[j].comm == o[i].comm && o[j].side == o[i].side; j++)
			;
		c->comm[o[i].comm].p50_us[o[i].side] = weighted_median(&o[i], j - i);
	}
	for (size_t i = 0; i < c->ncomm; i++)
		for (int sd = 0; sd < 2; sd++) {
			c->comm[i].procs[sd] /= runs_side[sd] ? (double)runs_side[sd] : 1;
			c->comm[i].faults[sd] /= runs_side[sd] ? (double)runs_side[sd] : 1;
		}
	qsort(c->comm, c->ncomm, sizeof(*c->comm), by_busy_comm);
	free(o);
	return 0;
}

/* A per-size mTHP metric is compared when the size had activity (a fault, an allocation or a
 * fallback) in a counted run of either side; every other metric always is. */
static bool mthp_compared(const struct rd_run *runs, size_t n, const char *la, const char *lb,
			  const struct rd_metric *m)
{
	char size[16];

	if (!rd_metric_mthp_size(m, size, sizeof(size)))
		return true;
	for (size_t i = 0; i < n; i++) {
		int side;

		if ((la ? counts(&runs[i], la, lb, &side) : rd_counted(&runs[i])) &&
		    rd_mthp_size_active(&runs[i], size))
			return true;
	}
	return false;
}

bool rd_metric_shown(const struct rd_run *runs, size_t n, const struct rd_metric *m)
{
	if (strncmp(m->name, "mthp-", 5))
		return true;
	if (!mthp_compared(runs, n, NULL, NULL, m))
		return false;
	for (size_t i = 0; i < n; i++)
		if (rd_counted(&runs[i]) && !isnan(rd_metric(&runs[i], m)))
			return true;
	return false;
}

int cmp_compute(const struct rd_run *runs, size_t n, const char *la, const char *lb,
		unsigned resamples, uint64_t seed, struct cmp_result *c)
{
	int rc = 0;

	memset(c, 0, sizeof(*c));
	snprintf(c->label_a, sizeof(c->label_a), "%s", la);
	snprintf(c->label_b, sizeof(c->label_b), "%s", lb);
	c->resamples = resamples;
	c->seed = seed;
	for (size_t i = 0; i < n; i++) {
		bool a = !strcmp(runs[i].label, la), b = !strcmp(runs[i].label, lb);

		if (runs[i].warmup || (!a && !b))
			continue;
		if (runs[i].ok && runs[i].root) {
			c->runs_a += a;
			c->runs_b += b;
		} else {
			c->failed_a += a;
			c->failed_b += b;
		}
	}
	obs_stats_significance_why(c->runs_a, c->runs_b, c->why, sizeof(c->why));
	c->m = calloc(rd_nmetrics, sizeof(*c->m));
	if (!c->m)
		return -ENOMEM;
	for (size_t i = 0; i < rd_nmetrics && rc == 0; i++) {
		struct cmp_metric *m = &c->m[c->nm];

		if (!mthp_compared(runs, n, la, lb, &rd_metrics[i]))
			continue;
		m->def = &rd_metrics[i];
		rc = compare_metric(runs, n, la, lb, c, m);
		c->nm++;
		/* mTHP metrics appear only where a report has them (reports of older eras and
		 * versions have no "mthp" and say nothing about it) */
		if (rc == 0 && !strncmp(m->def->name, "mthp-", 5) && !m->na && !m->nb) {
			free(m->a);
			free(m->b);
			memset(m, 0, sizeof(*m));
			c->nm--;
		}
	}
	for (int k = 0; k < RD_NCLASS && rc == 0; k++)
		rc = compare_dist(runs, n, la, lb, k, c, &c->dist[k]);
	if (rc == 0)
		rc = compare_vmstat(runs, n, la, lb, c);
	if (rc == 0)
		rc = compare_comms(runs, n, la, lb, c);
	return rc;
}

void cmp_free(struct cmp_result *c)
{
	for (size_t i = 0; i < c->nm; i++) {
		free(c->m[i].a);
		free(c->m[i].b);
	}
	free(c->m);
	free(c->vm);
	free(c->comm);
	memset(c, 0, sizeof(*c));
}

/* ---- text
 * ---------------------------------------------------------------------------------------- */

static const char *fmt_num(double v, char *buf, size_t len)
{
	if (isnan(v))
		snprintf(buf, len, "-");
	else if (fabs(v) >= 1e7)
		snprintf(buf, len, "%.4g", v);
	else
		snprintf(buf, len, "%.2f", v);
	return buf;
}

/* The programs of the runs' processes, side by side. */
static void cmp_comms_text(FILE *f, const struct cmp_result *c)
{
	size_t shown = c->ncomm < RD_PROCS_SHOWN ? c->ncomm : RD_PROCS_SHOWN;
	char x[6][32], e[64];

	if (!c->ncomm)
		return;
	fprintf(f, "\nPrograms (processes by comm), mean per run:\n");
	fprintf(f, "%-16s %9s %10s %10s %9s %10s %10s\n", "comm", "A procs", "A faults", "A p50 us",
		"B procs", "B faults", "B p50 us");
	for (size_t i = 0; i < shown; i++) {
		const struct cmp_comm *m = &c->comm[i];

		fprintf(f, "%-16s %9s %10s %10s %9s %10s %10s\n",
			text_escape(m->comm, e, sizeof(e)), fmt_num(m->procs[0], x[0], 32),
			fmt_num(m->faults[0], x[1], 32), fmt_num(m->p50_us[0], x[2], 32),
			fmt_num(m->procs[1], x[3], 32), fmt_num(m->faults[1], x[4], 32),
			fmt_num(m->p50_us[1], x[5], 32));
	}
	if (c->ncomm > shown)
		fprintf(f, "... %zu more programs\n", c->ncomm - shown);
	fprintf(f, "p50: the median of the processes' p50 fault latencies, weighted by their "
		   "faults.\n");
}

const char *rd_metric_unit_text(const struct rd_metric *m)
{
	size_t n = strlen(m->name);

	if (!strcmp(m->unit, "us") &&
	    (!strncmp(m->name, "fault-", 6) || !strncmp(m->name, "kernel-", 7) ||
	     (!strncmp(m->name, "mthp-", 5) && n > 4 && !strcmp(m->name + n - 4, "-p50"))))
		return "us per fault";
	if (!strcmp(m->name, "huge-pct"))
		return "% of faults";
	if (!strncmp(m->name, "coverage-", 9) || !strcmp(m->name, "mthp-coverage"))
		return "% of anon memory";
	return m->unit;
}

void cmp_text(FILE *f, const struct cmp_result *c)
{
	char a[32], b[32], lo[32], hi[32];
	int wa = (int)strlen(c->label_a), wb = (int)strlen(c->label_b);

	wa = wa < 22 ? 22 : wa;
	wb = wb < 22 ? 22 : wb;
	fprintf(f, "%-46s %*s  %*s  %s\n", "", wa, c->label_a, wb + 1, c->label_b,
		"B-A, 95% bootstrap CI");
	fprintf(f, "%-46s %*s  %*s\n", "", wa, "(A, baseline)", wb + 1, "(B)");
	for (size_t i = 0; i < c->nm; i++) {
		const struct cmp_metric *m = &c->m[i];
		const char *unit = rd_metric_unit_text(m->def);
		char name[64];

		if (!m->have_a && !m->have_b)
			continue;
		snprintf(name, sizeof(name), "%s%s%s%s", m->def->name, unit[0] ? " (" : "", unit,
			 unit[0] ? ")" : "");
		fprintf(f, "Amean     %-36s %*s (%7.2f%%) %*s ", name, wa - 11,
			m->have_a ? fmt_num(m->ma.amean, a, sizeof(a)) : "-", 0.0, wb - 11,
			m->have_b ? fmt_num(m->mb.amean, b, sizeof(b)) : "-");
		if (m->have_a && m->have_b && !isnan(m->change_pct))
			fprintf(f, "%s%7.2f%%%s", m->significant ? "*" : " ", m->change_pct,
				m->significant ? "*" : " ");
		else
			fprintf(f, "%s%8s%s", m->significant ? "*" : " ", "-",
				m->significant ? "*" : " ");
		if (m->have_ci)
			fprintf(f, "  [%s, %s]", fmt_num(m->ci.lo, lo, sizeof(lo)),
				fmt_num(m->ci.hi, hi, sizeof(hi)));
		else if (m->have_a && m->have_b)
			fprintf(f, "  n/a");
		fputc('\n', f);
	}
	if (c->why[0])
		fprintf(f, "\nNo difference is marked significant and no interval is shown: %s.\n",
			c->why);
	fprintf(f, "\nEach value is the mean over runs of one number per run: a fault-*/kernel-* "
		   "percentile is of that run's per-fault latencies; huge-pct counts faults, not "
		   "2 MiB extents.\n");
	fprintf(f,
		"\n'*': the 95%% bootstrap interval of the difference of means (%u resamples, "
		"seed %llu) excludes 0.\nChange: (A - B) / A for lower-is-better metrics, "
		"(B - A) / A otherwise: positive is better, as in mmtests; '-' where A is 0 or a "
		"side has no value.\n",
		c->resamples, (unsigned long long)c->seed);
	fprintf(f, "\nPer-fault latency, runs pooled (Mann-Whitney U, two-sided, normal "
		   "approximation with ties):\n");
	fprintf(f, "%-6s %10s %10s %11s %11s %11s %11s %8s %10s\n", "class", "A faults", "B faults",
		"A p50 us", "B p50 us", "A p99 us", "B p99 us", "P(A>B)", "p");
	for (int k = 0; k < RD_NCLASS; k++) {
		const struct cmp_dist *d = &c->dist[k];
		char x[4][32];

		fprintf(f, "%-6s %10llu %10llu %11s %11s %11s %11s", rd_class_names[k],
			(unsigned long long)d->na, (unsigned long long)d->nb,
			fmt_num(d->a_p50, x[0], 32), fmt_num(d->b_p50, x[1], 32),
			fmt_num(d->a_p99, x[2], 32), fmt_num(d->b_p99, x[3], 32));
		if (d->tested)
			fprintf(f, " %8.3f %10.3g%s\n", d->prob_a_greater, d->mw.p,
				d->significant ? " *" : "");
		else
			fprintf(f, " %8s %10s\n", "-", "-");
	}
	if (c->why[0])
		fprintf(f, "No latency difference is marked significant: %s.\n", c->why);
	fprintf(f, "P(A>B): probability that a fault of A took longer than one of B (ties "
		   "count half); '*': p < 0.05.\n");
	cmp_comms_text(f, c);
	if (c->nvm) {
		fprintf(f, "\n%-32s %*s  %*s %12s\n", "vmstat, mean per run", wa, c->label_a,
			wb + 1, c->label_b, "B - A");
		for (size_t i = 0; i < c->nvm; i++)
			fprintf(f, "%-32s %*s  %*s %12s\n", c->vm[i].key, wa,
				fmt_num(c->vm[i].a, a, sizeof(a)), wb + 1,
				fmt_num(c->vm[i].b, b, sizeof(b)),
				fmt_num(c->vm[i].b - c->vm[i].a, lo, sizeof(lo)));
	}
}

/* ---- JSON
 * ----------------------------------------------------------------------------------------- */

static void json_side(struct json_w *w, const char *key, const double *v, size_t n, bool have,
		      const struct obs_multiops *m)
{
	jw_obj_begin(w, key);
	jw_arr_begin(w, "values");
	for (size_t i = 0; i < n; i++)
		jw_dbl(w, NULL, v[i], 3);
	jw_arr_end(w);
	jw_u64(w, "n", n);
	if (have) {
		jw_dbl(w, "min", m->min, 3);
		jw_dbl(w, "mean", m->amean, 3);
		jw_dbl(w, "stddev", m->stddev, 3);
		jw_dbl(w, "coeffvar", m->coeffvar, 3);
		jw_dbl(w, "max", m->max, 3);
		jw_dbl(w, "bamean95", m->bamean95, 3);
		jw_dbl(w, "meanci", m->meanci, 3);
	}
	jw_obj_end(w);
}

void cmp_json(struct json_w *w, const struct cmp_result *c)
{
	jw_obj_begin(w, "comparison");
	jw_str(w, "a", c->label_a);
	jw_str(w, "b", c->label_b);
	jw_u64(w, "runs_a", c->runs_a);
	jw_u64(w, "runs_b", c->runs_b);
	jw_u64(w, "failed_a", c->failed_a);
	jw_u64(w, "failed_b", c->failed_b);
	if (c->why[0]) {
		jw_null(w, "significance");
		jw_str(w, "why", c->why);
	}
	jw_u64(w, "resamples", c->resamples);
	jw_u64(w, "seed", c->seed);
	jw_arr_begin(w, "metrics");
	for (size_t i = 0; i < c->nm; i++) {
		const struct cmp_metric *m = &c->m[i];

		jw_obj_begin(w, NULL);
		jw_str(w, "name", m->def->name);
		jw_str(w, "unit", m->def->unit);
		jw_bool(w, "lower_is_better", m->def->lower_is_better);
		json_side(w, "a", m->a, m->na, m->have_a, &m->ma);
		json_side(w, "b", m->b, m->nb, m->have_b, &m->mb);
		if (m->have_a && m->have_b) {
			jw_dbl(w, "diff", m->diff, 3);
			jw_dbl(w, "change_pct", m->change_pct, 2);
			jw_dbl(w, "cidiff", m->cidiff, 3);
			jw_bool(w, "cidiff_significant",
				!c->why[0] && obs_stats_significant(m->cidiff));
		}
		if (m->have_ci) {
			jw_arr_begin(w, "ci95");
			jw_dbl(w, NULL, m->ci.lo, 3);
			jw_dbl(w, NULL, m->ci.hi, 3);
			jw_arr_end(w);
		}
		jw_bool(w, "significant", m->significant);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_begin(w, "distributions");
	for (int k = 0; k < RD_NCLASS; k++) {
		const struct cmp_dist *d = &c->dist[k];

		jw_obj_begin(w, rd_class_names[k]);
		jw_u64(w, "a_faults", d->na);
		jw_u64(w, "b_faults", d->nb);
		jw_dbl(w, "a_p50_us", d->a_p50, 3);
		jw_dbl(w, "b_p50_us", d->b_p50, 3);
		jw_dbl(w, "a_p99_us", d->a_p99, 3);
		jw_dbl(w, "b_p99_us", d->b_p99, 3);
		jw_bool(w, "tested", d->tested);
		if (d->tested) {
			jw_dbl(w, "u_a", d->mw.u_a, 1);
			jw_dbl(w, "z", d->mw.z, 4);
			jw_dbl(w, "p", d->mw.p, 6);
			jw_dbl(w, "prob_a_greater", d->prob_a_greater, 4);
			jw_bool(w, "significant", d->significant);
		}
		jw_obj_end(w);
	}
	jw_obj_end(w);
	jw_arr_begin(w, "programs");
	for (size_t i = 0; i < c->ncomm; i++) {
		const struct cmp_comm *m = &c->comm[i];

		jw_obj_begin(w, NULL);
		jw_str(w, "comm", m->comm);
		jw_dbl(w, "a_processes", m->procs[0], 2);
		jw_dbl(w, "b_processes", m->procs[1], 2);
		jw_dbl(w, "a_faults", m->faults[0], 2);
		jw_dbl(w, "b_faults", m->faults[1], 2);
		jw_dbl(w, "a_p50_us", m->p50_us[0], 3);
		jw_dbl(w, "b_p50_us", m->p50_us[1], 3);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_begin(w, "vmstat");
	for (size_t i = 0; i < c->nvm; i++) {
		jw_obj_begin(w, c->vm[i].key);
		jw_dbl(w, "a_mean", c->vm[i].a, 2);
		jw_dbl(w, "b_mean", c->vm[i].b, 2);
		jw_obj_end(w);
	}
	jw_obj_end(w);
	jw_obj_end(w);
}

void rd_metrics_usage(FILE *f)
{
	int col = 0;
	char size[16];

	fputs("Metrics compared (mmtests' names where it has one; '+': higher is better):\n", f);
	for (size_t i = 0; i < rd_nmetrics; i++) {
		const struct rd_metric *m = &rd_metrics[i];
		char item[64];
		int len;

		if (rd_metric_mthp_size(m, size, sizeof(size))) {
			if (strcmp(size, rd_mthp_sizes[0]))
				continue;
			snprintf(item, sizeof(item), "mthp-SIZE-%s%s", m->name + 6 + strlen(size),
				 m->lower_is_better ? "" : "+");
		} else {
			snprintf(item, sizeof(item), "%s%s", m->name,
				 m->lower_is_better ? "" : "+");
		}
		len = (int)strlen(item) + 1;
		if (col + len > 78) {
			fputc('\n', f);
			col = 0;
		}
		fprintf(f, "%s%s", col ? " " : "  ", item);
		col += len + (col ? 0 : 1);
	}
	fprintf(f,
		"\n  (mthp-*: reports with mTHP only; SIZE %s..%s, the sizes with activity on "
		"either side)\n",
		rd_mthp_sizes[0], rd_mthp_sizes[RD_MTHP_NSIZES - 1]);
}

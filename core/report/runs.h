/* Run reports as `thpemu ab` and `thpemu report` read them back (jansson), the metrics they
 * compare, and the A/B comparison itself.
 *
 * A "run" is one report of `thpemu run` (kind "run") or `thpemu sim` ("thpemu": "sim"); an ab
 * report (kind "ab") holds several, each with its side. Metrics are named as mmtests names
 * them where it has a name (fault-huge/base/both, huge-pct; Compaction efficiency and Compact
 * scan efficiency from the vmstat counters), with the percentile as a suffix
 * (fault-both-p99).
 */
#ifndef THPEMU_CLI_RUNS_H
#define THPEMU_CLI_RUNS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "obs/hist.h"
#include "obs/stats.h"
#include "util/json.h"

enum rd_class { RD_HUGE, RD_BASE, RD_BOTH, RD_NCLASS };
extern const char *const rd_class_names[RD_NCLASS];

/* A latency histogram as reports store it ("latency_hist"): buckets [lo, hi] ns with counts. */
struct rd_bucket {
	uint64_t lo, hi, n;
};
struct rd_hist {
	struct rd_bucket *b;
	size_t n;
	uint64_t total;
};

struct rd_run {
	json_t *root;	  /* the report (a reference owned here), NULL if the run left none */
	char label[160];  /* its series: the ab side's label, else config.policy */
	char source[600]; /* file, or "A run 2" */
	int side;	  /* ab: 0 (A) or 1 (B); -1 otherwise */
	int index;	  /* ab: run number within its side, from 1 */
	bool ok;	  /* ran and reported (ab: exit status 0 and a report) */
	bool warmup;	  /* ab: a warm-up run, not compared */
	int exit_status;  /* -1 when unknown */
	char note[256];	  /* why it failed */
	double wall_s;	  /* ab: as measured by ab */
	struct rd_hist hist[RD_NCLASS];
};

/* The most faults a run's histogram may count: 2^40 (a thousand billion first touches, days of
 * nothing but faulting); a report claiming more is refused as corrupt, not rendered. */
#define RD_FAULTS_MAX (1ULL << 40)

/* Take a report (a reference is taken) into r. 0, or -EINVAL (with a reason in err naming
 * source: a latency histogram that is not one thpemu writes) or -ENOMEM. */
int rd_run_from_json(struct rd_run *r, json_t *root, const char *source, char *err, size_t errlen);
void rd_run_free(struct rd_run *r);
/* Read a report file: a run or sim report gives one run, an ab report its runs (appended to
 * *runs, *n). Returns 0, or -errno with a one-line reason in err. */
int rd_load(const char *path, struct rd_run **runs, size_t *n, char *err, size_t errlen);
/* Is root a report of this kind? "run", "sim", "ab" */
const char *rd_kind(json_t *root);

/* A run the statistics use: it ran, left a report, and is not a warm-up. */
bool rd_counted(const struct rd_run *r);

/* A number at a dotted path ("latency_us.both.p99"), NaN if absent. */
double rd_num(json_t *root, const char *path);
/* qsort order of a report's `processes` entries (json_t *): busiest first, then the lower pid. */
int rd_by_faults(const void *x, const void *y);
const char *rd_str(json_t *root, const char *path);

/* ---- metrics ------------------------------------------------------------------------------- */

struct rd_metric {
	const char *name; /* "fault-both-p99" */
	const char *unit; /* "us", "%", "ms", "s", "" */
	const char *path; /* the report's number, or NULL for a derived one */
	bool lower_is_better;
	int derived; /* 1 compaction efficiency, 2 scan efficiency */
	const char *help;
};
extern const struct rd_metric rd_metrics[];
extern const size_t rd_nmetrics;
double rd_metric(const struct rd_run *r, const struct rd_metric *m); /* NaN if absent */
/* mTHP: the folio sizes of a report's "mthp.sizes" (orders 2..9; 2048kB is the PMD
 * size), in order. A report has "mthp" only for eras with multi-size THP. */
#define RD_MTHP_NSIZES 8
extern const char *const rd_mthp_sizes[RD_MTHP_NSIZES];
bool rd_has_mthp(const struct rd_run *r);
/* Did the size see a fault, an allocation or a fallback in this run? */
bool rd_mthp_size_active(const struct rd_run *r, const char *size);
/* The size of a per-size mTHP metric ("mthp-64kB-alloc": "64kB") into buf, else NULL. */
const char *rd_metric_mthp_size(const struct rd_metric *m, char *buf, size_t len);
/* A run's order mix: row 0 base pages (4kB), rows 1..8 the sizes of rd_mthp_sizes (the last
 * the PMD size, whose faults are the report's huge faults when the size has none of its own). */
#define RD_ORDERS (RD_MTHP_NSIZES + 1)
extern const char *const rd_order_names[RD_ORDERS]; /* "4kB", "16kB", ..., "2048kB" */
int rd_order_of(int row);			    /* 0, 2, 3, ..., 9 */
struct rd_order_mix {
	double faults[RD_ORDERS], pages[RD_ORDERS]; /* pages: 4 KiB pages mapped by those faults */
	double p50[RD_ORDERS], p99[RD_ORDERS];	    /* per-fault latency, us (NaN: no faults) */
	bool shown[RD_ORDERS]; /* base, 2048kB, and the mTHP sizes with activity */
	double total_pages;
};
/* Fill m from a report with mTHP; false (m untouched) for one without. */
bool rd_order_mix(const struct rd_run *r, struct rd_order_mix *m);
/* Is the metric worth a row for these runs? Every metric is, but an mTHP one only when a counted
 * run has a value of it (and, per size, when the size saw activity). */
bool rd_metric_shown(const struct rd_run *runs, size_t n, const struct rd_metric *m);
/* The metric's unit as text and tables print it, saying what it is per: "us per fault",
 * "% of faults", "% of anon memory"; otherwise its unit. (JSON keeps the plain unit.) */
const char *rd_metric_unit_text(const struct rd_metric *m);
/* The metric names, for --help: one line each group. */
void rd_metrics_usage(FILE *f);
/* Means over the counted runs labelled label, of a metric or of the number at a path; runs
 * without a value are left out; NaN when none has one. */
double rd_mean_metric(const struct rd_run *runs, size_t n, const char *label,
		      const struct rd_metric *m);
double rd_mean_num(const struct rd_run *runs, size_t n, const char *label, const char *path);

/* ---- comparison ------------------------------------------------------------------------------ */

struct cmp_metric {
	const struct rd_metric *def;
	double *a, *b; /* the runs' values (NaN dropped) */
	size_t na, nb;
	struct obs_multiops ma, mb;
	bool have_a, have_b;
	double diff;	   /* mean(b) - mean(a) */
	double change_pct; /* B against A, positive = better (NaN when A is 0) */
	struct obs_bootstrap ci;
	bool have_ci;
	bool significant; /* the bootstrap interval excludes 0 */
	double cidiff;	  /* mmtests' (mean difference) / (sum of meanci half-widths) */
};

struct cmp_dist {
	uint64_t na, nb;
	double a_p50, b_p50, a_p99, b_p99; /* us, from the pooled histograms */
	bool tested;
	struct obs_mannwhitney mw;
	double prob_a_greater; /* u_a / (na nb): P(a > b) + P(a = b) / 2 */
	bool significant;      /* p < 0.05 */
};

struct cmp_vmstat {
	const char *key;
	double a, b; /* means over runs */
};

/* A program (comm) of the compared runs' processes, per side: means per run of its processes and
 * their faults, and the median of its processes' p50 latencies weighted by their faults. */
struct cmp_comm {
	char comm[64];
	double procs[2], faults[2], p50_us[2]; /* [0] A, [1] B; p50 NaN: no faults on that side */
};

#define CMP_COMMS_MAX 64 /* programs compared; the others are summed under "(others)" */

struct cmp_result {
	char label_a[160], label_b[160];
	size_t runs_a, runs_b, failed_a, failed_b;
	/* why nothing is called significant (fewer than 2 counted runs on a side); "" when the
	 * comparison can call a difference significant */
	char why[96];
	struct cmp_metric *m;
	size_t nm;
	struct cmp_dist dist[RD_NCLASS];
	struct cmp_vmstat *vm;
	size_t nvm;
	unsigned resamples;
	uint64_t seed;
	struct cmp_comm *comm; /* busiest first; only when a run lists more than one process */
	size_t ncomm;
};

/* Compare the runs labelled la (A, the baseline) and lb (B); warm-up and failed runs are left
 * out. 0 or -ENOMEM. */
int cmp_compute(const struct rd_run *runs, size_t n, const char *la, const char *lb,
		unsigned resamples, uint64_t seed, struct cmp_result *out);
void cmp_free(struct cmp_result *c);
/* mmtests compare-kernels style text. */
void cmp_text(FILE *f, const struct cmp_result *c);
/* "comparison": {...} into the current JSON object. */
void cmp_json(struct json_w *w, const struct cmp_result *c);

/* ---- text (text.c) ----------------------------------------------------------------------------
 */

#define RD_PROCS_SHOWN 20 /* processes a text or HTML table shows, the busiest */

/* A run's summary: label, status, faults, stalls, latency percentiles, its processes. */
void rd_run_text(const struct rd_run *r, FILE *out);
/* mmtests fault lines reconstructed from a run's latency histogram: one per fault, thread 0,
 * time 0, the latency its bucket's upper edge. */
void rd_mmtests_hist(const struct rd_run *r, FILE *out);
/* A fault trace's mmtests lines (exact), or its summary. 0, or -errno with a reason in err. */
int rd_trace_mmtests(const char *path, FILE *out, char *err, size_t errlen);
int rd_trace_text(const char *path, FILE *out, char *err, size_t errlen);

/* ---- HTML (html.c) ----------------------------------------------------------------------------
 */

struct html_opts {
	const char *title;
	const char *subtitle; /* e.g. the command */
	const char *config;   /* preformatted configuration text, or NULL */
};
/* One self-contained page (inline SVG and CSS, no network): latency CDFs and tail CDFs per
 * class and series, huge % per run, a stall timeline, stall groups with stacks, vmstat, the
 * comparison when cmp is given, and the configuration. 0 or -EIO. */
int html_report(FILE *f, const struct rd_run *runs, size_t n, const struct cmp_result *cmp,
		const struct html_opts *o);

/* Distinct labels of the runs, in order of first appearance (at most max). */
size_t rd_labels(const struct rd_run *runs, size_t n, const char **out, size_t max);

/* ---- writing what was read (jvalue.c) -------------------------------------------------------- */

/* v (NULL: null) as a member key of the current object (NULL in an array or at the top), through
 * util/json.h as jansson's dumper wrote it: reals with digits significant digits (0: 17), the
 * members of every object sorted by key with sort, else in their order. */
void rd_jw_value(struct json_w *w, const char *key, const json_t *v, int digits, bool sort);
/* The same as a text of its own in a layout of jw_init_layout (JW_COMPACT, JW_LINE, an indent):
 * malloc'd, without a newline; NULL if v is NULL or memory ran out. */
char *rd_json_text(const json_t *v, int layout, int digits, bool sort);

#endif

/* The HTML report of `thpemu ab` and `thpemu report`: one self-contained file — inline CSS and
 * SVG, no script from anywhere, no fonts, no network — that a person wants to look at:
 *
 *   summary      the comparison (metric, A, B, change, bootstrap CI, significance) or, without
 *                one, each series' means
 *   latency      CDF per class (huge, base, both) and series, log-scaled latency, from the
 *                pooled exact histograms; tail CDF on a "nines" axis (p90, p99, p99.9, ...) as
 *                CBMM plots it
 *   huge %       per run, per series
 *   order mix    only when a report has mTHP ("mthp"): the share of the faulted memory
 *                per folio size as a stacked bar per series, and per size the p50/p99 fault
 *                latency per series (log axis); sizes and series without data are left out
 *   coverage     AnonHugePages / managed anon over time, a plot per series, a line per run
 *   stalls       a timeline (one row per run, one bar per stall event, coloured by cause) and
 *                the stall groups with the emulated kernel's and the program's stacks
 *   vmstat       per series means (and B - A)
 *   runs         every run with its outcome
 *   processes    each run's processes (thpemu run), busiest first; with a comparison, the
 *                programs (comm) of both sides in the summary
 *   config       what produced it
 * A few lines of inline script only check, after load, that every plot was drawn, and record it
 * in <body data-rendered> (the integration test reads that in headless Chromium).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/runs.h"
#include "util/text.h"

#define MAX_SERIES 8
#define PLOT_W	   360
#define PLOT_H	   240
#define PAD_L	   56
#define PAD_B	   40
#define PAD_T	   24
#define PAD_R	   28 /* half the widest x tick label ("p99.9999"): the last one fits centred */

static const char *const palette[MAX_SERIES] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
						"#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f"};

struct series {
	const char *label;
	const char *color;
	struct rd_bucket *b[RD_NCLASS]; /* pooled over the series' runs, ascending */
	size_t nb[RD_NCLASS];
	uint64_t total[RD_NCLASS];
};

/* ---- pooling
 * -------------------------------------------------------------------------------------- */

static int cmp_bucket(const void *x, const void *y)
{
	const struct rd_bucket *a = x, *b = y;

	return a->lo < b->lo ? -1 : a->lo > b->lo;
}

static void pool(struct series *s, const struct rd_run *runs, size_t n)
{
	for (int c = 0; c < RD_NCLASS; c++) {
		size_t cap = 0, k = 0, w = 0;

		for (size_t i = 0; i < n; i++)
			if (rd_counted(&runs[i]) && !strcmp(runs[i].label, s->label))
				cap += runs[i].hist[c].n;
		s->b[c] = calloc(cap + 1, sizeof(struct rd_bucket));
		if (!s->b[c])
			continue;
		for (size_t i = 0; i < n; i++)
			if (rd_counted(&runs[i]) && !strcmp(runs[i].label, s->label))
				for (size_t j = 0; j < runs[i].hist[c].n; j++)
					s->b[c][k++] = runs[i].hist[c].b[j];
		qsort(s->b[c], k, sizeof(struct rd_bucket), cmp_bucket);
		for (size_t i = 0; i < k; i++) {
			if (w && s->b[c][w - 1].lo == s->b[c][i].lo)
				s->b[c][w - 1].n += s->b[c][i].n;
			else
				s->b[c][w++] = s->b[c][i];
			s->total[c] += s->b[c][i].n;
		}
		s->nb[c] = w;
	}
}

/* ---- SVG helpers
 * ------------------------------------------------------------------------------------ */

struct axes {
	double x0, x1, y0, y1; /* data range (log10 already applied where the axis is log) */
	bool xlog, ylog;
};

static double px(const struct axes *a, double x)
{
	return PAD_L + (x - a->x0) / (a->x1 - a->x0) * (PLOT_W - PAD_L - PAD_R);
}

static double py(const struct axes *a, double y)
{
	return PLOT_H - PAD_B - (y - a->y0) / (a->y1 - a->y0) * (PLOT_H - PAD_B - PAD_T);
}

static void fmt_us(double us, char *buf, size_t len)
{
	if (us >= 1e6)
		snprintf(buf, len, "%gs", us / 1e6);
	else if (us >= 1e3)
		snprintf(buf, len, "%gms", us / 1e3);
	else
		snprintf(buf, len, "%gus", us);
}

static void esc_cut(FILE *f, const char *label, size_t max);

/* Text widths are not known when the SVG is written: these are upper estimates per character
 * (system-ui digits and lower case are narrower) of the .tick/.leg (10 px) and .t (12 px bold)
 * fonts, used to keep every label inside its plot. The Chromium test measures the real ones. */
#define TICK_CHAR_W  6.5
#define TITLE_CHAR_W 7.5

/* An x-axis tick label centred under x, or ending (starting) at x where centring would run past
 * the right (left) edge of the w-wide plot. */
static void x_tick(FILE *f, double x, int y, const char *lab, int w)
{
	double half = 0.5 * TICK_CHAR_W * (double)strlen(lab);
	const char *anchor = x + half > w - 2 ? "end" : x - half < 2 ? "start" : "middle";

	fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"tick\" text-anchor=\"%s\">", x, y, anchor);
	text_html_escape(f, lab);
	fputs("</text>", f);
}

/* A plot w wide whose frame ends at w - PAD_R - legend_w (room for a legend on the right). */
static void svg_open_w(FILE *f, int w, int legend_w, const char *title, const char *xlabel,
		       const char *ylabel)
{
	fprintf(f,
		"<svg class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\"><title>",
		w, PLOT_H, w, PLOT_H);
	text_html_escape(f, title);
	fprintf(f, "</title><text x=\"%d\" y=\"15\" class=\"t\">", PAD_L);
	esc_cut(f, title, (size_t)((w - PAD_L - 4) / TITLE_CHAR_W)); /* whole in <title> */
	fprintf(f, "</text><text x=\"%d\" y=\"%d\" class=\"al\" text-anchor=\"middle\">",
		(w - legend_w + PAD_L) / 2, PLOT_H - 6);
	text_html_escape(f, xlabel);
	fprintf(f,
		"</text><text x=\"12\" y=\"%d\" class=\"al\" text-anchor=\"middle\" "
		"transform=\"rotate(-90 12 %d)\">",
		PLOT_H / 2, PLOT_H / 2);
	text_html_escape(f, ylabel);
	fprintf(f, "</text><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" class=\"frame\"/>",
		PAD_L, PAD_T, w - legend_w - PAD_L - PAD_R, PLOT_H - PAD_B - PAD_T);
}

static void svg_open(FILE *f, const char *title, const char *xlabel, const char *ylabel)
{
	svg_open_w(f, PLOT_W, 0, title, xlabel, ylabel);
}

/* Decade ticks on a log axis in us, or plain ticks on a linear one. */
static void x_ticks_log_us(FILE *f, const struct axes *a)
{
	char lab[32];

	for (int e = (int)floor(a->x0); e <= (int)ceil(a->x1); e++) {
		double x = px(a, e);

		if (e < a->x0 - 1e-9 || e > a->x1 + 1e-9)
			continue;
		fmt_us(pow(10, e), lab, sizeof(lab));
		fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" class=\"grid\"/>", x,
			x, PAD_T, PLOT_H - PAD_B);
		x_tick(f, x, PLOT_H - PAD_B + 13, lab, PLOT_W);
	}
}

static void y_ticks_log_us(FILE *f, const struct axes *a)
{
	char lab[32];

	for (int e = (int)floor(a->y0); e <= (int)ceil(a->y1); e++) {
		double y = py(a, e);

		if (e < a->y0 - 1e-9 || e > a->y1 + 1e-9)
			continue;
		fmt_us(pow(10, e), lab, sizeof(lab));
		fprintf(f,
			"<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>"
			"<text x=\"%d\" y=\"%.1f\" class=\"tick\" text-anchor=\"end\">%s</text>",
			PAD_L, PLOT_W - PAD_R, y, y, PAD_L - 4, y + 3, lab);
	}
}

static void y_ticks_linear(FILE *f, const struct axes *a, double step, const char *suffix)
{
	for (double v = a->y0; v <= a->y1 + 1e-9; v += step) {
		double y = py(a, v);

		fprintf(f,
			"<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>"
			"<text x=\"%d\" y=\"%.1f\" class=\"tick\" text-anchor=\"end\">%g%s</text>",
			PAD_L, PLOT_W - PAD_R, y, y, PAD_L - 4, y + 3, v, suffix);
	}
}

/* The colours of the series that have data in the plot (has[i]; NULL: all), in the top-left
 * corner or (bottom) the bottom-right one; a series without data is not listed. */
static void legend(FILE *f, const struct series *s, size_t ns, bool bottom, const bool *has)
{
	size_t shown = 0, k = 0;

	for (size_t i = 0; i < ns; i++)
		shown += !has || has[i];
	for (size_t i = 0; i < ns; i++) {
		int x = bottom ? PLOT_W - PAD_R - 150 : PAD_L + 8, y;

		if (has && !has[i])
			continue;
		y = bottom ? PLOT_H - PAD_B - 8 - (int)(shown - 1 - k) * 13
			   : PAD_T + 12 + (int)k * 13;
		k++;
		fprintf(f,
			"<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"3\" fill=\"%s\"/>"
			"<text x=\"%d\" y=\"%d\" class=\"leg\">",
			x, y - 3, s[i].color, x + 14, y);
		esc_cut(f, s[i].label, (size_t)((PLOT_W - 2 - x - 14) / TICK_CHAR_W));
		fputs("</text>", f);
	}
}

/* Which series have faults of class c. */
static void has_class(const struct series *s, size_t ns, int c, bool *has)
{
	for (size_t i = 0; i < ns; i++)
		has[i] = s[i].nb[c] > 0;
}

static void no_data(FILE *f, const char *what)
{
	fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"nodata\" text-anchor=\"middle\">%s</text>",
		(PLOT_W + PAD_L) / 2, PLOT_H / 2, what);
}

/* ---- latency plots
 * -------------------------------------------------------------------------------- */

static bool range_us(const struct series *s, size_t ns, int c, double *lo, double *hi)
{
	*lo = INFINITY;
	*hi = -INFINITY;
	for (size_t i = 0; i < ns; i++) {
		if (!s[i].nb[c])
			continue;
		*lo = fmin(*lo, log10(fmax(s[i].b[c][0].hi / 1000.0, 0.1)));
		*hi = fmax(*hi, log10(fmax(s[i].b[c][s[i].nb[c] - 1].hi / 1000.0, 0.1)));
	}
	if (!isfinite(*lo))
		return false;
	*lo = floor(*lo);
	*hi = ceil(*hi);
	if (*hi <= *lo)
		*hi = *lo + 1;
	return true;
}

static void cdf_plot(FILE *f, const struct series *s, size_t ns, int c)
{
	char title[64];
	struct axes a = {0, 1, 0, 1, true, false};
	bool has[MAX_SERIES];

	snprintf(title, sizeof(title), "latency CDF: %s faults", rd_class_names[c]);
	svg_open(f, title, "fault service latency (log)", "fraction of faults");
	if (!range_us(s, ns, c, &a.x0, &a.x1)) {
		no_data(f, "no faults");
		fputs("</svg>", f);
		return;
	}
	x_ticks_log_us(f, &a);
	y_ticks_linear(f, &a, 0.25, "");
	for (size_t i = 0; i < ns; i++) {
		uint64_t seen = 0;
		double prev_y = py(&a, 0);

		if (!s[i].nb[c])
			continue;
		fprintf(f, "<path class=\"series\" stroke=\"%s\" d=\"M%.1f %.1f", s[i].color,
			px(&a, log10(fmax(s[i].b[c][0].lo / 1000.0, 0.1))), prev_y);
		for (size_t k = 0; k < s[i].nb[c]; k++) {
			double x = px(&a, log10(fmax(s[i].b[c][k].hi / 1000.0, 0.1)));

			seen += s[i].b[c][k].n;
			prev_y = py(&a, (double)seen / (double)s[i].total[c]);
			fprintf(f, " L%.1f %.1f", x, prev_y);
		}
		fputs("\"/>", f);
	}
	has_class(s, ns, c, has);
	legend(f, s, ns, true, has);
	fputs("</svg>\n", f);
}

/* Tail CDF: x = -log10(1 - F) ("nines": 1 = p90, 2 = p99, ...), y = latency (log). */
static void tail_plot(FILE *f, const struct series *s, size_t ns, int c)
{
	char title[64], lab[16];
	struct axes a = {0, 1, 0, 1, false, true};
	bool has[MAX_SERIES];
	double nines = 1;

	snprintf(title, sizeof(title), "tail latency: %s faults", rd_class_names[c]);
	svg_open(f, title, "percentile", "latency (log)");
	if (!range_us(s, ns, c, &a.y0, &a.y1)) {
		no_data(f, "no faults");
		fputs("</svg>", f);
		return;
	}
	for (size_t i = 0; i < ns; i++)
		if (s[i].total[c])
			nines = fmax(nines, ceil(log10((double)s[i].total[c])));
	a.x1 = fmin(nines, 6);
	y_ticks_log_us(f, &a);
	for (int k = 0; k <= (int)a.x1; k++) {
		double x = px(&a, k);

		if (k < 3) /* p0, p90, p99, then p99.9, p99.99, ... */
			snprintf(lab, sizeof(lab), "%s", k == 0 ? "p0" : k == 1 ? "p90" : "p99");
		else
			snprintf(lab, sizeof(lab), "p99.%.*s", k - 2, "9999");
		fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" class=\"grid\"/>", x,
			x, PAD_T, PLOT_H - PAD_B);
		/* from p99.99 on the labels are as wide as the ticks are apart: with many nines,
		 * every other one, counted from the last */
		if (k < 3 || a.x1 < 5 || ((int)a.x1 - k) % 2 == 0)
			x_tick(f, x, PLOT_H - PAD_B + 13, lab, PLOT_W);
	}
	for (size_t i = 0; i < ns; i++) {
		uint64_t before = 0;

		if (!s[i].nb[c])
			continue;
		fprintf(f, "<path class=\"series\" stroke=\"%s\" d=\"", s[i].color);
		for (size_t k = 0; k < s[i].nb[c]; k++) {
			double f0 = (double)before / (double)s[i].total[c];
			double f1 = (double)(before + s[i].b[c][k].n) / (double)s[i].total[c];
			double y = py(&a, log10(fmax(s[i].b[c][k].hi / 1000.0, 0.1)));
			double x0 = fmin(-log10(1 - f0), a.x1), x1;

			x1 = f1 >= 1 ? a.x1 : fmin(-log10(1 - f1), a.x1);
			fprintf(f, "%s%.1f %.1f L%.1f %.1f", k ? " L" : "M", px(&a, x0), y,
				px(&a, x1), y);
			before += s[i].b[c][k].n;
		}
		fputs("\"/>", f);
	}
	has_class(s, ns, c, has);
	legend(f, s, ns, false, has);
	fputs("</svg>\n", f);
}

/* ---- huge % per run
 * --------------------------------------------------------------------------------- */

static void huge_plot(FILE *f, const struct rd_run *runs, size_t n, const struct series *s,
		      size_t ns)
{
	struct axes a = {0, 1, 0, 100, false, false};
	bool has[MAX_SERIES] = {false};
	int maxidx = 1;

	for (size_t i = 0; i < n; i++)
		if (rd_counted(&runs[i]))
			maxidx = runs[i].index > maxidx ? runs[i].index : maxidx;
	a.x0 = 0.5;
	a.x1 = (n <= 1 ? 1 : maxidx) + 0.5;
	svg_open(f, "huge faults per run", "run", "faults served huge (%)");
	y_ticks_linear(f, &a, 25, "%");
	for (int k = 1; k <= (int)a.x1; k++) {
		char lab[16];

		snprintf(lab, sizeof(lab), "%d", k);
		x_tick(f, px(&a, k), PLOT_H - PAD_B + 13, lab, PLOT_W);
	}
	for (size_t j = 0; j < ns; j++) {
		double sum = 0;
		int cnt = 0;

		for (size_t i = 0; i < n; i++) {
			double v;
			int idx = runs[i].index > 0 ? runs[i].index : 1;

			if (!rd_counted(&runs[i]) || strcmp(runs[i].label, s[j].label) ||
			    isnan(v = rd_num(runs[i].root, "faults.huge_pct")))
				continue;
			fprintf(f,
				"<circle class=\"dot\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\">"
				"<title>",
				px(&a, idx + ((double)j - (double)(ns - 1) / 2) * 0.12), py(&a, v),
				s[j].color);
			text_html_escape(f, s[j].label);
			fprintf(f, " run %d: %.2f %%</title></circle>", idx, v);
			sum += v;
			cnt++;
		}
		has[j] = cnt > 0;
		if (cnt)
			fprintf(f,
				"<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
				"class=\"mean\"/>",
				PAD_L, PLOT_W - PAD_R, py(&a, sum / cnt), py(&a, sum / cnt),
				s[j].color);
	}
	legend(f, s, ns, false, has);
	fputs("</svg>\n", f);
}

/* ---- order mix (mTHP)
 * ----------------------------------------------------------------------------- */

#define LEG_W 96 /* a legend column right of the frame */

/* 4 KiB grey, the mTHP sizes a blue ramp (small to large), the PMD size orange */
static const char *const order_color[RD_ORDERS] = {"#c7c7c7", "#c6dbef", "#9ecae1",
						   "#6baed6", "#4292c6", "#2171b5",
						   "#08519c", "#08306b", "#ff7f0e"};

/* A series' order mix: 4 KiB pages per order summed over its counted runs with mTHP, and per
 * order the mean over those runs (with faults of it) of each run's p50 and p99. */
struct series_mix {
	size_t runs;
	double pages[RD_ORDERS], total;
	double p50[RD_ORDERS], p99[RD_ORDERS]; /* NaN: no run had faults of that order */
	bool shown[RD_ORDERS];
};

static void series_mix(const struct rd_run *runs, size_t n, const struct series *s,
		       struct series_mix *x)
{
	size_t cnt[RD_ORDERS] = {0};

	memset(x, 0, sizeof(*x));
	for (size_t i = 0; i < n; i++) {
		struct rd_order_mix m;

		if (!rd_counted(&runs[i]) || strcmp(runs[i].label, s->label) ||
		    !rd_order_mix(&runs[i], &m))
			continue;
		x->runs++;
		for (int k = 0; k < RD_ORDERS; k++) {
			x->pages[k] += m.pages[k];
			x->total += m.pages[k];
			x->shown[k] |= m.shown[k];
			if (!isnan(m.p50[k]) && !isnan(m.p99[k])) {
				x->p50[k] += m.p50[k];
				x->p99[k] += m.p99[k];
				cnt[k]++;
			}
		}
	}
	for (int k = 0; k < RD_ORDERS; k++) {
		x->p50[k] = cnt[k] ? x->p50[k] / (double)cnt[k] : NAN;
		x->p99[k] = cnt[k] ? x->p99[k] / (double)cnt[k] : NAN;
	}
}

/* A label cut to at most max bytes (at a UTF-8 character boundary, ".." appended). */
static void esc_cut(FILE *f, const char *label, size_t max)
{
	char buf[64];
	size_t len = strlen(label);

	if (max >= sizeof(buf))
		max = sizeof(buf) - 1;
	if (len <= max) {
		text_html_escape(f, label);
		return;
	}
	len = max > 2 ? max - 2 : 0;
	while (len && ((unsigned char)label[len] & 0xc0) == 0x80)
		len--;
	memcpy(buf, label, len);
	memcpy(buf + len, "..", 3);
	text_html_escape(f, buf);
}

static void order_legend(FILE *f, const bool *shown)
{
	int y = PAD_T + 10;

	for (int k = RD_ORDERS - 1; k >= 0; k--) {
		if (!shown[k])
			continue;
		fprintf(f,
			"<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/>"
			"<text x=\"%d\" y=\"%d\" class=\"leg\">%s</text>",
			PLOT_W + 4, y - 9, order_color[k], PLOT_W + 18, y, rd_order_names[k]);
		y += 14;
	}
}

/* Stacked bars, one per series: the share of the faulted memory (4 KiB pages mapped by the
 * faults) per folio order. */
static void order_mix_plot(FILE *f, const struct series *s, const struct series_mix *x, size_t ns)
{
	struct axes a = {0, 1, 0, 100, false, false};
	bool shown[RD_ORDERS] = {false};
	size_t nb = 0, b = 0;
	double slot;

	for (size_t j = 0; j < ns; j++)
		if (x[j].runs && x[j].total > 0) {
			nb++;
			for (int k = 0; k < RD_ORDERS; k++)
				shown[k] |= x[j].shown[k];
		}
	svg_open_w(f, PLOT_W + LEG_W, LEG_W, "order mix: faulted memory per folio size",
		   "series (runs with mTHP pooled)", "share of faulted memory (%)");
	y_ticks_linear(f, &a, 25, "%");
	slot = (double)(PLOT_W - PAD_L - PAD_R) / (double)(nb ? nb : 1);
	for (size_t j = 0; j < ns; j++) {
		double x0, bw = slot * 0.6 < 60 ? slot * 0.6 : 60, acc = 0;

		if (!x[j].runs || !(x[j].total > 0))
			continue;
		x0 = PAD_L + slot * ((double)b++ + 0.5);
		for (int k = 0; k < RD_ORDERS; k++) {
			double pct = 100.0 * x[j].pages[k] / x[j].total;

			if (!(pct > 0))
				continue;
			fprintf(f,
				"<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
				"fill=\"%s\"><title>",
				x0 - bw / 2, py(&a, acc + pct), bw, py(&a, acc) - py(&a, acc + pct),
				order_color[k]);
			text_html_escape(f, s[j].label);
			fprintf(f, ": %s %.2f %% (%.0f pages of 4 KiB in %zu run%s)</title></rect>",
				rd_order_names[k], pct, x[j].pages[k], x[j].runs,
				x[j].runs == 1 ? "" : "s");
			acc += pct;
		}
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"tick\" text-anchor=\"middle\">", x0,
			PLOT_H - PAD_B + 13);
		esc_cut(f, s[j].label, (size_t)(slot / 6));
		fputs("</text>", f);
	}
	if (!nb)
		no_data(f, "no faults");
	order_legend(f, shown);
	fputs("</svg>\n", f);
}

/* Per folio size, per series: the p50 fault latency as a bar, the p99 as an outlined bar
 * behind it, on a log axis. Sizes without faults in any series are left out. */
static void order_latency_plot(FILE *f, const struct series *s, const struct series_mix *x,
			       size_t ns)
{
	struct axes a = {0, 1, 0, 1, false, true};
	double lo = INFINITY, hi = 0, group, bw;
	int groups[RD_ORDERS], ng = 0;
	size_t nser = 0;
	bool any_series[MAX_SERIES] = {false};

	for (int k = 0; k < RD_ORDERS; k++) {
		bool any = false;

		for (size_t j = 0; j < ns; j++)
			if (x[j].runs && !isnan(x[j].p50[k]) && x[j].p50[k] > 0 &&
			    x[j].p99[k] > 0) {
				any = any_series[j] = true;
				lo = x[j].p50[k] < lo ? x[j].p50[k] : lo;
				hi = x[j].p99[k] > hi ? x[j].p99[k] : hi;
			}
		if (any)
			groups[ng++] = k;
	}
	for (size_t j = 0; j < ns; j++)
		nser += any_series[j];
	svg_open_w(f, PLOT_W + LEG_W, LEG_W, "fault latency per folio size (p50, p99 outlined)",
		   "folio size", "latency per fault");
	if (!ng) {
		no_data(f, "no faults");
		fputs("</svg>\n", f);
		return;
	}
	a.y0 = floor(log10(lo));
	a.y1 = ceil(log10(hi));
	if (a.y1 <= a.y0)
		a.y1 = a.y0 + 1;
	y_ticks_log_us(f, &a);
	group = (double)(PLOT_W - PAD_L - PAD_R) / ng;
	bw = group * 0.8 / (double)(nser ? nser : 1);
	for (int g = 0; g < ng; g++) {
		int k = groups[g];
		double gx = PAD_L + group * g + group * 0.1;
		size_t b = 0;

		x_tick(f, PAD_L + group * (g + 0.5), PLOT_H - PAD_B + 13, rd_order_names[k],
		       PLOT_W + LEG_W);
		for (size_t j = 0; j < ns; j++) {
			double bx;

			if (!any_series[j])
				continue;
			bx = gx + bw * (double)b++;
			if (isnan(x[j].p50[k]) || !(x[j].p50[k] > 0) || !(x[j].p99[k] > 0))
				continue;
			fprintf(f,
				"<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
				"fill=\"none\" stroke=\"%s\"><title>",
				bx + 1, py(&a, log10(x[j].p99[k])), bw - 2,
				py(&a, a.y0) - py(&a, log10(x[j].p99[k])), s[j].color);
			text_html_escape(f, s[j].label);
			fprintf(f, " %s: p99 %.1f us</title></rect>", rd_order_names[k],
				x[j].p99[k]);
			fprintf(f,
				"<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
				"fill=\"%s\"><title>",
				bx + 1, py(&a, log10(x[j].p50[k])), bw - 2,
				py(&a, a.y0) - py(&a, log10(x[j].p50[k])), s[j].color);
			text_html_escape(f, s[j].label);
			fprintf(f, " %s: p50 %.1f us</title></rect>", rd_order_names[k],
				x[j].p50[k]);
		}
	}
	for (size_t j = 0, b = 0; j < ns; j++) {
		int y = PAD_T + 10 + (int)b * 14;

		if (!any_series[j])
			continue;
		b++;
		fprintf(f,
			"<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/>"
			"<text x=\"%d\" y=\"%d\" class=\"leg\">",
			PLOT_W + 4, y - 9, s[j].color, PLOT_W + 18, y);
		esc_cut(f, s[j].label, 12);
		fputs("</text>", f);
	}
	fputs("</svg>\n", f);
}

/* The order-mix section, only when some counted run's report has mTHP. */
static void order_mix_section(FILE *f, const struct rd_run *runs, size_t n, const struct series *s,
			      size_t ns)
{
	struct series_mix x[MAX_SERIES];
	bool any = false, per_pte = false;

	for (size_t j = 0; j < ns; j++) {
		series_mix(runs, n, &s[j], &x[j]);
		any |= x[j].runs > 0;
	}
	if (!any)
		return;
	for (size_t i = 0; i < n; i++) {
		const char *d = rd_counted(&runs[i]) ? rd_str(runs[i].root, "mthp.delivery") : NULL;

		per_pte |= d && !strcmp(d, "per-PTE");
	}
	fputs("<h2 id=\"order-mix\">Order mix (mTHP)</h2>\n<p class=\"note\">Faulted anonymous "
	      "memory per folio size (base 4 KiB pages, each multi-size THP size with activity, "
	      "2 MiB), pooled over each series' runs, and the fault latency per size: per fault, "
	      "the mean over the runs of each run's p50 and p99.",
	      f);
	if (per_pte)
		fputs(" In live runs mTHP delivery is per-PTE: the host maps a folio with 4 KiB "
		      "PTEs; the order and the cost of serving it are the emulated kernel's.",
		      f);
	fputs("</p>\n<div class=\"plots\">\n", f);
	order_mix_plot(f, s, x, ns);
	order_latency_plot(f, s, x, ns);
	fputs("</div>\n", f);
}

/* ---- coverage over time
 * ----------------------------------------------------------------------------- */

/* A run's coverage samples ([[t_ms, anon_huge_kb, anon_kb], ...]), or NULL. */
static json_t *cov_samples(const struct rd_run *r)
{
	json_t *a = json_object_get(json_object_get(r->root, "coverage"), "samples");

	return json_is_array(a) && json_array_size(a) ? a : NULL;
}

static bool cov_sample(json_t *e, double *t_s, double *pct)
{
	json_t *t = json_array_get(e, 0), *h = json_array_get(e, 1), *a = json_array_get(e, 2);

	if (!json_is_number(t) || !json_is_number(h) || !json_is_number(a))
		return false;
	*t_s = json_number_value(t) / 1e3;
	*pct = json_number_value(a) > 0
		   ? fmin(100, fmax(0, 100 * json_number_value(h) / json_number_value(a)))
		   : NAN; /* nothing mapped: no coverage to draw */
	return isfinite(*t_s);
}

/* One plot per series: AnonHugePages / managed anon (%) over time, one line per run (a gap
 * where there was no managed anonymous memory). */
static void coverage_plot(FILE *f, const struct rd_run *runs, size_t n, const struct series *s)
{
	struct axes a = {0, 1, 0, 100, false, false};
	char title[200], lab[32];
	size_t lines = 0;

	for (size_t i = 0; i < n; i++) {
		json_t *sm;
		double t, p;

		if (!rd_counted(&runs[i]) || strcmp(runs[i].label, s->label) ||
		    !(sm = cov_samples(&runs[i])))
			continue;
		if (cov_sample(json_array_get(sm, json_array_size(sm) - 1), &t, &p))
			a.x1 = fmax(a.x1, t);
		lines++;
	}
	snprintf(title, sizeof(title), "AnonHugePages coverage: %.150s", s->label);
	svg_open(f, title, "time (s)", "anon mapped huge (%)");
	if (!lines) {
		no_data(f, "no coverage samples");
		fputs("</svg>\n", f);
		return;
	}
	y_ticks_linear(f, &a, 25, "%");
	for (int k = 0; k <= 4; k++) {
		double x = px(&a, a.x1 * k / 4);

		snprintf(lab, sizeof(lab), "%.3g", a.x1 * k / 4);
		x_tick(f, x, PLOT_H - PAD_B + 13, lab, PLOT_W);
	}
	lines = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *sm;
		bool pen = false;

		if (!rd_counted(&runs[i]) || strcmp(runs[i].label, s->label) ||
		    !(sm = cov_samples(&runs[i])))
			continue;
		/* the series' colour; its runs told apart by dashes */
		fprintf(f, "<path class=\"series\" stroke=\"%s\" stroke-dasharray=\"%s\" d=\"",
			s->color,
			lines % 3 == 0	 ? "none"
			: lines % 3 == 1 ? "5 2"
					 : "1 2");
		for (size_t k = 0; k < json_array_size(sm); k++) {
			double t, p;

			if (!cov_sample(json_array_get(sm, k), &t, &p) || isnan(p)) {
				pen = false;
				continue;
			}
			fprintf(f, "%s%.1f %.1f ", pen ? "L" : "M", px(&a, fmin(t, a.x1)),
				py(&a, p));
			pen = true;
		}
		fputs("\"><title>", f);
		text_html_escape(f, runs[i].source);
		fprintf(f, ": end %.2f %%, time-weighted %.2f %%</title></path>",
			rd_num(runs[i].root, "coverage.end_pct"),
			rd_num(runs[i].root, "coverage.time_weighted_pct"));
		lines++;
	}
	fputs("</svg>\n", f);
}

/* ---- stall timeline
 * --------------------------------------------------------------------------------- */

static const char *cause_color(const char *cause)
{
	if (!cause)
		return "#7f7f7f";
	if (strstr(cause, "compaction") && strstr(cause, "writeback"))
		return "#d62728";
	if (strstr(cause, "reclaim") && strstr(cause, "writeback"))
		return "#ff7f0e";
	if (strstr(cause, "compaction"))
		return "#9467bd";
	if (strstr(cause, "reclaim"))
		return "#e377c2";
	return "#7f7f7f";
}

static void timeline(FILE *f, const struct rd_run *runs, size_t n)
{
	size_t rows = 0;
	double tmax = 1;
	int w = 760, row_h = 16, top = 28, left = 150, h;

	for (size_t i = 0; i < n; i++) {
		if (!rd_counted(&runs[i]))
			continue;
		rows++;
		tmax = fmax(tmax, rd_num(runs[i].root, "program.wall_s"));
		if (isnan(tmax))
			tmax = 1;
		if (!isnan(rd_num(runs[i].root, "config.duration_s")))
			tmax = fmax(tmax, rd_num(runs[i].root, "config.duration_s"));
	}
	h = top + (int)rows * row_h + 34;
	fprintf(f,
		"<svg class=\"plot wide\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\"><title>stall timeline</title>"
		"<text x=\"%d\" y=\"15\" class=\"t\">stalls over time (one row per run; bar = "
		"one stall, its length = its duration)</text>",
		w, h, w, h, left);
	for (int k = 0; k <= 5; k++) {
		double x = left + (double)k / 5 * (w - left - 10);
		char lab[32];

		snprintf(lab, sizeof(lab), "%.1fs", tmax * k / 5);
		fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" class=\"grid\"/>", x,
			x, top, h - 30);
		x_tick(f, x, h - 18, lab, w);
	}
	rows = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *groups;
		double t0;
		int y;

		if (!rd_counted(&runs[i]))
			continue;
		y = top + (int)rows++ * row_h;
		t0 = rd_num(runs[i].root, "program.start_mono_s");
		if (isnan(t0))
			t0 = 0;
		fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"tick\" text-anchor=\"end\">", left - 6,
			y + 11);
		esc_cut(f, runs[i].label, (size_t)((left - 10) / TICK_CHAR_W) - 5);
		fprintf(f,
			" #%d</text><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
			"class=\"lane\"/>",
			runs[i].index, left, y + 2, w - left - 10, row_h - 4);
		groups = json_object_get(json_object_get(runs[i].root, "stalls"), "groups");
		for (size_t g = 0; g < json_array_size(groups); g++) {
			json_t *gr = json_array_get(groups, g);
			json_t *ts = json_object_get(gr, "events_t_s");
			json_t *ds = json_object_get(gr, "events_ms");
			const char *cause = json_string_value(json_object_get(gr, "cause"));

			for (size_t e = 0; e < json_array_size(ts) && e < json_array_size(ds);
			     e++) {
				double t = json_number_value(json_array_get(ts, e)) - t0;
				double d = json_number_value(json_array_get(ds, e)) / 1000.0;
				double x = left + t / tmax * (w - left - 10);
				double bw = fmax(d / tmax * (w - left - 10), 2);

				fprintf(f,
					"<rect class=\"stall\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" "
					"height=\"%d\" fill=\"%s\"><title>%.0f ms at %.2f s: ",
					x, y + 3, bw, row_h - 6, cause_color(cause), d * 1000, t);
				text_html_escape(f, cause);
				fputs("</title></rect>", f);
			}
		}
	}
	if (!rows)
		fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"nodata\">no runs</text>", left,
			top + 12);
	fprintf(f,
		"<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"8\" fill=\"#d62728\"/><text "
		"x=\"%d\" y=\"%d\" class=\"leg\">compaction, waiting on writeback</text>"
		"<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"8\" fill=\"#ff7f0e\"/><text "
		"x=\"%d\" y=\"%d\" class=\"leg\">reclaim, waiting on writeback</text>"
		"<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"8\" fill=\"#9467bd\"/><text "
		"x=\"%d\" y=\"%d\" class=\"leg\">other compaction</text>",
		left, h - 10, left + 14, h - 2, left + 230, h - 10, left + 244, h - 2, left + 440,
		h - 10, left + 454, h - 2);
	fputs("</svg>\n", f);
}

/* ---- tables
 * ----------------------------------------------------------------------------------------- */

static void num(FILE *f, double v, int dec)
{
	if (isnan(v))
		fputs("<td class=\"n\">-</td>", f);
	else
		fprintf(f, "<td class=\"n\">%.*f</td>", dec, v);
}

/* The programs (comm) of the runs' processes on each side. */
static void summary_comms(FILE *f, const struct cmp_result *c)
{
	size_t shown = c->ncomm < RD_PROCS_SHOWN ? c->ncomm : RD_PROCS_SHOWN;

	if (!c->ncomm)
		return;
	fputs("<h3>Programs (processes by comm), mean per run</h3><table><tr><th>comm</th><th>A "
	      "processes</th><th>A faults</th><th>A p50 us</th><th>B processes</th><th>B faults"
	      "</th><th>B p50 us</th></tr>\n",
	      f);
	for (size_t i = 0; i < shown; i++) {
		const struct cmp_comm *m = &c->comm[i];

		fputs("<tr><td>", f);
		text_html_escape(f, m->comm);
		fputs("</td>", f);
		for (int sd = 0; sd < 2; sd++) {
			num(f, m->procs[sd], 2);
			num(f, m->faults[sd], 1);
			num(f, m->p50_us[sd], 1);
		}
		fputs("</tr>\n", f);
	}
	fputs("</table>", f);
	if (c->ncomm > shown)
		fprintf(f, "<p class=\"note\">%zu more programs</p>", c->ncomm - shown);
	fputs("<p class=\"note\">p50: the median of the processes' p50 fault latencies, weighted "
	      "by their faults.</p>\n",
	      f);
}

static void summary_cmp(FILE *f, const struct cmp_result *c)
{
	fputs("<table><tr><th>metric</th><th>A: ", f);
	text_html_escape(f, c->label_a);
	fputs("<br><small>mean &plusmn; sd</small></th><th>B: ", f);
	text_html_escape(f, c->label_b);
	fputs("<br><small>mean &plusmn; sd</small></th><th>change</th><th>B&minus;A, 95% CI "
	      "(bootstrap)</th><th></th></tr>\n",
	      f);
	for (size_t i = 0; i < c->nm; i++) {
		const struct cmp_metric *m = &c->m[i];

		if (!m->have_a && !m->have_b)
			continue;
		const char *unit = rd_metric_unit_text(m->def);

		fprintf(f, "<tr%s><td>%s%s%s%s</td>", m->significant ? " class=\"sig\"" : "",
			m->def->name, unit[0] ? " (" : "", unit, unit[0] ? ")" : "");
		if (m->have_a)
			fprintf(f, "<td class=\"n\">%.2f &plusmn; %.2f</td>", m->ma.amean,
				m->ma.stddev);
		else
			fputs("<td>-</td>", f);
		if (m->have_b)
			fprintf(f, "<td class=\"n\">%.2f &plusmn; %.2f</td>", m->mb.amean,
				m->mb.stddev);
		else
			fputs("<td>-</td>", f);
		if (m->have_a && m->have_b && !isnan(m->change_pct))
			fprintf(f, "<td class=\"n\">%+.2f%%</td>", m->change_pct);
		else
			fputs("<td>-</td>", f);
		if (m->have_ci)
			fprintf(f, "<td class=\"n\">[%.2f, %.2f]</td>", m->ci.lo, m->ci.hi);
		else if (m->have_a && m->have_b)
			fputs("<td>n/a</td>", f);
		else
			fputs("<td>-</td>", f);
		fprintf(f, "<td>%s</td></tr>\n", m->significant ? "significant" : "");
	}
	fputs("</table>", f);
	if (c->why[0]) {
		fputs(
		    "<p class=\"note why\">No difference is marked significant and no interval is "
		    "shown: ",
		    f);
		text_html_escape(f, c->why);
		fputs(".</p>", f);
	}
	fputs("<p class=\"note\">Change: positive is better (mmtests' convention). "
	      "Significant: the bootstrap interval of the difference of means excludes 0.</p>\n",
	      f);
	fputs("<h3>Per-fault latency, runs pooled (Mann&ndash;Whitney U)</h3><table><tr><th>class"
	      "</th><th>A faults</th><th>B faults</th><th>A p50 us</th><th>B p50 us</th><th>A p99 "
	      "us</th><th>B p99 us</th><th>P(A&gt;B)</th><th>p</th></tr>\n",
	      f);
	for (int k = 0; k < RD_NCLASS; k++) {
		const struct cmp_dist *d = &c->dist[k];

		fprintf(f, "<tr%s><td>%s</td><td class=\"n\">%llu</td><td class=\"n\">%llu</td>",
			d->significant ? " class=\"sig\"" : "", rd_class_names[k],
			(unsigned long long)d->na, (unsigned long long)d->nb);
		num(f, d->a_p50, 1);
		num(f, d->b_p50, 1);
		num(f, d->a_p99, 1);
		num(f, d->b_p99, 1);
		if (d->tested)
			fprintf(f, "<td class=\"n\">%.3f</td><td class=\"n\">%.3g</td></tr>\n",
				d->prob_a_greater, d->mw.p);
		else
			fputs("<td>-</td><td>-</td></tr>\n", f);
	}
	fputs("</table>\n", f);
	summary_comms(f, c);
}

static void summary_series(FILE *f, const struct rd_run *runs, size_t n, const struct series *s,
			   size_t ns)
{
	fputs("<table><tr><th>metric</th>", f);
	for (size_t j = 0; j < ns; j++) {
		fputs("<th>", f);
		text_html_escape(f, s[j].label);
		fputs("</th>", f);
	}
	fputs("</tr>\n", f);
	for (size_t m = 0; m < rd_nmetrics; m++) {
		if (!rd_metric_shown(runs, n, &rd_metrics[m]))
			continue;
		const char *unit = rd_metric_unit_text(&rd_metrics[m]);

		fprintf(f, "<tr><td>%s%s%s%s</td>", rd_metrics[m].name, unit[0] ? " (" : "", unit,
			unit[0] ? ")" : "");
		for (size_t j = 0; j < ns; j++)
			num(f, rd_mean_metric(runs, n, s[j].label, &rd_metrics[m]), 2);
		fputs("</tr>\n", f);
	}
	fputs("</table>\n", f);
}

static void vmstat_table(FILE *f, const struct rd_run *runs, size_t n, const struct series *s,
			 size_t ns)
{
	json_t *first = NULL;
	const char *key;
	json_t *v;

	for (size_t i = 0; i < n && !first; i++)
		if (rd_counted(&runs[i]))
			first = json_object_get(runs[i].root, "vmstat");
	if (!json_is_object(first)) {
		fputs("<p>no vmstat counters</p>\n", f);
		return;
	}
	fputs("<table><tr><th>counter (mean per run)</th>", f);
	for (size_t j = 0; j < ns; j++) {
		fputs("<th>", f);
		text_html_escape(f, s[j].label);
		fputs("</th>", f);
	}
	fputs(ns == 2 ? "<th>B&minus;A</th></tr>\n" : "</tr>\n", f);
	json_object_foreach(first, key, v)
	{
		double mean[MAX_SERIES];
		char path[96];

		snprintf(path, sizeof(path), "vmstat.%s", key);
		fputs("<tr><td>", f);
		text_html_escape(f, key);
		fputs("</td>", f);
		for (size_t j = 0; j < ns; j++) {
			mean[j] = rd_mean_num(runs, n, s[j].label, path);
			num(f, mean[j], 1);
		}
		if (ns == 2)
			num(f, mean[1] - mean[0], 1);
		fputs("</tr>\n", f);
	}
	fputs("</table>\n", f);
}

static void runs_table(FILE *f, const struct rd_run *runs, size_t n)
{
	fputs("<table><tr><th>series</th><th>run</th><th>outcome</th><th>wall s</th><th>faults"
	      "</th><th>huge % of faults</th><th>p99 us per fault</th><th>max us per "
	      "fault</th><th>stalls</th>"
	      "<th>stalled ms</th>"
	      "<th>wait events</th><th>longest wait ms</th><th>source</th></tr>\n",
	      f);
	for (size_t i = 0; i < n; i++) {
		const struct rd_run *r = &runs[i];

		fputs("<tr><td>", f);
		text_html_escape(f, r->label);
		fprintf(f, "</td><td class=\"n\">%s%d</td><td>", r->warmup ? "warm-up " : "",
			r->index);
		if (r->ok)
			fputs("ok", f);
		else {
			fputs("<b>failed</b>: ", f);
			text_html_escape(f, r->note);
		}
		fputs("</td>", f);
		num(f, r->wall_s > 0 ? r->wall_s : NAN, 2);
		num(f, r->root ? rd_num(r->root, "faults.total") : NAN, 0);
		num(f, r->root ? rd_num(r->root, "faults.huge_pct") : NAN, 2);
		num(f, r->root ? rd_num(r->root, "latency_us.both.p99") : NAN, 1);
		num(f, r->root ? rd_num(r->root, "latency_us.both.max") : NAN, 1);
		num(f, r->root ? rd_num(r->root, "stalls.count") : NAN, 0);
		num(f, r->root ? rd_num(r->root, "stalls.total_ms") : NAN, 1);
		/* per-wait stall events (stalls.waits): single waits of at least the threshold */
		num(f, r->root ? rd_num(r->root, "stalls.waits.count") : NAN, 0);
		num(f, r->root ? rd_num(r->root, "stalls.waits.max_ms") : NAN, 1);
		fputs("<td class=\"src\">", f);
		text_html_escape(f, r->source);
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
}

static void str_cell(FILE *f, json_t *e, const char *key)
{
	fputs("<td>", f);
	text_html_escape(f, json_string_value(json_object_get(e, key)));
	fputs("</td>", f);
}

/* One run's processes (thpemu run's "processes"), the busiest RD_PROCS_SHOWN. */
static void run_processes(FILE *f, const struct rd_run *r, bool open)
{
	json_t *arr = json_object_get(r->root, "processes");
	size_t n = json_array_size(arr), shown = n < RD_PROCS_SHOWN ? n : RD_PROCS_SHOWN;
	double omitted = rd_num(r->root, "program.processes_omitted");
	json_t **v = malloc((n ? n : 1) * sizeof(*v));

	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		v[i] = json_array_get(arr, i);
	qsort(v, n, sizeof(*v), rd_by_faults);
	fprintf(f, "<details%s><summary>", open ? " open" : "");
	text_html_escape(f, r->source);
	fprintf(
	    f,
	    ": %zu process%s</summary><table><tr><th>pid</th><th>ppid</th><th>comm</th>"
	    "<th>state</th><th>exec'd from</th><th>faults</th><th>huge %% of faults</th><th>p50 us"
	    "</th><th>p99 us</th><th>max us</th><th>stalls</th><th>stalled ms</th><th>"
	    "command</th></tr>\n",
	    n, n == 1 ? "" : "es");
	for (size_t i = 0; i < shown; i++) {
		double faults = rd_num(v[i], "faults.total");

		fputs("<tr>", f);
		num(f, rd_num(v[i], "pid"), 0);
		num(f, rd_num(v[i], "ppid"), 0);
		str_cell(f, v[i], "comm");
		str_cell(f, v[i], "state");
		str_cell(f, v[i], "exec_from");
		num(f, faults, 0);
		num(f, faults > 0 ? 100.0 * rd_num(v[i], "faults.huge") / faults : NAN, 1);
		num(f, rd_num(v[i], "latency_us.p50"), 1);
		num(f, rd_num(v[i], "latency_us.p99"), 1);
		num(f, rd_num(v[i], "latency_us.max"), 1);
		num(f, rd_num(v[i], "stalls.count"), 0);
		num(f, rd_num(v[i], "stalls.total_ms"), 1);
		fputs("<td class=\"src\">", f);
		text_html_escape(f, json_string_value(json_object_get(v[i], "cmdline")));
		fputs("</td></tr>\n", f);
	}
	fputs("</table>", f);
	if (n > shown || omitted > 0)
		fprintf(f, "<p class=\"note\">%.0f more processes (the least busy)</p>",
			(double)(n - shown) + (omitted > 0 ? omitted : 0));
	fputs("</details>\n", f);
	free(v);
}

static void processes_section(FILE *f, const struct rd_run *runs, size_t n)
{
	size_t shown = 0;

	for (size_t i = 0; i < n; i++)
		if (runs[i].root && json_array_size(json_object_get(runs[i].root, "processes")))
			run_processes(f, &runs[i], shown++ == 0);
	if (!shown)
		fputs("<p>no per-process data (reports of thpemu run list their processes)</p>\n",
		      f);
}

/* Stall groups of a series, merged over its runs by (cause, stacks). */
#define SGROUP_WHO 4 /* processes named per group */

struct sgroup {
	char *key;
	json_t *g; /* the first run's group: stacks and cause */
	double total_ms;
	uint64_t count;
	unsigned runs;
	json_t *who[SGROUP_WHO]; /* groups of distinct processes (thpemu run: pid, process) */
	unsigned nwho, more_who;
};

/* Remember which process waited in gr (a process named by its name, or by pid without one). */
static void sgroup_who(struct sgroup *sg, json_t *gr)
{
	json_t *pid = json_object_get(gr, "pid"), *proc = json_object_get(gr, "process");

	if (!json_is_integer(pid))
		return;
	for (unsigned i = 0; i < sg->nwho; i++)
		if (json_equal(json_object_get(sg->who[i], "process"), proc) &&
		    (json_is_string(proc) || json_equal(json_object_get(sg->who[i], "pid"), pid)))
			return;
	if (sg->nwho < SGROUP_WHO)
		sg->who[sg->nwho++] = gr;
	else
		sg->more_who++;
}

static void sgroup_who_html(FILE *f, const struct sgroup *sg)
{
	if (!sg->nwho)
		return;
	fputs(" &mdash; ", f);
	for (unsigned i = 0; i < sg->nwho; i++) {
		const char *proc = json_string_value(json_object_get(sg->who[i], "process"));

		fputs(i ? ", " : "", f);
		text_html_escape(f, proc ? proc : "?");
		fprintf(f, " (pid %lld)",
			(long long)json_integer_value(json_object_get(sg->who[i], "pid")));
	}
	if (sg->more_who)
		fprintf(f, " and %u more", sg->more_who);
	fputs(" waited", f);
}

static int cmp_sgroup(const void *x, const void *y)
{
	const struct sgroup *a = x, *b = y;

	return a->total_ms < b->total_ms ? 1 : a->total_ms > b->total_ms ? -1 : 0;
}

static void stack_pre(FILE *f, const char *title, json_t *arr)
{
	if (!json_array_size(arr))
		return;
	fprintf(f, "<div class=\"stk\"><b>%s</b><pre>", title);
	for (size_t i = 0; i < json_array_size(arr); i++) {
		text_html_escape(f, json_string_value(json_array_get(arr, i)));
		fputc('\n', f);
	}
	fputs("</pre></div>", f);
}

static void stall_groups(FILE *f, const struct rd_run *runs, size_t n, const struct series *s)
{
	struct sgroup *gs = NULL;
	size_t ng = 0, cap = 0, nruns = 0;

	for (size_t i = 0; i < n; i++) {
		json_t *groups;

		if (!rd_counted(&runs[i]) || strcmp(runs[i].label, s->label))
			continue;
		nruns++;
		groups = json_object_get(json_object_get(runs[i].root, "stalls"), "groups");
		for (size_t g = 0; g < json_array_size(groups); g++) {
			json_t *gr = json_array_get(groups, g);
			json_t *kobj = json_pack("{sOsOsO}", "c", json_object_get(gr, "cause"), "h",
						 json_object_get(gr, "handler_stack"), "a",
						 json_object_get(gr, "app_stack"));
			char *key = rd_json_text(kobj, JW_COMPACT, 0, false);
			size_t k;

			json_decref(kobj);
			if (!key)
				continue;
			for (k = 0; k < ng && strcmp(gs[k].key, key); k++)
				;
			if (k == ng) {
				if (ng == cap) {
					struct sgroup *p =
					    realloc(gs, (cap = cap ? 2 * cap : 16) * sizeof(*gs));

					if (!p) {
						free(key);
						break;
					}
					gs = p;
				}
				gs[ng++] = (struct sgroup){.key = key, .g = gr};
			} else {
				free(key);
			}
			gs[k].total_ms += json_number_value(json_object_get(gr, "total_ms"));
			gs[k].count += (uint64_t)json_integer_value(json_object_get(gr, "count"));
			gs[k].runs++;
			sgroup_who(&gs[k], gr);
		}
	}
	fputs("<h3>", f);
	text_html_escape(f, s->label);
	fprintf(f, "</h3>\n");
	if (!ng)
		fprintf(f, "<p>no stall events in %zu run%s</p>\n", nruns, nruns == 1 ? "" : "s");
	if (ng) /* gs is NULL without groups */
		qsort(gs, ng, sizeof(*gs), cmp_sgroup);
	for (size_t k = 0; k < ng; k++) {
		json_t *gr = gs[k].g;

		fprintf(f, "<details%s><summary><b>%.0f ms</b> in %llu event%s (%u of %zu runs): ",
			k == 0 ? " open" : "", gs[k].total_ms, (unsigned long long)gs[k].count,
			gs[k].count == 1 ? "" : "s", gs[k].runs, nruns);
		text_html_escape(f, json_string_value(json_object_get(gr, "cause")));
		fputs(" &mdash; ", f);
		text_html_escape(f, json_string_value(json_object_get(gr, "function")));
		sgroup_who_html(f, &gs[k]);
		fputs("</summary>", f);
		stack_pre(f, "emulated kernel (handler) stack",
			  json_object_get(gr, "handler_stack"));
		stack_pre(f, "program stack", json_object_get(gr, "app_stack"));
		if (json_string_value(json_object_get(gr, "syscall"))) {
			fputs("<p>faulted inside the system call ", f);
			text_html_escape(f, json_string_value(json_object_get(gr, "syscall")));
			fputs("</p>", f);
		}
		fputs("</details>\n", f);
		free(gs[k].key);
	}
	free(gs);
}

static void config_section(FILE *f, const struct rd_run *runs, size_t n, const struct series *s,
			   size_t ns, const char *text)
{
	if (text) {
		fputs("<pre>", f);
		text_html_escape(f, text);
		fputs("</pre>\n", f);
	}
	for (size_t j = 0; j < ns; j++) {
		for (size_t i = 0; i < n; i++) {
			json_t *cfg;
			char *t;

			if (!runs[i].root || strcmp(runs[i].label, s[j].label))
				continue;
			cfg = json_object_get(runs[i].root, "config");
			t = rd_json_text(cfg, 2, 10, false);
			fputs("<h3>", f);
			text_html_escape(f, s[j].label);
			fputs("</h3><pre>", f);
			text_html_escape(f, t ? t : "(no configuration)");
			fputs("</pre>\n", f);
			free(t);
			break;
		}
	}
}

static const char style[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}"
    "h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px "
    "solid #ddd}h3{font-size:15px;margin:14px 0 6px}.sub{color:#555;font-family:monospace}"
    "table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #ddd;padding:3px 8px}"
    "th{background:#f4f4f4;text-align:left}td.n{text-align:right;font-variant-numeric:"
    "tabular-nums}tr.sig td{background:#fff3cd}td.src{font-size:11px;color:#666}"
    ".plots{display:flex;flex-wrap:wrap;gap:10px}svg.plot{background:#fff;border:1px solid "
    "#e4e4e4}.t{font-size:12px;font-weight:600}.al{font-size:11px;fill:#444}.tick{font-size:"
    "10px;fill:#555}.leg{font-size:10px}.grid{stroke:#eee}.frame{fill:none;stroke:#bbb}"
    ".series{fill:none;stroke-width:1.8}.mean{stroke-dasharray:4 3;stroke-width:1}"
    ".lane{fill:#f7f7f7}.nodata{font-size:12px;fill:#999}pre{background:#f7f7f7;padding:6px;"
    "overflow-x:auto;font-size:12px}.stk{display:inline-block;vertical-align:top;margin-right:"
    "12px}.note{color:#555;font-size:12px}details{margin:4px 0}";

/* Checks after load that every plot drew something (body[data-rendered]) and that no text of
 * a plot reaches outside its plot's box, where it would be clipped (body[data-clipped]: how
 * many, body[data-clipped-texts]: the first of them). */
static const char check_script[] =
    "<script>addEventListener('load',function(){var b=document.body;try{var s=document."
    "querySelectorAll('svg.plot'),d=0,c=[];s.forEach(function(e){var r=e.getBoundingClientRect"
    "();if(r.width>0&&r.height>0&&e.querySelector('path,circle,rect,text'))d++;var i=(r.width-"
    "e.width.baseVal.value)/2;e.querySelectorAll('text').forEach(function(t){var q=t."
    "getBoundingClientRect();if(q.width>0&&(q.left<r.left+i-0.5||q.right>r.right-i+0.5||q.top<"
    "r.top+i-0.5||q.bottom>r.bottom-i+0.5))c.push(t.textContent)})});b.dataset.rendered=(d==="
    "s.length?'ok':'partial')+':'+d+'/'+s.length;b.dataset.clipped=c.length;b.dataset."
    "clippedTexts=c.slice(0,10).join(' | ')}catch(x){b.dataset.rendered='error:'+x}})"
    "</script>";

int html_report(FILE *f, const struct rd_run *runs, size_t n, const struct cmp_result *cmp,
		const struct html_opts *o)
{
	const char *labels[MAX_SERIES];
	struct series s[MAX_SERIES];
	size_t ns = rd_labels(runs, n, labels, MAX_SERIES);

	memset(s, 0, sizeof(s));
	for (size_t j = 0; j < ns; j++) {
		s[j].label = labels[j];
		s[j].color = palette[j];
		pool(&s[j], runs, n);
	}
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>", f);
	text_html_escape(f, o->title);
	fprintf(f, "</title><style>%s</style></head>\n<body>\n<h1>", style);
	text_html_escape(f, o->title);
	fputs("</h1>\n", f);
	if (o->subtitle) {
		fputs("<div class=\"sub\">", f);
		text_html_escape(f, o->subtitle);
		fputs("</div>\n", f);
	}
	fputs("<h2>Summary</h2>\n", f);
	if (cmp)
		summary_cmp(f, cmp);
	else
		summary_series(f, runs, n, s, ns);
	fputs("<h2>Fault latency</h2>\n<div class=\"plots\">\n", f);
	for (int c = RD_BOTH; c >= 0; c--)
		cdf_plot(f, s, ns, c);
	fputs("</div>\n<div class=\"plots\">\n", f);
	for (int c = RD_BOTH; c >= 0; c--)
		tail_plot(f, s, ns, c);
	fputs("</div>\n<h2>Huge pages</h2>\n<div class=\"plots\">\n", f);
	huge_plot(f, runs, n, s, ns);
	fputs("</div>\n", f);
	order_mix_section(f, runs, n, s, ns);
	fputs("<h2>AnonHugePages coverage over time</h2>\n<p class=\"note\">Managed "
	      "anonymous memory mapped huge, against all managed anonymous memory, sampled over "
	      "each run (a line per run, dashed for the second and third; a gap where nothing was "
	      "mapped).</p>\n<div class=\"plots\">\n",
	      f);
	for (size_t j = 0; j < ns; j++)
		coverage_plot(f, runs, n, &s[j]);
	fputs("</div>\n<h2>Stalls</h2>\n<div class=\"plots\">\n", f);
	timeline(f, runs, n);
	fputs("</div>\n<h2>Stall groups</h2>\n<p class=\"note\">Faults slower than the stall "
	      "threshold, grouped by cause and stacks over the runs of each series, longest total "
	      "first (the 2011 reports' grouping).</p>\n",
	      f);
	for (size_t j = 0; j < ns; j++)
		stall_groups(f, runs, n, &s[j]);
	fputs("<h2>vmstat</h2>\n", f);
	vmstat_table(f, runs, n, s, ns);
	fputs("<h2>Runs</h2>\n", f);
	runs_table(f, runs, n);
	fputs("<h2>Processes</h2>\n<p class=\"note\">Each run's processes, busiest first: a "
	      "process that exec'd is one row (its last program, its counters those of all its "
	      "programs).</p>\n",
	      f);
	processes_section(f, runs, n);
	fputs("<h2>Configuration</h2>\n", f);
	config_section(f, runs, n, s, ns, o->config);
	fprintf(f, "<p class=\"note\">thpemu %s</p>\n%s\n</body></html>\n", THPEMU_VERSION,
		check_script);
	for (size_t j = 0; j < ns; j++)
		for (int c = 0; c < RD_NCLASS; c++)
			free(s[j].b[c]);
	return ferror(f) ? -EIO : 0;
}

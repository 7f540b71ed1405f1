/* THP coverage over time (see coverage.h). */
#include "obs/coverage.h"

#include <stdio.h>
#include <string.h>

#define FRAME_KB 4 /* MM_PAGE_SIZE / 1024 */

void obs_coverage_init(struct obs_coverage *c, uint64_t t0_ns, uint64_t interval_ns)
{
	memset(c, 0, sizeof(*c));
	c->t0_ns = t0_ns;
	c->interval_ns = interval_ns ? interval_ns : 1;
}

uint64_t obs_coverage_next(const struct obs_coverage *c)
{
	uint64_t t;

	if (!c->n)
		return c->t0_ns;
	t = c->s[c->n - 1].t_ns;
	return c->t0_ns + (t / c->interval_ns + 1) * c->interval_ns;
}

/* Keep every other sample (the first, the third, ...) and double the interval. */
static void thin(struct obs_coverage *c)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < c->n; i += 2)
		c->s[k++] = c->s[i];
	c->n = k;
	c->interval_ns *= 2;
}

/* The previous sample's value held from its time until t. */
static void integrate(struct obs_coverage *c, uint64_t t)
{
	const struct obs_cov_sample *p = &c->last;
	uint64_t dt;

	if (!c->have_last || t <= p->t_ns || !p->anon)
		return;
	dt = t - p->t_ns;
	c->anon_ns += dt;
	c->area_ns += (double)dt * ((double)p->huge / (double)p->anon);
}

static bool take(struct obs_coverage *c, uint64_t now_ns, uint32_t huge, uint32_t anon)
{
	uint64_t t;

	if (now_ns < c->t0_ns)
		return false;
	t = now_ns - c->t0_ns;
	if (c->have_last && t < c->last.t_ns)
		return false;
	if (huge > anon)
		huge = anon; /* a count read between two updates: never above 100 % */
	integrate(c, t);
	c->last = (struct obs_cov_sample){.t_ns = t, .huge = huge, .anon = anon};
	c->have_last = true;
	/* the last sample with at least half the peak: the peak itself, or one after it */
	if (anon > c->peak) {
		c->peak = anon;
		c->end = c->last;
		c->have_end = true;
	} else if (anon && anon >= c->peak - c->peak / 2) {
		c->end = c->last;
	}
	return true;
}

static void keep(struct obs_coverage *c)
{
	if (c->n && c->s[c->n - 1].t_ns == c->last.t_ns) {
		c->s[c->n - 1] = c->last; /* the same instant: the newer value */
		return;
	}
	if (c->n == OBS_COV_MAX_SAMPLES)
		thin(c);
	c->s[c->n++] = c->last;
}

void obs_coverage_sample(struct obs_coverage *c, uint64_t now_ns, uint32_t huge, uint32_t anon)
{
	bool due = now_ns >= obs_coverage_next(c);

	if (take(c, now_ns, huge, anon) && due)
		keep(c);
}

void obs_coverage_finish(struct obs_coverage *c, uint64_t now_ns, uint32_t huge, uint32_t anon)
{
	if (take(c, now_ns, huge, anon))
		keep(c);
}

void obs_coverage_close(struct obs_coverage *c, uint64_t now_ns)
{
	if (!c->have_last || now_ns < c->t0_ns || now_ns - c->t0_ns <= c->last.t_ns)
		return;
	integrate(c, now_ns - c->t0_ns);
	c->last.t_ns = now_ns - c->t0_ns;
}

static double pct(double part, double whole)
{
	double p = whole > 0 ? 100.0 * part / whole : 0.0;

	return p < 0 ? 0 : p > 100 ? 100 : p;
}

double obs_coverage_end_pct(const struct obs_coverage *c)
{
	return c->have_end ? pct(c->end.huge, c->end.anon) : 0.0;
}

double obs_coverage_tw_pct(const struct obs_coverage *c)
{
	return pct(c->area_ns, (double)c->anon_ns);
}

void obs_report_coverage(struct json_w *w, const struct obs_coverage *c)
{
	jw_obj_begin(w, "coverage");
	jw_dbl(w, "interval_ms", (double)c->interval_ns / 1e6, 3);
	jw_arr_begin(w, "samples");
	for (uint32_t i = 0; i < c->n; i++) { /* one line per sample, pretty or not */
		char buf[96];

		snprintf(buf, sizeof(buf), "[%llu.%03llu,%llu,%llu]",
			 (unsigned long long)(c->s[i].t_ns / 1000000),
			 (unsigned long long)(c->s[i].t_ns / 1000 % 1000),
			 (unsigned long long)c->s[i].huge * FRAME_KB,
			 (unsigned long long)c->s[i].anon * FRAME_KB);
		jw_raw(w, NULL, buf);
	}
	jw_arr_end(w);
	jw_dbl(w, "end_pct", obs_coverage_end_pct(c), 2);
	if (c->have_end)
		jw_dbl(w, "end_t_ms", (double)c->end.t_ns / 1e6, 3);
	else
		jw_null(w, "end_t_ms");
	jw_dbl(w, "time_weighted_pct", obs_coverage_tw_pct(c), 2);
	jw_dbl(w, "anon_ms", (double)c->anon_ns / 1e6, 3);
	jw_obj_end(w);
}

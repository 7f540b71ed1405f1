/* Statistics for A/B runs (see stats.h for every definition used).
 *
 * Mirrors mmtests' compare-kernels arithmetic (Stat.pm: calc_stddev, calc_coeffvar, the
 * "_mean-95" subselection, calc_meanci, cidiff, pndiff, pdiff) and adds two tests mmtests does
 * not have but an A/B of tail-heavy latency needs: a seeded bootstrap interval of the difference
 * of means and the Mann-Whitney U test.
 */
#include "obs/stats.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/rng.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double *sorted_copy(const double *x, size_t n)
{
	double *c = malloc((n ? n : 1) * sizeof(*c));

	if (!c)
		return NULL;
	memcpy(c, x, n * sizeof(*c));
	qsort(c, n, sizeof(*c), cmp_double);
	return c;
}

double obs_stats_quantile_sorted(const double *sorted, size_t n, double q)
{
	double h, lo;
	size_t i;

	if (n == 0 || !(q >= 0 && q <= 1))
		return NAN;
	h = (double)(n - 1) * q;
	lo = floor(h);
	i = (size_t)lo;
	if (i + 1 >= n)
		return sorted[n - 1];
	return sorted[i] + (h - lo) * (sorted[i + 1] - sorted[i]);
}

int obs_stats_quantile(const double *x, size_t n, double q, double *out)
{
	double *c;

	if (n == 0 || !(q >= 0 && q <= 1))
		return -EINVAL;
	c = sorted_copy(x, n);
	if (!c)
		return -ENOMEM;
	*out = obs_stats_quantile_sorted(c, n, q);
	free(c);
	return 0;
}

double obs_stats_mean(const double *x, size_t n)
{
	double s = 0;

	if (n == 0)
		return NAN;
	for (size_t i = 0; i < n; i++)
		s += x[i];
	return s / (double)n;
}

double obs_stats_stddev(const double *x, size_t n)
{
	double m = obs_stats_mean(x, n), d = 0;

	if (n < 2)
		return NAN;
	for (size_t i = 0; i < n; i++)
		d += (x[i] - m) * (x[i] - m);
	return sqrt(d / (double)(n - 1));
}

int obs_stats_multiops(const double *x, size_t n, bool lower_is_better, struct obs_multiops *m)
{
	double *c;
	size_t keep = n * 95 / 100;

	if (n == 0)
		return -EINVAL;
	c = sorted_copy(x, n);
	if (!c)
		return -ENOMEM;
	if (keep < 1)
		keep = 1;
	m->n = n;
	m->min = c[0];
	m->max = c[n - 1];
	m->amean = obs_stats_mean(c, n);
	m->stddev = n < 2 ? 0 : obs_stats_stddev(c, n);
	m->coeffvar = m->amean != 0 ? m->stddev * 100 / m->amean : 0;
	m->bamean95 = obs_stats_mean(lower_is_better ? c : c + (n - keep), keep);
	m->meanci = obs_stats_normal_quantile(0.975) * m->stddev;
	free(c);
	return 0;
}

double obs_stats_cidiff(double new_mean, double new_ci, double base_mean, double base_ci)
{
	double diff = new_mean - base_mean, cisum = new_ci + base_ci;

	return cisum == 0 ? diff : diff / cisum;
}

bool obs_stats_significant(double cidiff)
{
	return fabs(cidiff) > 1;
}

const char *obs_stats_significance_why(size_t na, size_t nb, char *buf, size_t len)
{
	if (na >= OBS_STATS_MIN_RUNS && nb >= OBS_STATS_MIN_RUNS)
		return NULL;
	if (na < OBS_STATS_MIN_RUNS && nb < OBS_STATS_MIN_RUNS)
		snprintf(buf, len, "significance needs >= %d runs per side; A has %zu, B has %zu",
			 OBS_STATS_MIN_RUNS, na, nb);
	else
		snprintf(buf, len, "significance needs >= %d runs per side; %s has %zu",
			 OBS_STATS_MIN_RUNS, na < OBS_STATS_MIN_RUNS ? "A" : "B",
			 na < OBS_STATS_MIN_RUNS ? na : nb);
	return buf;
}

double obs_stats_pndiff(double new_value, double base)
{
	if (new_value == base)
		return 0;
	if (new_value == 0)
		return 100;
	if (base == 0)
		return -99;
	return 100 - new_value * 100 / base;
}

double obs_stats_pdiff(double new_value, double base)
{
	if (new_value == base || new_value == 0)
		return 0;
	if (base == 0)
		return 100;
	return new_value * 100 / base - 100;
}

double obs_stats_normal_cdf(double z)
{
	return 0.5 * erfc(-z / M_SQRT2);
}

/* Inverse normal CDF: a central/tail rational start (Acklam's coefficients) refined by two
 * Newton steps on erfc, which brings it to double precision. */
double obs_stats_normal_quantile(double p)
{
	static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
				   -2.759285104469687e+02, 1.383577518672690e+02,
				   -3.066479806614716e+01, 2.506628277459239e+00};
	static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
				   -1.556989798598866e+02, 6.680131188771972e+01,
				   -1.328068155288572e+01};
	static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
				   -2.400758277161838e+00, -2.549732539343734e+00,
				   4.374664141464968e+00,  2.938163982698783e+00};
	static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
				   2.445134137142996e+00, 3.754408661907416e+00};
	double q, r, x;

	if (!(p > 0 && p < 1))
		return p == 0 ? -INFINITY : p == 1 ? INFINITY : NAN;
	if (p < 0.02425 || p > 1 - 0.02425) {
		q = sqrt(-2 * log(p < 0.5 ? p : 1 - p));
		x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
		    ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
		if (p > 0.5)
			x = -x;
	} else {
		q = p - 0.5;
		r = q * q;
		x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
		    (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
	}
	for (int i = 0; i < 2; i++) {
		double e = obs_stats_normal_cdf(x) - p;

		x -= e * sqrt(2 * M_PI) * exp(x * x / 2);
	}
	return x;
}

/* ---- Bootstrap ------------------------------------------------------------------------ */

static double resample_mean(struct rng *r, const double *x, size_t n)
{
	double s = 0;

	for (size_t i = 0; i < n; i++)
		s += x[rng_below(r, n)];
	return s / (double)n;
}

int obs_stats_bootstrap_diff(const double *a, size_t na, const double *b, size_t nb,
			     unsigned resamples, double level, uint64_t seed,
			     struct obs_bootstrap *out)
{
	struct rng r;
	double *d;

	if (!na || !nb || !resamples || !(level > 0 && level < 1))
		return -EINVAL;
	d = malloc(resamples * sizeof(*d));
	if (!d)
		return -ENOMEM;
	rng_seed(&r, seed);
	for (unsigned i = 0; i < resamples; i++) {
		double ma = resample_mean(&r, a, na);

		d[i] = resample_mean(&r, b, nb) - ma;
	}
	qsort(d, resamples, sizeof(*d), cmp_double);
	out->diff = obs_stats_mean(b, nb) - obs_stats_mean(a, na);
	out->lo = obs_stats_quantile_sorted(d, resamples, (1 - level) / 2);
	out->hi = obs_stats_quantile_sorted(d, resamples, (1 + level) / 2);
	out->level = level;
	out->resamples = resamples;
	out->seed = seed;
	free(d);
	return 0;
}

/* ---- Mann-Whitney U -------------------------------------------------------------------- */

#define MW_EXACT_MAX 30

struct ranked {
	double v;
	int group; /* 0 = a, 1 = b */
};

static int cmp_ranked(const void *x, const void *y)
{
	return cmp_double(&((const struct ranked *)x)->v, &((const struct ranked *)y)->v);
}

/* Sum of a's mid-ranks; *tie_term gets sum(t^3 - t) over tie groups. */
static double rank_sum_a(struct ranked *all, size_t n, double *tie_term)
{
	double ra = 0;
	size_t i = 0;

	*tie_term = 0;
	qsort(all, n, sizeof(*all), cmp_ranked);
	while (i < n) {
		size_t j = i;
		double mid, t;

		while (j + 1 < n && all[j + 1].v == all[i].v)
			j++;
		mid = (double)(i + j + 2) / 2; /* ranks are 1-based: (i+1 + j+1) / 2 */
		t = (double)(j - i + 1);
		*tie_term += t * t * t - t;
		for (size_t k = i; k <= j; k++)
			if (all[k].group == 0)
				ra += mid;
		i = j + 1;
	}
	return ra;
}

/* P(U <= u) under the null for sizes m, n without ties: the coefficients of the Gaussian
 * binomial [m + n choose m]_q count the arrangements with each U. */
static int exact_cdf(size_t m, size_t n, size_t u, double *out)
{
	size_t len = m * n + 1;
	double *f = calloc(len, sizeof(*f)), total = 0, below = 0;

	if (!f)
		return -ENOMEM;
	f[0] = 1;
	for (size_t i = 1; i <= n; i++) {
		/* multiply by (1 - q^(m+i)), then divide by (1 - q^i) */
		for (size_t k = len; k-- > m + i;)
			f[k] -= f[k - (m + i)];
		for (size_t k = i; k < len; k++)
			f[k] += f[k - i];
	}
	for (size_t k = 0; k < len; k++) {
		total += f[k];
		if (k <= u)
			below += f[k];
	}
	*out = below / total;
	free(f);
	return 0;
}

static void normal_p(struct obs_mannwhitney *o, size_t na, size_t nb, double tie_term)
{
	double nn = (double)(na + nb), mu = (double)na * (double)nb / 2;
	double var = (double)na * (double)nb / 12 * ((nn + 1) - tie_term / (nn * (nn - 1)));
	double dev = fabs(o->u_a - mu) - 0.5;

	if (dev < 0)
		dev = 0;
	if (!(var > 0)) {
		o->z = 0;
		o->p = 1;
		return;
	}
	o->z = (o->u_a >= mu ? dev : -dev) / sqrt(var);
	o->p = erfc(fabs(o->z) / M_SQRT2);
	if (o->p > 1)
		o->p = 1;
}

int obs_stats_mann_whitney(const double *a, size_t na, const double *b, size_t nb,
			   struct obs_mannwhitney *out)
{
	struct ranked *all;
	double tie_term, umin;
	int err = 0;

	if (!na || !nb)
		return -EINVAL;
	all = malloc((na + nb) * sizeof(*all));
	if (!all)
		return -ENOMEM;
	for (size_t i = 0; i < na; i++)
		all[i] = (struct ranked){a[i], 0};
	for (size_t i = 0; i < nb; i++)
		all[na + i] = (struct ranked){b[i], 1};
	out->u_a = rank_sum_a(all, na + nb, &tie_term) - (double)na * (double)(na + 1) / 2;
	out->u_b = (double)na * (double)nb - out->u_a;
	out->ties = tie_term > 0;
	out->exact = !out->ties && na <= MW_EXACT_MAX && nb <= MW_EXACT_MAX;
	out->z = 0;
	if (out->exact) {
		umin = out->u_a < out->u_b ? out->u_a : out->u_b;
		err = exact_cdf(na, nb, (size_t)umin, &out->p);
		out->p = fmin(1, 2 * out->p);
	} else {
		normal_p(out, na, nb, tie_term);
	}
	free(all);
	return err;
}

int obs_stats_mann_whitney_grouped(const uint64_t *ca, const uint64_t *cb, size_t ngroups,
				   struct obs_mannwhitney *out)
{
	double na = 0, nb = 0, below_b = 0, tie_term = 0;
	struct obs_mannwhitney o = {0};

	for (size_t k = 0; k < ngroups; k++) {
		double t = (double)ca[k] + (double)cb[k];

		na += (double)ca[k];
		nb += (double)cb[k];
		tie_term += t * t * t - t;
	}
	if (na == 0 || nb == 0)
		return -EINVAL;
	for (size_t k = 0; k < ngroups; k++) {
		/* a's samples here beat every b below and tie with the b's here */
		o.u_a += (double)ca[k] * (below_b + (double)cb[k] / 2);
		below_b += (double)cb[k];
	}
	o.u_b = na * nb - o.u_a;
	o.ties = tie_term > 0;
	o.exact = false;
	normal_p(&o, (size_t)na, (size_t)nb, tie_term);
	*out = o;
	return 0;
}

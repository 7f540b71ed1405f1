/* Statistics for A/B comparisons of runs (`thpemu ab`), in mmtests' terms where mmtests has one.
 *
 * Definitions (stated so results can be checked by hand):
 *  - Quantile q in [0, 1] of n sorted samples: linear interpolation between closest ranks,
 *    Hyndman & Fan type 7 (R's default, numpy's "linear"): h = (n - 1) q,
 *    Q = x[floor h] + (h - floor h) (x[floor h + 1] - x[floor h]).
 *  - Multiops summary as mmtests' Summarise.pm/Stat.pm: Min, Amean, Stddev (sample, n - 1),
 *    CoeffVar = 100 Stddev / Amean, Max, BAmean-95 = mean of the best int(0.95 n) samples (at
 *    least one; "best" = lowest when lower is better). mmtests uses the harmonic mean for
 *    higher-is-better metrics; here the arithmetic mean is used in both directions.
 *  - meanci: mmtests' confidence half-width, qnorm(0.975) x Stddev (not divided by sqrt(n):
 *    that is how mmtests computes it).
 *  - cidiff(new, new_ci, base, base_ci) = (new - base) / (new_ci + base_ci), or new - base when
 *    both half-widths are 0; mmtests marks a difference significant when |cidiff| > 1.
 *  - pndiff(new, base) = 100 - 100 new / base (lower is better: positive = improvement);
 *    pdiff(new, base) = 100 new / base - 100 (higher is better). Edge cases as mmtests.
 *  - Bootstrap: percentile interval of mean(b*) - mean(a*) over N resamples of each group with
 *    replacement, drawn from util/rng.h with a fixed seed (same inputs + seed = same interval).
 *  - Mann-Whitney U (two-sided): U_a = R_a - n_a (n_a + 1) / 2 with mid-ranks for ties. Exact p
 *    from the null distribution of U when there are no ties and n_a, n_b <= 30; otherwise the
 *    normal approximation with tie correction and continuity correction 0.5.
 * Everything here allocates: report time only, never the fault path.
 */
#ifndef THPEMU_OBS_STATS_H
#define THPEMU_OBS_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Quantile of already sorted samples (type 7). NaN for n == 0 or q outside [0, 1]. */
double obs_stats_quantile_sorted(const double *sorted, size_t n, double q);
/* The same for unsorted samples (sorts a copy). Returns 0, -EINVAL or -ENOMEM. */
int obs_stats_quantile(const double *x, size_t n, double q, double *out);

double obs_stats_mean(const double *x, size_t n);   /* NaN for n == 0 */
double obs_stats_stddev(const double *x, size_t n); /* sample stddev; NaN for n < 2 */

struct obs_multiops {
	size_t n;
	double min, amean, stddev, coeffvar, max, bamean95;
	double meanci; /* mmtests' half-width: qnorm(0.975) * stddev (0 when n < 2) */
};
/* mmtests' Multiops summary of x. Returns 0, -EINVAL (n == 0) or -ENOMEM. */
int obs_stats_multiops(const double *x, size_t n, bool lower_is_better, struct obs_multiops *m);

double obs_stats_cidiff(double new_mean, double new_ci, double base_mean, double base_ci);
bool obs_stats_significant(double cidiff); /* mmtests: |cidiff| > 1 */
/* Can a difference between groups of na and nb runs be called significant? Each side needs at
 * least OBS_STATS_MIN_RUNS runs: with one, there is no run-to-run spread, a bootstrap interval has
 * zero width and every difference would look real. NULL when it can; otherwise the reason,
 * e.g. "significance needs >= 2 runs per side; A has 1", written into buf. */
#define OBS_STATS_MIN_RUNS 2
const char *obs_stats_significance_why(size_t na, size_t nb, char *buf, size_t len);
double obs_stats_pndiff(double new_value, double base);
double obs_stats_pdiff(double new_value, double base);

/* Standard normal: CDF, upper tail, and quantile (p in (0, 1)). */
double obs_stats_normal_cdf(double z);
double obs_stats_normal_quantile(double p);

struct obs_bootstrap {
	double diff;   /* mean(b) - mean(a) of the samples themselves */
	double lo, hi; /* percentile interval at the requested level */
	double level;  /* e.g. 0.95 */
	unsigned resamples;
	uint64_t seed;
};
/* Bootstrap interval of mean(b) - mean(a). Returns 0, -EINVAL (an empty group, no resamples,
 * level outside (0, 1)) or -ENOMEM. */
int obs_stats_bootstrap_diff(const double *a, size_t na, const double *b, size_t nb,
			     unsigned resamples, double level, uint64_t seed,
			     struct obs_bootstrap *out);

struct obs_mannwhitney {
	double u_a; /* U statistic of group a (pairs where a > b, ties count half) */
	double u_b; /* n_a n_b - u_a */
	double z;   /* normal score (continuity-corrected; 0 when exact) */
	double p;   /* two-sided p-value */
	bool exact; /* p from the exact null distribution */
	bool ties;  /* ties were present (mid-ranks used) */
};
/* Returns 0, -EINVAL (an empty group) or -ENOMEM. */
int obs_stats_mann_whitney(const double *a, size_t na, const double *b, size_t nb,
			   struct obs_mannwhitney *out);
/* The same test on grouped samples: ca[k] samples of a and cb[k] of b share the k-th value,
 * groups in ascending order of value (histogram buckets: a bucket is a tie group). Always the
 * normal approximation with tie and continuity corrections. Returns 0 or -EINVAL (an empty
 * group). u_a / (n_a n_b) estimates P(a > b) + P(a = b) / 2. */
int obs_stats_mann_whitney_grouped(const uint64_t *ca, const uint64_t *cb, size_t ngroups,
				   struct obs_mannwhitney *out);

#endif

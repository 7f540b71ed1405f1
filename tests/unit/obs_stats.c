/* A/B statistics (core/obs/stats.c) against known values: type-7 percentiles, mmtests'
 * Multiops, cidiff/pndiff/pdiff, the normal quantile, a seeded bootstrap, and Mann-Whitney U
 * against the printed critical-value table and a hand-worked tied example. */
#include "harness.h"
#include "obs/stats.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

TEST(percentiles_interpolate_linearly_between_ranks)
{
	const double x[] = {50, 15, 40, 20, 35}; /* unsorted on purpose */
	const double s[] = {15, 20, 35, 40, 50};
	double v;

	EXPECT_NEAR(obs_stats_quantile_sorted(s, 5, 0.0), 15, 1e-12);
	EXPECT_NEAR(obs_stats_quantile_sorted(s, 5, 0.4), 29, 1e-12); /* h = 1.6: 20 + 0.6 * 15 */
	EXPECT_NEAR(obs_stats_quantile_sorted(s, 5, 0.5), 35, 1e-12);
	EXPECT_NEAR(obs_stats_quantile_sorted(s, 5, 0.9), 46, 1e-12); /* h = 3.6: 40 + 0.6 * 10 */
	EXPECT_NEAR(obs_stats_quantile_sorted(s, 5, 1.0), 50, 1e-12);
	ASSERT_EQ(obs_stats_quantile(x, 5, 0.4, &v), 0);
	EXPECT_NEAR(v, 29, 1e-12);
	EXPECT(isnan(obs_stats_quantile_sorted(s, 0, 0.5)));
	EXPECT(isnan(obs_stats_quantile_sorted(s, 5, 1.5)));
	EXPECT_EQ(obs_stats_quantile(x, 0, 0.5, &v), -EINVAL);
	EXPECT_NEAR(obs_stats_quantile_sorted(s, 1, 0.99), 15, 0);
}

TEST(multiops_matches_mmtests_definitions)
{
	double x[20];
	struct obs_multiops m;

	for (int i = 0; i < 20; i++)
		x[i] = 20 - i; /* 20 .. 1 */
	ASSERT_EQ(obs_stats_multiops(x, 20, true, &m), 0);
	EXPECT_EQ(m.n, 20);
	EXPECT_NEAR(m.min, 1, 0);
	EXPECT_NEAR(m.max, 20, 0);
	EXPECT_NEAR(m.amean, 10.5, 1e-12);
	EXPECT_NEAR(m.stddev, 5.916079783099616, 1e-12); /* sample stddev (n - 1) */
	EXPECT_NEAR(m.coeffvar, 56.34361698190111, 1e-9);
	EXPECT_NEAR(m.bamean95, 10.0, 1e-12);		 /* best int(0.95 * 20) = 19: 1..19 */
	EXPECT_NEAR(m.meanci, 11.595303304540783, 1e-9); /* qnorm(0.975) * stddev */
	ASSERT_EQ(obs_stats_multiops(x, 20, false, &m), 0);
	EXPECT_NEAR(m.bamean95, 11.0, 1e-12); /* higher is better: 2..20 */
	ASSERT_EQ(obs_stats_multiops(x, 1, true, &m), 0);
	EXPECT_NEAR(m.stddev, 0, 0);
	EXPECT_NEAR(m.bamean95, 20, 0); /* at least one sample */
	EXPECT_EQ(obs_stats_multiops(x, 0, true, &m), -EINVAL);
}

TEST(cidiff_pndiff_pdiff_follow_mmtests)
{
	EXPECT_NEAR(obs_stats_cidiff(12, 1, 10, 0.5), 4.0 / 3.0, 1e-12);
	EXPECT(obs_stats_significant(obs_stats_cidiff(12, 1, 10, 0.5)));
	EXPECT(!obs_stats_significant(obs_stats_cidiff(11, 1, 10, 0.5)));
	EXPECT_NEAR(obs_stats_cidiff(12, 0, 10, 0), 2, 0); /* no spread: plain difference */
	EXPECT_NEAR(obs_stats_pndiff(80, 100), 20, 1e-12); /* lower is better: +20 % better */
	EXPECT_NEAR(obs_stats_pndiff(125, 100), -25, 1e-12);
	EXPECT_NEAR(obs_stats_pndiff(100, 100), 0, 0);
	EXPECT_NEAR(obs_stats_pndiff(0, 100), 100, 0);
	EXPECT_NEAR(obs_stats_pndiff(5, 0), -99, 0);
	EXPECT_NEAR(obs_stats_pdiff(120, 100), 20, 1e-12);
	EXPECT_NEAR(obs_stats_pdiff(0, 100), 0, 0);
	EXPECT_NEAR(obs_stats_pdiff(5, 0), 100, 0);
	/* the 2018 thpscale line: 864.83 -> 1006.88 us is -16.43 % */
	EXPECT_NEAR(obs_stats_pndiff(1006.88, 864.83), -16.4252, 1e-3);
}

TEST(significance_needs_two_runs_per_side)
{
	char why[96];

	EXPECT(obs_stats_significance_why(2, 2, why, sizeof(why)) == NULL);
	EXPECT(obs_stats_significance_why(5, 30, why, sizeof(why)) == NULL);
	EXPECT(obs_stats_significance_why(1, 3, why, sizeof(why)) == why);
	EXPECT(!strcmp(why, "significance needs >= 2 runs per side; A has 1"));
	EXPECT(obs_stats_significance_why(4, 0, why, sizeof(why)) == why);
	EXPECT(!strcmp(why, "significance needs >= 2 runs per side; B has 0"));
	EXPECT(obs_stats_significance_why(1, 1, why, sizeof(why)) == why);
	EXPECT(!strcmp(why, "significance needs >= 2 runs per side; A has 1, B has 1"));
}

TEST(normal_quantile_and_cdf_are_inverse)
{
	EXPECT_NEAR(obs_stats_normal_quantile(0.975), 1.959963984540054, 1e-12);
	EXPECT_NEAR(obs_stats_normal_quantile(0.5), 0, 1e-14);
	EXPECT_NEAR(obs_stats_normal_quantile(0.001), -3.090232306167813, 1e-11);
	EXPECT_NEAR(obs_stats_normal_quantile(1e-9), -5.997807015008, 1e-8);
	EXPECT_NEAR(obs_stats_normal_cdf(1.959963984540054), 0.975, 1e-13);
	EXPECT(isnan(obs_stats_normal_quantile(1.5)));
}

/* Group a around 100, b the same shape shifted by exactly +25: the true difference is 25. */
static void shifted_groups(double *a, double *b, int n)
{
	for (int i = 0; i < n; i++)
		a[i] = 100 + 10 * sin(i * 1.7) + (i % 7);
	for (int i = 0; i < n; i++)
		b[i] = a[(i * 11) % n] + 25; /* a permutation of a (11 is coprime to n), shifted */
}

TEST(bootstrap_is_reproducible_and_covers_the_true_difference)
{
	double a[30], b[30];
	struct obs_bootstrap r1, r2, r3;

	shifted_groups(a, b, 30);
	ASSERT_EQ(obs_stats_bootstrap_diff(a, 30, b, 30, 10000, 0.95, 42, &r1), 0);
	ASSERT_EQ(obs_stats_bootstrap_diff(a, 30, b, 30, 10000, 0.95, 42, &r2), 0);
	ASSERT_EQ(obs_stats_bootstrap_diff(a, 30, b, 30, 10000, 0.95, 7, &r3), 0);
	printf("  diff %.4f  CI95 [%.4f, %.4f] (seed 42), [%.4f, %.4f] (seed 7)\n", r1.diff, r1.lo,
	       r1.hi, r3.lo, r3.hi);
	EXPECT_NEAR(r1.diff, 25, 1e-9);
	EXPECT(r1.lo == r2.lo && r1.hi == r2.hi); /* same seed, same interval, bit for bit */
	EXPECT(r1.lo != r3.lo || r1.hi != r3.hi);
	EXPECT(r1.lo < 25 && 25 < r1.hi);
	EXPECT(r3.lo < 25 && 25 < r3.hi);
	EXPECT(r1.lo > 0); /* the shift is far outside the noise */
	EXPECT(r1.hi - r1.lo < 15);
	EXPECT_EQ(obs_stats_bootstrap_diff(a, 0, b, 30, 100, 0.95, 1, &r1), -EINVAL);
	EXPECT_EQ(obs_stats_bootstrap_diff(a, 30, b, 30, 100, 1.0, 1, &r1), -EINVAL);
}

TEST(bootstrap_of_identical_groups_straddles_zero)
{
	double a[40], b[40];
	struct obs_bootstrap r;

	for (int i = 0; i < 40; i++)
		a[i] = b[39 - i] = 50 + 20 * cos(i * 0.9);
	ASSERT_EQ(obs_stats_bootstrap_diff(a, 40, b, 40, 5000, 0.95, 3, &r), 0);
	EXPECT_NEAR(r.diff, 0, 1e-9);
	EXPECT(r.lo < 0 && 0 < r.hi);
}

/* Ranks 1..20 split into two groups of 10; a holds the given ranks. */
static void split_ranks(const int *ranks_a, double *a, double *b)
{
	int na = 0, nb = 0;

	for (int r = 1; r <= 20; r++) {
		bool in_a = false;

		for (int i = 0; i < 10; i++)
			in_a |= ranks_a[i] == r;
		if (in_a)
			a[na++] = r * 1.5;
		else
			b[nb++] = r * 1.5;
	}
}

TEST(mann_whitney_exact_matches_the_critical_value_table)
{
	/* Table of critical values, two-tailed alpha 0.05: n1 = n2 = 10 -> U <= 23 significant. */
	const int u23[10] = {1, 2, 3, 4, 5, 6, 7, 15, 17, 18}; /* rank sum 78: U = 78 - 55 = 23 */
	const int u24[10] = {1, 2, 3, 4, 5, 6, 7, 15, 17, 19}; /* U = 24 */
	double a[10], b[10];
	struct obs_mannwhitney r;

	split_ranks(u23, a, b);
	ASSERT_EQ(obs_stats_mann_whitney(a, 10, b, 10, &r), 0);
	EXPECT(r.exact && !r.ties);
	EXPECT_NEAR(r.u_a, 23, 0);
	EXPECT_NEAR(r.u_b, 77, 0);
	EXPECT_NEAR(r.p, 0.04325705254497824, 1e-12); /* 2 * 3996 / 184756 */
	EXPECT(r.p < 0.05);
	split_ranks(u24, a, b);
	ASSERT_EQ(obs_stats_mann_whitney(a, 10, b, 10, &r), 0);
	EXPECT_NEAR(r.p, 0.05242590227110351, 1e-12);
	EXPECT(r.p > 0.05);
	/* symmetric: swapping the groups swaps U, keeps p */
	ASSERT_EQ(obs_stats_mann_whitney(b, 10, a, 10, &r), 0);
	EXPECT_NEAR(r.u_a, 76, 0);
	EXPECT_NEAR(r.p, 0.05242590227110351, 1e-12);
}

TEST(mann_whitney_small_unequal_groups)
{
	/* n1 = 5, n2 = 7: the table's critical U is 5 (two-tailed 0.05) */
	const double a[5] = {1, 2, 3, 4, 10};
	const double b[7] = {5, 6, 7, 8, 9, 11, 12};
	struct obs_mannwhitney r;

	ASSERT_EQ(obs_stats_mann_whitney(a, 5, b, 7, &r), 0);
	EXPECT_NEAR(r.u_a, 5, 0); /* only 10 beats anything in b: 5, 6, 7, 8, 9 */
	EXPECT_NEAR(r.p, 0.047979797979797977, 1e-12);
}

TEST(mann_whitney_normal_approximation_with_ties)
{
	const double a[] = {1, 2, 2, 3, 3, 3, 4, 5, 5, 6, 7, 8};
	const double b[] = {3, 4, 5, 5, 6, 7, 7, 8, 8, 9, 9, 10, 11};
	struct obs_mannwhitney r;

	ASSERT_EQ(obs_stats_mann_whitney(a, 12, b, 13, &r), 0);
	EXPECT(r.ties && !r.exact);
	EXPECT_NEAR(r.u_a, 27.5, 1e-12);
	/* z = (|27.5 - 78| - 0.5) / sqrt(12*13/12 * (26 - 228/600)) with tie term 228 */
	EXPECT_NEAR(r.z, -2.7365338115399584, 1e-12);
	EXPECT_NEAR(r.p, 0.0062090213909689876, 1e-12);
	EXPECT_EQ(obs_stats_mann_whitney(a, 0, b, 13, &r), -EINVAL);
}

TEST(mann_whitney_large_groups_use_the_normal_approximation)
{
	double a[40], b[40];
	struct obs_mannwhitney r;

	for (int i = 0; i < 40; i++) {
		a[i] = i * 2;	  /* evens */
		b[i] = i * 2 + 1; /* odds: b slightly larger everywhere */
	}
	ASSERT_EQ(obs_stats_mann_whitney(a, 40, b, 40, &r), 0);
	EXPECT(!r.exact && !r.ties);
	EXPECT_NEAR(r.u_a, 780, 0); /* a_i > b_j iff i > j: 40 * 39 / 2 */
	EXPECT(r.p > 0.5);	    /* interleaved: no evidence of a shift */
	for (int i = 0; i < 40; i++)
		b[i] += 100;
	ASSERT_EQ(obs_stats_mann_whitney(a, 40, b, 40, &r), 0);
	EXPECT_NEAR(r.u_a, 0, 0);
	EXPECT(r.p < 1e-10);
}

TEST(mann_whitney_grouped_equals_the_tied_sample_test)
{
	/* the tied example above as (value, count) groups: values 1..11 */
	const uint64_t ca[] = {1, 2, 3, 1, 2, 1, 1, 1, 0, 0, 0};
	const uint64_t cb[] = {0, 0, 1, 1, 2, 1, 2, 2, 2, 1, 1};
	struct obs_mannwhitney r;

	ASSERT_EQ(obs_stats_mann_whitney_grouped(ca, cb, 11, &r), 0);
	EXPECT(r.ties && !r.exact);
	EXPECT_NEAR(r.u_a, 27.5, 1e-12);
	EXPECT_NEAR(r.u_b, 12 * 13 - 27.5, 1e-12);
	EXPECT_NEAR(r.z, -2.7365338115399584, 1e-12);
	EXPECT_NEAR(r.p, 0.0062090213909689876, 1e-12);
	EXPECT_EQ(obs_stats_mann_whitney_grouped(ca, cb, 0, &r), -EINVAL);
}

TEST(mann_whitney_grouped_handles_histogram_sized_counts)
{
	/* a million samples each, b one bucket slower: a clear, huge-n difference */
	uint64_t ca[3] = {1000000, 0, 0}, cb[3] = {0, 1000000, 0};
	struct obs_mannwhitney r;

	ASSERT_EQ(obs_stats_mann_whitney_grouped(ca, cb, 3, &r), 0);
	EXPECT_NEAR(r.u_a, 0, 0);
	EXPECT(r.p < 1e-100 && r.z < -1000);
	cb[0] = 1000000; /* identical distributions */
	cb[1] = 0;
	ASSERT_EQ(obs_stats_mann_whitney_grouped(ca, cb, 3, &r), 0);
	EXPECT_NEAR(r.u_a, 5e11, 1);
	EXPECT_NEAR(r.p, 1, 1e-9);
}

TEST_MAIN()

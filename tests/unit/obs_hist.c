/* Log-linear histogram (core/obs/hist.c): bucket geometry, percentiles within the stated
 * relative error, empty behaviour, merge, amend, and lock-free recording from several threads. */
#include "harness.h"
#include "obs/hist.h"

#include <pthread.h>

static struct obs_hist h, h2, h3;

TEST(buckets_tile_the_range_with_bounded_width)
{
	for (unsigned b = 0; b + 1 < OBS_HIST_BUCKETS; b++) {
		uint64_t lo = obs_hist_bucket_lo(b), hi = obs_hist_bucket_hi(b);

		ASSERT_LE(lo, hi);
		ASSERT_EQ(obs_hist_bucket_lo(b + 1), hi + 1);
		ASSERT_EQ(obs_hist_bucket(lo), b);
		ASSERT_EQ(obs_hist_bucket(hi), b);
		/* width relative to the smallest value it holds: below 1/32 */
		if (lo >= OBS_HIST_SUB)
			ASSERT_LE((hi - lo + 1) * OBS_HIST_SUB, lo);
		else
			ASSERT_EQ(lo, hi);
	}
	EXPECT_EQ(obs_hist_bucket(0), 0);
	EXPECT_EQ(obs_hist_bucket(31), 31);
	EXPECT_EQ(obs_hist_bucket(32), 32);
	EXPECT_EQ(obs_hist_bucket(UINT64_MAX), OBS_HIST_BUCKETS - 1);
	EXPECT(obs_hist_bucket_hi(OBS_HIST_BUCKETS - 1) == UINT64_MAX);
	/* 38 h of nanoseconds are still resolved */
	EXPECT_LT(obs_hist_bucket(38ULL * 3600 * 1000000000ULL), OBS_HIST_BUCKETS - 1);
}

static void expect_close_above(uint64_t got, uint64_t want)
{
	/* reported value is the bucket's upper edge: never below the sample, at most 1/32 above */
	EXPECT_GE(got, want);
	EXPECT_LE((double)got, (double)want * (1.0 + 1.0 / OBS_HIST_SUB));
}

TEST(percentiles_of_fixed_samples_within_relative_error)
{
	obs_hist_init(&h);
	for (uint64_t i = 1000; i >= 1; i--) /* 1 us .. 1 ms, recorded out of order */
		obs_hist_record(&h, i * 1000);
	EXPECT_EQ(h.count, 1000);
	EXPECT_EQ(h.min, 1000);
	EXPECT_EQ(h.max, 1000000);
	expect_close_above(obs_hist_quantile(&h, 0.50), 500000);
	expect_close_above(obs_hist_quantile(&h, 0.90), 900000);
	expect_close_above(obs_hist_quantile(&h, 0.99), 990000);
	expect_close_above(obs_hist_quantile(&h, 0.999), 999000);
	expect_close_above(obs_hist_quantile(&h, 0.0), 1000);
	EXPECT_EQ(obs_hist_quantile(&h, 1.0), 1000000); /* clamped to max */
	EXPECT_NEAR(obs_hist_mean(&h), 500500.0, 1e-6);
}

TEST(small_values_are_exact_and_ranks_follow_ceil)
{
	obs_hist_init(&h);
	for (uint64_t v = 1; v <= 10; v++)
		obs_hist_record(&h, v);
	EXPECT_EQ(obs_hist_quantile(&h, 0.5), 5);  /* rank ceil(5.0) = 5 */
	EXPECT_EQ(obs_hist_quantile(&h, 0.51), 6); /* rank ceil(5.1) = 6 */
	EXPECT_EQ(obs_hist_quantile(&h, 0.9), 9);
	EXPECT_EQ(obs_hist_quantile(&h, 0.99), 10);
	EXPECT_EQ(obs_hist_quantile(&h, 0.0), 1);
	EXPECT_EQ(obs_hist_quantile(&h, 0.01), 1);
}

TEST(single_sample_reports_itself)
{
	struct obs_hist_summary s;

	obs_hist_init(&h);
	obs_hist_record(&h, 1234567891ULL);
	obs_hist_summarise(&h, 1000, &s);
	EXPECT_EQ(s.count, 1);
	EXPECT_NEAR(s.p50, 1234567.891, 1e-9);
	EXPECT_NEAR(s.p999, 1234567.891, 1e-9);
	EXPECT_NEAR(s.max, 1234567.891, 1e-9);
	EXPECT_NEAR(s.mean, 1234567.891, 1e-9);
}

TEST(empty_histogram_reports_zeros)
{
	struct obs_hist_summary s;

	obs_hist_init(&h);
	EXPECT_EQ(obs_hist_quantile(&h, 0.5), 0);
	EXPECT_EQ(obs_hist_quantile(&h, 0.999), 0);
	EXPECT_EQ(obs_hist_quantile(&h, 1.0), 0);
	EXPECT_NEAR(obs_hist_mean(&h), 0.0, 0);
	memset(&s, 0xff, sizeof(s));
	obs_hist_summarise(&h, 1000, &s);
	EXPECT_EQ(s.count, 0);
	EXPECT(s.mean == 0 && s.p50 == 0 && s.p90 == 0 && s.p99 == 0 && s.p999 == 0 && s.max == 0);
}

TEST(huge_values_go_to_the_overflow_bucket_and_keep_max)
{
	obs_hist_init(&h);
	obs_hist_record(&h, UINT64_MAX / 2);
	EXPECT_EQ(h.counts[OBS_HIST_BUCKETS - 1], 1);
	EXPECT(obs_hist_quantile(&h, 0.5) == UINT64_MAX / 2);
}

TEST(merge_equals_recording_everything_in_one)
{
	struct rng_lcg {
		uint64_t x;
	} r = {42};

	obs_hist_init(&h);
	obs_hist_init(&h2);
	obs_hist_init(&h3);
	for (int i = 0; i < 20000; i++) {
		uint64_t v;

		r.x = r.x * 6364136223846793005ULL + 1442695040888963407ULL;
		v = (r.x >> 20) % 50000000; /* up to 50 ms */
		obs_hist_record(i % 3 ? &h : &h2, v);
		obs_hist_record(&h3, v);
	}
	obs_hist_merge(&h, &h2);
	EXPECT_EQ(h.count, h3.count);
	EXPECT_EQ(h.sum, h3.sum);
	EXPECT_EQ(h.min, h3.min);
	EXPECT_EQ(h.max, h3.max);
	EXPECT(memcmp(h.counts, h3.counts, sizeof(h.counts)) == 0);
	EXPECT_EQ(obs_hist_quantile(&h, 0.99), obs_hist_quantile(&h3, 0.99));

	/* merging an empty histogram changes nothing, min included */
	obs_hist_init(&h2);
	obs_hist_merge(&h, &h2);
	EXPECT_EQ(h.min, h3.min);
	EXPECT_EQ(h.count, h3.count);
}

/* A sample recorded early and amended (live: a fault counted before the ioctl that woke its
 * thread) ends where recording its final value would have put it; only the minimum keeps the
 * early value when it was the smallest. */
TEST(amend_moves_a_sample_to_its_final_value)
{
	obs_hist_init(&h);
	obs_hist_init(&h2);
	obs_hist_record(&h, 5000);
	obs_hist_record(&h2, 5000);
	obs_hist_record(&h, 900);
	obs_hist_amend(&h, 900, 250000);
	obs_hist_record(&h2, 250000);
	obs_hist_record(&h, 7000);
	obs_hist_amend(&h, 7000, 7001); /* the same bucket */
	obs_hist_record(&h2, 7001);
	EXPECT_EQ(h.count, h2.count);
	EXPECT_EQ(h.sum, h2.sum);
	EXPECT_EQ(h.max, h2.max);
	EXPECT(memcmp(h.counts, h2.counts, sizeof(h.counts)) == 0);
	EXPECT_EQ(obs_hist_quantile(&h, 0.5), obs_hist_quantile(&h2, 0.5));
	EXPECT_EQ(h.min, 900);
	EXPECT_EQ(h2.min, 5000);
}

#define THREADS	   4
#define PER_THREAD 250000

static void *recorder(void *arg)
{
	uint64_t base = (uint64_t)(uintptr_t)arg;

	for (uint64_t i = 0; i < PER_THREAD; i++)
		obs_hist_record(&h, base + (i % 4096) * 97);
	return NULL;
}

TEST(concurrent_recording_loses_no_counts)
{
	pthread_t t[THREADS];
	uint64_t want_sum = 0, total = 0;

	obs_hist_init(&h);
	for (uintptr_t i = 0; i < THREADS; i++)
		ASSERT_EQ(pthread_create(&t[i], NULL, recorder, (void *)(i * 1000 + 1)), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	for (uint64_t i = 0; i < THREADS; i++)
		for (uint64_t k = 0; k < PER_THREAD; k++)
			want_sum += i * 1000 + 1 + (k % 4096) * 97;
	for (unsigned b = 0; b < OBS_HIST_BUCKETS; b++)
		total += h.counts[b];
	EXPECT_EQ(h.count, THREADS * PER_THREAD);
	EXPECT_EQ(total, THREADS * PER_THREAD);
	EXPECT(h.sum == want_sum);
	EXPECT_EQ(h.min, 1);
	EXPECT_EQ(h.max, 3001 + 4095 * 97);
}

TEST_MAIN()

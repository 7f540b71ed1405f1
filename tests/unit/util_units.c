/* Unit parsing and the PRNG (core/util). */
#include "harness.h"
#include "util/rng.h"
#include "util/units.h"

#include <errno.h>

TEST(sizes_follow_dd_conventions)
{
	uint64_t v;

	ASSERT_EQ(units_parse_size("4096", &v), 0);
	EXPECT_EQ(v, 4096);
	ASSERT_EQ(units_parse_size("4k", &v), 0);
	EXPECT_EQ(v, 4096);
	ASSERT_EQ(units_parse_size("64M", &v), 0);
	EXPECT_EQ(v, 64ULL << 20);
	ASSERT_EQ(units_parse_size("2MiB", &v), 0);
	EXPECT_EQ(v, 2ULL << 20);
	ASSERT_EQ(units_parse_size("10MB", &v), 0);
	EXPECT_EQ(v, 10000000);
	ASSERT_EQ(units_parse_size("1.5G", &v), 0);
	EXPECT_EQ(v, 3ULL << 29);
	EXPECT_EQ(units_parse_size("", &v), -EINVAL);
	EXPECT_EQ(units_parse_size("-1M", &v), -EINVAL);
	EXPECT_EQ(units_parse_size("12Q", &v), -EINVAL);
	EXPECT_EQ(units_parse_size("M", &v), -EINVAL);
}

TEST(durations_need_a_unit)
{
	uint64_t v;

	ASSERT_EQ(units_parse_duration("20ms", &v), 0);
	EXPECT_EQ(v, 20000000);
	ASSERT_EQ(units_parse_duration("1.5s", &v), 0);
	EXPECT_EQ(v, 1500000000);
	ASSERT_EQ(units_parse_duration("500us", &v), 0);
	EXPECT_EQ(v, 500000);
	ASSERT_EQ(units_parse_duration("2m", &v), 0);
	EXPECT_EQ(v, 120000000000ULL);
	ASSERT_EQ(units_parse_duration("0", &v), 0);
	EXPECT_EQ(v, 0);
	EXPECT_EQ(units_parse_duration("20", &v), -EINVAL);
	EXPECT_EQ(units_parse_duration("fast", &v), -EINVAL);
}

TEST(rates_accept_bytes_and_bits)
{
	uint64_t v;

	ASSERT_EQ(units_parse_rate("5M", &v), 0);
	EXPECT_EQ(v, 5ULL << 20);
	ASSERT_EQ(units_parse_rate("5MiB/s", &v), 0);
	EXPECT_EQ(v, 5ULL << 20);
	ASSERT_EQ(units_parse_rate("5MB/s", &v), 0);
	EXPECT_EQ(v, 5000000);
	ASSERT_EQ(units_parse_rate("100Mbit/s", &v), 0);
	EXPECT_EQ(v, 12500000);
	EXPECT_EQ(units_parse_rate("5M/h", &v), -EINVAL);
}

TEST(fractions)
{
	double f;

	ASSERT_EQ(units_parse_fraction("0.5%", &f), 0);
	EXPECT_NEAR(f, 0.005, 1e-12);
	ASSERT_EQ(units_parse_fraction("0.25", &f), 0);
	EXPECT_NEAR(f, 0.25, 1e-12);
	EXPECT_EQ(units_parse_fraction("150%", &f), -EINVAL);
	EXPECT_EQ(units_parse_fraction("x", &f), -EINVAL);
}

TEST(ratios)
{
	double r;

	ASSERT_EQ(units_parse_ratio("125%", 100, &r), 0);
	EXPECT_NEAR(r, 1.25, 1e-12);
	ASSERT_EQ(units_parse_ratio("2.5", 100, &r), 0);
	EXPECT_NEAR(r, 2.5, 1e-12);
	ASSERT_EQ(units_parse_ratio("10000%", 100, &r), 0);
	EXPECT_NEAR(r, 100, 1e-12);
	EXPECT_EQ(units_parse_ratio("10001%", 100, &r), -EINVAL);
	EXPECT_EQ(units_parse_ratio("150%", 1, &r), -EINVAL);
	EXPECT_EQ(units_parse_ratio("-1", 100, &r), -EINVAL);
	EXPECT_EQ(units_parse_ratio("1%%", 100, &r), -EINVAL);
	EXPECT_EQ(units_parse_ratio("", 100, &r), -EINVAL);
}

TEST(rng_is_reproducible)
{
	struct rng a, b;

	rng_seed(&a, 7);
	rng_seed(&b, 7);
	for (int i = 0; i < 1000; i++)
		ASSERT_EQ(rng_next(&a), rng_next(&b));
	for (int i = 0; i < 1000; i++)
		ASSERT_LT(rng_below(&a, 10), 10);
}

TEST_MAIN()

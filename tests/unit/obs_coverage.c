/* THP coverage over time (core/obs/coverage.c): the kept samples' grid and thinning, the
 * time-weighted mean (only time with anonymous memory counts), the end value, the JSON. */
#include "harness.h"
#include "obs/coverage.h"

#define MS 1000000ULL

static struct obs_coverage c;

TEST(samples_on_the_grid_only)
{
	obs_coverage_init(&c, 1000 * MS, 100 * MS);
	EXPECT_EQ(obs_coverage_next(&c), 1000 * MS);
	obs_coverage_sample(&c, 1000 * MS, 0, 10);
	EXPECT_EQ(obs_coverage_next(&c), 1100 * MS);
	obs_coverage_sample(&c, 1050 * MS, 5, 10); /* not due: counted, not kept */
	obs_coverage_sample(&c, 1130 * MS, 10, 10);
	EXPECT_EQ(c.n, 2);
	EXPECT_EQ(c.s[1].t_ns, 130 * MS);
	EXPECT_EQ(obs_coverage_next(&c), 1200 * MS);
	obs_coverage_sample(&c, 900 * MS, 10, 10);  /* before t0: ignored */
	obs_coverage_sample(&c, 1120 * MS, 10, 10); /* before the last: ignored */
	EXPECT_EQ(c.n, 2);
	obs_coverage_finish(&c, 1150 * MS, 10, 10);
	EXPECT_EQ(c.n, 3);
	EXPECT_EQ(c.s[2].t_ns, 150 * MS);
}

/* 0 % for 50 ms, 50 % for 80 ms, 100 % for 20 ms, then nothing mapped for 100 ms (not counted),
 * then 100 % for 50 ms: (0*50 + 50*80 + 100*20 + 100*50) / 200 = 55 %. */
TEST(time_weighted_counts_only_time_with_anon)
{
	obs_coverage_init(&c, 0, 10 * MS);
	obs_coverage_sample(&c, 0, 0, 0); /* nothing mapped yet */
	obs_coverage_sample(&c, 10 * MS, 0, 100);
	obs_coverage_sample(&c, 60 * MS, 50, 100);
	obs_coverage_sample(&c, 140 * MS, 100, 100);
	obs_coverage_sample(&c, 160 * MS, 0, 0);
	obs_coverage_sample(&c, 260 * MS, 512, 512);
	obs_coverage_finish(&c, 310 * MS, 0, 0); /* exited: everything went back */
	EXPECT_EQ(c.anon_ns, 200 * MS);
	EXPECT_NEAR(obs_coverage_tw_pct(&c), 55.0, 1e-9);
	EXPECT_NEAR(obs_coverage_end_pct(&c), 100.0, 1e-9); /* the last sample with anon */
	EXPECT_EQ(c.n, 7);
}

/* The end is the last sample with at least half the peak's anon: what a program leaves once it
 * unmapped its working set (a few base pages) is not its end state. */
TEST(end_is_the_last_sample_near_the_peak)
{
	obs_coverage_init(&c, 0, 10 * MS);
	obs_coverage_sample(&c, 0, 512, 1000);
	obs_coverage_sample(&c, 10 * MS, 1024, 2000); /* the peak */
	obs_coverage_sample(&c, 20 * MS, 900, 1000);  /* half of it: still the working set */
	obs_coverage_sample(&c, 30 * MS, 0, 999);     /* below half */
	obs_coverage_sample(&c, 40 * MS, 0, 32);
	obs_coverage_finish(&c, 50 * MS, 0, 0);
	EXPECT_NEAR(obs_coverage_end_pct(&c), 90.0, 1e-9);
	EXPECT_EQ(c.end.t_ns, 20 * MS);
	obs_coverage_sample(&c, 60 * MS, 4000, 4000); /* a new peak later on */
	EXPECT_NEAR(obs_coverage_end_pct(&c), 100.0, 1e-9);
	EXPECT_EQ(c.end.t_ns, 60 * MS);
}

/* thpemu run ends the series after the program exited: the last sample holds until then. */
TEST(close_extends_the_last_sample)
{
	obs_coverage_init(&c, 0, 100 * MS);
	obs_coverage_sample(&c, 0, 0, 100);
	obs_coverage_sample(&c, 100 * MS, 100, 100);
	obs_coverage_close(&c, 300 * MS);
	EXPECT_EQ(c.n, 2);
	EXPECT_EQ(c.anon_ns, 300 * MS);
	EXPECT_NEAR(obs_coverage_tw_pct(&c), 100.0 * 2 / 3, 1e-9);
	EXPECT_NEAR(obs_coverage_end_pct(&c), 100.0, 1e-9);
	obs_coverage_close(&c, 200 * MS); /* earlier: nothing */
	EXPECT_EQ(c.anon_ns, 300 * MS);
}

TEST(empty_and_clamped)
{
	obs_coverage_init(&c, 0, MS);
	EXPECT_EQ(obs_coverage_tw_pct(&c), 0.0);
	EXPECT_EQ(obs_coverage_end_pct(&c), 0.0);
	obs_coverage_sample(&c, 0, 7, 5); /* huge read above anon between two updates */
	obs_coverage_finish(&c, MS, 7, 5);
	EXPECT_EQ(c.s[0].huge, 5);
	EXPECT_NEAR(obs_coverage_tw_pct(&c), 100.0, 1e-9);
}

/* A run of any length keeps at most OBS_COV_MAX_SAMPLES, evenly spaced, the interval doubling;
 * the time-weighted mean uses every sample, kept or not. */
TEST(thinning_keeps_the_count_bounded)
{
	uint64_t n = 3 * OBS_COV_MAX_SAMPLES + 17;

	obs_coverage_init(&c, 0, MS);
	for (uint64_t i = 0; i < n; i++)
		obs_coverage_sample(&c, i * MS, i & 1 ? 100 : 0, 100);
	obs_coverage_finish(&c, n * MS, 0, 100);
	EXPECT_LE(c.n, OBS_COV_MAX_SAMPLES);
	EXPECT_GE(c.n, OBS_COV_MAX_SAMPLES * 3 / 8);
	EXPECT_EQ(c.interval_ns, 4 * MS);
	for (uint32_t i = 1; i < c.n; i++)
		EXPECT_GT(c.s[i].t_ns, c.s[i - 1].t_ns);
	for (uint32_t i = 1; i + 1 < c.n; i++)
		EXPECT_EQ(c.s[i].t_ns - c.s[i - 1].t_ns, 4 * MS);
	EXPECT_EQ(c.s[c.n - 1].t_ns, n * MS);
	EXPECT_NEAR(obs_coverage_tw_pct(&c), 50.0, 0.01);
}

TEST(json_is_exact)
{
	char buf[1024];
	FILE *m = fmemopen(buf, sizeof(buf), "w");
	struct json_w w;

	ASSERT(m != NULL);
	obs_coverage_init(&c, 0, 100 * MS);
	obs_coverage_sample(&c, 0, 0, 256);
	obs_coverage_sample(&c, 100 * MS, 512, 1024);
	obs_coverage_finish(&c, 150 * MS, 512, 512);
	jw_init(&w, m, false);
	jw_obj_begin(&w, NULL);
	obs_report_coverage(&w, &c);
	jw_obj_end(&w);
	ASSERT_EQ(jw_finish(&w), 0);
	fclose(m);
	ASSERT_STREQ(buf,
		     "{\"coverage\":{\"interval_ms\":100.000,\"samples\":[[0.000,0,1024],"
		     "[100.000,2048,4096],[150.000,2048,2048]],\"end_pct\":100.00,"
		     "\"end_t_ms\":150.000,\"time_weighted_pct\":16.67,\"anon_ms\":150.000}}\n");
}

TEST_MAIN()

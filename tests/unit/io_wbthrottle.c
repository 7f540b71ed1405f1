/* core/io dirty throttling: balance_dirty_pages() as a state machine — free run, waking the
 * flusher over the background threshold, one pause on the control line, repeated pauses over
 * the hard limit, and what the pauses cost. Dirtyable memory 100000 pages, default ratios:
 * background 10000, freerun 15000, setpoint 17500, limit 20000. */
#include "harness.h"
#include "io/wbthrottle.h"

#define DIRTYABLE 100000
#define BW	  (5ULL << 20) /* 1280 pages/s */

TEST(below_freerun_the_writer_runs_free)
{
	struct wbm_params p;
	struct wbt_bdp b;
	struct wbt_step s;

	wbm_params_default(&p);
	wbt_bdp_start(&b, WBT_RATELIMIT_PAGES);
	s = wbt_bdp_step(&p, &b, DIRTYABLE, 5000, 1000, BW);
	EXPECT(!s.kick);
	EXPECT_EQ(s.pause_ns, 0);
	EXPECT_EQ(b.nr, 6000);
	/* over the background threshold on dirty pages alone: wake the flusher, still no pause */
	s = wbt_bdp_step(&p, &b, DIRTYABLE, 10001, 4000, BW);
	EXPECT(s.kick);
	EXPECT_EQ(s.pause_ns, 0);
	/* dirty + writeback at freerun exactly: no pause, and writeback does not wake it */
	s = wbt_bdp_step(&p, &b, DIRTYABLE, 5000, 10000, BW);
	EXPECT(!s.kick);
	EXPECT_EQ(s.pause_ns, 0);
}

TEST(between_freerun_and_limit_one_pause_ends_the_call)
{
	struct wbm_params p;
	struct wbt_stats st = {0};
	struct wbt_bdp b;
	struct wbt_step s;

	wbm_params_default(&p);
	wbt_bdp_start(&b, 32);
	s = wbt_bdp_step(&p, &b, DIRTYABLE, 12000, 5500, BW); /* at setpoint */
	EXPECT(s.kick);
	EXPECT_NEAR((double)s.pause_ns, 25e6, 1e5); /* 32 pages at 1280 pages/s */
	EXPECT_EQ(s.pause_ns, wbm_pause_ns(&p, &b.th, 17500, 32, BW));
	EXPECT(!wbt_bdp_paused(&b, s.pause_ns, &st));
	EXPECT_EQ(st.throttles, 1);
	EXPECT_EQ(st.throttle_ns, s.pause_ns);
	EXPECT_EQ(st.throttle_max_ns, s.pause_ns);
}

TEST(over_the_limit_the_writer_pauses_until_below)
{
	struct wbm_params p;
	struct wbt_stats st = {0};
	struct wbt_bdp b;
	struct wbt_step s;

	wbm_params_default(&p);
	wbt_bdp_start(&b, 1); /* one page dirtied, but the limit is exceeded */
	s = wbt_bdp_step(&p, &b, DIRTYABLE, 15000, 6000, BW);
	EXPECT_EQ(s.pause_ns, WBM_MAX_PAUSE_NS);
	ASSERT(wbt_bdp_paused(&b, s.pause_ns, &st));
	EXPECT_EQ(b.dirtied, WBT_RATELIMIT_PAGES); /* the next pause is for a full ratelimit */
	/* writeback made progress: on the control line now, one more (shorter) pause */
	s = wbt_bdp_step(&p, &b, DIRTYABLE, 10000, 7500, BW);
	EXPECT_LT(s.pause_ns, WBM_MAX_PAUSE_NS);
	EXPECT_GT(s.pause_ns, 0);
	EXPECT(!wbt_bdp_paused(&b, s.pause_ns, &st));
	EXPECT_EQ(st.throttles, 2);
	EXPECT_EQ(st.throttle_ns, WBM_MAX_PAUSE_NS + s.pause_ns);
	EXPECT_EQ(st.throttle_max_ns, WBM_MAX_PAUSE_NS);
}

TEST(pauses_follow_the_ratio_parameters_and_bandwidth)
{
	struct wbm_params p;
	struct wbt_bdp b;
	struct wbt_step s;

	wbm_params_default(&p);
	p.dirty_ratio = 40; /* limit 40000: 21000 pages are below freerun (25000) */
	wbt_bdp_start(&b, 32);
	s = wbt_bdp_step(&p, &b, DIRTYABLE, 15000, 6000, BW);
	EXPECT_EQ(s.pause_ns, 0);
	EXPECT_EQ(b.th.dirty, 40000);
	p.dirty_ratio = 20;
	p.max_pause_ns = 50000000ULL; /* a custom bound holds */
	s = wbt_bdp_step(&p, &b, DIRTYABLE, 15000, 6000, 0);
	EXPECT_EQ(s.pause_ns, 50000000ULL);
}

TEST_MAIN()

/* core/io writeback model: thresholds, the throttling control line and pauses, dirty-data age
 * and bandwidth estimation against hand-computed values. */
#include "harness.h"
#include "io/wbmodel.h"

TEST(thresholds_follow_global_dirty_limits)
{
	struct wbm_params p;
	struct wbm_thresh t;

	wbm_params_default(&p);
	wbm_thresholds(&p, 100000, &t);
	EXPECT_EQ(t.background, 10000);
	EXPECT_EQ(t.dirty, 20000);
	EXPECT_EQ(t.freerun, 15000);
	EXPECT_EQ(t.setpoint, 17500);
	p.background_ratio = 30; /* background not below dirty: halved */
	wbm_thresholds(&p, 100000, &t);
	EXPECT_EQ(t.background, 10000);
	EXPECT(wbm_over_background(&t, 10001));
	EXPECT(!wbm_over_background(&t, 10000));
}

/* a flusher pass writes the excess over background or the expired pages, whichever is more */
TEST(flush_want_is_background_excess_or_expired)
{
	struct wbm_params p;
	struct wbm_thresh t;

	wbm_params_default(&p);
	wbm_thresholds(&p, 100000, &t);
	EXPECT_EQ(t.background, 10000);
	EXPECT_EQ(wbm_flush_want(&t, 9000, 0), 0);	 /* under background, nothing old */
	EXPECT_EQ(wbm_flush_want(&t, 9000, 300), 300);	 /* kupdate: the expired ones */
	EXPECT_EQ(wbm_flush_want(&t, 12000, 0), 2000);	 /* background: the excess */
	EXPECT_EQ(wbm_flush_want(&t, 12000, 500), 2000); /* the larger of the two */
	EXPECT_EQ(wbm_flush_want(&t, 12000, 5000), 5000);
}

TEST(control_line_is_one_at_setpoint_and_zero_at_limit)
{
	struct wbm_params p;
	struct wbm_thresh t;

	wbm_params_default(&p);
	wbm_thresholds(&p, 100000, &t);
	EXPECT_EQ(wbm_pos_ratio(&t, t.setpoint), 1024);
	EXPECT_EQ(wbm_pos_ratio(&t, t.dirty), 0);
	EXPECT_EQ(wbm_pos_ratio(&t, t.dirty + 5), 0);
	EXPECT_GT(wbm_pos_ratio(&t, t.freerun), 1024); /* below setpoint: faster */
	EXPECT_LT(wbm_pos_ratio(&t, t.setpoint + 1000), 1024);
	/* at freerun x = (setpoint - freerun) / (limit - setpoint) ~ 1, so 1 + x^3 ~ 2 */
	EXPECT_NEAR((double)wbm_pos_ratio(&t, t.freerun), 2048, 5);
}

TEST(pauses_grow_towards_the_limit_and_are_bounded)
{
	struct wbm_params p;
	struct wbm_thresh t;
	uint64_t bw = 5 << 20; /* 1280 pages/s */

	wbm_params_default(&p);
	wbm_thresholds(&p, 100000, &t);
	EXPECT_EQ(wbm_pause_ns(&p, &t, t.freerun, 32, bw), 0);
	/* at setpoint: 32 pages at 1280 pages/s = 25 ms */
	EXPECT_NEAR((double)wbm_pause_ns(&p, &t, t.setpoint, 32, bw), 25e6, 1e5);
	EXPECT_GT(wbm_pause_ns(&p, &t, t.setpoint + 2000, 32, bw),
		  wbm_pause_ns(&p, &t, t.setpoint, 32, bw));
	EXPECT_EQ(wbm_pause_ns(&p, &t, t.dirty, 32, bw), WBM_MAX_PAUSE_NS);
	EXPECT_EQ(wbm_pause_ns(&p, &t, t.setpoint, 100000, bw), WBM_MAX_PAUSE_NS);
	EXPECT_EQ(wbm_pause_ns(&p, &t, t.setpoint, 32, 0), WBM_MAX_PAUSE_NS);
}

TEST(dirty_age_counts_recent_and_expired_pages)
{
	struct wbm_age a;
	const uint64_t s = 1000000000ULL;

	wbm_age_init(&a, s);
	wbm_age_dirtied(&a, 0, 100);	 /* slot 0 */
	wbm_age_dirtied(&a, 5 * s, 50);	 /* slot 5 */
	wbm_age_dirtied(&a, 40 * s, 10); /* slot 40 */
	EXPECT_EQ(wbm_age_recent(&a, 40 * s, 30 * s), 10);
	EXPECT_EQ(wbm_age_recent(&a, 40 * s, 36 * s), 60);
	EXPECT_EQ(wbm_age_recent(&a, 40 * s, 41 * s), 160);
	/* 120 dirty pages of which the 10 newest are younger than 30 s */
	EXPECT_EQ(wbm_age_expired(&a, 40 * s, 120, 30 * s), 110);
	EXPECT_EQ(wbm_age_expired(&a, 40 * s, 5, 30 * s), 0);
	/* far in the future everything has aged out of the ring */
	EXPECT_EQ(wbm_age_recent(&a, 1000 * s, 64 * s), 0);
}

TEST(bandwidth_estimate_converges_to_the_completion_rate)
{
	struct wbm_bw b;
	uint64_t t = 0, bytes = 0;

	wbm_bw_init(&b, 0, 50 << 20);
	for (int i = 0; i < 200; i++) { /* 40 s at 5 MiB/s, updated every 200 ms */
		t += WBM_BW_INTERVAL_NS;
		bytes += (5 << 20) / 5;
		wbm_bw_update(&b, t, bytes);
	}
	EXPECT_NEAR((double)b.bw, 5 << 20, (5 << 20) * 0.01);
	wbm_bw_update(&b, t + 1000, bytes + 1000000); /* too soon: ignored */
	EXPECT_NEAR((double)b.bw, 5 << 20, (5 << 20) * 0.01);
}

TEST_MAIN()

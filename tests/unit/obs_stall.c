/* Stall events (core/obs/stall.c, stall_report.c): threshold and capacity accounting, the
 * simulator's modelled events in byte-exact JSON and the 2011 text format, grouping of real
 * captured stacks by unique (handler, application) pair, syscall attribution, deterministic
 * order, and lock-free concurrent recording. */
#include "harness.h"
#include "obs/stall.h"

#include <errno.h>
#include <pthread.h>

#define MS 1000000ULL

static struct obs_stalls *s;

/* Render the stalls section (compact) or the text report into buf. */
static void render_json(char *buf, size_t len)
{
	FILE *m = fmemopen(buf, len, "w");
	struct json_w w;

	ASSERT(m != NULL);
	jw_init(&w, m, false);
	jw_obj_begin(&w, NULL);
	ASSERT_EQ(obs_report_stalls(&w, s), 0);
	jw_obj_end(&w);
	ASSERT_EQ(jw_finish(&w), 0);
	fclose(m);
}

static void render_text(char *buf, size_t len)
{
	FILE *m = fmemopen(buf, len, "w");

	ASSERT(m != NULL);
	ASSERT_EQ(obs_report_stalls_text(m, s), 0);
	fclose(m);
}

TEST(threshold_and_capacity_are_accounted)
{
	ASSERT_EQ(obs_stalls_create(&s, 2, 1000 * MS, OBS_STACKS_MODELLED), 0);
	EXPECT_EQ(obs_stalls_threshold(s), 1000 * MS);
	EXPECT_EQ(obs_stalls_add_modelled(s, 0, 999 * MS, MM_CAUSE_COMPACT_WB_WAIT, "a", 1, 0), 1);
	EXPECT_EQ(obs_stalls_add_modelled(s, 0, 1000 * MS, MM_CAUSE_COMPACT_WB_WAIT, "a", 1, 0), 0);
	EXPECT_EQ(obs_stalls_add_modelled(s, 0, 3000 * MS, MM_CAUSE_RECLAIM, "b", 2, 0), 0);
	EXPECT_EQ(obs_stalls_add_modelled(s, 0, 5000 * MS, MM_CAUSE_RECLAIM, "c", 3, 0), -ENOSPC);
	{
		char buf[4096];

		render_json(buf, sizeof(buf));
		EXPECT(
		    strstr(buf, "\"count\":3,\"total_ms\":9000.000,\"stored\":2,\"dropped\":1") !=
		    NULL);
	}
	obs_stalls_destroy(s);
	EXPECT_EQ(obs_stalls_create(&s, 0, 1, OBS_STACKS_MODELLED), -EINVAL);
}

TEST(empty_store_reports_zero)
{
	char buf[4096];

	ASSERT_EQ(obs_stalls_create(&s, 16, 1000 * MS, OBS_STACKS_CAPTURED), 0);
	render_json(buf, sizeof(buf));
	ASSERT_STREQ(buf, "{\"stalls\":{\"threshold_ms\":1000.000,\"count\":0,\"total_ms\":0.000,"
			  "\"stored\":0,\"dropped\":0,\"stacks\":\"captured\",\"groups\":[]}}\n");
	obs_stalls_destroy(s);
}

/* The seed scenario as the simulator reports it: two usemem stalls on writeback inside sync
 * compaction and one dd stall in direct reclaim. */
static void add_seed_events(int order)
{
	if (order == 0) {
		obs_stalls_add_modelled(s, 10 * MS, 1500 * MS, MM_CAUSE_COMPACT_WB_WAIT, "usemem",
					7, 0x1000);
		obs_stalls_add_modelled(s, 20 * MS, 1200 * MS, MM_CAUSE_COMPACT_WB_WAIT, "usemem",
					8, 0x2000);
		obs_stalls_add_modelled(s, 30 * MS, 2000 * MS, MM_CAUSE_RECLAIM, "dd", 9, 0x3000);
		obs_stalls_add_modelled(s, 40 * MS, 10 * MS, MM_CAUSE_RECLAIM, "dd", 9, 0x3000);
	} else {
		obs_stalls_add_modelled(s, 40 * MS, 10 * MS, MM_CAUSE_RECLAIM, "dd", 9, 0x3000);
		obs_stalls_add_modelled(s, 30 * MS, 2000 * MS, MM_CAUSE_RECLAIM, "dd", 9, 0x3000);
		obs_stalls_add_modelled(s, 20 * MS, 1200 * MS, MM_CAUSE_COMPACT_WB_WAIT, "usemem",
					8, 0x2000);
		obs_stalls_add_modelled(s, 10 * MS, 1500 * MS, MM_CAUSE_COMPACT_WB_WAIT, "usemem",
					7, 0x1000);
	}
}

TEST(modelled_events_json_is_byte_exact)
{
	char buf[8192], want[8192];

	ASSERT_EQ(obs_stalls_create(&s, 64, 1000 * MS, OBS_STACKS_MODELLED), 0);
	add_seed_events(0);
	render_json(buf, sizeof(buf));
	snprintf(
	    want, sizeof(want),
	    "{\"stalls\":{\"threshold_ms\":1000.000,\"count\":3,\"total_ms\":4700.000,"
	    "\"stored\":3,\"dropped\":0,\"stacks\":\"modelled\",\"groups\":["
	    "{\"total_ms\":2700.000,\"count\":2,\"events_ms\":[1500.000,1200.000],"
	    "\"events_t_s\":[0.010000,0.020000],"
	    "\"cause\":\"%s\",\"function\":\"wait_on_frame_writeback\",\"comms\":[\"usemem\"],"
	    "\"unwind\":\"modelled\",\"app\":\"none\",\"app_unwind\":\"none\",\"syscall\":null,"
	    "\"handler_stack\":[\"wait_on_frame_writeback\",\"unmap_and_move\",\"migrate_pages\","
	    "\"compact_zone\",\"compact_zone_order\",\"try_to_compact_pages\","
	    "\"__alloc_pages_direct_compact\",\"__alloc_pages_slowpath\",\"__alloc_pages_"
	    "nodemask\","
	    "\"alloc_pages_vma\",\"do_huge_pmd_anonymous_page\",\"handle_mm_fault\"],"
	    "\"app_stack\":[]},"
	    "{\"total_ms\":2000.000,\"count\":1,\"events_ms\":[2000.000],"
	    "\"events_t_s\":[0.030000],"
	    "\"cause\":\"%s\",\"function\":\"shrink_page_list\",\"comms\":[\"dd\"],"
	    "\"unwind\":\"modelled\",\"app\":\"none\",\"app_unwind\":\"none\",\"syscall\":null,"
	    "\"handler_stack\":[\"shrink_page_list\",\"shrink_inactive_list\",\"shrink_zone\","
	    "\"do_try_to_free_pages\",\"try_to_free_pages\",\"__alloc_pages_direct_reclaim\","
	    "\"__alloc_pages_slowpath\",\"__alloc_pages_nodemask\",\"alloc_pages_vma\","
	    "\"do_huge_pmd_anonymous_page\",\"handle_mm_fault\"],"
	    "\"app_stack\":[]}]}}\n",
	    mm_cause_chain(MM_CAUSE_COMPACT_WB_WAIT), mm_cause_chain(MM_CAUSE_RECLAIM));
	ASSERT_STREQ(buf, want);

	/* the same events recorded in another order give the same bytes */
	obs_stalls_destroy(s);
	ASSERT_EQ(obs_stalls_create(&s, 64, 1000 * MS, OBS_STACKS_MODELLED), 0);
	add_seed_events(1);
	render_json(buf, sizeof(buf));
	ASSERT_STREQ(buf, want);
	obs_stalls_destroy(s);
}

TEST(modelled_events_text_is_the_2011_format)
{
	char buf[8192];
	const char *g1, *g2;

	ASSERT_EQ(obs_stalls_create(&s, 64, 1000 * MS, OBS_STACKS_MODELLED), 0);
	add_seed_events(0);
	render_text(buf, sizeof(buf));
	printf("%s", buf);
	g1 = strstr(buf, "Time stalled in this event:     2700 ms\n"
			 "Event count:        2\n"
			 "usemem               wait_on_frame_writeback   1500 ms\n"
			 "usemem               wait_on_frame_writeback   1200 ms\n");
	g2 = strstr(buf, "Time stalled in this event:     2000 ms\n"
			 "Event count:        1\n"
			 "dd                   shrink_page_list       2000 ms\n");
	EXPECT(g1 != NULL);
	EXPECT(g2 != NULL);
	EXPECT(g1 && g2 && g1 < g2); /* largest total first */
	EXPECT(
	    strstr(buf,
		   "Stalls of at least 1000 ms: 3 events, 4700 ms in total; stacks modelled\n") ==
	    buf);
	EXPECT(strstr(buf,
		      "handler stack (modelled):\n  wait_on_frame_writeback\n  unmap_and_move\n") !=
	       NULL);
	obs_stalls_destroy(s);
}

/* ---- per-wait events: Mel Gorman's monitor counted each sleep, not each fault -- */

static struct obs_stalls *wt;

static void render_pair_json(char *buf, size_t len)
{
	FILE *m = fmemopen(buf, len, "w");
	struct json_w w;

	ASSERT(m != NULL);
	jw_init(&w, m, false);
	jw_obj_begin(&w, NULL);
	ASSERT_EQ(obs_report_stalls_pair(&w, s, wt), 0);
	jw_obj_end(&w);
	ASSERT_EQ(jw_finish(&w), 0);
	fclose(m);
}

/* One usemem fault that slept three times on writeback inside sync compaction (1.5 s, 1.2 s
 * and 0.4 s: the last is below the threshold), one kswapd congestion nap of 1.1 s and one dd
 * fault with a 2 s writeback wait in direct reclaim. */
static void add_seed_waits(void)
{
	EXPECT_EQ(obs_stalls_add_modelled_wait(wt, 10 * MS, 1500 * MS, MM_WAIT_COMPACT_WRITEBACK,
					       false, "usemem", 7),
		  0);
	EXPECT_EQ(obs_stalls_add_modelled_wait(wt, 1510 * MS, 1200 * MS, MM_WAIT_COMPACT_WRITEBACK,
					       false, "usemem", 7),
		  0);
	EXPECT_EQ(obs_stalls_add_modelled_wait(wt, 2710 * MS, 400 * MS, MM_WAIT_COMPACT_WRITEBACK,
					       false, "usemem", 7),
		  1);
	EXPECT_EQ(obs_stalls_add_modelled_wait(wt, 50 * MS, 1100 * MS, MM_WAIT_RECLAIM_CONGESTED,
					       true, "kswapd0", 0),
		  0);
	EXPECT_EQ(obs_stalls_add_modelled_wait(wt, 30 * MS, 2000 * MS, MM_WAIT_RECLAIM_WRITEBACK,
					       false, "dd", 9),
		  0);
	/* the per-fault view of the same run: the usemem fault is one stall of 3.1 s */
	obs_stalls_add_modelled(s, 10 * MS, 3100 * MS, MM_CAUSE_COMPACT_WB_WAIT, "usemem", 7, 0);
	obs_stalls_add_modelled(s, 30 * MS, 2000 * MS, MM_CAUSE_RECLAIM_WB_WAIT, "dd", 9, 0);
}

TEST(per_wait_store_counts_each_wait_and_the_longest)
{
	ASSERT_EQ(obs_stalls_create(&s, 64, 1000 * MS, OBS_STACKS_MODELLED), 0);
	ASSERT_EQ(obs_stalls_create_waits(&wt, 64, 1000 * MS, OBS_STACKS_MODELLED), 0);
	add_seed_waits();
	EXPECT_EQ(obs_stalls_count(wt), 4);
	EXPECT_EQ(obs_stalls_total_ns(wt), 5800 * MS);
	EXPECT_EQ(obs_stalls_max_ns(wt), 2000 * MS);
	EXPECT_EQ(obs_stalls_count(s), 2);
	EXPECT_EQ(obs_stalls_max_ns(s), 3100 * MS);
	obs_stalls_destroy(wt);
	obs_stalls_destroy(s);
	EXPECT_EQ(obs_stalls_create_waits(&wt, 0, 1, OBS_STACKS_MODELLED), -EINVAL);
}

TEST(per_wait_modelled_chains_are_the_3x_kernels)
{
	const char *const *c = obs_stall_wait_stack(MM_WAIT_COMPACT_WRITEBACK, false);
	const char *const *k = obs_stall_wait_stack(MM_WAIT_RECLAIM_WRITEBACK, true);
	const char *want[] = {"sleep_on_page",	"__wait_on_bit", "wait_on_page_bit",
			      "unmap_and_move", "migrate_pages", "compact_zone"};
	int n = 0;

	for (unsigned i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		ASSERT_STREQ(c[i], want[i]);
	while (c[n])
		n++;
	ASSERT_STREQ(c[n - 1], "handle_mm_fault");
	/* every chain starts with the function the kind blocks in, fault's or kswapd's */
	for (int kind = 0; kind < MM_WAIT_NR; kind++)
		for (int bg = 0; bg < 2; bg++)
			ASSERT_STREQ(obs_stall_wait_stack((enum mm_wait_kind)kind, bg)[0],
				     mm_wait_function((enum mm_wait_kind)kind));
	n = 0;
	while (k[n])
		n++;
	ASSERT_STREQ(k[n - 1], "kthread");
	ASSERT_STREQ(k[n - 2], "kswapd");
	ASSERT_STREQ(obs_stall_wait_stack(MM_WAIT_NR, false)[0], "?");
}

TEST(pair_json_carries_both_metrics)
{
	char buf[16384];
	const char *waits, *g;

	ASSERT_EQ(obs_stalls_create(&s, 64, 1000 * MS, OBS_STACKS_MODELLED), 0);
	ASSERT_EQ(obs_stalls_create_waits(&wt, 64, 1000 * MS, OBS_STACKS_MODELLED), 0);
	add_seed_waits();
	render_pair_json(buf, sizeof(buf));
	/* the per-fault keys stay where existing readers look, the summaries follow */
	EXPECT(strstr(buf, "{\"stalls\":{\"threshold_ms\":1000.000,\"count\":2,\"total_ms\":"
			   "5100.000,\"stored\":2,") == buf);
	EXPECT(strstr(buf, "\"faults\":{\"threshold_ms\":1000.000,\"count\":2,\"total_ms\":"
			   "5100.000,\"max_ms\":3100.000,\"stored\":2,\"dropped\":0}") != NULL);
	waits = strstr(buf, "\"waits\":{\"threshold_ms\":1000.000,\"count\":4,\"total_ms\":"
			    "5800.000,\"max_ms\":2000.000,\"stored\":4,\"dropped\":0,"
			    "\"background\":1,\"stacks\":\"modelled\",\"groups\":[");
	ASSERT(waits != NULL);
	/* the two usemem waits are one group (same kind, same stack), first by total */
	g = strstr(waits, "{\"total_ms\":2700.000,\"count\":2,\"events_ms\":[1500.000,1200.000],"
			  "\"events_t_s\":[0.010000,1.510000],\"kind\":\"compact-writeback\","
			  "\"background\":false,");
	EXPECT(g == waits + strlen("\"waits\":{\"threshold_ms\":1000.000,\"count\":4,"
				   "\"total_ms\":5800.000,\"max_ms\":2000.000,\"stored\":4,"
				   "\"dropped\":0,\"background\":1,\"stacks\":\"modelled\","
				   "\"groups\":["));
	EXPECT(strstr(waits, "\"function\":\"sleep_on_page\",\"comms\":[\"usemem\"]") != NULL);
	EXPECT(strstr(waits, "\"handler_stack\":[\"sleep_on_page\",\"__wait_on_bit\","
			     "\"wait_on_page_bit\",\"unmap_and_move\",\"migrate_pages\","
			     "\"compact_zone\"") != NULL);
	EXPECT(strstr(waits, "\"kind\":\"reclaim-congested\",\"background\":true,") != NULL);
	EXPECT(strstr(waits, "\"function\":\"congestion_wait\",\"comms\":[\"kswapd0\"]") != NULL);
	EXPECT(strstr(waits, "\"kind\":\"reclaim-writeback\",\"background\":false,") != NULL);
	obs_stalls_destroy(wt);
	wt = NULL;

	/* without a per-wait store: zero counts, no groups */
	render_pair_json(buf, sizeof(buf));
	EXPECT(strstr(buf, "\"waits\":{\"threshold_ms\":1000.000,\"count\":0,\"total_ms\":"
			   "0.000,\"max_ms\":0.000,\"stored\":0,\"dropped\":0,\"background\":0,"
			   "\"stacks\":\"modelled\",\"groups\":[]}}}\n") != NULL);
	obs_stalls_destroy(s);
}

TEST(pair_text_puts_the_per_wait_2011_report_first)
{
	char buf[16384];
	FILE *m = fmemopen(buf, sizeof(buf), "w");
	const char *w1, *w2, *fv, *f1;

	ASSERT(m != NULL);
	ASSERT_EQ(obs_stalls_create(&s, 64, 1000 * MS, OBS_STACKS_MODELLED), 0);
	ASSERT_EQ(obs_stalls_create_waits(&wt, 64, 1000 * MS, OBS_STACKS_MODELLED), 0);
	add_seed_waits();
	ASSERT_EQ(obs_report_stalls_text_pair(m, s, wt), 0);
	fclose(m);
	printf("%s", buf);
	EXPECT(strstr(buf, "Per-wait stall events (") == buf);
	EXPECT(strstr(buf, "): 4 events, 5800 ms in total, longest 2000 ms, 1 of them kswapd's; "
			   "stacks modelled\n") != NULL);
	w1 = strstr(buf, "Time stalled in this event:     2700 ms\n"
			 "Event count:        2\n"
			 "usemem               sleep_on_page          1500 ms\n"
			 "usemem               sleep_on_page          1200 ms\n"
			 "wait: compact-writeback\n");
	w2 = strstr(buf, "Event count:        1\n"
			 "kswapd0              congestion_wait        1100 ms\n"
			 "wait: reclaim-congested (kswapd");
	fv = strstr(buf, "Per-fault view (");
	f1 = strstr(buf, "Time stalled in this event:     3100 ms\n"
			 "Event count:        1\n"
			 "usemem               wait_on_frame_writeback   3100 ms\n");
	EXPECT(w1 != NULL);
	EXPECT(w2 != NULL);
	EXPECT(fv != NULL);
	EXPECT(f1 != NULL);
	EXPECT(w1 && w2 && fv && f1 && w1 < fv && w2 < fv && fv < f1);
	EXPECT(strstr(buf, "handler stack (modelled):\n  sleep_on_page\n  __wait_on_bit\n") !=
	       NULL);
	obs_stalls_destroy(wt);
	obs_stalls_destroy(s);
}

/* ---- captured stacks ------------------------------------------------------------------ */

static struct obs_stack app_a, app_b, handler_a, handler_b;

/* noipa, not just noinline: identical bodies would otherwise be folded into one (gcc's
 * -fipa-icf; clang does not merge functions unless asked, and does not know noipa) */
#ifdef __clang__
#define NOFOLD __attribute__((noinline))
#else
#define NOFOLD __attribute__((noipa))
#endif
NOFOLD static void obs_test_wait_site_a(struct obs_stack *st)
{
	obs_stack_capture(st, 0);
	__asm__ volatile("" ::: "memory");
}

NOFOLD static void obs_test_wait_site_b(struct obs_stack *st)
{
	obs_stack_capture(st, 0);
	__asm__ volatile("" ::: "memory");
}

NOFOLD static void obs_test_app_touch_a(void)
{
	obs_stack_capture(&app_a, 0);
	__asm__ volatile("" ::: "memory");
}

NOFOLD static void obs_test_app_touch_b(void)
{
	obs_stack_capture(&app_b, 0);
	__asm__ volatile("" ::: "memory");
}

/* Each site's stacks are captured once, so events of one site carry identical stacks, as
 * faults served along the same code path do. */
static void capture_sites(void)
{
	obs_test_wait_site_a(&handler_a);
	obs_test_wait_site_b(&handler_b);
	obs_test_app_touch_a();
	obs_test_app_touch_b();
}

static void captured_event(struct obs_stall_event *ev, int site, uint64_t ms, const char *comm)
{
	obs_stall_event_init(ev);
	ev->t_start_ns = ms; /* distinct and increasing with the call order below */
	ev->duration_ns = ms * MS;
	ev->cause = MM_CAUSE_COMPACT_WB_WAIT;
	ev->tid = 100 + site;
	strcpy(ev->comm, comm);
	ev->handler = site == 0 ? handler_a : handler_b;
	ev->app = OBS_APP_USER;
	ev->app_stack = site == 0 ? app_a : app_b;
}

TEST(captured_stacks_group_by_unique_handler_and_app_pair)
{
	struct obs_stall_event ev;
	char buf[65536];
	const char *a, *b, *sys;

	ASSERT_EQ(obs_unwind_init(2), 0);
	capture_sites();
	ASSERT_EQ(obs_stalls_create(&s, 64, 1000 * MS, OBS_STACKS_CAPTURED), 0);
	captured_event(&ev, 0, 1100, "worker");
	ASSERT_EQ(obs_stalls_add(s, &ev), 0);
	captured_event(&ev, 1, 4000, "worker");
	/* on a shared machine: whose page the wait was on */
	strcpy(ev.waited_on, "a page written by rsync (pid 790) to stick/f.tar");
	ASSERT_EQ(obs_stalls_add(s, &ev), 0);
	captured_event(&ev, 0, 1300, "helper");
	ASSERT_EQ(obs_stalls_add(s, &ev), 0);
	/* a kernel-mode fault: same handler site, the syscall instead of an app stack */
	captured_event(&ev, 0, 1700, "reader");
	ev.app = OBS_APP_SYSCALL;
	ev.syscall_nr = 0;
	memset(&ev.app_stack, 0, sizeof(ev.app_stack));
	ASSERT_EQ(obs_stalls_add(s, &ev), 0);

	render_json(buf, sizeof(buf));
	printf("%s", buf);
	EXPECT(strstr(buf, "\"count\":4,\"total_ms\":8100.000,\"stored\":4") != NULL);
	/* site b alone is the biggest group; site a's two user-mode events form one group */
	b = strstr(buf, "{\"total_ms\":4000.000,\"count\":1,\"events_ms\":[4000.000]");
	a = strstr(buf, "{\"total_ms\":2400.000,\"count\":2,\"events_ms\":[1100.000,1300.000]");
	sys = strstr(buf, "{\"total_ms\":1700.000,\"count\":1,\"events_ms\":[1700.000]");
	ASSERT(a && b && sys);
	EXPECT(b < a && a < sys);
	{ /* group a, from its cause on (its events' start times come before) */
		char frag[512];

		snprintf(frag, sizeof(frag),
			 "\"cause\":\"%s\",\"function\":\"obs_test_app_touch_a\",\"comms\":"
			 "[\"worker\",\"helper\"],\"unwind\":\"libunwind\",\"app\":\"user\","
			 "\"app_unwind\":\"libunwind\",\"syscall\":null,"
			 "\"handler_stack\":[\"obs_test_wait_site_a+0x",
			 mm_cause_chain(MM_CAUSE_COMPACT_WB_WAIT));
		EXPECT(strstr(a, frag) != NULL && strstr(a, frag) == strstr(a, "\"cause\""));
		EXPECT(strstr(a, "\"events_t_s\":[") ==
		       strstr(a, "\"events_ms\":[") + strlen("\"events_ms\":[1100.000,1300.000],"));
	}
	EXPECT(strstr(a, "\"app_stack\":[\"obs_test_app_touch_a+0x") != NULL);
	EXPECT(strstr(sys, "\"function\":\"read\"") != NULL);
	EXPECT(strstr(sys, "\"app\":\"syscall\",\"app_unwind\":\"none\",\"syscall\":\"read\"") !=
	       NULL);
	EXPECT(strstr(sys, "\"app_stack\":[]") != NULL);
	EXPECT(strstr(b, "\"handler_stack\":[\"obs_test_wait_site_b+0x") != NULL);
	EXPECT(strstr(b, "\"waited_on\":\"a page written by rsync (pid 790) to stick/f.tar\"}") !=
	       NULL);
	EXPECT(strstr(a, "\"waited_on\"") == NULL || strstr(a, "\"waited_on\"") > sys);

	render_text(buf, sizeof(buf));
	printf("%s", buf);
	EXPECT(strstr(buf, "Time stalled in this event:     4000 ms\nEvent count:        1\n"
			   "worker               obs_test_app_touch_b   4000 ms\n") != NULL);
	EXPECT(strstr(buf, "worker               obs_test_app_touch_a   1100 ms\n"
			   "helper               obs_test_app_touch_a   1300 ms\n") != NULL);
	EXPECT(strstr(buf, "reader               read                   1700 ms\n") != NULL);
	EXPECT(strstr(buf, "app: kernel-mode fault inside read(2)\n") != NULL);
	EXPECT(strstr(buf, "waited on: a page written by rsync (pid 790) to stick/f.tar\n"
			   "handler stack (libunwind):\n  obs_test_wait_site_b+0x") != NULL);
	EXPECT(strstr(buf, "app stack (user-mode fault, libunwind):\n  obs_test_app_touch_a+0x") !=
	       NULL);
	obs_stalls_destroy(s);
}

/* A live event without an application side says so; one taken by thpemu's exit hook on the
 * program's thread is kept apart from the program's own stalls of the same stacks and marked. */
TEST(captured_events_say_when_the_stack_is_none_or_thpemus)
{
	struct obs_stall_event ev;
	char buf[65536];
	const char *own;

	ASSERT_EQ(obs_unwind_init(2), 0);
	capture_sites();
	ASSERT_EQ(obs_stalls_create(&s, 64, 1000 * MS, OBS_STACKS_CAPTURED), 0);
	captured_event(&ev, 0, 1100, "usemem");
	ASSERT_EQ(obs_stalls_add(s, &ev), 0);
	captured_event(&ev, 0, 2200, "usemem");
	ev.own_exit = 1;
	ASSERT_EQ(obs_stalls_add(s, &ev), 0);
	captured_event(&ev, 1, 3300, "usemem");
	ev.app = OBS_APP_NONE;
	memset(&ev.app_stack, 0, sizeof(ev.app_stack));
	ASSERT_EQ(obs_stalls_add(s, &ev), 0);

	render_json(buf, sizeof(buf));
	printf("%s", buf);
	own = strstr(buf, "{\"total_ms\":2200.000,\"count\":1,");
	ASSERT(own != NULL);
	EXPECT(strstr(own, "\"function\":\"(thpemu exit)\"") != NULL);
	EXPECT(strstr(own, "\"thpemu_exit\":true}") != NULL);
	EXPECT(strstr(buf, "\"thpemu_exit\"") == strstr(own, "\"thpemu_exit\""));
	EXPECT(strstr(buf, "{\"total_ms\":1100.000,\"count\":1,") != NULL);
	EXPECT(strstr(buf, "\"app\":\"none\",\"app_unwind\":\"none\"") != NULL);

	render_text(buf, sizeof(buf));
	printf("%s", buf);
	EXPECT(strstr(buf, "usemem               (thpemu exit)          2200 ms\n") != NULL);
	EXPECT(strstr(buf, "note: taken on the program's thread by thpemu's exit hook (writing its "
			   "reports), not by the program's code\n") != NULL);
	EXPECT(strstr(buf, "app stack: none (the thread was not asked while the fault was in "
			   "service)\n") != NULL);
	obs_stalls_destroy(s);
}

/* ---- concurrency ---------------------------------------------------------------------- */

#define THREADS	   4
#define PER_THREAD 5000

static void *adder(void *arg)
{
	struct obs_stall_event ev;

	obs_stall_event_init(&ev);
	ev.tid = (int32_t)(intptr_t)arg;
	ev.cause = MM_CAUSE_COMPACT_SYNC;
	ev.handler.method = OBS_UNWIND_MODELLED;
	for (int i = 0; i < PER_THREAD; i++) {
		ev.t_start_ns = (uint64_t)i;
		ev.duration_ns = 1000 * MS + (uint64_t)i;
		obs_stalls_add(s, &ev);
	}
	return NULL;
}

TEST(concurrent_adds_lose_nothing)
{
	pthread_t t[THREADS];
	char *buf = malloc(4 << 20);

	ASSERT(buf != NULL);
	ASSERT_EQ(obs_stalls_create(&s, THREADS * PER_THREAD - 100, 1000 * MS, OBS_STACKS_MODELLED),
		  0);
	for (intptr_t i = 0; i < THREADS; i++)
		ASSERT_EQ(pthread_create(&t[i], NULL, adder, (void *)i), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	render_json(buf, 4 << 20);
	EXPECT(strstr(buf, "\"count\":20000,") != NULL);
	EXPECT(strstr(buf, "\"stored\":19900,\"dropped\":100,") != NULL);
	/* one cause, one modelled stack: one group holding every stored event */
	EXPECT(strstr(buf, "\"count\":19900,\"events_ms\"") != NULL);
	free(buf);
	obs_stalls_destroy(s);
}

TEST_MAIN()

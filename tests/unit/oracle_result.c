/* The oracle's line protocol (core/oracle/result.c): a guest's console and a workload's output
 * under thpemu run read by the same parser; deltas, scopes, counts and the JSON. */
#include "harness.h"
#include "oracle/result.h"
#include "util/json.h"

#include <jansson.h>

static const char guest[] =
    "\x1b"
    "c\x1b[?7l\x1b[2JSeaBIOS (version 1.16.2)\n"
    "Booting from ROM..\x1b"
    "c\x1b[?7l\x1b[2JORACLE hello 1\r\n"
    "ORACLE kernel 6.12.118+deb12-cloud-amd64\r\n"
    "ORACLE uptime 13.16\r\n"
    "ORACLE setting enabled ok\r\n"
    "ORACLE setting shrink_underused absent\r\n"
    "ORACLE knob enabled [always] madvise never\r\n"
    "ORACLE meminfo MemTotal 475020\r\n"
    "ORACLE snap program-begin vmstat thp_fault_alloc 3\r\n"
    "ORACLE snap program-begin vmstat compact_stall 10\r\n"
    "ORACLE start 13.5\r\n"
    "ORACLE wl fragfault 1\r\n"
    "ORACLE info memfree_kb=450000 fill_bytes=405000000 advise=hugepage file_dir=/tmp\r\n"
    "ORACLE snap phase-begin vmstat thp_fault_alloc 5\r\n"
    "ORACLE snap phase-begin vmstat compact_stall 11\r\n"
    "ORACLE snap phase-begin mthp 64kB anon_fault_alloc 0\r\n"
    "ORACLE snap phase-begin mthp 64kB nr_anon 2\r\n"
    "ORACLE snap phase-end vmstat thp_fault_alloc 7\r\n"
    "ORACLE snap phase-end vmstat compact_stall 15\r\n"
    "ORACLE snap phase-end mthp 64kB anon_fault_alloc 12\r\n"
    "ORACLE snap phase-end mthp 64kB nr_anon 9\r\n"
    "ORACLE anonhuge 1.5 2048\r\n"
    "ORACLE anonhuge 3.0 4096\r\n"
    "ORACLE fault 0 huge 51401.7\r\n"
    "ORACLE fault 1 huge 51011.5\r\n"
    "ORACLE fault 2 base 900.2\r\n"
    "ORACLE extent 0 huge\r\n"
    "ORACLE extent 1 huge\r\n"
    "ORACLE extent 2 mthp\r\n"
    "ORACLE order 9 1024\r\n"
    "ORACLE order 4 512\r\n"
    "ORACLE summary extents=3 huge=2 huge_pct=66.7 p50_us=51011.5 name=x\r\n"
    "some workload chatter\r\n"
    "ORACLE snap program-end vmstat thp_fault_alloc 8\r\n"
    "ORACLE snap program-end vmstat compact_stall 16\r\n"
    "ORACLE exit 0 20.25\r\n"
    "ORACLE end\r\n";

TEST(a_guest_console_reads_whole)
{
	struct oracle_result r;
	const struct oracle_snap *a, *b;
	size_t final[ORACLE_EXT_NOT_SEEN + 1], fh, fb;
	bool found;

	oracle_result_init(&r);
	ASSERT_EQ(oracle_result_text(&r, guest), 0);
	EXPECT_EQ(r.hello, 1); /* behind the firmware's escape sequences */
	ASSERT_STREQ(r.kernel, "6.12.118+deb12-cloud-amd64");
	EXPECT_NEAR(r.uptime_init, 13.16, 1e-9);
	EXPECT(r.started && r.exited && r.ended);
	EXPECT_EQ(r.exit_status, 0);
	EXPECT_NEAR(r.uptime_exit - r.uptime_start, 6.75, 1e-9);
	ASSERT_EQ(r.nsettings, 2);
	ASSERT_STREQ(r.settings[1].key, "shrink_underused");
	ASSERT_STREQ(r.settings[1].value, "absent");
	ASSERT_STREQ(r.knobs[0].value, "[always] madvise never");
	ASSERT_STREQ(r.workload, "fragfault");
	EXPECT_EQ(r.wl_protocol, 1);
	ASSERT_STREQ(oracle_result_value(&r, "file_dir"), "/tmp");
	ASSERT_STREQ(oracle_result_value(&r, "huge_pct"), "66.7");
	EXPECT(!oracle_result_value(&r, "nothing"));
	ASSERT_STREQ(oracle_result_scope(&r, &a, &b), "phase");
	EXPECT_EQ(oracle_snap_delta(a, b, NULL, "thp_fault_alloc", &found), 2);
	EXPECT(found);
	EXPECT_EQ(oracle_snap_delta(a, b, NULL, "compact_stall", NULL), 4);
	EXPECT_EQ(oracle_snap_delta(a, b, "64kB", "anon_fault_alloc", NULL), 12);
	EXPECT_EQ(oracle_snap_delta(a, b, NULL, "no_such", &found), 0);
	EXPECT(!found);
	EXPECT_EQ(oracle_snap_delta(oracle_result_snap(&r, "program-begin"),
				    oracle_result_snap(&r, "program-end"), NULL, "thp_fault_alloc",
				    NULL),
		  5);
	ASSERT_EQ(r.next, 3);
	oracle_result_counts(&r, final, &fh, &fb);
	EXPECT_EQ(fh, 2);
	EXPECT_EQ(fb, 1);
	EXPECT_EQ(final[ORACLE_EXT_HUGE], 2);
	EXPECT_EQ(final[ORACLE_EXT_MTHP], 1);
	EXPECT_NEAR(r.ext[2].fault_us, 900.2, 1e-9);
	EXPECT_EQ(r.nanonhuge, 2);
	EXPECT_EQ(r.anonhuge[1].kb, 4096);
	EXPECT(r.have_orders);
	EXPECT_EQ(r.orders[9], 1024);
	EXPECT_EQ(r.orders[4], 512);
	ASSERT_GE(r.ntail, 2);
	EXPECT(strstr(r.tail[r.ntail - 1], "chatter") != NULL);
	EXPECT_EQ(r.unknown_lines, 0);
	oracle_result_free(&r);
}

TEST(a_workload_under_thpemu_has_no_guest_lines)
{
	struct oracle_result r;
	const struct oracle_snap *a, *b;

	oracle_result_init(&r);
	ASSERT_EQ(oracle_result_text(&r, "ORACLE wl khugepaged 1\n"
					 "ORACLE anonhuge 0.1 0\n"
					 "ORACLE extent 1 base\n"
					 "ORACLE collapse 1 -1 ENOMEM 12.5\n"
					 "ORACLE summary extents=2 final_huge=0\n"),
		  0);
	EXPECT_EQ(r.hello, 0);
	EXPECT(!r.ended);
	EXPECT(!oracle_result_scope(&r, &a, &b));
	ASSERT_EQ(r.next, 2);
	EXPECT_EQ(r.ext[0].final, ORACLE_EXT_NOT_SEEN); /* never reported */
	EXPECT_EQ(r.ext[1].final, ORACLE_EXT_BASE);
	EXPECT_EQ(r.ext[1].collapse_rc, -1);
	ASSERT_STREQ(r.ext[1].collapse_errno, "ENOMEM");
	EXPECT_EQ(r.ext[0].collapse_rc, 1);
	oracle_result_free(&r);
}

TEST(junk_is_tolerated)
{
	struct oracle_result r;

	oracle_result_init(&r);
	EXPECT_EQ(oracle_result_line(&r, "ORACLE"), 0);
	EXPECT_EQ(oracle_result_line(&r, "ORACLE frobnicate 1 2 3"), 1);
	EXPECT_EQ(oracle_result_line(&r, "ORACLE fault x huge 1"), 1);
	EXPECT_EQ(oracle_result_line(&r, "ORACLE fault 99999999999 huge 1"), 1);
	EXPECT_EQ(oracle_result_line(&r, "ORACLE snap t vmstat"), 1);
	EXPECT_EQ(oracle_result_line(&r, "ORACLE snap t mthp 64kB only_two"), 1);
	EXPECT_EQ(oracle_result_line(&r, "ORACLE order 12 5"), 1);
	EXPECT_EQ(oracle_result_line(&r, "ORACLE anonhuge"), 1);
	EXPECT_EQ(oracle_result_line(&r, "[   12.3] kernel says ORACLE hello 5"), 0);
	EXPECT_EQ(r.unknown_lines, 1);
	EXPECT_EQ(r.next, 0);
	EXPECT_EQ(r.nsnaps, 0);
	EXPECT(!r.have_orders);
	EXPECT_EQ(r.hello, 0);
	oracle_result_free(&r);
}

TEST(json_is_valid_and_typed)
{
	struct oracle_result r;
	struct json_w w;
	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	json_error_t je;
	json_t *j, *v;

	ASSERT(f != NULL);
	oracle_result_init(&r);
	ASSERT_EQ(oracle_result_text(&r, guest), 0);
	jw_init(&w, f, true);
	jw_obj_begin(&w, NULL);
	oracle_result_json(&w, &r);
	jw_obj_end(&w);
	ASSERT_EQ(jw_finish(&w), 0);
	fclose(f);
	j = json_loads(buf, 0, &je);
	ASSERT(j != NULL);
	ASSERT_STREQ(json_string_value(json_object_get(j, "counters_scope")), "phase");
	EXPECT_EQ(
	    json_integer_value(json_object_get(json_object_get(j, "vmstat"), "compact_stall")), 4);
	EXPECT_EQ(json_integer_value(
		      json_object_get(json_object_get(j, "vmstat_program"), "thp_fault_alloc")),
		  5);
	v = json_object_get(json_object_get(j, "mthp"), "64kB");
	EXPECT_EQ(json_integer_value(json_object_get(v, "anon_fault_alloc")), 12);
	EXPECT_EQ(json_integer_value(json_object_get(v, "nr_anon")), 9); /* a gauge: its end */
	v = json_object_get(j, "summary");
	EXPECT(json_is_real(json_object_get(v, "huge_pct")));
	EXPECT(json_is_integer(json_object_get(v, "extents")));
	EXPECT(json_is_string(json_object_get(v, "name")));
	v = json_object_get(j, "info");
	EXPECT(json_is_string(json_object_get(v, "advise")));
	EXPECT(json_is_string(json_object_get(v, "file_dir")));
	EXPECT_EQ(json_array_size(json_object_get(j, "extents")), 3);
	v = json_array_get(json_object_get(j, "extents"), 2);
	ASSERT_STREQ(json_string_value(json_object_get(v, "fault")), "base");
	ASSERT_STREQ(json_string_value(json_object_get(v, "final")), "mthp");
	v = json_object_get(j, "counts");
	EXPECT_EQ(json_integer_value(json_object_get(json_object_get(v, "final"), "huge")), 2);
	EXPECT_NEAR(json_real_value(json_object_get(v, "fault_huge_pct")), 66.7, 0.05);
	EXPECT_EQ(json_integer_value(json_object_get(json_object_get(j, "orders"), "4")), 512);
	EXPECT_EQ(json_integer_value(json_object_get(j, "exit_status")), 0);
	EXPECT_EQ(json_integer_value(json_object_get(json_object_get(j, "meminfo_kb"), "MemTotal")),
		  475020);
	json_decref(j);
	free(buf);
	oracle_result_free(&r);
}

TEST_MAIN()

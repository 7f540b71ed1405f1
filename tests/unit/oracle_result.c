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

/* The workload's helper output as the guest prints it: base64 in "S" lines of at most 180
 * characters, a length and an FNV-1a 64 at the end (core/oracle/workloads/wl.c). */
static void b64(const char *in, size_t n, char *out)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;

	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned char)in[i] << 16, k = n - i < 3 ? (unsigned)(n - i) : 3;

		v |= k > 1 ? (unsigned char)in[i + 1] << 8 : 0;
		v |= k > 2 ? (unsigned char)in[i + 2] : 0;
		out[o++] = t[v >> 18 & 63];
		out[o++] = t[v >> 12 & 63];
		out[o++] = k > 1 ? t[v >> 6 & 63] : '=';
		out[o++] = k > 2 ? t[v & 63] : '=';
	}
	out[o] = '\0';
}

/* Feed text as the guest would: begin, S lines of width chars, end with the given length. */
static void feed_memsnap(struct oracle_result *r, const char *text, size_t width, long len_adj,
			 uint64_t sum_xor)
{
	char enc[4096], line[512];
	size_t n = strlen(text), e;

	b64(text, n, enc);
	e = strlen(enc);
	ASSERT_EQ(oracle_result_line(r, "ORACLE snapshot begin phase"), 1);
	for (size_t i = 0; i < e; i += width) {
		snprintf(line, sizeof(line), "ORACLE S %.*s", (int)width, enc + i);
		ASSERT_EQ(oracle_result_line(r, line), 1);
	}
	snprintf(line, sizeof(line), "ORACLE snapshot end %ld %016llx", (long)n + len_adj,
		 (unsigned long long)(oracle_fnv1a64(text, n) ^ sum_xor));
	ASSERT_EQ(oracle_result_line(r, line), 1);
}

static const char snaptext[] = "thpemu-snapshot 1\nhost (none)\nzone 0 DMA32 start 4096\n"
			       "runs 3\nR 4698\nF10 753\nA 1\nend\n";

TEST(a_memory_snapshot_reassembles_over_lines_of_any_length)
{
	/* every width, so each padding case ends a line and no line ends mid-quantum */
	for (size_t width = 4; width <= 180; width += 4) {
		struct oracle_result r;
		const char *t;
		size_t len = 0;

		oracle_result_init(&r);
		feed_memsnap(&r, snaptext, width, 0, 0);
		t = oracle_result_memsnap(&r, &len);
		ASSERT(t != NULL);
		EXPECT_EQ(len, strlen(snaptext));
		EXPECT(!memcmp(t, snaptext, len));
		ASSERT_STREQ(r.memsnap.point, "phase");
		EXPECT_EQ(r.unknown_lines, 0);
		EXPECT_EQ(r.ntail, 0); /* not console chatter */
		oracle_result_free(&r);
	}
	/* the three paddings: 0, 1 and 2 '=' */
	for (size_t cut = 0; cut < 3; cut++) {
		char text[64];
		struct oracle_result r;
		size_t len = 0;

		snprintf(text, sizeof(text), "%.*s", (int)(30 - cut), snaptext);
		oracle_result_init(&r);
		feed_memsnap(&r, text, 180, 0, 0);
		ASSERT(oracle_result_memsnap(&r, &len) != NULL);
		EXPECT_EQ(len, strlen(text));
		oracle_result_free(&r);
	}
}

TEST(a_memory_snapshot_that_does_not_add_up_is_refused_with_why)
{
	struct oracle_result r;
	size_t len;

	oracle_result_init(&r);
	feed_memsnap(&r, snaptext, 16, 1, 0); /* a line lost: fewer bytes than announced */
	EXPECT(oracle_result_memsnap(&r, &len) == NULL);
	EXPECT_EQ(r.memsnap.state, ORACLE_MEMSNAP_BAD);
	EXPECT(strstr(r.memsnap.why, "bytes arrived") != NULL);
	oracle_result_free(&r);

	oracle_result_init(&r);
	feed_memsnap(&r, snaptext, 16, 0, 1); /* a byte changed */
	EXPECT(oracle_result_memsnap(&r, &len) == NULL);
	EXPECT(strstr(r.memsnap.why, "checksum") != NULL);
	oracle_result_free(&r);

	/* a kernel message cut into a data line */
	oracle_result_init(&r);
	oracle_result_line(&r, "ORACLE snapshot begin phase");
	oracle_result_line(&r, "ORACLE S dGhwZW11[   12.5] oom");
	oracle_result_line(&r, "ORACLE snapshot end 6 0");
	EXPECT_EQ(r.memsnap.state, ORACLE_MEMSNAP_BAD);
	EXPECT(strstr(r.memsnap.why, "base64") != NULL);
	oracle_result_free(&r);

	/* data after the padded end of the text */
	oracle_result_init(&r);
	oracle_result_line(&r, "ORACLE snapshot begin start");
	oracle_result_line(&r, "ORACLE S YQ==");
	oracle_result_line(&r, "ORACLE S YWJj");
	EXPECT_EQ(r.memsnap.state, ORACLE_MEMSNAP_BAD);
	oracle_result_free(&r);

	/* the guest said why; a boot that died in the middle stays incomplete */
	oracle_result_init(&r);
	oracle_result_line(&r, "ORACLE snapshot failed /bin/thpemu-snapshot: exit status 2");
	EXPECT_EQ(r.memsnap.state, ORACLE_MEMSNAP_BAD);
	EXPECT(strstr(r.memsnap.why, "exit status 2") != NULL);
	oracle_result_free(&r);
	oracle_result_init(&r);
	oracle_result_line(&r, "ORACLE snapshot begin phase");
	oracle_result_line(&r, "ORACLE S YWJj");
	EXPECT_EQ(r.memsnap.state, ORACLE_MEMSNAP_OPEN);
	EXPECT(oracle_result_memsnap(&r, &len) == NULL);
	oracle_result_free(&r);
}

TEST(a_memory_snapshot_is_summarised_in_the_json)
{
	struct oracle_result r;
	struct json_w w;
	json_error_t e;
	json_t *j, *m;
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	oracle_result_init(&r);
	feed_memsnap(&r, snaptext, 180, 0, 0);
	jw_init(&w, f, false);
	jw_obj_begin(&w, NULL);
	oracle_result_json(&w, &r);
	jw_obj_end(&w);
	ASSERT_EQ(jw_finish(&w), 0);
	fclose(f);
	j = json_loads(buf, 0, &e);
	ASSERT(j != NULL);
	m = json_object_get(j, "memory_snapshot");
	ASSERT_STREQ(json_string_value(json_object_get(m, "status")), "ok");
	ASSERT_STREQ(json_string_value(json_object_get(m, "point")), "phase");
	EXPECT_EQ(json_integer_value(json_object_get(m, "bytes")), (json_int_t)strlen(snaptext));
	EXPECT(json_is_null(json_object_get(m, "error")));
	json_decref(j);
	free(buf);
	oracle_result_free(&r);
}

TEST_MAIN()

/* The fidelity table (core/oracle/fidelity.c): the counter mapping against core/mm's names,
 * samples from results, statistics, verdicts, opposite moves, text and JSON. */
#include "harness.h"
#include "mm/mm.h"
#include "oracle/fidelity.h"
#include "util/json.h"

#include <jansson.h>
#include <math.h>

static int row_of(const char *key)
{
	for (int i = 0; i < FID_NROWS; i++)
		if (!strcmp(fid_rows[i].key, key))
			return i;
	return -1;
}

TEST(every_counter_row_is_a_vmstat_name_thpemu_counts)
{
	int pct = 0;

	for (int i = 0; i < FID_NROWS; i++) {
		bool found = false;

		EXPECT(fid_rows[i].real && *fid_rows[i].real);
		EXPECT(fid_rows[i].emu && *fid_rows[i].emu);
		if (fid_rows[i].kind == FID_PCT) {
			pct++;
			continue;
		}
		if (fid_rows[i].size) { /* a per-size stats file: optional, its key names it */
			EXPECT(fid_rows[i].optional);
			EXPECT(fid_rows[i].stat && strstr(fid_rows[i].key, fid_rows[i].stat));
			EXPECT(strstr(fid_rows[i].key, fid_rows[i].size) != NULL);
			EXPECT(strstr(fid_rows[i].emu, "MTHP_EV_") != NULL);
			EXPECT(strstr(fid_rows[i].real, "mm/") != NULL);
			continue;
		}
		/* thpemu's side reads these names from thpemu_vmstat(), which prints
		 * mm_stat_names: a row must be one of them, and cite the counter it is */
		for (int s = 0; s < MM_STAT_NR; s++)
			found |= mm_stat_names[s] && !strcmp(mm_stat_names[s], fid_rows[i].key);
		EXPECT(found);
		EXPECT(strstr(fid_rows[i].emu, "MM_STAT_") != NULL);
		EXPECT(strstr(fid_rows[i].real, "mm/") != NULL);
	}
	EXPECT_EQ(pct, 2);
	EXPECT(row_of("compact_free_scanned") >= 0);
	EXPECT(row_of("thp_fault_fallback") >= 0);
}

static const char run_text[] = "ORACLE wl fragfault 1\n"
			       "ORACLE snap phase-begin vmstat thp_fault_alloc 10\n"
			       "ORACLE snap phase-begin vmstat compact_stall 3\n"
			       "ORACLE snap phase-begin vmstat compact_free_scanned 100\n"
			       "ORACLE snap phase-end vmstat thp_fault_alloc 13\n"
			       "ORACLE snap phase-end vmstat compact_stall 5\n"
			       "ORACLE snap phase-end vmstat compact_free_scanned 900\n"
			       "ORACLE snap phase-begin mthp 64kB anon_fault_alloc 7\n"
			       "ORACLE snap phase-end mthp 64kB anon_fault_alloc 1031\n"
			       "ORACLE snap phase-begin mthp 64kB anon_fault_fallback 0\n"
			       "ORACLE snap phase-end mthp 64kB anon_fault_fallback 2\n"
			       "ORACLE fault 0 huge 10.0\n"
			       "ORACLE fault 1 huge 10.0\n"
			       "ORACLE fault 2 huge 10.0\n"
			       "ORACLE fault 3 base 10.0\n"
			       "ORACLE extent 0 huge\n"
			       "ORACLE extent 1 huge\n"
			       "ORACLE extent 2 base\n"
			       "ORACLE extent 3 base\n";

TEST(a_sample_takes_huge_pct_and_phase_deltas)
{
	struct oracle_result r;
	struct fid_sample s;

	oracle_result_init(&r);
	ASSERT_EQ(oracle_result_text(&r, run_text), 0);
	fid_sample_from_result(&r, &s, false);
	ASSERT(s.have[row_of("huge_fault_pct")]);
	EXPECT_NEAR(s.v[row_of("huge_fault_pct")], 75.0, 1e-9);
	ASSERT(s.have[row_of("huge_final_pct")]);
	EXPECT_NEAR(s.v[row_of("huge_final_pct")], 50.0, 1e-9);
	EXPECT_NEAR(s.v[row_of("thp_fault_alloc")], 3, 1e-9);
	EXPECT_NEAR(s.v[row_of("compact_stall")], 2, 1e-9);
	EXPECT_NEAR(s.v[row_of("compact_free_scanned")], 800, 1e-9);
	EXPECT(!s.have[row_of("pgmigrate_success")]); /* in neither snapshot */
	/* per-size stats: the size's own delta, not the vmstat name's */
	ASSERT(s.have[row_of("mthp_64kB_anon_fault_alloc")]);
	EXPECT_NEAR(s.v[row_of("mthp_64kB_anon_fault_alloc")], 1024, 1e-9);
	EXPECT_NEAR(s.v[row_of("mthp_64kB_anon_fault_fallback")], 2, 1e-9);
	EXPECT(!s.have[row_of("mthp_16kB_anon_fault_alloc")]);
	EXPECT(!s.have[row_of("mthp_64kB_shmem_alloc")]);
	oracle_result_free(&r);

	/* program-scope counters only (a workload without phase snapshots): no counters, and
	 * extents unknown (no PFNs) give no final % */
	oracle_result_init(&r);
	ASSERT_EQ(oracle_result_text(&r, "ORACLE snap program-begin vmstat compact_stall 1\n"
					 "ORACLE snap program-end vmstat compact_stall 4\n"
					 "ORACLE fault 0 base 1.0\n"
					 "ORACLE extent 0 unknown\n"),
		  0);
	fid_sample_from_result(&r, &s, false);
	EXPECT(!s.have[row_of("compact_stall")]);
	EXPECT(!s.have[row_of("huge_final_pct")]);
	EXPECT(s.have[row_of("huge_fault_pct")]);
	EXPECT_NEAR(s.v[row_of("huge_fault_pct")], 0.0, 1e-9);
	/* a program outside the suite: its counters are the whole program's */
	fid_sample_from_result(&r, &s, true);
	ASSERT(s.have[row_of("compact_stall")]);
	EXPECT_NEAR(s.v[row_of("compact_stall")], 3, 1e-9);
	oracle_result_free(&r);

	/* ...but a program that took phase snapshots of its own is not read at program scope */
	oracle_result_init(&r);
	ASSERT_EQ(oracle_result_text(&r, run_text), 0);
	fid_sample_from_result(&r, &s, true);
	EXPECT(!s.have[row_of("thp_fault_alloc")]);
	oracle_result_free(&r);
}

static void set_values(struct fid_side *side, int row, const double *v, int n)
{
	side->n = n;
	for (int i = 0; i < n; i++) {
		side->s[i].v[row] = v[i];
		side->s[i].have[row] = true;
		side->seed[i] = (uint64_t)i + 1;
		snprintf(side->status[i], sizeof(side->status[i]), "ok");
	}
}

TEST(stats_median_and_bimodal)
{
	struct fid_side side = {0};
	struct fid_stat st;
	const double odd[] = {64, 22, 100}, even[] = {10, 40, 20, 30}, close[] = {30, 36, 41};
	int pct = row_of("huge_fault_pct"), cnt = row_of("compact_stall");

	set_values(&side, pct, odd, 3);
	fid_stat(side.s, side.n, pct, &st);
	EXPECT_EQ(st.n, 3);
	EXPECT_NEAR(st.min, 22, 1e-9);
	EXPECT_NEAR(st.median, 64, 1e-9);
	EXPECT_NEAR(st.max, 100, 1e-9);
	EXPECT(st.bimodal); /* gaps of 42 and 36 points */
	set_values(&side, pct, close, 3);
	fid_stat(side.s, side.n, pct, &st);
	EXPECT(!st.bimodal); /* gaps of 6 and 5 */
	set_values(&side, cnt, even, 4);
	fid_stat(side.s, side.n, cnt, &st);
	EXPECT_NEAR(st.median, 25, 1e-9);
	EXPECT(!st.bimodal);	     /* counters are never called bimodal */
	side.s[1].have[cnt] = false; /* a sample without the row is skipped */
	fid_stat(side.s, side.n, cnt, &st);
	EXPECT_EQ(st.n, 3);
	EXPECT_NEAR(st.median, 20, 1e-9);
	fid_stat(side.s, 0, cnt, &st);
	EXPECT_EQ(st.n, 0);
}

static struct fid_stat mk(double min, double med, double max, bool bimodal)
{
	return (struct fid_stat){.n = 3, .min = min, .median = med, .max = max, .bimodal = bimodal};
}

TEST(verdicts)
{
	struct fid_stat none = {0}, r, e;

	/* huge %: 5 points of the median; the range counts only where the real kernel is
	 * bimodal */
	r = mk(30, 33, 36, false);
	e = mk(37, 38, 40, false);
	EXPECT_EQ(fid_verdict(FID_PCT, &r, &e), FID_CLOSE);
	e = mk(38.5, 38.5, 38.5, false);
	EXPECT_EQ(fid_verdict(FID_PCT, &r, &e), FID_OFF);
	r = mk(22, 64, 100, true);
	e = mk(90, 95, 99, false);
	EXPECT_EQ(fid_verdict(FID_PCT, &r, &e), FID_INRANGE);
	e = mk(10, 12, 14, false);
	EXPECT_EQ(fid_verdict(FID_PCT, &r, &e), FID_OFF);
	r = mk(22, 64, 100, false); /* the same spread, not split: the median counts */
	e = mk(90, 95, 99, false);
	EXPECT_EQ(fid_verdict(FID_PCT, &r, &e), FID_OFF);
	/* counters: 25 % of the median, or inside the range */
	r = mk(20, 40, 45, false);
	e = mk(49, 50, 51, false);
	EXPECT_EQ(fid_verdict(FID_COUNTER, &r, &e), FID_CLOSE);
	e = mk(21, 22, 23, false);
	EXPECT_EQ(fid_verdict(FID_COUNTER, &r, &e), FID_INRANGE);
	e = mk(51, 51, 51, false);
	EXPECT_EQ(fid_verdict(FID_COUNTER, &r, &e), FID_OFF);
	r = mk(0, 0, 0, false);
	e = mk(0, 0, 0, false);
	EXPECT_EQ(fid_verdict(FID_COUNTER, &r, &e), FID_CLOSE);
	e = mk(0, 1, 1, false);
	EXPECT_EQ(fid_verdict(FID_COUNTER, &r, &e), FID_OFF);
	EXPECT_EQ(fid_verdict(FID_COUNTER, &none, &e), FID_NA);
	EXPECT_EQ(fid_verdict(FID_PCT, &r, &none), FID_NA);
	ASSERT_STREQ(fid_verdict_name(FID_OFF), "OFF");
	ASSERT_STREQ(fid_verdict_name(FID_INRANGE), "in range");
}

TEST(directions)
{
	EXPECT_EQ(fid_direction(FID_PCT, 30, 36), 1);
	EXPECT_EQ(fid_direction(FID_PCT, 30, 35), 0); /* within 5 points: no move */
	EXPECT_EQ(fid_direction(FID_PCT, 100, 30), -1);
	EXPECT_EQ(fid_direction(FID_COUNTER, 100, 140), 1);
	EXPECT_EQ(fid_direction(FID_COUNTER, 100, 126), 0); /* 26 of the larger 126 */
	EXPECT_EQ(fid_direction(FID_COUNTER, 100, 80), 0);  /* 20 of 100 */
	EXPECT_EQ(fid_direction(FID_COUNTER, 0, 0), 0);
	EXPECT_EQ(fid_direction(FID_COUNTER, 0, 3), 1);
}

/* Three settings: the real kernel's huge % falls from always to never, thpemu's rises; the
 * stall count agrees in direction. */
static void make_table(struct fid_table *t)
{
	static const char *const names[] = {"enabled=always defrag=always",
					    "enabled=always defrag=madvise",
					    "enabled=always defrag=never"};
	const double rp[3][3] = {{90, 95, 100}, {60, 64, 70}, {28, 30, 30}};
	const double ep[3][3] = {{30, 31, 32}, {50, 50, 50}, {90, 92, 94}};
	const double rs[3][3] = {{30, 36, 40}, {10, 12, 14}, {0, 0, 0}};
	const double es[3][3] = {{33, 35, 36}, {11, 12, 20}, {0, 0, 0}};
	int pct = row_of("huge_fault_pct"), cnt = row_of("compact_stall");

	memset(t, 0, sizeof(*t));
	snprintf(t->kernel, sizeof(t->kernel), "6.12 test");
	snprintf(t->workload, sizeof(t->workload), "fragfault --region 128M");
	snprintf(t->emu_cmd, sizeof(t->emu_cmd), "thpemu run ...");
	snprintf(t->mode, sizeof(t->mode), "pinned");
	snprintf(t->at, sizeof(t->at), "phase");
	t->mem_bytes = 512ULL << 20;
	t->nset = 3;
	for (int k = 0; k < 3; k++) {
		snprintf(t->set[k].name, sizeof(t->set[k].name), "%s", names[k]);
		snprintf(t->set[k].policy, sizeof(t->set[k].policy), "thp-always/x");
		set_values(&t->set[k].real, pct, rp[k], 3);
		set_values(&t->set[k].emu, pct, ep[k], 3);
		set_values(&t->set[k].real, cnt, rs[k], 3);
		set_values(&t->set[k].emu, cnt, es[k], 3);
	}
	snprintf(t->set[2].emu.status[1], sizeof(t->set[2].emu.status[1]), "workload-failed");
	snprintf(t->set[2].emu.note[0], sizeof(t->set[2].emu.note[0]), "host: 2 huge not PMD");
	fid_build(t);
}

TEST(a_table_flags_opposite_moves)
{
	static struct fid_table t;
	int pct = row_of("huge_fault_pct"), cnt = row_of("compact_stall"), n = 0;
	int counts[FID_OFF + 1];

	make_table(&t);
	EXPECT_EQ(t.set[0].verdict[pct], FID_OFF);
	EXPECT_EQ(t.set[2].verdict[cnt], FID_CLOSE);
	EXPECT_EQ(t.set[0].verdict[row_of("pgmigrate_success")], FID_NA);
	for (int i = 0; i < t.nflips; i++) {
		EXPECT_EQ(t.flips[i].row, pct); /* the stalls agree */
		n++;
	}
	EXPECT_EQ(n, 3); /* always->madvise, always->never, madvise->never */
	EXPECT_EQ(t.flips[0].a, 0);
	EXPECT_EQ(t.flips[0].b, 1);
	EXPECT_NEAR(t.flips[0].real_delta, -31, 1e-9);
	EXPECT_NEAR(t.flips[0].emu_delta, 19, 1e-9);
	fid_tally(&t, counts);
	/* the three shared memory rows and the per-size ones have no value anywhere: left out */
	EXPECT(!t.shown[row_of("thp_file_alloc")]);
	EXPECT(!t.shown[row_of("mthp_64kB_anon_fault_alloc")]);
	EXPECT_EQ(counts[FID_NA] + counts[FID_CLOSE] + counts[FID_INRANGE] + counts[FID_OFF],
		  3 * (FID_NROWS - 3 - FID_MTHP_SIZES * FID_MTHP_STATS));
}

/* The shared memory rows appear, for every setting, once one value of one side is non-zero;
 * all zero they stay out of the text and the verdicts (a workload without shmem). */
TEST(shmem_rows_appear_where_non_zero)
{
	static struct fid_table t;
	int alloc = row_of("thp_file_alloc"), mapped = row_of("thp_file_mapped");
	const double zero[3] = {0, 0, 0}, some[3] = {0, 16, 32};
	int counts[FID_OFF + 1];
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	ASSERT(alloc >= 0 && mapped >= 0 && row_of("thp_file_fallback") >= 0);
	EXPECT(fid_rows[alloc].optional && !fid_rows[row_of("thp_fault_alloc")].optional);
	make_table(&t);
	for (int k = 0; k < 3; k++) {
		set_values(&t.set[k].real, mapped, zero, 3);
		set_values(&t.set[k].emu, mapped, zero, 3);
	}
	fid_build(&t);
	EXPECT(!t.shown[mapped]); /* zeros alone: not shown */
	set_values(&t.set[2].emu, alloc, some, 3);
	fid_build(&t);
	EXPECT(t.shown[alloc]);
	EXPECT(!t.shown[mapped]);
	EXPECT_EQ(t.set[2].verdict[alloc], FID_NA); /* the real side has none */
	fid_tally(&t, counts);
	EXPECT_EQ(counts[FID_NA] + counts[FID_CLOSE] + counts[FID_INRANGE] + counts[FID_OFF],
		  3 * (FID_NROWS - 2 - FID_MTHP_SIZES * FID_MTHP_STATS));
	f = open_memstream(&buf, &len);
	fid_text(f, &t);
	fclose(f);
	EXPECT(strstr(buf, "thp_file_alloc") != NULL);
	EXPECT(strstr(buf, "0 / 16 / 32") != NULL);
	EXPECT(strstr(buf, "thp_file_mapped") == NULL);
	free(buf);
}

TEST(text_and_json)
{
	static struct fid_table t;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct json_w w;
	json_error_t e;
	json_t *j, *s, *row;

	make_table(&t);
	fid_text(f, &t);
	fclose(f);
	EXPECT(strstr(buf, "enabled=always defrag=madvise (thpemu thp-always/x)") != NULL);
	EXPECT(strstr(buf, "huge % at first touch      90.0 / 95.0 / 100.0") != NULL);
	EXPECT(strstr(buf, "OPPOSITE: huge % at first touch from enabled=always defrag=always "
			   "to enabled=always defrag=madvise: real -31.0, thpemu +19.0") != NULL);
	EXPECT(strstr(buf, "thpemu seed 2: workload-failed") != NULL);
	EXPECT(strstr(buf, "thpemu seed 1: host: 2 huge not PMD") != NULL);
	EXPECT(strstr(buf, "verdicts: ") != NULL);
	free(buf);

	/* HTML: the same table, escaped, a class per verdict */
	buf = NULL;
	f = open_memstream(&buf, &len);
	snprintf(t.set[1].name, sizeof(t.set[1].name), "a <b> & \"c\"");
	fid_html(f, &t);
	fclose(f);
	EXPECT(!strncmp(buf, "<!DOCTYPE html>", 15));
	EXPECT(strstr(buf, "a &lt;b&gt; &amp; &quot;c&quot;") != NULL);
	EXPECT(strstr(buf, "<b>") == NULL);
	EXPECT(strstr(buf, "<tr class=\"off\"><td title=\"real: fault lines") != NULL);
	EXPECT(strstr(buf, "</body></html>\n") != NULL);
	free(buf);
	snprintf(t.set[1].name, sizeof(t.set[1].name), "enabled=always defrag=madvise");

	buf = NULL;
	f = open_memstream(&buf, &len);
	jw_init(&w, f, true);
	fid_json(&w, &t);
	ASSERT_EQ(jw_finish(&w), 0);
	fclose(f);
	j = json_loads(buf, 0, &e);
	ASSERT(j != NULL);
	ASSERT_STREQ(json_string_value(json_object_get(j, "kind")), "fidelity");
	EXPECT_EQ(json_array_size(json_object_get(j, "rows")), FID_NROWS);
	s = json_array_get(json_object_get(j, "settings"), 0);
	row = json_object_get(json_object_get(s, "table"), "huge_fault_pct");
	EXPECT_NEAR(json_real_value(json_object_get(json_object_get(row, "real"), "median")), 95,
		    1e-9);
	ASSERT_STREQ(json_string_value(json_object_get(row, "verdict")), "OFF");
	EXPECT_EQ(json_array_size(json_object_get(s, "real")), 3);
	EXPECT(json_is_null(json_object_get(
	    json_object_get(json_array_get(json_object_get(s, "real"), 0), "values"),
	    "pgmigrate_success")));
	EXPECT_EQ(json_array_size(json_object_get(j, "opposite_moves")), 3);
	EXPECT_EQ(json_integer_value(json_object_get(json_object_get(j, "verdicts"), "OFF")),
		  (json_int_t)3);
	json_decref(j);
	free(buf);
}

TEST_MAIN()

/* core/sim scenarios and runs: same inputs and seed give byte-identical JSON, another seed gives
 * another run; every scenario runs on a small pool and reports the required sections;
 * parameters and device specs are parsed with one-line errors naming the key; mel-2011 brings
 * its own disk and file system, and keeps its orderings. */
#include "harness.h"
#include "sim/sim.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>

#define MEL_SECS 30 /* mel-2011 runs here: usemem from 10 s, 20 s of faults */

static int config(struct sim_config *c, const char *policy, const char *scenario, uint64_t pool,
		  uint64_t duration_s, uint64_t seed)
{
	char err[512];

	sim_config_init(c);
	if (mm_policy_parse(policy, &c->policy, err, sizeof(err)))
		return -EINVAL;
	c->scenario = sim_scenario_find(scenario);
	if (!c->scenario)
		return -EINVAL;
	sim_params_defaults(c->scenario, &c->params);
	c->pool_bytes = pool;
	c->duration_ns = duration_s * 1000000000ULL;
	c->seed = seed;
	return 0;
}

/* Run and return the JSON report as a malloc'ed string. */
static char *run_json(const struct sim_config *c)
{
	struct sim_result *r;
	char err[512], *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (sim_run_scenario(c, &r, err, sizeof(err)) != 0) {
		fprintf(stderr, "run failed: %s\n", err);
		return NULL;
	}
	f = open_memstream(&buf, &len);
	if (sim_report_json(r, f, true) != 0)
		buf[0] = '\0';
	fclose(f);
	sim_result_free(r);
	return buf;
}

TEST(same_seed_gives_identical_bytes_and_another_seed_differs)
{
	struct sim_config c;
	char *a, *b, *d;

	ASSERT_EQ(config(&c, "linux-3.1", "seed-2011", 64 << 20, 40, 7), 0);
	a = run_json(&c);
	b = run_json(&c);
	ASSERT(a && b);
	EXPECT(strlen(a) > 1000);
	EXPECT(strcmp(a, b) == 0);
	c.seed = 8;
	d = run_json(&c);
	ASSERT(d);
	EXPECT(strcmp(a, d) != 0);
	free(a);
	free(b);
	free(d);
}

static json_t *get(json_t *root, const char *path)
{
	char buf[256], *save = NULL;
	json_t *j = root;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *k = strtok_r(buf, ".", &save); k && j; k = strtok_r(NULL, ".", &save))
		j = json_object_get(j, k);
	return j;
}

static void check_sections(const char *text, const char *scenario)
{
	static const char *const required[] = {
	    "policy",
	    "scenario",
	    "seed",
	    "pool_bytes",
	    "device",
	    "duration_s",
	    "faults.total",
	    "faults.huge",
	    "faults.base",
	    "faults.huge_pct",
	    "latency_us.huge.p99",
	    "latency_us.base.p999",
	    "latency_us.both.max",
	    "vmstat.thp_fault_alloc",
	    "vmstat.compact_stall",
	    "writeback_waits.count",
	    "writeback_waits.total_ms",
	    "writeback_waits.max_ms",
	    "writeback_waits_by_path.compaction.count",
	    "writeback_waits_by_path.reclaim.count",
	    "stalls.threshold_ms",
	    "stalls.count",
	    "stalls.groups",
	    "stalls.faults.count",
	    "stalls.faults.max_ms",
	    "stalls.waits.count",
	    "stalls.waits.total_ms",
	    "stalls.waits.max_ms",
	    "stalls.waits.groups",
	    "extents.huge_pct",
	};
	json_error_t jerr;
	json_t *root = json_loads(text, 0, &jerr);

	ASSERT(root);
	for (unsigned i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
		if (!get(root, required[i]))
			fprintf(stderr, "  missing %s\n", required[i]);
		EXPECT(get(root, required[i]) != NULL);
	}
	EXPECT(strcmp(json_string_value(get(root, "scenario")), scenario) == 0);
	EXPECT(json_integer_value(get(root, "faults.total")) > 0);
	/* the faults-only breakdown adds up to the shared writeback_waits section */
	EXPECT_EQ(
	    json_integer_value(get(root, "writeback_waits_by_path.in_faults.compaction.count")) +
		json_integer_value(get(root, "writeback_waits_by_path.in_faults.reclaim.count")),
	    json_integer_value(get(root, "writeback_waits.count")));
	EXPECT(json_integer_value(get(root, "faults.total")) ==
	       json_integer_value(get(root, "faults.huge")) +
		   json_integer_value(get(root, "faults.base")));
	json_decref(root);
}

TEST(every_scenario_runs_small_and_reports_the_required_sections)
{
	static const char *const names[] = {"seed-2011", "thpcompact", "thpchallenge-fio"};
	struct sim_config c;

	/* seed-2011's usemem starts at 10 s */
	static const uint64_t secs[] = {12, 1, 1};

	for (unsigned i = 0; i < 3; i++) {
		char *j;

		ASSERT_EQ(config(&c, "linux-3.3", names[i], 32 << 20, secs[i], 1), 0);
		j = run_json(&c);
		ASSERT(j);
		check_sections(j, names[i]);
		free(j);
	}
}

/* Per-wait events (needs core/mm to report its waits through ops->waited): 3.1's sync
 * compaction sleeps on writeback many times per fault, so Mel Gorman's per-wait count exceeds
 * the per-fault one; every event is one wait of at least the threshold, and 3.3's sync-light
 * compaction never waits on writeback, so it has no compact-writeback event. */
static json_t *run_root(const char *policy, uint64_t secs)
{
	struct sim_config c;
	json_error_t jerr;
	json_t *root;
	char *j;

	if (config(&c, policy, "seed-2011", 256 << 20, secs, 1) != 0)
		return NULL;
	j = run_json(&c);
	root = j ? json_loads(j, 0, &jerr) : NULL;
	free(j);
	return root;
}

static unsigned wait_kind_count(json_t *root, const char *kind, int background)
{
	json_t *groups = get(root, "stalls.waits.groups");
	unsigned n = 0;

	for (size_t i = 0; i < json_array_size(groups); i++) {
		json_t *g = json_array_get(groups, i);

		if (strcmp(json_string_value(json_object_get(g, "kind")), kind) == 0 &&
		    (background < 0 ||
		     json_is_true(json_object_get(g, "background")) == background))
			n += (unsigned)json_integer_value(json_object_get(g, "count"));
	}
	return n;
}

/* linux-3.2: its THP faults' sync compaction sleeps on pages under writeback (under 3.1, whose
 * faults reclaim a pass at a time, the minute's waits are all in reclaim) */
TEST(writeback_waits_are_per_wait_events_beside_the_per_fault_stalls)
{
	json_t *root = run_root("linux-3.2", 60), *groups;
	double thr, max = 0, total = 0;
	json_int_t waits, faults, stored = 0;

	ASSERT(root);
	waits = json_integer_value(get(root, "stalls.waits.count"));
	faults = json_integer_value(get(root, "stalls.faults.count"));
	printf("linux-3.2: %lld per-wait events, %lld per-fault stalls\n", (long long)waits,
	       (long long)faults);
	EXPECT_GT(faults, 0);
	EXPECT_GE(waits, faults);
	EXPECT_EQ(faults, json_integer_value(get(root, "stalls.count"))); /* compatible keys */
	EXPECT_GT(wait_kind_count(root, "compact-writeback", 0), 0);
	thr = json_number_value(get(root, "stalls.waits.threshold_ms"));
	groups = get(root, "stalls.waits.groups");
	for (size_t i = 0; i < json_array_size(groups); i++) {
		json_t *g = json_array_get(groups, i), *ev = json_object_get(g, "events_ms");

		stored += json_integer_value(json_object_get(g, "count"));
		EXPECT_EQ(json_array_size(ev), json_integer_value(json_object_get(g, "count")));
		for (size_t k = 0; k < json_array_size(ev); k++) {
			double v = json_number_value(json_array_get(ev, k));

			EXPECT(v >= thr);
			total += v;
			max = v > max ? v : max;
		}
		/* background waits (no fault behind them) carry their kernel thread's comm; the
		 * function is the one that slept */
		if (json_is_true(json_object_get(g, "background"))) {
			const char *c =
			    json_string_value(json_array_get(json_object_get(g, "comms"), 0));

			EXPECT(c && !strcmp(c, "kswapd0"));
		} else {
			EXPECT(strcmp(json_string_value(
					  json_array_get(json_object_get(g, "comms"), 0)),
				      "usemem") == 0 ||
			       strcmp(json_string_value(
					  json_array_get(json_object_get(g, "comms"), 0)),
				      "postmark") == 0 ||
			       strcmp(json_string_value(
					  json_array_get(json_object_get(g, "comms"), 0)),
				      "khugepaged") == 0);
		}
		if (strstr(json_string_value(json_object_get(g, "kind")), "writeback"))
			EXPECT(strcmp(json_string_value(json_object_get(g, "function")),
				      "sleep_on_page") == 0);
	}
	EXPECT_EQ(stored, waits);
	EXPECT_NEAR(total, json_number_value(get(root, "stalls.waits.total_ms")), 1.0);
	EXPECT_NEAR(max, json_number_value(get(root, "stalls.waits.max_ms")), 0.001);
	json_decref(root);

	root = run_root("linux-3.3", 60);
	ASSERT(root);
	EXPECT_EQ(wait_kind_count(root, "compact-writeback", -1), 0);
	json_decref(root);
}

TEST(thpcompact_runs_whole_iterations)
{
	struct sim_config c;
	struct sim_result *r;
	struct sim_summary s;
	char err[256];

	ASSERT_EQ(config(&c, "linux-3.3", "thpcompact", 32 << 20, 1, 1), 0);
	ASSERT_EQ(sim_run_scenario(&c, &r, err, sizeof(err)), 0);
	sim_result_summary(r, &s);
	EXPECT_GE(s.duration_ns, 1000000000ULL); /* ends after the last whole iteration */
	EXPECT_GT(s.faults, 0);
	sim_result_free(r);
}

/* Multi-size THP: under hugepages-64kB=always the simulated process's write faults
 * take 64 KiB folios (modern-never: no PMD), every one counted in faults.mthp, the 64kB size
 * and its latency; without the setting none; a 3.x run has no "mthp" section. */
static json_t *run_thpcompact(const char *policy)
{
	struct sim_config c;
	json_error_t jerr;
	json_t *root;
	char *j;

	if (config(&c, policy, "thpcompact", 64 << 20, 1, 1) != 0)
		return NULL;
	c.duration_ns =
	    200000000; /* 0.2 s of virtual time: thousands of faults, quick under TSan */
	j = run_json(&c);
	root = j ? json_loads(j, 0, &jerr) : NULL;
	free(j);
	return root;
}

static json_int_t ival(json_t *root, const char *path)
{
	json_t *v = get(root, path);

	ASSERT(json_is_integer(v));
	return json_integer_value(v);
}

TEST(mthp_64k_faults_per_folio_and_reports_them)
{
	json_t *m = run_thpcompact("modern-never:hugepages-64kB=always");
	json_t *b = run_thpcompact("modern-never");
	json_t *old = run_thpcompact("linux-3.3");
	json_t *s64;
	json_int_t mthp;

	ASSERT(m && b && old);
	mthp = ival(m, "faults.mthp");
	printf("  64kB folios faulted in 0.2 s: %lld\n", (long long)mthp);
	EXPECT_GT(mthp, 1000);
	EXPECT_EQ(ival(m, "faults.base"), 0);
	EXPECT_EQ(ival(m, "faults.huge"), 0);
	EXPECT_EQ(ival(m, "latency_us.mthp.count"), mthp);
	s64 = json_object_get(json_object_get(get(m, "mthp"), "sizes"), "64kB");
	ASSERT(s64 != NULL);
	EXPECT_EQ(json_integer_value(json_object_get(s64, "faults")), mthp);
	EXPECT_EQ(json_integer_value(json_object_get(s64, "anon_fault_alloc")), mthp);
	EXPECT_EQ(json_integer_value(json_object_get(s64, "order")), 4);
	ASSERT_STREQ(json_string_value(json_object_get(s64, "setting")), "always");
	ASSERT_STREQ(json_string_value(get(m, "mthp.delivery")), "model");
	EXPECT_EQ(ival(b, "faults.mthp"), 0);
	EXPECT_GT(ival(b, "faults.base"), 0);
	EXPECT_EQ(json_object_get(old, "mthp"), NULL);
	json_decref(m);
	json_decref(b);
	json_decref(old);
}

TEST(parameters_parse_with_units_and_name_the_key_on_error)
{
	const struct sim_scenario *s = sim_scenario_find("seed-2011");
	struct sim_params p;
	char err[512];

	ASSERT(s);
	sim_params_defaults(s, &p);
	ASSERT_EQ(sim_params_set(s, &p, "usemem-hold=500ms", err, sizeof(err)), 0);
	ASSERT_EQ(sim_params_set(s, &p, "usemem-max=10%", err, sizeof(err)), 0);
	ASSERT_EQ(sim_params_set(s, &p, "madvise=no", err, sizeof(err)), 0);
	EXPECT_EQ(sim_params_set(s, &p, "usemem-hold=5", err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "usemem-hold") && strstr(err, "duration"));
	EXPECT_EQ(sim_params_set(s, &p, "nosuch=1", err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "unknown key 'nosuch'") && strstr(err, "usemem-procs"));
	EXPECT_EQ(sim_params_set(s, &p, "madvise", err, sizeof(err)), -EINVAL);
	/* a ratio may exceed 1 (a working set larger than memory); a fraction may not */
	ASSERT_EQ(sim_params_set(s, &p, "writer-set=250%", err, sizeof(err)), 0);
	for (unsigned i = 0; i < s->nparams; i++)
		if (!strcmp(s->params[i].key, "writer-set"))
			EXPECT_NEAR(p.f[i], 2.5, 1e-12);
	ASSERT_EQ(sim_params_set(s, &p, "writer-set=1.5", err, sizeof(err)), 0);
	EXPECT_EQ(sim_params_set(s, &p, "writer-set=-1", err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "writer-set") && strstr(err, "ratio"));
	EXPECT_EQ(sim_params_set(s, &p, "writer-set=101", err, sizeof(err)), -EINVAL);
	EXPECT_EQ(sim_params_set(s, &p, "usemem-max=150%", err, sizeof(err)), -EINVAL);
	EXPECT(sim_scenario_find("thpcompact") && sim_scenario_find("thpchallenge-fio"));
	EXPECT(sim_scenario_find("thpchallenge") == NULL);
}

/* mel-2011, Mel Gorman's own run as far as the sources say: postmark on mmtests' test
 * partition, a 2011 desktop disk (sata-hdd-2011) with a file system that has ->migratepage
 * (ext4). The scenario brings that machine unless the caller chose a device or a file system. */
TEST(mel_2011_brings_its_disk_and_file_system_unless_given)
{
	struct sim_config c;
	char err[256];

	ASSERT_EQ(config(&c, "linux-3.2", "mel-2011", 256 << 20, 60, 1), 0);
	ASSERT_EQ(sim_config_scenario_machine(&c, false, false, err, sizeof(err)), 0);
	EXPECT_EQ(strcmp(c.device_spec, "sata-hdd-2011"), 0);
	EXPECT_EQ(c.device.write_bw, 100000000);
	EXPECT_EQ(c.policy.fs, MM_FS_EXT4);
	ASSERT_EQ(config(&c, "linux-3.2", "mel-2011", 256 << 20, 60, 1), 0);
	ASSERT_EQ(sim_config_scenario_machine(&c, true, true, err, sizeof(err)), 0);
	EXPECT_EQ(strcmp(c.device_spec, "usb2-stick-2011"), 0); /* as given (the default) */
	EXPECT_EQ(c.policy.fs, MM_FS_VFAT);
	ASSERT_EQ(config(&c, "linux-3.2", "seed-2011", 256 << 20, 60, 1), 0);
	ASSERT_EQ(sim_config_scenario_machine(&c, false, false, err, sizeof(err)), 0);
	EXPECT_EQ(strcmp(c.device_spec, "usb2-stick-2011"), 0); /* seed-2011: the stick */
	EXPECT_EQ(c.policy.fs, MM_FS_VFAT);
}

/* A mel-2011 run's compaction waits: count and longest (ms), from the report. */
static void mel_compaction_waits(const char *policy, const char *device, json_int_t *n,
				 double *max_ms, json_int_t *over)
{
	struct sim_config c;
	json_error_t jerr;
	json_t *root = NULL;
	char err[256], *j;

	*n = -1;
	if (config(&c, policy, "mel-2011", 256 << 20, MEL_SECS, 1) ||
	    sim_config_scenario_machine(&c, device != NULL, false, err, sizeof(err)))
		return;
	if (device) { /* the stick with its own requests (usb-storage's max_sectors, 120 KiB) */
		snprintf(c.device_spec, sizeof(c.device_spec), "%s", device);
		if (sim_device_parse(device, &c.device, err, sizeof(err)) ||
		    sim_params_set(c.scenario, &c.params, "max-request=120K", err, sizeof(err)))
			return;
	}
	j = run_json(&c);
	root = j ? json_loads(j, 0, &jerr) : NULL;
	free(j);
	if (!root)
		return;
	*n = json_integer_value(get(root, "writeback_waits_by_path.compaction.count"));
	*max_ms = json_number_value(get(root, "writeback_waits_by_path.compaction.max_ms"));
	*over = json_integer_value(get(root, "writeback_waits_by_path.compaction.over_threshold"));
	printf("mel-2011 %s %s: %lld compaction writeback waits, longest %.0f ms, %lld >= 1 s\n",
	       policy, device ? device : "(its disk)", (long long)*n, *max_ms, (long long)*over);
	json_decref(root);
}

/* Its orderings (results: tests/results/2026-12-07-mel-2011.md): on the disk 3.2's sync
 * compaction waits on writeback, but no wait reaches a second, because a full queue of large
 * sequential requests drains in under one; the same run on the USB stick has waits of
 * seconds; 3.2+nostall and 3.3 never wait in compaction. */
TEST(mel_2011_waits_in_3_2_compaction_are_short_on_the_disk_and_none_in_3_3)
{
	json_int_t n, over;
	double max;

	mel_compaction_waits("linux-3.2", NULL, &n, &max, &over);
	EXPECT_GT(n, 0);
	EXPECT_LT(max, 1000.0);
	EXPECT_EQ(over, 0);
	{
		json_int_t n_stick, over_stick;
		double max_stick;

		mel_compaction_waits("linux-3.2", "usb2-stick-2011", &n_stick, &max_stick,
				     &over_stick);
		EXPECT_GT(over_stick, 0);
		EXPECT_GT(max_stick, max);
	}
	mel_compaction_waits("linux-3.2+nostall", NULL, &n, &max, &over);
	EXPECT_EQ(n, 0);
	mel_compaction_waits("linux-3.3", NULL, &n, &max, &over);
	EXPECT_EQ(n, 0);
}

TEST(device_specs_take_a_preset_and_overrides)
{
	struct devm_params d;
	char err[512];

	ASSERT_EQ(sim_device_parse("usb2-stick-2011", &d, err, sizeof(err)), 0);
	EXPECT_EQ(d.slots, 1);
	ASSERT_EQ(sim_device_parse("usb2-stick-2011:bandwidth=2M,slots=2", &d, err, sizeof(err)),
		  0);
	EXPECT_EQ(d.write_bw, 2 << 20);
	EXPECT_EQ(d.slots, 2);
	EXPECT_EQ(sim_device_parse("floppy", &d, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "unknown preset 'floppy'") && strstr(err, "usb2-stick-2011"));
	EXPECT_EQ(sim_device_parse("fast:warp=9", &d, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "warp=9") != NULL);
}

TEST_MAIN()

/* The run report (core/report: run.c, procs.c, stats.c): core/live/README.md lists every host
 * counter and process state with the help text the code carries, so the two cannot drift; the
 * per-process view (summaries, the bounded list, its JSON and its table on stderr); reading and
 * merging records, censuses included; the pool's watermarks and the coverage section; members
 * a caller adds. Nothing here needs the live emulator. */
#include "harness.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "obs/coverage.h"
#include "report/run.h"

TEST(report_readme_lists_host_counters)
{
	const char *src = getenv("THPEMU_SOURCE_DIR");
	char path[1024], line[512], *readme;

	if (!src)
		SKIP("THPEMU_SOURCE_DIR not set");
	snprintf(path, sizeof(path), "%s/core/live/README.md", src);
	readme = harness_slurp(path);
	ASSERT(readme != NULL);
	for (unsigned i = 0; i < UFFD_NR_HOST; i++) {
		snprintf(line, sizeof(line), "| `%s` | %s |\n", uffd_host_names[i],
			 uffd_host_help[i]);
		if (!strstr(readme, line))
			fprintf(stderr, "  README.md lacks: %s", line);
		EXPECT(strstr(readme, line) != NULL);
	}
	free(readme);
}

TEST(report_readme_lists_process_states)
{
	const char *src = getenv("THPEMU_SOURCE_DIR");
	char path[1024], line[512], *readme;

	if (!src)
		SKIP("THPEMU_SOURCE_DIR not set");
	snprintf(path, sizeof(path), "%s/core/live/README.md", src);
	readme = harness_slurp(path);
	ASSERT(readme != NULL);
	for (unsigned i = 0; i < UFFD_END_NR; i++) {
		snprintf(line, sizeof(line), "| `%s` | %s |\n", uffd_proc_end_names[i],
			 uffd_proc_end_help[i]);
		if (!strstr(readme, line))
			fprintf(stderr, "  README.md lacks: %s", line);
		EXPECT(strstr(readme, line) != NULL);
	}
	free(readme);
}

static struct uffd_stats *new_stats(int pid, int ppid, const char *comm, const char *exe)
{
	struct uffd_stats *st = calloc(1, sizeof(*st));

	ASSERT(st != NULL);
	obs_faults_init(&st->faults);
	st->magic = UFFD_STATS_MAGIC;
	st->version = UFFD_STATS_VERSION;
	st->size = sizeof(*st);
	st->pid = pid;
	st->ppid = ppid;
	snprintf(st->comm, sizeof(st->comm), "%s", comm);
	snprintf(st->exe, sizeof(st->exe), "%s", exe);
	snprintf(st->cmdline, sizeof(st->cmdline), "%s --arg", exe);
	return st;
}

/* n faults of the class, each lat_ns. */
static void add_faults(struct uffd_stats *st, enum obs_class c, unsigned n, uint64_t lat_ns)
{
	for (unsigned i = 0; i < n; i++)
		obs_hist_record(&st->faults.lat[c], lat_ns);
}

TEST(proc_summary_counts_faults_latency_stalls)
{
	struct uffd_stats *st = new_stats(812, 811, "usemem", "/usr/bin/usemem");
	struct uffd_proc_summary p;

	add_faults(st, OBS_HUGE, 30, 200000); /* 200 us */
	add_faults(st, OBS_BASE, 70, 5000);   /* 5 us */
	add_faults(st, OBS_BASE, 1, 9000000); /* 9 ms */
	st->faults.nomem = 2;
	st->host.stalls = 1;
	st->host.stall_ns = 9000000;
	uffd_proc_summarise(&p, st);
	EXPECT_EQ(p.pid, 812);
	EXPECT_EQ(p.ppid, 811);
	ASSERT_STREQ(p.comm, "usemem");
	ASSERT_STREQ(p.cmdline, "/usr/bin/usemem --arg");
	EXPECT_EQ(p.faults, 101);
	EXPECT_EQ(p.huge, 30);
	EXPECT_EQ(p.nomem, 2);
	EXPECT_EQ(p.stalls, 1);
	EXPECT_EQ(p.stall_ns, 9000000);
	EXPECT_NEAR(p.p50_us, 5.0, 0.5);    /* 71 of 101 faults took 5 us */
	EXPECT_NEAR(p.p99_us, 200.0, 10.0); /* the 100th is a huge one */
	EXPECT_NEAR(p.max_us, 9000.0, 300.0);
	/* a record without a comm (an older library): exe's basename */
	st->comm[0] = '\0';
	uffd_proc_summarise(&p, st);
	ASSERT_STREQ(p.comm, "usemem");
	st->exe[0] = '\0';
	snprintf(st->cmdline, sizeof(st->cmdline), "./bin/gzip -9 file");
	uffd_proc_summarise(&p, st);
	ASSERT_STREQ(p.comm, "gzip");
	free(st);
}

TEST(proc_list_keeps_the_busiest_in_pid_order)
{
	struct uffd_proc_list l;
	uint64_t dropped = 0;

	ASSERT_EQ(uffd_procs_init(&l, 3), 0);
	for (int i = 0; i < 10; i++) { /* pid 100 + i has (i * 7) % 10 faults: 0, 7, 4, 1, ... */
		struct uffd_proc_summary p = {.pid = 100 + i, .faults = (uint64_t)(i * 7 % 10)};

		uffd_procs_add(&l, &p);
	}
	uffd_procs_finish(&l);
	ASSERT_EQ(l.n, 3);
	EXPECT_EQ(l.omitted, 7);
	for (int f = 0; f < 7; f++) /* faults 0..6 were left out */
		dropped += (uint64_t)f;
	EXPECT_EQ(l.omitted_faults, dropped);
	/* faults 9, 8, 7: pids 107 (49 % 10), 104 (28 % 10), 101 (7) — listed by pid */
	EXPECT_EQ(l.v[0].pid, 101);
	EXPECT_EQ(l.v[1].pid, 104);
	EXPECT_EQ(l.v[2].pid, 107);
	ASSERT(uffd_procs_find(&l, 104) != NULL);
	EXPECT_EQ(uffd_procs_find(&l, 104)->faults, 8);
	EXPECT(uffd_procs_find(&l, 105) == NULL);
	uffd_procs_free(&l);
}

/* A run of three processes: sh exec'd into usemem (one process), and two children. */
static void three_processes(struct uffd_stats *total, struct uffd_proc_list *l)
{
	static const struct {
		int pid, ppid;
		const char *comm;
		unsigned huge, base;
		uint32_t end;
	} procs[] = {
	    {900, 899, "usemem", 4, 20, UFFD_END_exited},
	    {901, 900, "usemem", 2, 10, UFFD_END_no_clean_exit},
	    {902, 900, "cc1", 0, 50, UFFD_END_killed},
	};

	memset(total, 0, sizeof(*total));
	obs_faults_init(&total->faults);
	ASSERT_EQ(uffd_procs_init(l, 0), 0);
	for (unsigned i = 0; i < 3; i++) {
		struct uffd_stats *st =
		    new_stats(procs[i].pid, procs[i].ppid, procs[i].comm, "/bin/x");
		struct uffd_proc_summary p;

		add_faults(st, OBS_HUGE, procs[i].huge, 100000);
		add_faults(st, OBS_BASE, procs[i].base, 3000);
		uffd_stats_merge(total, st);
		uffd_proc_summarise(&p, st);
		p.end = procs[i].end;
		p.signal = procs[i].end == UFFD_END_killed ? 9 : 0;
		if (i == 0) {
			p.execs = 1;
			snprintf(p.exec_from, sizeof(p.exec_from), "sh");
		}
		uffd_procs_add(l, &p);
		free(st);
	}
	uffd_procs_finish(l);
}

TEST(report_json_lists_every_process)
{
	struct uffd_stats *total = calloc(1, sizeof(*total));
	struct uffd_program_info prog = {.exit_status = 0, .processes = 3};
	struct uffd_proc_list l;
	struct config cfg;
	char *buf = NULL;
	size_t len = 0, n;
	FILE *f = open_memstream(&buf, &len);
	json_t *root, *arr, *e;
	json_int_t sum = 0;
	json_error_t je;

	ASSERT(total && f);
	config_defaults(&cfg);
	three_processes(total, &l);
	prog.procs = &l;
	ASSERT_EQ(uffd_report_json(f, &cfg, total, &prog), 0);
	fclose(f);
	root = json_loads(buf, 0, &je);
	ASSERT(root != NULL);
	arr = json_object_get(root, "processes");
	n = json_array_size(arr);
	ASSERT_EQ(n, 3);
	EXPECT_EQ(json_integer_value(
		      json_object_get(json_object_get(root, "program"), "processes_listed")),
		  3);
	for (size_t i = 0; i < n; i++)
		sum += json_integer_value(
		    json_object_get(json_object_get(json_array_get(arr, i), "faults"), "total"));
	EXPECT_EQ(sum,
		  json_integer_value(json_object_get(json_object_get(root, "faults"), "total")));
	e = json_array_get(arr, 0); /* by pid: 900 first */
	EXPECT_EQ(json_integer_value(json_object_get(e, "pid")), 900);
	EXPECT_EQ(json_integer_value(json_object_get(e, "ppid")), 899);
	ASSERT_STREQ(json_string_value(json_object_get(e, "comm")), "usemem");
	ASSERT_STREQ(json_string_value(json_object_get(e, "state")), "exited");
	EXPECT_EQ(json_integer_value(json_object_get(e, "exec_predecessors")), 1);
	ASSERT_STREQ(json_string_value(json_object_get(e, "exec_from")), "sh");
	EXPECT(json_is_null(json_object_get(e, "signal")));
	EXPECT_EQ(json_integer_value(json_object_get(json_object_get(e, "faults"), "huge")), 4);
	EXPECT_EQ(json_integer_value(json_object_get(json_object_get(e, "faults"), "base")), 20);
	EXPECT(json_is_number(json_object_get(json_object_get(e, "latency_us"), "p99")));
	EXPECT(json_is_number(json_object_get(json_object_get(e, "stalls"), "total_ms")));
	e = json_array_get(arr, 1);
	ASSERT_STREQ(json_string_value(json_object_get(e, "state")), "no_clean_exit");
	EXPECT(json_is_null(json_object_get(e, "exec_from")));
	e = json_array_get(arr, 2);
	ASSERT_STREQ(json_string_value(json_object_get(e, "state")), "killed");
	EXPECT_EQ(json_integer_value(json_object_get(e, "signal")), 9);
	json_decref(root);
	free(buf);
	/* a process's own report (THPEMU_REPORT) has no list */
	prog.procs = NULL;
	buf = NULL;
	f = open_memstream(&buf, &len);
	ASSERT_EQ(uffd_report_json(f, &cfg, total, &prog), 0);
	fclose(f);
	EXPECT(strstr(buf, "\"processes\": [") == NULL);
	free(buf);
	uffd_procs_free(&l);
	free(total);
}

/* The pool's watermarks and min_free_kbytes go into host.pool; the machine's coverage, when the
 * run has one, into "coverage" (a process's own report has none). */
TEST(report_json_has_watermarks_and_coverage)
{
	struct uffd_stats *total = calloc(1, sizeof(*total));
	struct obs_coverage *cov = calloc(1, sizeof(*cov));
	struct uffd_program_info prog = {.exit_status = 0, .processes = 1};
	struct config cfg;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	json_t *root, *pool, *wm, *c;
	json_error_t je;

	ASSERT(total && cov && f);
	config_defaults(&cfg);
	obs_faults_init(&total->faults);
	total->counts = (struct mm_counts){.nr_frames = 65536,
					   .anon = 1024,
					   .anon_pmd = 512,
					   .wmark_min = 3276,
					   .wmark_low = 4095,
					   .wmark_high = 4914,
					   .min_free_kbytes = 13104};
	obs_coverage_init(cov, 1000, 10000000);
	obs_coverage_sample(cov, 1000, 0, 1024);
	obs_coverage_sample(cov, 10001000, 512, 1024);
	obs_coverage_close(cov, 20001000);
	prog.coverage = cov;
	ASSERT_EQ(uffd_report_json(f, &cfg, total, &prog), 0);
	fclose(f);
	root = json_loads(buf, 0, &je);
	ASSERT(root != NULL);
	pool = json_object_get(json_object_get(root, "host"), "pool");
	wm = json_object_get(pool, "watermarks");
	EXPECT_EQ(json_integer_value(json_object_get(wm, "min")), 3276);
	EXPECT_EQ(json_integer_value(json_object_get(wm, "low")), 4095);
	EXPECT_EQ(json_integer_value(json_object_get(wm, "high")), 4914);
	EXPECT_EQ(json_integer_value(json_object_get(pool, "min_free_kbytes")), 13104);
	EXPECT_EQ(json_integer_value(json_object_get(pool, "anon_pmd")), 512);
	c = json_object_get(root, "coverage");
	EXPECT_EQ(json_array_size(json_object_get(c, "samples")), 2);
	EXPECT_NEAR(json_number_value(json_object_get(c, "end_pct")), 50.0, 1e-9);
	EXPECT_NEAR(json_number_value(json_object_get(c, "time_weighted_pct")), 25.0, 1e-9);
	json_decref(root);
	free(buf);
	prog.coverage = NULL;
	buf = NULL;
	f = open_memstream(&buf, &len);
	ASSERT_EQ(uffd_report_json(f, &cfg, total, &prog), 0);
	fclose(f);
	EXPECT(strstr(buf, "\"coverage\"") == NULL);
	free(buf);
	free(cov);
	free(total);
}

static unsigned count_lines(const char *s, const char *prefix)
{
	unsigned n = 0;

	for (const char *p = s; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		n += strncmp(p, prefix, strlen(prefix)) == 0;
	return n;
}

TEST(summary_table_shows_the_busiest_twenty)
{
	struct uffd_stats *total = calloc(1, sizeof(*total));
	struct uffd_program_info prog = {.exit_status = 0, .processes = 25};
	struct uffd_proc_list l;
	char *buf = NULL, *first;
	size_t len = 0;
	FILE *f;

	ASSERT(total != NULL);
	obs_faults_init(&total->faults);
	ASSERT_EQ(uffd_procs_init(&l, 0), 0);
	for (int i = 0; i < 25; i++) { /* pid 1000 + i with 10 + i faults */
		struct uffd_proc_summary p = {.pid = 1000 + i, .ppid = 999, .faults = 10 + i};

		snprintf(p.comm, sizeof(p.comm), i == 24 ? "busy\x1b[31m" : "w%d", i);
		uffd_procs_add(&l, &p);
	}
	uffd_procs_finish(&l);
	prog.procs = &l;
	f = open_memstream(&buf, &len);
	uffd_report_summary(f, total, &prog);
	fclose(f);
	ASSERT(strstr(buf, "thpemu: processes, busiest first:\n") != NULL);
	EXPECT_EQ(count_lines(buf, "thpemu:     10"), 20); /* rows of pids 1005..1024 */
	EXPECT(strstr(buf, "    1004 ") == NULL);	   /* the least busy are left out */
	/* the busiest first, its name escaped */
	first = strstr(buf, "    1024      999 busy\\x1b[31m");
	ASSERT(first != NULL);
	EXPECT(first < strstr(buf, "    1023      999 w23"));
	/* 1000..1004: 10 + 11 + 12 + 13 + 14 faults */
	EXPECT(strstr(buf, "thpemu: ... 5 more processes, 60 faults\n") != NULL);
	free(buf);
	/* one process: no table */
	l.n = 1;
	buf = NULL;
	f = open_memstream(&buf, &len);
	uffd_report_summary(f, total, &prog);
	fclose(f);
	EXPECT(strstr(buf, "busiest first") == NULL);
	free(buf);
	uffd_procs_free(&l);
	free(total);
}

/* A record is read back only if it is one of this build's. */
TEST(stats_read_checks_magic_version_size)
{
	char dir[] = "/tmp/report_run.XXXXXX", path[512];
	struct uffd_stats *st = new_stats(700, 1, "x", "/bin/x"), *back = calloc(1, sizeof(*back));
	FILE *f;

	ASSERT(mkdtemp(dir) != NULL && back != NULL);
	snprintf(path, sizeof(path), "%s/700.stats", dir);
	EXPECT_EQ(uffd_stats_read(path, back), -1); /* none yet */
	f = fopen(path, "w");
	ASSERT(f != NULL);
	ASSERT_EQ(fwrite(st, sizeof(*st), 1, f), 1);
	fclose(f);
	ASSERT_EQ(uffd_stats_read(path, back), 0);
	EXPECT_EQ(back->pid, 700);
	ASSERT_STREQ(back->comm, "x");
	st->version = UFFD_STATS_VERSION + 1; /* another build's */
	f = fopen(path, "w");
	ASSERT(f != NULL);
	ASSERT_EQ(fwrite(st, sizeof(*st), 1, f), 1);
	fclose(f);
	EXPECT_EQ(uffd_stats_read(path, back), -1);
	f = fopen(path, "w"); /* short */
	ASSERT(f != NULL);
	ASSERT_EQ(fwrite(st, 64, 1, f), 1);
	fclose(f);
	EXPECT_EQ(uffd_stats_read(path, back), -1);
	unlink(path);
	rmdir(dir);
	free(back);
	free(st);
}

static void census_of(struct uffd_census *c, uint64_t anon, uint64_t own, uint64_t managed,
		      uint64_t top_anon, int pid)
{
	memset(c, 0, sizeof(*c));
	c->processes = 1;
	c->anon = anon;
	c->anon_own = own;
	c->anon_managed = managed;
	c->why_anon[UFFD_WHY_brk] = anon - own - managed;
	c->top[0] = (struct uffd_unmanaged_map){.anon = top_anon, .size = top_anon, .pid = pid};
}

/* Processes that lived one after another: the largest stands for the run, not their sum; the
 * largest unmanaged mappings of both are kept in order; a machine's peak of processes that lived
 * at once replaces the figures only where it is larger. */
TEST(census_merge_takes_the_largest_and_a_machine_peak)
{
	struct uffd_census total = {0}, a, b;
	uint64_t w[3 + UFFD_WHY_NR] = {0};

	census_of(&a, 100 << 20, 10 << 20, 60 << 20, 5 << 20, 1);
	census_of(&b, 200 << 20, 10 << 20, 150 << 20, 7 << 20, 2);
	uffd_census_merge(&total, &a);
	uffd_census_merge(&total, &b);
	EXPECT_EQ(total.processes, 2);
	EXPECT_EQ(total.anon, 200 << 20);
	EXPECT_EQ(total.anon_managed, 150 << 20);
	EXPECT_EQ(total.top[0].pid, 2);
	EXPECT_EQ(total.top[1].pid, 1);
	EXPECT_EQ(total.top[2].anon, 0);
	w[0] = 150 << 20; /* less program memory than b alone: ignored */
	w[2] = 10 << 20;
	uffd_census_peak_words(&total, w);
	EXPECT_EQ(total.anon, 200 << 20);
	w[0] = 300 << 20; /* a and b at once */
	w[1] = 210 << 20;
	w[3 + UFFD_WHY_brk] = 80 << 20;
	EXPECT_EQ(uffd_census_words_program(w), 290 << 20);
	uffd_census_peak_words(&total, w);
	EXPECT_EQ(total.anon, 300 << 20);
	EXPECT_EQ(total.anon_managed, 210 << 20);
	EXPECT_EQ(total.why_anon[UFFD_WHY_brk], 80 << 20);
	EXPECT_EQ(total.processes, 2);
}

static void more(struct json_w *w, void *arg)
{
	jw_arr_begin(w, "processes");
	jw_str(w, NULL, arg);
	jw_arr_end(w);
}

/* A caller's own members come last (the machine daemon lists the processes it saw). */
TEST(report_json_adds_the_callers_members_last)
{
	struct uffd_stats *total = calloc(1, sizeof(*total));
	struct uffd_program_info prog = {.exit_status = -1, .more_json = more, .more_arg = "seen"};
	struct config cfg;
	char *buf = NULL, *at;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	json_t *root;

	ASSERT(total && f);
	config_defaults(&cfg);
	obs_faults_init(&total->faults);
	ASSERT_EQ(uffd_report_json(f, &cfg, total, &prog), 0);
	fclose(f);
	root = json_loads(buf, 0, NULL);
	ASSERT(root != NULL);
	ASSERT_STREQ(json_string_value(json_array_get(json_object_get(root, "processes"), 0)),
		     "seen");
	at = strstr(buf, "\"processes\": [");
	ASSERT(at != NULL);
	EXPECT(strcmp(at, "\"processes\": [\n    \"seen\"\n  ]\n}\n") == 0);
	json_decref(root);
	free(buf);
	free(total);
}

TEST_MAIN()

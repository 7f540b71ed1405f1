/* thpemu ab: A/B-test two run configurations on one program, with statistics.
 *
 *   thpemu ab --a SPEC --b SPEC [--runs N] [--warmup N] [--order alternate|random] [--seed N]
 *             [--json FILE] [--html FILE] [--keep DIR] [--resamples N] -- CMD ARGS...
 *
 * SPEC is a comma list of `thpemu run` options without their dashes (policy=linux-3.1,
 * device=usb2-stick-2011,dirty=total=16M,file=2M,pool=96M); a piece that does not start with
 * a known key continues the previous value, so values may contain commas. label=NAME names the
 * side. Each run is a fresh `thpemu run` of the command — a new process with a new pool in the
 * same seeded initial state — and the sides alternate (ABAB..., or a seeded shuffle), so slow
 * drift of the machine falls on both. A run that fails (non-zero exit, no report) is reported
 * and left out; the others are still compared, and the exit status is 1.
 *
 * The comparison (runs.c): per metric, both sides' values, mmtests' Multiops, the change in
 * mmtests' sense, a bootstrap 95 % interval of the difference of means and a significance mark
 * (the interval excludes 0); per-fault latency distributions pooled over runs with a
 * Mann-Whitney U test; vmstat means. Text in the compare-kernels style on stdout, the same in
 * JSON (--json, with every run's report), and an HTML report (--html).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "host/tmpdirs.h"
#include "report/runs.h"
#include "cli/spec.h"
#include "config/config.h"
#include "util/clock.h"
#include "util/outfile.h"
#include "util/rng.h"
#include "util/units.h"

#define CMD	     "ab"
#define MAX_ITEMS    CLI_SPEC_ITEMS
#define MAX_RUNS     1000
#define DEF_RESAMPLE 10000

struct ab {
	struct cli_side s[2];
	unsigned runs, warmup;
	bool random_order;
	uint64_t seed;
	unsigned resamples;
	const char *json, *html, *keep;
	struct cli_output *json_out, *html_out; /* created before the first run */
	char **cmd;
	char dir[PATH_MAX];
	bool tty;
};

static volatile sig_atomic_t interrupted;

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: thpemu ab --a SPEC --b SPEC [--runs N] [--warmup N] [--order "
	    "alternate|random]\n"
	    "                 [--seed N] [--json FILE] [--html FILE] [--keep DIR] [--resamples N]\n"
	    "                 -- CMD [ARGS...]\n\n"
	    "Runs CMD under two configurations, alternately, and says whether they differ.\n\n"
	    "  --a SPEC, --b SPEC   the two sides: comma-separated KEY=VALUE, KEY a 'thpemu run'\n"
	    "                       option without its dashes, or label=NAME (the side's name;\n"
	    "                       default: its policy). A piece that does not start with a KEY=\n"
	    "                       continues the previous value, so values may contain commas:\n"
	    "                       policy=linux-3.1,dirty=total=16M,file=2M,pool=96M\n"
	    "                       A policy plugin goes in the side's policy spec:\n"
	    "                       policy=thp-always/always:plugin=FILE.so[?ARGS]\n"
	    "  --runs N             measured runs per side (default 5, at most %d); with 1, no\n"
	    "                       difference can be called significant (the report says why)\n"
	    "  --warmup N           runs per side first, not compared (default 0)\n"
	    "  --order ORDER        alternate (ABAB..., default) or random (seeded shuffle)\n"
	    "  --seed N             seed of the order and of the bootstrap (default 1); each "
	    "run's\n"
	    "                       initial pool uses the sides' seed= (default 1: the same "
	    "state)\n"
	    "  --json FILE          the comparison and every run's report\n"
	    "  --html FILE          a self-contained HTML report (inline SVG)\n"
	    "  --keep DIR           keep each run's report, stall report and output in DIR\n"
	    "  --resamples N        bootstrap resamples (default %d)\n"
	    "  --fs vfat|ext4|tmpfs file system of the device's files for both sides (a side's\n"
	    "                       fs= wins; default: the policy's, vfat)\n\n"
	    "Keys: label",
	    MAX_RUNS / 2, DEF_RESAMPLE);
	for (unsigned i = 0; i < CONFIG_NR; i++)
		if (config_opts[i].cli && strcmp(config_opts[i].cli, "--trace"))
			fprintf(f, ", %s", config_opts[i].cli + 2);
	fprintf(f,
		" (see 'thpemu run --help' for their values).\nA key may appear once in a "
		"SPEC; an option of ab given twice: the last one counts.\n\n"
		"Output: the comparison in mmtests compare-kernels style on stdout; progress on "
		"stderr.\n--json and --html are opened, --keep created (mode 0700; an existing "
		"directory must be\nours), and the command looked up before the first run.\n"
		"Exit status: 0; 1 if a run failed (the others are still compared); 2 for a bad "
		"option,\nan output that cannot be written or a command that cannot be run.\n\n");
	rd_metrics_usage(f);
}

/* ---- SPEC
 * ---------------------------------------------------------------------------------------- */

/* ---- options
 * ------------------------------------------------------------------------------------- */

/* ab --fs: a side without its own fs= runs with --fs FS. */
static void side_default_fs(struct cli_side *s, const char *fs)
{
	for (int i = 0; i + 1 < s->argc; i += 2)
		if (!strcmp(s->argv[i], "--fs"))
			return;
	s->argv[s->argc++] = strdup("--fs");
	s->argv[s->argc++] = strdup(fs);
}

/* ab --fs is run's --fs for both sides: checked by the same parser. */
static void check_fs(const char *v)
{
	struct config cfg;
	char err[512];

	config_defaults(&cfg);
	if (config_opt_parse(&config_opts[CONFIG_FS], "--fs", v, &cfg, err, sizeof(err)) < 0)
		prog_usage_error(CMD, "%s", err);
}

static unsigned parse_count(const char *opt, const char *v, unsigned lo, unsigned hi)
{
	uint64_t n;

	if (!*v || strspn(v, "0123456789") != strlen(v))
		prog_usage_error(CMD, "%s: '%s' is not a non-negative integer (accepted: %u..%u)",
				 opt, v, lo, hi);
	if (units_parse_uint(v, hi, &n) || n < lo)
		prog_usage_error(CMD, "%s: '%s' is out of range (accepted: %u..%u)", opt, v, lo,
				 hi);
	return (unsigned)n;
}

/* The command runs 2 x (runs + warmup) times: find it now, not in every run. */
static void check_command(const struct ab *ab)
{
	int rc = cli_find_program(ab->cmd[0]);

	if (rc < 0)
		prog_usage_error(CMD, "cannot run '%s': %s", ab->cmd[0], strerror(-rc));
}

/* --json and --html can be written and are two files (created by open_outputs). */
static void check_outputs(const struct ab *ab)
{
	if (ab->json)
		cli_check_output(CMD, "--json", ab->json);
	if (ab->html)
		cli_check_output(CMD, "--html", ab->html);
	cli_distinct_paths(CMD, "--json", ab->json, "--html", ab->html);
}

static void parse(int argc, char **argv, struct ab *ab)
{
	const char *a = NULL, *b = NULL, *fs = NULL;
	int i;

	for (i = 1; i < argc; i++) {
		const char *arg = argv[i], *eq = strchr(arg, '='), *v;
		char name[32];

		if (!strcmp(arg, "--")) {
			i++;
			break;
		}
		if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			usage(stdout);
			exit(0);
		}
		if (arg[0] != '-')
			break;
		snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
		if (!eq && i + 1 >= argc)
			prog_usage_error(CMD, "%s needs a value (see 'thpemu ab --help')", name);
		v = eq ? eq + 1 : argv[++i];
		if (!strcmp(name, "--a"))
			a = v;
		else if (!strcmp(name, "--b"))
			b = v;
		else if (!strcmp(name, "--runs"))
			ab->runs = parse_count(name, v, 1, MAX_RUNS / 2);
		else if (!strcmp(name, "--warmup"))
			ab->warmup = parse_count(name, v, 0, 100);
		else if (!strcmp(name, "--resamples"))
			ab->resamples = parse_count(name, v, 100, 1000000);
		else if (!strcmp(name, "--seed")) {
			if (units_parse_uint(v, UINT64_MAX, &ab->seed))
				prog_usage_error(CMD, "--seed: '%s' is not a non-negative integer",
						 v);
		} else if (!strcmp(name, "--order")) {
			if (strcmp(v, "alternate") && strcmp(v, "random"))
				prog_usage_error(
				    CMD, "--order: '%s' is not accepted (alternate, random)", v);
			ab->random_order = !strcmp(v, "random");
		} else if (!strcmp(name, "--json"))
			ab->json = v;
		else if (!strcmp(name, "--html"))
			ab->html = v;
		else if (!strcmp(name, "--keep"))
			ab->keep = v;
		else if (!strcmp(name, "--fs")) {
			check_fs(v);
			fs = v;
		} else
			prog_usage_error(CMD, "unknown option '%s' (see 'thpemu ab --help')", name);
	}
	if (!a || !b)
		prog_usage_error(CMD, "--a and --b are both required (e.g. --a policy=linux-3.1 "
				      "--b policy=linux-3.1+nostall)");
	if (i >= argc)
		prog_usage_error(CMD, "no command given (usage: thpemu ab --a SPEC --b SPEC -- CMD "
				      "ARGS...)");
	ab->cmd = &argv[i];
	cli_side_parse(CMD, "--a", a, &ab->s[0]);
	cli_side_parse(CMD, "--b", b, &ab->s[1]);
	for (int k = 0; k < 2 && fs; k++)
		side_default_fs(&ab->s[k], fs);
	if (!ab->s[0].label[0])
		snprintf(ab->s[0].label, sizeof(ab->s[0].label), "A");
	if (!ab->s[1].label[0])
		snprintf(ab->s[1].label, sizeof(ab->s[1].label), "B");
	check_command(ab);
	check_outputs(ab);
	if (!strcmp(ab->s[0].label, ab->s[1].label)) { /* the comparison keys on labels */
		strncat(ab->s[0].label, " (A)",
			sizeof(ab->s[0].label) - strlen(ab->s[0].label) - 1);
		strncat(ab->s[1].label, " (B)",
			sizeof(ab->s[1].label) - strlen(ab->s[1].label) - 1);
	}
}

/* ---- running
 * -------------------------------------------------------------------------------------- */

struct plan {
	int side;
	int index;
	bool warmup;
};

static size_t make_plan(const struct ab *ab, struct plan *p)
{
	size_t n = 0;
	struct rng r;

	for (unsigned i = 0; i < ab->warmup; i++)
		for (int s = 0; s < 2; s++)
			p[n++] = (struct plan){s, (int)i + 1, true};
	for (unsigned i = 0; i < ab->runs; i++)
		for (int s = 0; s < 2; s++)
			p[n++] = (struct plan){s, (int)i + 1, false};
	if (!ab->random_order)
		return n;
	rng_seed(&r, ab->seed);
	for (size_t i = n; i-- > ab->warmup * 2 + 1;) { /* shuffle the measured runs only */
		size_t lo = ab->warmup * 2, j = lo + rng_below(&r, i - lo + 1);
		struct plan t = p[i];

		p[i] = p[j];
		p[j] = t;
	}
	{ /* renumber each side's measured runs in execution order */
		int next[2] = {1, 1};

		for (size_t i = ab->warmup * 2; i < n; i++)
			p[i].index = next[p[i].side]++;
	}
	return n;
}

static void run_paths(const struct ab *ab, const struct plan *p, char *report, char *stalls,
		      char *out, size_t len)
{
	const char *tag = p->warmup ? "warmup" : "run";
	char c = p->side ? 'B' : 'A';

	snprintf(report, len, "%s/%c-%s%d.json", ab->dir, c, tag, p->index);
	snprintf(stalls, len, "%s/%c-%s%d.stalls.txt", ab->dir, c, tag, p->index);
	snprintf(out, len, "%s/%c-%s%d.out", ab->dir, c, tag, p->index);
}

/* One `thpemu run`; returns its exit status (128+N for a signal, -1 if it could not start). */
static int run_one(const struct ab *ab, const struct cli_side *s, const char *report,
		   const char *stalls, const char *out)
{
	char self[PATH_MAX], *argv[2 * MAX_ITEMS + 256], err[PATH_MAX + 200];
	int n = 0, status, fd = outfile_open(out, err, sizeof(err));
	pid_t pid;

	snprintf(self, sizeof(self), "%s/thpemu", prog_self_dir());
	argv[n++] = self;
	argv[n++] = "run";
	argv[n++] = "--quiet";
	argv[n++] = "--report";
	argv[n++] = (char *)report;
	argv[n++] = "--stall-report";
	argv[n++] = (char *)stalls;
	for (int i = 0; i < s->argc; i++)
		argv[n++] = s->argv[i];
	argv[n++] = "--";
	for (char **c = ab->cmd; *c && n < (int)(sizeof(argv) / sizeof(argv[0])) - 1; c++)
		argv[n++] = *c;
	argv[n] = NULL;
	if (fd < 0) {
		prog_error(CMD, "%s", err);
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		cli_sigpipe_child();
		execv(self, argv);
		_exit(127);
	}
	close(fd);
	if (pid < 0)
		return -1;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

/* The last non-empty line of a run's output (why it failed, usually). */
static void last_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	char line[512];

	buf[0] = '\0';
	while (f && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0]) {
			size_t n = strlen(line) < len - 1 ? strlen(line) : len - 1;

			memcpy(buf, line, n);
			buf[n] = '\0';
		}
	}
	if (f)
		fclose(f);
}

static void progress(const struct ab *ab, size_t done, size_t total, const char *what)
{
	if (ab->tty) {
		int width = 30, fill = total ? (int)(done * (size_t)width / total) : width;

		fprintf(stderr, "\r\033[K[%.*s%*s] %zu/%zu %s", fill,
			"##############################", width - fill, "", done, total, what);
		if (done == total)
			fputc('\n', stderr);
	} else {
		fprintf(stderr, "ab: %zu/%zu %s\n", done, total, what);
	}
}

static void on_signal(int sig)
{
	interrupted = sig;
}

/* Run the plan; fills runs[] (label, side, index, ok, note, report). */
static size_t run_all(struct ab *ab, struct rd_run *runs)
{
	struct plan plan[MAX_RUNS + 200];
	size_t n = make_plan(ab, plan), done = 0;

	for (size_t i = 0; i < n && !interrupted; i++) {
		const struct plan *p = &plan[i];
		struct rd_run *r = &runs[done];
		char report[PATH_MAX + 64], stalls[PATH_MAX + 64], out[PATH_MAX + 64], what[400];
		char err[700];
		uint64_t t0 = clock_now_ns();
		struct rd_run *tmp = NULL;
		size_t nt = 0;
		int st;

		snprintf(what, sizeof(what), "%s %s %d: %s", p->warmup ? "warm-up" : "run",
			 p->side ? "B" : "A", p->index, ab->s[p->side].label);
		progress(ab, i, n, what);
		run_paths(ab, p, report, stalls, out, sizeof(report));
		st = run_one(ab, &ab->s[p->side], report, stalls, out);
		memset(r, 0, sizeof(*r));
		if (rd_load(report, &tmp, &nt, err, sizeof(err)) == 0 && nt == 1) {
			*r = tmp[0];
		} else {
			snprintf(r->note, sizeof(r->note), "no report (%.200s)", err);
			for (size_t k = 0; k < nt; k++)
				rd_run_free(&tmp[k]);
		}
		free(tmp);
		r->side = p->side;
		r->index = p->index;
		r->warmup = p->warmup;
		r->exit_status = st;
		r->wall_s = (double)(clock_now_ns() - t0) / 1e9;
		r->ok = st == 0 && r->root;
		snprintf(r->label, sizeof(r->label), "%s", ab->s[p->side].label);
		if (st != 0) {
			char line[200];

			last_line(out, line, sizeof(line));
			snprintf(r->note, sizeof(r->note), "exit status %d%s%.200s", st,
				 line[0] ? ": " : "", line);
		}
		snprintf(what, sizeof(what), "%s %s %d %s in %.1f s%s%s",
			 p->warmup ? "warm-up" : "run", p->side ? "B" : "A", p->index,
			 r->ok ? "done" : "FAILED", r->wall_s, r->ok ? "" : ": ",
			 r->ok ? "" : prog_esc(r->note)); /* the program's last line: anything */
		done++;
		if (!r->ok || !ab->tty)
			progress(ab, done, n, what);
		if (!r->ok && ab->tty)
			fputc('\n', stderr);
	}
	progress(ab, done, n, interrupted ? "interrupted" : "all runs done");
	return done;
}

/* ---- output
 * ---------------------------------------------------------------------------------------- */

static void json_config(struct json_w *w, const struct ab *ab)
{
	jw_obj_begin(w, "config");
	for (int s = 0; s < 2; s++) {
		jw_obj_begin(w, s ? "b" : "a");
		jw_str(w, "label", ab->s[s].label);
		jw_str(w, "spec", ab->s[s].spec);
		jw_arr_begin(w, "args");
		for (int i = 0; i < ab->s[s].argc; i++)
			jw_str(w, NULL, ab->s[s].argv[i]);
		jw_arr_end(w);
		jw_obj_end(w);
	}
	jw_u64(w, "runs", ab->runs);
	jw_u64(w, "warmup", ab->warmup);
	jw_str(w, "order", ab->random_order ? "random" : "alternate");
	jw_u64(w, "seed", ab->seed);
	jw_arr_begin(w, "command");
	for (char **c = ab->cmd; *c; c++)
		jw_str(w, NULL, *c);
	jw_arr_end(w);
	jw_obj_end(w);
}

static int write_json(struct ab *ab, const struct rd_run *runs, size_t n,
		      const struct cmp_result *c)
{
	struct cli_output *out = ab->json_out;
	FILE *f = cli_output_stream(out);
	struct json_w w;

	ab->json_out = NULL;
	jw_init(&w, f, true);
	jw_obj_begin(&w, NULL);
	jw_str(&w, "kind", "ab");
	jw_str(&w, "version", THPEMU_VERSION);
	json_config(&w, ab);
	jw_arr_begin(&w, "runs");
	for (size_t i = 0; i < n; i++) {
		const struct rd_run *r = &runs[i];
		char *rep = rd_json_text(r->root, JW_COMPACT, 12, false); /* one line each */

		jw_obj_begin(&w, NULL);
		jw_str(&w, "side", r->side ? "B" : "A");
		jw_u64(&w, "index", (uint64_t)r->index);
		jw_bool(&w, "warmup", r->warmup);
		jw_bool(&w, "ok", r->ok);
		jw_i64(&w, "exit_status", r->exit_status);
		jw_dbl(&w, "wall_s", r->wall_s, 3);
		jw_str(&w, "note", r->note);
		if (rep)
			jw_raw(&w, "report", rep);
		else
			jw_null(&w, "report");
		free(rep);
		jw_obj_end(&w);
	}
	jw_arr_end(&w);
	cmp_json(&w, c);
	jw_obj_end(&w);
	if (jw_finish(&w) < 0) {
		prog_error(CMD, "--json: '%s': the report could not be made (out of memory)",
			   ab->json);
		cli_output_discard(out);
		return -1;
	}
	return cli_output_close(out);
}

static int write_html(struct ab *ab, const struct rd_run *runs, size_t n,
		      const struct cmp_result *c)
{
	char title[400], sub[1200], cfg[3000];
	size_t off = 0;
	struct html_opts o = {title, sub, cfg};
	int rc;

	snprintf(title, sizeof(title), "thpemu ab: %s vs %s", ab->s[0].label, ab->s[1].label);
	for (char **a = ab->cmd; *a && off < sizeof(sub); a++)
		off += (size_t)snprintf(sub + off, sizeof(sub) - off, "%s%s",
					a == ab->cmd ? "" : " ", *a);
	snprintf(cfg, sizeof(cfg),
		 "A (%s): --a %s\nB (%s): --b %s\nruns per side: %u, warm-up: %u, order: %s, seed: "
		 "%llu, bootstrap resamples: %u",
		 ab->s[0].label, ab->s[0].spec, ab->s[1].label, ab->s[1].spec, ab->runs, ab->warmup,
		 ab->random_order ? "random" : "alternate", (unsigned long long)ab->seed,
		 ab->resamples);
	rc = html_report(cli_output_stream(ab->html_out), runs, n, c, &o);
	if (rc < 0) {
		prog_error(CMD, "--html: '%s': the report could not be made: %s", ab->html,
			   strerror(-rc));
		cli_output_discard(ab->html_out);
	} else {
		rc = cli_output_close(ab->html_out);
	}
	ab->html_out = NULL;
	return rc;
}

/* The runs' directory: --keep DIR (created 0700, or an existing one of ours), else a private
 * temporary one (those of ab commands that were killed are removed first). */
static int make_dir(struct ab *ab)
{
	char err[PATH_MAX + 200];

	if (ab->keep) {
		cli_output_dir(CMD, "--keep", ab->keep);
		snprintf(ab->dir, sizeof(ab->dir), "%s", ab->keep);
		return 0;
	}
	tmpdir_sweep("thpemu-ab");
	if (tmpdir_create("thpemu-ab", ab->dir, sizeof(ab->dir), err, sizeof(err)) < 0) {
		prog_error(CMD, "%s", err);
		return -1;
	}
	return 0;
}

/* Once everything is checked, before the first run: the outputs are created (an output that
 * cannot be written is bad input, never a surprise after the runs). */
static void open_outputs(struct ab *ab)
{
	if (ab->json)
		ab->json_out = cli_output_open(CMD, "--json", ab->json);
	if (ab->html)
		ab->html_out = cli_output_open(CMD, "--html", ab->html);
}

/* --json or --html inside --keep DIR must not be one of the runs' files. */
static void check_keep_names(const struct ab *ab)
{
	struct plan plan[MAX_RUNS + 200];
	size_t n = ab->keep && (ab->json || ab->html) ? make_plan(ab, plan) : 0;
	char p[3][PATH_MAX + 64];

	for (size_t i = 0; i < n; i++) {
		run_paths(ab, &plan[i], p[0], p[1], p[2], sizeof(p[0]));
		for (int k = 0; k < 3; k++) {
			cli_distinct_paths(CMD, "--json", ab->json, "--keep DIR's run file", p[k]);
			cli_distinct_paths(CMD, "--html", ab->html, "--keep DIR's run file", p[k]);
		}
	}
}

static int ab_main(int argc, char **argv)
{
	struct ab ab = {.runs = 5, .seed = 1, .resamples = DEF_RESAMPLE};
	struct rd_run *runs;
	struct cmp_result c;
	size_t n, failed = 0;
	int rc = 0, rc2;

	parse(argc, argv, &ab);
	ab.tty = isatty(2);
	if (make_dir(&ab) < 0)
		return 1;
	check_keep_names(&ab);
	open_outputs(&ab);
	cli_sigpipe_ignore(); /* `2>&1 | head` must not cost --json and --html */
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	runs = calloc((ab.runs + ab.warmup) * 2, sizeof(*runs));
	if (!runs)
		return 1;
	n = run_all(&ab, runs);
	for (size_t i = 0; i < n; i++)
		failed += !runs[i].ok;
	if (cmp_compute(runs, n, ab.s[0].label, ab.s[1].label, ab.resamples, ab.seed, &c) < 0) {
		prog_error(CMD, "out of memory");
		return 1;
	}
	printf("thpemu ab: A = %s (%zu runs), B = %s (%zu runs)%s; command:", ab.s[0].label,
	       c.runs_a, ab.s[1].label, c.runs_b, failed ? ", some runs FAILED" : "");
	for (char **a = ab.cmd; *a; a++)
		printf(" %s", prog_esc(*a));
	printf("\n\n");
	cmp_text(stdout, &c);
	for (size_t i = 0; i < n; i++)
		if (!runs[i].ok)
			printf("FAILED: %s run %d: %s\n", runs[i].side ? "B" : "A", runs[i].index,
			       prog_esc(runs[i].note));
	if (ab.json && write_json(&ab, runs, n, &c) < 0)
		rc = 1;
	if (ab.html && write_html(&ab, runs, n, &c) < 0)
		rc = 1;
	if (ab.keep)
		printf("\nruns kept in %s\n", prog_esc(ab.dir));
	else if ((rc2 = tmpdir_rmtree(ab.dir)) < 0)
		prog_error(CMD, "could not remove %s: %s", ab.dir, strerror(-rc2));
	cmp_free(&c);
	for (size_t i = 0; i < n; i++)
		rd_run_free(&runs[i]);
	free(runs);
	if (interrupted)
		return 128 + interrupted;
	return cli_stdout_end(failed ? 1 : rc);
}

CLI_COMMAND(ab, "ab", "A/B-test two run configurations: interleaved runs, statistics, HTML",
	    ab_main)

/* thpemu matrix: a policy x workload x run matrix as independent, self-describing cells; or
 * cells that are each one thpemu fidelity comparison.
 *
 *   thpemu matrix --policy SPEC... | --policies P1,P2  --workload 'NAME=CMD ARGS'... |
 *                 --workloads FILE  --runs N --out DIR [--seed N] [--slurm [--sbatch-args ARGS]
 *                 [--wait]] [--dry-run]
 *   thpemu matrix --fidelity 'NAME=OPTIONS'... | --fidelity-cells FILE  --out DIR [--slurm ...]
 *   thpemu matrix --run-cell DIR INDEX
 *
 * Each cell is one JSON file DIR/cells/NNNN.json naming its policy (an ab-style spec, spec.c),
 * its workload (name and argv), its run index and seed, and the `thpemu run` arguments; its
 * result is DIR/results/NNNN.json: the run's report with a "matrix" object saying which cell,
 * policy, workload, run and host it was. Cells are numbered run-major (every policy and workload
 * of run 1, then of run 2, ...), so slow drift of a machine falls on every policy alike.
 *
 * Locally the cells run one at a time, and never beside another matrix's: each holds an flock
 * on a node-wide lock file while it runs. A cell with a result is skipped, so an interrupted
 * matrix resumes. With --slurm, DIR/matrix.sbatch is written and submitted as a Slurm job
 * array, one task per cell (`thpemu matrix --run-cell DIR $SLURM_ARRAY_TASK_ID`).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"
#include "util/outfile.h"
#include "cli/spec.h"
#include "report/runs.h"
#include "util/units.h"

#define CMD	      "matrix"
#define MAX_POLICIES  32
#define MAX_WORKLOADS 256 /* workloads, or fidelity cells */
#define MAX_WARGS     64
#define MAX_RUNS      1000
#define MAX_CELLS     20000
#define NAME_MAX_LEN  64

struct workload {
	char name[NAME_MAX_LEN + 1];
	char *argv[MAX_WARGS + 1];
	int argc;
	char line[1024];
	char words[1024]; /* line split at spaces: what argv points into */
};

struct matrix {
	struct cli_side pol[MAX_POLICIES];
	int npol;
	struct workload wl[MAX_WORKLOADS];
	int nwl;
	unsigned runs;
	uint64_t seed;
	const char *out, *sbatch_args;
	bool slurm, wait, dry_run, seed_given;
	bool fidelity; /* the cells are thpemu fidelity comparisons (m->wl: NAME=OPTIONS) */
	char dir[PATH_MAX];
};

static volatile sig_atomic_t interrupted;

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: thpemu matrix (--policy SPEC... | --policies P1,P2,...)\n"
	    "                     (--workload 'NAME=CMD ARGS'... | --workloads FILE) --runs N\n"
	    "                     --out DIR [--seed N] [--slurm [--sbatch-args ARGS] [--wait]]\n"
	    "                     [--dry-run]\n"
	    "       thpemu matrix (--fidelity 'NAME=OPTIONS'... | --fidelity-cells FILE) --out "
	    "DIR\n"
	    "                     [--slurm [--sbatch-args ARGS] [--wait]] [--dry-run]\n"
	    "       thpemu matrix --run-cell DIR INDEX\n\n"
	    "Expands policies x workloads x runs into independent cells and runs them: here, one\n"
	    "at a time, or as a Slurm job array. 'thpemu report DIR' compares the results.\n"
	    "Or each cell is one 'thpemu fidelity' comparison (real kernels against thpemu).\n\n"
	    "  --policy SPEC       one policy, as a side of 'thpemu ab': comma-separated "
	    "KEY=VALUE\n"
	    "                      of 'thpemu run' options without dashes, and label=NAME\n"
	    "                      (e.g. policy=linux-3.1,device=usb2-stick-2011,label=old);\n"
	    "                      repeat it for each policy. The first is the baseline.\n"
	    "  --policies P1,P2    policies by name only (each as --policy policy=P)\n"
	    "  --workload 'NAME=CMD ARGS'\n"
	    "                      one workload: NAME ([A-Za-z0-9._-], at most %d characters) and\n"
	    "                      the command, split at spaces (no shell; use sh -c '...' for "
	    "one);\n"
	    "                      repeat it for each workload\n"
	    "  --workloads FILE    workloads one a line in the same form ('#' comments, blank "
	    "lines)\n"
	    "  --fidelity 'NAME=OPTIONS'\n"
	    "                      one cell instead: 'thpemu fidelity OPTIONS' (split at "
	    "spaces),\n"
	    "                      its JSON the cell's result; the options are checked first\n"
	    "                      (thpemu fidelity --check); repeat it for each cell. Without\n"
	    "                      --policy, --runs and --seed (a cell has its own --boots,\n"
	    "                      --runs, --seed)\n"
	    "  --fidelity-cells FILE  fidelity cells one a line in the same form (at most %d)\n"
	    "  --runs N            runs of each policy on each workload (1..%d)\n"
	    "  --out DIR           the matrix directory: DIR/cells/NNNN.json (what each cell is),\n"
	    "                      DIR/results/NNNN.json (its report, saying which policy, "
	    "workload,\n"
	    "                      run and host), DIR/logs/ (each run's output). Created, or an\n"
	    "                      existing matrix of the same cells (which resumes it)\n"
	    "  --seed N            each run's initial pool seed (default 1: every run starts "
	    "alike;\n"
	    "                      a policy's own seed= wins)\n"
	    "  --slurm             write DIR/matrix.sbatch and submit it: sbatch "
	    "--array=0-(CELLS-1),\n"
	    "                      one cell per task. DIR must be shared by the nodes and thpemu\n"
	    "                      installed at the same path on them\n"
	    "  --sbatch-args ARGS  more sbatch options, split at spaces, e.g. '--partition=thp\n"
	    "                      --exclusive' (a node to each task) or '--array=0-N%%1' (one "
	    "task\n"
	    "                      at a time)\n"
	    "  --wait              with --slurm: wait for the array to finish (sbatch --wait), "
	    "then\n"
	    "                      say how many cells have a result\n"
	    "  --dry-run           write the cells (and matrix.sbatch), print the plan, run "
	    "nothing\n"
	    "  --run-cell DIR I    run cell I of DIR (what each Slurm task runs); skipped if it\n"
	    "                      has a result\n\n"
	    "Timing runs never overlap on one machine: every cell holds an flock on a lock file "
	    "of\n"
	    "the node while it runs ($THPEMU_MATRIX_LOCK, default /run/thpemu-matrix.lock, else\n"
	    "/tmp/thpemu-matrix.lock), whichever matrix or Slurm task it belongs to. Cells that\n"
	    "have a result are skipped, so running the same matrix again resumes it.\n"
	    "Exit status: 0; 1 if a cell failed or has no result; 2 for a bad option.\n",
	    NAME_MAX_LEN, MAX_WORKLOADS, MAX_RUNS);
}

/* ---- options ------------------------------------------------------------------------------ */

static void add_policy(struct matrix *m, const char *opt, const char *spec)
{
	if (m->npol == MAX_POLICIES)
		prog_usage_error(CMD, "%s: at most %d policies", opt, MAX_POLICIES);
	cli_side_parse(CMD, opt, spec, &m->pol[m->npol]);
	if (!m->pol[m->npol].label[0])
		prog_usage_error(CMD,
				 "%s: '%s' has neither policy= nor label= (e.g. policy=linux-3.1)",
				 opt, spec);
	for (int i = 0; i < m->npol; i++)
		if (!strcmp(m->pol[i].label, m->pol[m->npol].label))
			prog_usage_error(CMD,
					 "%s: two policies labelled '%s' (give one a label=NAME)",
					 opt, m->pol[i].label);
	m->npol++;
}

static bool name_ok(const char *s, size_t n)
{
	if (!n || n > NAME_MAX_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
			    s[i]))
			return false;
	return true;
}

/* A workload, 'NAME=CMD ARGS'; or with m->fidelity a fidelity cell, 'NAME=OPTIONS' (its
 * options checked by thpemu fidelity --check after the parse). */
static void add_workload(struct matrix *m, const char *opt, const char *spec)
{
	struct workload *w;
	const char *eq = strchr(spec, '=');
	char *p, *tok;
	int rc;

	if (m->nwl == MAX_WORKLOADS)
		prog_usage_error(CMD, "%s: at most %d %s", opt, MAX_WORKLOADS,
				 m->fidelity ? "fidelity cells" : "workloads");
	if (!eq || !name_ok(spec, (size_t)(eq - spec)))
		prog_usage_error(CMD,
				 "%s: '%s' is not NAME=CMD ARGS (NAME: 1..%d of A-Za-z0-9._-, e.g. "
				 "'small=usemem --size 8M')",
				 opt, spec, NAME_MAX_LEN);
	w = &m->wl[m->nwl];
	snprintf(w->name, sizeof(w->name), "%.*s", (int)(eq - spec), spec);
	if (strlen(eq + 1) >= sizeof(w->line))
		prog_usage_error(CMD, "%s: the command of '%s' is too long", opt, w->name);
	snprintf(w->line, sizeof(w->line), "%s", eq + 1);
	memcpy(w->words, w->line, sizeof(w->words));
	p = w->words;
	while ((tok = strsep(&p, " \t"))) {
		if (!*tok)
			continue;
		if (w->argc == MAX_WARGS)
			prog_usage_error(CMD, "%s: '%s' has more than %d arguments", opt, w->name,
					 MAX_WARGS);
		w->argv[w->argc++] = tok;
	}
	if (!w->argc)
		prog_usage_error(CMD, "%s: %s '%s' has no %s", opt,
				 m->fidelity ? "cell" : "workload", w->name,
				 m->fidelity ? "option" : "command");
	for (int i = 0; i < m->nwl; i++)
		if (!strcmp(m->wl[i].name, w->name))
			prog_usage_error(CMD, "%s: %s '%s' is given twice", opt,
					 m->fidelity ? "cell" : "workload", w->name);
	for (int i = 0; m->fidelity && i < w->argc && strcmp(w->argv[i], "--workload"); i++) {
		const char *a = w->argv[i];

		if (!strcmp(a, "--check") || !strcmp(a, "--help") || !strcmp(a, "-h"))
			prog_usage_error(CMD, "%s: cell '%s': %s runs no comparison", opt, w->name,
					 a);
		if (!strcmp(a, "--json"))
			prog_usage_error(
			    CMD, "%s: cell '%s': --json is the matrix's (DIR/results/NNNN.json)",
			    opt, w->name);
	}
	if (m->fidelity) {
		m->nwl++;
		return;
	}
	if ((rc = cli_find_program(w->argv[0])) < 0)
		prog_usage_error(CMD, "%s: workload '%s': cannot run '%s': %s", opt, w->name,
				 w->argv[0], strerror(-rc));
	m->nwl++;
}

static void read_workloads(struct matrix *m, const char *opt, const char *path)
{
	FILE *f = fopen(path, "r");
	char line[1200];

	if (!f)
		prog_usage_error(CMD, "%s: cannot read '%s': %s", opt, path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *s = line;

		line[strcspn(line, "\r\n")] = '\0';
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s && *s != '#')
			add_workload(m, opt, s);
	}
	fclose(f);
}

static uint64_t parse_uint(const char *opt, const char *v, uint64_t lo, uint64_t hi)
{
	uint64_t n;

	if (!*v || strspn(v, "0123456789") != strlen(v) || units_parse_uint(v, hi, &n) || n < lo)
		prog_usage_error(CMD, "%s: '%s' is not an integer in %llu..%llu", opt, v,
				 (unsigned long long)lo, (unsigned long long)hi);
	return n;
}

static void parse(int argc, char **argv, struct matrix *m)
{
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *eq = strchr(arg, '='), *v = NULL;
		char name[32];

		if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			usage(stdout);
			exit(0);
		}
		snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
		if (!strcmp(name, "--slurm") || !strcmp(name, "--wait") ||
		    !strcmp(name, "--dry-run")) {
			if (eq)
				prog_usage_error(CMD, "%s takes no value", name);
			if (!strcmp(name, "--slurm"))
				m->slurm = true;
			else if (!strcmp(name, "--wait"))
				m->wait = true;
			else
				m->dry_run = true;
			continue;
		}
		if (strncmp(arg, "--", 2))
			prog_usage_error(
			    CMD, "unexpected argument '%s' (see 'thpemu matrix --help')", arg);
		if (!eq && i + 1 >= argc)
			prog_usage_error(CMD, "%s needs a value (see 'thpemu matrix --help')",
					 name);
		v = eq ? eq + 1 : argv[++i];
		if (!strcmp(name, "--policy")) {
			add_policy(m, name, v);
		} else if (!strcmp(name, "--policies")) {
			char *dup = strdup(v), *p = dup, *tok, spec[300];

			while ((tok = strsep(&p, ","))) {
				if (!*tok)
					prog_usage_error(CMD, "--policies: an empty name in '%s'",
							 v);
				snprintf(spec, sizeof(spec), "policy=%s", tok);
				add_policy(m, "--policies", spec);
			}
			free(dup);
		} else if (!strcmp(name, "--workload")) {
			if (m->fidelity)
				prog_usage_error(CMD,
						 "--workload: a matrix of fidelity cells cannot "
						 "hold workloads (one or the other)");
			add_workload(m, name, v);
		} else if (!strcmp(name, "--workloads")) {
			if (m->fidelity)
				prog_usage_error(CMD,
						 "--workloads: a matrix of fidelity cells cannot "
						 "hold workloads (one or the other)");
			read_workloads(m, name, v);
		} else if (!strcmp(name, "--fidelity") || !strcmp(name, "--fidelity-cells")) {
			if (m->nwl && !m->fidelity)
				prog_usage_error(CMD,
						 "%s: a matrix of workloads cannot hold fidelity "
						 "cells (one or the other)",
						 name);
			m->fidelity = true;
			if (!strcmp(name, "--fidelity"))
				add_workload(m, name, v);
			else
				read_workloads(m, name, v);
		} else if (!strcmp(name, "--runs")) {
			m->runs = (unsigned)parse_uint(name, v, 1, MAX_RUNS);
		} else if (!strcmp(name, "--seed")) {
			m->seed = cli_run_seed(CMD, v); /* each run's --seed */
			m->seed_given = true;
		} else if (!strcmp(name, "--out")) {
			m->out = v;
		} else if (!strcmp(name, "--sbatch-args")) {
			m->sbatch_args = v;
		} else {
			prog_usage_error(
			    CMD,
			    "unknown option '%s' (accepted: --policy, --policies, "
			    "--workload, --workloads, --fidelity, --fidelity-cells, --runs, "
			    "--out, --seed, --slurm, --sbatch-args, --wait, --dry-run, "
			    "--run-cell)",
			    name);
		}
	}
	if (m->fidelity) {
		if (m->npol || m->runs || m->seed_given)
			prog_usage_error(CMD,
					 "%s does not go with fidelity cells (each has its own "
					 "--boots, --runs and --seed; its policy is the kernel's)",
					 m->npol   ? "--policy"
					 : m->runs ? "--runs"
						   : "--seed");
		m->npol = 1; /* one cell a fidelity comparison */
		m->runs = 1;
	}
	if (!m->npol)
		prog_usage_error(CMD, "no policy given (--policy SPEC or --policies P1,P2)");
	if (!m->nwl)
		prog_usage_error(CMD,
				 "no workload given (--workload 'NAME=CMD ARGS' or --workloads "
				 "FILE)");
	if (!m->runs)
		prog_usage_error(CMD, "--runs N is required (1..%d)", MAX_RUNS);
	if (!m->out)
		prog_usage_error(CMD, "--out DIR is required (the matrix directory)");
	if ((size_t)m->npol * (size_t)m->nwl * m->runs > MAX_CELLS)
		prog_usage_error(
		    CMD, "--runs: %d policies x %d workloads x %u runs is more than %d cells",
		    m->npol, m->nwl, m->runs, MAX_CELLS);
	if (!m->slurm && (m->wait || m->sbatch_args))
		prog_usage_error(CMD, "%s goes with --slurm", m->wait ? "--wait" : "--sbatch-args");
}

/* Each fidelity cell's options as thpemu fidelity reads them (its --check: nothing run, no tool
 * looked for, so a cell may name paths of the nodes that will run it only if they exist here
 * too): a bad one ends the matrix with its message, exit 2, before any cell is written. */
static void check_fidelity_cells(const struct matrix *m)
{
	char self[PATH_MAX + 16], msg[1024];

	snprintf(self, sizeof(self), "%s/thpemu", prog_self_dir());
	for (int c = 0; c < m->nwl; c++) {
		const struct workload *w = &m->wl[c];
		char *argv[MAX_WARGS + 4];
		int p[2], n = 0, status = -1;
		ssize_t got, len = 0;
		pid_t pid;

		argv[n++] = self;
		argv[n++] = "fidelity";
		argv[n++] = "--check";
		for (int i = 0; i < w->argc; i++)
			argv[n++] = w->argv[i];
		argv[n] = NULL;
		if (pipe2(p, O_CLOEXEC) < 0)
			prog_usage_error(CMD, "fidelity cell '%s': cannot check it: %s", w->name,
					 strerror(errno));
		fflush(NULL);
		pid = fork();
		if (pid == 0) {
			dup2(p[1], 1);
			dup2(p[1], 2);
			execv(self, argv);
			_exit(127);
		}
		close(p[1]);
		while (pid > 0 && (got = read(p[0], msg + len, sizeof(msg) - 1 - (size_t)len)) != 0)
			if (got > 0)
				len += got;
			else if (errno != EINTR)
				break;
		close(p[0]);
		msg[len] = '\0';
		while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		if (pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
			continue;
		msg[strcspn(msg, "\n")] = '\0';
		prog_usage_error(CMD, "fidelity cell '%s': %s", w->name,
				 !strncmp(msg, "thpemu fidelity: ", 17) ? msg + 17
				 : *msg					? msg
					: "thpemu fidelity did not run");
	}
}

/* ---- cells -------------------------------------------------------------------------------- */

static void cell_path(const char *dir, const char *sub, unsigned idx, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s/%04u.json", dir, sub, idx);
}

static json_t *strs(char *const *v, int n)
{
	json_t *a = json_array();

	for (int i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

static json_t *make_cell(const struct matrix *m, unsigned idx)
{
	if (m->fidelity)
		return json_pack("{s:s, s:s, s:I, s:{s:s, s:o}}", "kind", "matrix-cell", "version",
				 THPEMU_VERSION, "index", (json_int_t)idx, "fidelity", "name",
				 m->wl[idx].name, "options",
				 strs(m->wl[idx].argv, m->wl[idx].argc));
	unsigned per_run = (unsigned)(m->npol * m->nwl), run = idx / per_run + 1;
	const struct workload *w = &m->wl[idx % per_run / (unsigned)m->npol];
	const struct cli_side *p = &m->pol[idx % (unsigned)m->npol];
	json_t *args = strs(p->argv, p->argc);
	bool own_seed = false;

	for (int i = 0; i + 1 < p->argc; i += 2)
		own_seed |= !strcmp(p->argv[i], "--seed");
	if (!own_seed) {
		char s[32];

		snprintf(s, sizeof(s), "%llu", (unsigned long long)m->seed);
		json_array_append_new(args, json_string("--seed"));
		json_array_append_new(args, json_string(s));
	}
	return json_pack("{s:s, s:s, s:I, s:{s:s, s:s}, s:{s:s, s:o}, s:I, s:I, s:o}", "kind",
			 "matrix-cell", "version", THPEMU_VERSION, "index", (json_int_t)idx,
			 "policy", "label", p->label, "spec", p->spec, "workload", "name", w->name,
			 "command", strs(w->argv, w->argc), "run", (json_int_t)run, "seed",
			 (json_int_t)m->seed, "run_args", args);
}

/* A cell or a result, written whole (util/outfile.h: a temporary file beside it, every write
 * checked, fsync'ed, renamed into place): a result that exists is complete, which resuming relies
 * on. 0, or -errno with err set ("'PATH': why"). */
static int write_json_atomic(const char *path, json_t *j, char *err, size_t errlen)
{
	char *text = rd_json_text(j, 1, 12, true);
	struct outfile o;
	int rc;

	if (!text) {
		snprintf(err, errlen, "'%s': out of memory", path);
		return -ENOMEM;
	}
	rc = outfile_create(&o, path, err, errlen);
	if (rc == 0 && (rc = outfile_write(&o, text, strlen(text), err, errlen)) < 0)
		outfile_abort(&o);
	else if (rc == 0)
		rc = outfile_commit(&o, err, errlen);
	free(text);
	return rc;
}

static void mkdir_or_exit(const char *path)
{
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		prog_usage_error(CMD, "--out: cannot create '%s': %s", path, strerror(errno));
}

/* Write DIR/cells; an existing cell must be the same cell (else DIR is another matrix). */
static void write_cells(struct matrix *m, unsigned ncells)
{
	char sub[PATH_MAX + 16], path[PATH_MAX + 32], err[2 * PATH_MAX];

	mkdir_or_exit(m->out);
	if (!realpath(m->out, m->dir))
		prog_usage_error(CMD, "--out: '%s': %s", m->out, strerror(errno));
	for (const char *s = "cells\0results\0logs\0"; *s; s += strlen(s) + 1) {
		snprintf(sub, sizeof(sub), "%s/%s", m->dir, s);
		mkdir_or_exit(sub);
	}
	for (unsigned i = 0; i < ncells; i++) {
		json_t *c = make_cell(m, i), *old;

		cell_path(m->dir, "cells", i, path, sizeof(path));
		old = json_load_file(path, 0, NULL);
		if (old && !json_equal(old, c))
			prog_usage_error(CMD,
					 "--out: '%s' holds another matrix (its cell %u differs); "
					 "use a new directory",
					 m->out, i);
		if (!old && write_json_atomic(path, c, err, sizeof(err)) < 0)
			prog_usage_error(CMD, "--out: %s", err);
		json_decref(old);
		json_decref(c);
	}
}

/* ---- running one cell --------------------------------------------------------------------- */

static int node_lock(void)
{
	const char *env = getenv("THPEMU_MATRIX_LOCK");
	const char *paths[] = {env, "/run/thpemu-matrix.lock", "/tmp/thpemu-matrix.lock"};

	for (size_t i = 0; i < 3; i++) {
		int fd;

		if (!paths[i] || !*paths[i])
			continue;
		fd = open(paths[i], O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
		if (fd < 0)
			continue;
		while (flock(fd, LOCK_EX) < 0)
			if (errno != EINTR || interrupted) {
				close(fd);
				return -1;
			}
		return fd;
	}
	return -1;
}

static const char *jstr(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

/* Run cell idx of dir unless it has a result: 0 done (or skipped), 1 failed. */
static int run_cell(const char *dir, unsigned idx, bool verbose)
{
	char cpath[PATH_MAX + 32], rpath[PATH_MAX + 32], tmp[PATH_MAX + 64], stalls[PATH_MAX + 64];
	char logp[PATH_MAX + 64], self[PATH_MAX + 16], host[256] = "", *argv[256];
	char werr[2 * PATH_MAX];
	json_t *cell, *args, *cmd, *rep, *meta, *fid;
	json_error_t jerr;
	int n = 0, status, fd, lock, rc = 1;
	pid_t pid;

	cell_path(dir, "cells", idx, cpath, sizeof(cpath));
	cell_path(dir, "results", idx, rpath, sizeof(rpath));
	if (access(rpath, F_OK) == 0) {
		if (verbose)
			fprintf(stderr, "matrix: cell %04u has a result, skipped\n", idx);
		return 0;
	}
	cell = json_load_file(cpath, 0, &jerr);
	fid = json_object_get(cell, "fidelity"); /* a thpemu fidelity comparison */
	args = json_object_get(fid ? fid : cell, fid ? "options" : "run_args");
	cmd = json_object_get(json_object_get(cell, "workload"), "command"); /* NULL: fidelity */
	if (!cell || !json_is_array(args) || (!fid && !json_is_array(cmd)) ||
	    json_array_size(args) + json_array_size(cmd) > 240) {
		prog_error(CMD, "cell %u: '%s' is not a matrix cell (%s)", idx, cpath, jerr.text);
		json_decref(cell);
		return 1;
	}
	snprintf(self, sizeof(self), "%s/thpemu", prog_self_dir());
	snprintf(tmp, sizeof(tmp), "%s/logs/%04u.%s.json", dir, idx, fid ? "fidelity" : "report");
	snprintf(stalls, sizeof(stalls), "%s/logs/%04u.stalls.txt", dir, idx);
	snprintf(logp, sizeof(logp), "%s/logs/%04u.out", dir, idx);
	argv[n++] = self;
	if (fid) { /* our --json first: what follows --workload is the workload's */
		argv[n++] = "fidelity";
		argv[n++] = "--json";
		argv[n++] = tmp;
	} else {
		argv[n++] = "run";
		argv[n++] = "--quiet";
		argv[n++] = "--report";
		argv[n++] = tmp;
		argv[n++] = "--stall-report";
		argv[n++] = stalls;
	}
	for (size_t i = 0; i < json_array_size(args); i++)
		argv[n++] = (char *)json_string_value(json_array_get(args, i));
	if (!fid)
		argv[n++] = "--";
	for (size_t i = 0; i < json_array_size(cmd); i++)
		argv[n++] = (char *)json_string_value(json_array_get(cmd, i));
	argv[n] = NULL;
	for (int i = 0; i < n; i++)
		if (!argv[i]) {
			prog_error(CMD, "cell %u: '%s' has a non-string argument", idx, cpath);
			json_decref(cell);
			return 1;
		}
	gethostname(host, sizeof(host) - 1);
	lock = node_lock();
	if (lock < 0) {
		prog_error(CMD, "cell %u: cannot take the node's matrix lock", idx);
		json_decref(cell);
		return 1;
	}
	if (verbose && fid)
		fprintf(stderr, "matrix: cell %04u: fidelity %s\n", idx,
			prog_esc(jstr(fid, "name")));
	else if (verbose)
		fprintf(stderr, "matrix: cell %04u: %s on %s, run %lld\n", idx,
			prog_esc(jstr(json_object_get(cell, "policy"), "label")),
			prog_esc(jstr(json_object_get(cell, "workload"), "name")),
			(long long)json_integer_value(json_object_get(cell, "run")));
	unlink(tmp);
	fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	fflush(NULL);
	pid = fd < 0 ? -1 : fork();
	if (pid == 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		execv(self, argv);
		_exit(127);
	}
	if (fd >= 0)
		close(fd);
	status = -1;
	while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	close(lock); /* the timing run is over */
	status = status < 0	       ? -1
		 : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
				       : WEXITSTATUS(status);
	rep = status == 0 ? json_load_file(tmp, 0, NULL) : NULL;
	if (!json_is_object(rep)) {
		/* thpemu fidelity writes its table when a boot or run failed (exit 1): kept */
		prog_error(CMD, "cell %u failed (exit status %d); its output: %s%s%s", idx, status,
			   logp, fid && access(tmp, F_OK) == 0 ? ", its table: " : "",
			   fid && access(tmp, F_OK) == 0 ? tmp : "");
		goto out;
	}
	if (fid)
		meta = json_pack("{s:I, s:s, s:O, s:s}", "cell", (json_int_t)idx, "host", host,
				 "fidelity", fid, "cell_file", cpath);
	else
		meta = json_pack("{s:I, s:s, s:O, s:O, s:I, s:I, s:s}", "cell", (json_int_t)idx,
				 "host", host, "policy", json_object_get(cell, "policy"),
				 "workload", json_object_get(cell, "workload"), "run",
				 json_integer_value(json_object_get(cell, "run")), "seed",
				 json_integer_value(json_object_get(cell, "seed")), "cell_file",
				 cpath);
	json_object_set_new(rep, "matrix", meta);
	if (write_json_atomic(rpath, rep, werr, sizeof(werr)) < 0) {
		prog_error(CMD, "cell %u: %s", idx, werr);
		goto out;
	}
	unlink(tmp);
	rc = 0;
out:
	json_decref(rep);
	json_decref(cell);
	return rc;
}

static int run_cell_main(int argc, char **argv)
{
	char dir[PATH_MAX], cpath[PATH_MAX + 32];
	unsigned idx;

	if (argc != 4)
		prog_usage_error(CMD, "--run-cell needs DIR and INDEX (--run-cell DIR INDEX)");
	idx = (unsigned)parse_uint("--run-cell", argv[3], 0, MAX_CELLS - 1);
	if (!realpath(argv[2], dir))
		prog_usage_error(CMD, "--run-cell: '%s': %s", argv[2], strerror(errno));
	cell_path(dir, "cells", idx, cpath, sizeof(cpath));
	if (access(cpath, R_OK) < 0)
		prog_usage_error(CMD, "--run-cell: no cell %u in '%s' (%s)", idx, argv[2],
				 strerror(errno));
	return run_cell(dir, idx, true);
}

/* ---- Slurm -------------------------------------------------------------------------------- */

static int write_sbatch(const struct matrix *m, unsigned ncells, char *path, size_t len)
{
	FILE *f;

	snprintf(path, len, "%s/matrix.sbatch", m->dir);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f,
		"#!/bin/sh\n"
		"# thpemu matrix: %u cells, one per array task (written by thpemu matrix --slurm)\n"
		"#SBATCH --job-name=thpemu-matrix\n"
		"#SBATCH --array=0-%u\n"
		"#SBATCH --ntasks=1\n"
		"#SBATCH --output=%s/logs/slurm-%%A_%%a.out\n"
		"exec '%s/thpemu' matrix --run-cell '%s' \"$SLURM_ARRAY_TASK_ID\"\n",
		ncells, ncells - 1, m->dir, prog_self_dir(), m->dir);
	if (fclose(f) != 0)
		return -EIO;
	chmod(path, 0755);
	return 0;
}

static int submit(const struct matrix *m, const char *script)
{
	char *argv[80], *extra = m->sbatch_args ? strdup(m->sbatch_args) : NULL, *p = extra, *tok;
	int n = 0, status;
	pid_t pid;

	argv[n++] = "sbatch";
	if (m->wait)
		argv[n++] = "--wait";
	while (p && (tok = strsep(&p, " \t")) && n < 76)
		if (*tok)
			argv[n++] = tok;
	argv[n++] = (char *)script;
	argv[n] = NULL;
	fprintf(stderr, "matrix:");
	for (int i = 0; argv[i]; i++)
		fprintf(stderr, " %s", prog_esc(argv[i]));
	fprintf(stderr, "\n");
	if (m->dry_run) {
		free(extra);
		return 0;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		execvp(argv[0], argv);
		fprintf(stderr, "thpemu matrix: cannot run sbatch: %s\n", strerror(errno));
		_exit(127);
	}
	status = -1;
	while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	free(extra);
	if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
		prog_error(CMD, "sbatch failed (exit status %d)",
			   status < 0	       ? -1
			   : WIFEXITED(status) ? WEXITSTATUS(status)
					       : 128);
		return 1;
	}
	return 0;
}

static unsigned count_results(const char *dir, unsigned ncells)
{
	char path[PATH_MAX + 32];
	unsigned k = 0;

	for (unsigned i = 0; i < ncells; i++) {
		cell_path(dir, "results", i, path, sizeof(path));
		k += access(path, F_OK) == 0;
	}
	return k;
}

static void on_signal(int sig)
{
	interrupted = sig;
}

static int matrix_main(int argc, char **argv)
{
	static struct matrix m; /* 256 workloads of 2 KiB: not on the stack */
	unsigned ncells, have;
	int rc = 0;

	if (argc >= 2 && !strcmp(argv[1], "--run-cell"))
		return run_cell_main(argc, argv);
	m.seed = 1;
	parse(argc, argv, &m);
	if (m.fidelity)
		check_fidelity_cells(&m);
	ncells = (unsigned)m.npol * (unsigned)m.nwl * m.runs;
	write_cells(&m, ncells);
	if (m.fidelity)
		printf("thpemu matrix: %u fidelity cell%s in %s\n", ncells, ncells == 1 ? "" : "s",
		       prog_esc(m.dir));
	else
		printf("thpemu matrix: %d policies x %d workloads x %u runs = %u cells in %s\n",
		       m.npol, m.nwl, m.runs, ncells, prog_esc(m.dir));
	if (m.dry_run && !m.slurm) {
		for (unsigned i = 0; i < ncells; i++) {
			unsigned per = (unsigned)(m.npol * m.nwl);

			if (m.fidelity)
				printf("  cell %04u: fidelity %s: %s\n", i, prog_esc(m.wl[i].name),
				       prog_esc(m.wl[i].line));
			else
				printf("  cell %04u: run %u, workload %s, policy %s\n", i,
				       i / per + 1, prog_esc(m.wl[i % per / (unsigned)m.npol].name),
				       prog_esc(m.pol[i % (unsigned)m.npol].label));
		}
		return 0;
	}
	if (m.slurm) {
		char script[PATH_MAX + 32];
		int e = write_sbatch(&m, ncells, script, sizeof(script));

		if (e < 0) {
			prog_error(CMD, "cannot write %s: %s", script, strerror(-e));
			return 1;
		}
		rc = submit(&m, script);
		if (!m.wait || m.dry_run) /* --wait: a failed task fails sbatch; count anyway */
			return rc;
	} else {
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
		for (unsigned i = 0; i < ncells && !interrupted; i++)
			rc |= run_cell(m.dir, i, true);
	}
	have = count_results(m.dir, ncells);
	if (m.fidelity) /* each result a fidelity table (kind "fidelity"), its text in logs/ */
		printf("thpemu matrix: %u of %u cells have a result (DIR/results/NNNN.json, their "
		       "tables DIR/logs/NNNN.out) in %s\n",
		       have, ncells, prog_esc(m.dir));
	else
		printf("thpemu matrix: %u of %u cells have a result; compare them: thpemu report "
		       "%s\n",
		       have, ncells, prog_esc(m.dir));
	if (interrupted)
		return 128 + interrupted;
	return have == ncells ? 0 : 1;
}

CLI_COMMAND(matrix, "matrix",
	    "policy x workload x run matrices, or fidelity cells: run one at a time here, or as a "
	    "Slurm array",
	    matrix_main)

/* thpemu run: run a program under the live emulator and report what its faults cost.
 *
 * The launcher validates its options (one line and exit 2 on a bad value), preloads
 * libthpemu.so (and jemalloc, so that glibc-malloc programs are managed too), points every
 * process of the program at a private run directory where each keeps its statistics in a
 * MAP_SHARED file, runs the command as a launcher (run_proc.c: its own process group and the
 * terminal, every signal sent to thpemu run relayed once, job control mirrored), and finally
 * merges the processes' statistics into one report, whatever happened to them (_exit, a crash or
 * a kill leave their last counters behind), with a summary of each process (pid, ppid, name, how
 * it ended, its faults, latency and stalls; a pid that exec'd is one process). The exit status is
 * the program's; if a signal killed it, thpemu run dies of the same signal after the report.
 *
 * Options are table-driven: the THPEMU_* table of core/config supplies most of them, and
 * run_opts[] below the launcher's own.
 *
 * The slow device (--device) is made ready before the program starts and removed after it,
 * whatever happened (run_io.c); the dirtier and writeback run inside the program's process
 * (the library starts them in the process this command starts, THPEMU_IO_PID). Stall events
 * with stacks are written by each process at exit and merged here into the report and the
 * 2011-format text (stderr, or --stall-report FILE).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "host/tmpdirs.h"
#include "host/host.h"
#include "host/named.h"
#include "host/run_io.h"
#include "cli/run_proc.h"
#include "config/config.h"
#include "report/run.h"
#include "util/clock.h"

struct run_ctx {
	struct config cfg;
	const char *report;			   /* --report FILE */
	const char *stall_report;		   /* --stall-report FILE */
	struct cli_output *report_out, *stall_out; /* created before the program (open_outputs) */
	bool output_failed;			   /* an output could not be completed: exit 1 */
	bool quiet;				   /* --quiet: no summary */
	struct run_device dev;			   /* --device */
	struct run_stalls stalls;
	char **cmd; /* the program and its arguments */
	char run_dir[PATH_MAX];
	pid_t child;	      /* the process run_child started */
	int child_status;     /* its wait status */
	struct run_host host; /* the program tree's one machine */
	bool hosting;
	struct obs_coverage cov;      /* the machine's AnonHugePages over the program's run */
	char *machine_json;	      /* the report's program.machine (malloc), or NULL */
	const char *machine;	      /* --machine NAME: a named machine hosts the program */
	const char *given[CONFIG_NR]; /* THPEMU_* options given, by id (--machine refuses some) */
	struct run_proc proc;	      /* the program as a process: group, terminal, signals */
	bool require_managed;	      /* --require-managed */
	bool is_static;		      /* the command is a static binary: nothing preloads */
	char unseen_why[320];	      /* why the program's last image left no record */
	struct uffd_aside aside[UFFD_ASIDE_MAX]; /* programs unmanaged or stepped aside from */
	unsigned naside;
	char *inherited[CONFIG_NR]; /* THPEMU_* as thpemu run found them, before it set any */
	struct config procs_cfg;    /* what the program's processes read (procs_config) */
	bool procs_cfg_ok;	    /* ... and they can read it (else they run unmanaged) */
};

/* The launcher's own options (those not in the THPEMU_* table). */
struct run_opt {
	const char *name;
	const char *metavar; /* NULL: a flag without a value */
	const char *help;
	void (*apply)(struct run_ctx *rc, const char *val);
};

static void opt_report(struct run_ctx *rc, const char *val)
{
	rc->report = val;
}

static void opt_quiet(struct run_ctx *rc, const char *val)
{
	rc->quiet = true;
}

static void opt_stall_report(struct run_ctx *rc, const char *val)
{
	rc->stall_report = val;
}

static void opt_machine(struct run_ctx *rc, const char *val)
{
	rc->machine = val;
}

static void opt_require_managed(struct run_ctx *rc, const char *val)
{
	(void)val;
	rc->require_managed = true;
}

static const struct run_opt run_opts[] = {
    {"--report", "FILE", "write the merged JSON report to FILE", opt_report},
    {"--stall-report", "FILE", "write the stall report (2011 format) to FILE instead of stderr",
     opt_stall_report},
    {"--quiet", NULL, "no summary (nor stall report) on stderr", opt_quiet},
    {"--machine", "NAME",
     "attach to the named machine (thpemu machine start NAME) instead of making one", opt_machine},
    {"--require-managed", NULL,
     "fail rather than run unmanaged: refuse to start (exit 3) a static binary or without "
     "userfaultfd access; exit 3 after the program if any of its processes ran unmanaged or "
     "the emulator stepped aside for one (one line says which and why)",
     opt_require_managed},
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: thpemu run [OPTIONS] -- CMD [ARGS...]\n\n"
		"Runs CMD with libthpemu.so preloaded: its private anonymous memory is served by "
		"userfaultfd\nhandlers that follow the emulated kernel policy, and every fault's "
		"cost is measured.\n\nOptions:\n");
	char lhs[64];

	for (size_t i = 0; i < sizeof(run_opts) / sizeof(run_opts[0]); i++) {
		snprintf(lhs, sizeof(lhs), "%s%s%s", run_opts[i].name,
			 run_opts[i].metavar ? " " : "",
			 run_opts[i].metavar ? run_opts[i].metavar : "");
		fprintf(f, "  %-24s %s\n", lhs, run_opts[i].help);
	}
	for (unsigned i = 0; i < CONFIG_NR; i++) {
		const struct config_opt *o = &config_opts[i];

		if (!o->cli)
			continue;
		snprintf(lhs, sizeof(lhs), "%s %s", o->cli, o->metavar);
		fprintf(f, "  %-24s %s [%s]\n", lhs, o->help, o->def[0] ? o->def : "none");
	}
	fprintf(f,
		"\nEnvironment (the preload library reads these; the options above set them):\n");
	config_help(f, false);
	fprintf(f, "\nPolicies:\n");
	policy_help(f);
	fprintf(f, "\nDevices (--device DEV):\n");
	io_device_help(f);
	fprintf(f, "\nThe dirtier (--dirty SPEC, comma-separated items):\n");
	io_dirty_help(f);
	fprintf(
	    f,
	    "\nAn option given twice: the last one counts; a key given twice inside a --policy,\n"
	    "--device or --dirty spec is an error. Output files (--report, --stall-report,\n"
	    "--trace) are checked before the program starts: an existing one must be a regular\n"
	    "file of ours with one link (a symbolic link is never followed), in a directory we\n"
	    "can write that is sticky if everyone can write it, on a file system that keeps\n"
	    "files (not proc, sysfs, debugfs, cgroup, ...). Reports are written whole and renamed\n"
	    "into place; a trace is written in place and removed if it cannot be completed.\n");
	fprintf(
	    f,
	    "\nSignals: the program runs in a process group of its own (with the terminal when\n"
	    "thpemu run had it), or in the caller's when a script on a terminal runs thpemu run;\n"
	    "every signal sent to thpemu run (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2,\n"
	    "SIGWINCH, SIGALRM, SIGCONT, SIGTSTP, ... and real-time ones; not SIGKILL, SIGSTOP or\n"
	    "fault signals) is relayed to it once; when it stops, thpemu run stops too.\n");
	fprintf(
	    f, "\nUnmanaged: a program the emulator cannot manage (no userfaultfd for its user, a\n"
	       "static binary, a change of user it cannot follow) still runs, as it would without\n"
	       "thpemu; the summary and the report say which process and why (as they do when the\n"
	       "emulator steps aside for one). --require-managed makes that a failure.\n");
	fprintf(
	    f,
	    "\nExit status: the program's; if signal N killed it, thpemu run dies of signal N\n"
	    "after writing its report (a shell shows 128+N); 2 for a bad option or an output file\n"
	    "that cannot be written; 1 if thpemu itself failed, an output included (a report,\n"
	    "stall report or trace that could not be completed: one line names it, an earlier\n"
	    "file there is left as it was); 3 with --require-managed when the program would run,\n"
	    "or a process of it ran, unmanaged, or the emulator stepped aside for one (one line\n"
	    "says which and why; refused before the start: nothing ran).\n");
}

static const struct run_opt *find_run_opt(const char *name)
{
	for (size_t i = 0; i < sizeof(run_opts) / sizeof(run_opts[0]); i++)
		if (strcmp(run_opts[i].name, name) == 0)
			return &run_opts[i];
	return NULL;
}

bool cli_run_opt_takes_value(const char *name)
{
	const struct run_opt *ro = find_run_opt(name);

	return ro ? ro->metavar != NULL : config_opt_by_cli(name) != NULL;
}

/* Split "--opt=value" / "--opt value"; returns the value or exits 2. */
static const char *opt_value(int argc, char **argv, int *i, const char *eq, const char *name)
{
	if (eq)
		return eq + 1;
	if (*i + 1 >= argc)
		prog_usage_error("run", "%s needs a value", name);
	return argv[++*i];
}

/* The program may change directory before its library starts: give it an absolute path. */
static void absolute_trace(struct run_ctx *rc)
{
	char cwd[PATH_MAX], path[sizeof(rc->cfg.trace)];

	if (!rc->cfg.trace[0] || rc->cfg.trace[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", cwd, rc->cfg.trace) >= sizeof(path))
		prog_usage_error("run", "--trace: '%s' is too long", rc->cfg.trace);
	snprintf(rc->cfg.trace, sizeof(rc->cfg.trace), "%s", path);
	setenv("THPEMU_TRACE", path, 1);
}

/* Every output path can be written (nothing is created yet), and no two are the same file. */
static void check_outputs(const struct run_ctx *rc)
{
	const char *trace = rc->cfg.trace[0] ? rc->cfg.trace : NULL;

	if (rc->report)
		cli_check_output("run", "--report", rc->report);
	if (rc->stall_report)
		cli_check_output("run", "--stall-report", rc->stall_report);
	if (trace) /* the library creates it (and FILE.PID beside it) in the program's process */
		cli_check_output("run", "--trace", trace);
	cli_distinct_paths("run", "--report", rc->report, "--stall-report", rc->stall_report);
	cli_distinct_paths("run", "--report", rc->report, "--trace", trace);
	cli_distinct_paths("run", "--stall-report", rc->stall_report, "--trace", trace);
}

/* The launcher's own outputs, created (as temporary files beside them) once every option has
 * been checked and before anything starts: a report that cannot be written is bad input, not a
 * surprise at the end of a run. They are renamed into place once complete. */
static void open_outputs(struct run_ctx *rc)
{
	if (rc->report)
		rc->report_out = cli_output_open("run", "--report", rc->report);
	if (rc->stall_report)
		rc->stall_out = cli_output_open("run", "--stall-report", rc->stall_report);
}

static void parse(int argc, char **argv, struct run_ctx *rc)
{
	char err[512], name[64];
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *eq = strchr(a, '=');
		const struct config_opt *uo;
		const struct run_opt *ro;

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			exit(0);
		}
		if (!strcmp(a, "--help-markdown")) { /* not listed: core/live/README.md's table */
			config_help(stdout, true);
			exit(0);
		}
		if (a[0] != '-')
			break;
		snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - a) : (int)strlen(a), a);
		if ((ro = find_run_opt(name))) {
			if (!ro->metavar && eq)
				prog_usage_error("run", "%s takes no value (given '%s')", name,
						 eq + 1);
			ro->apply(rc, ro->metavar ? opt_value(argc, argv, &i, eq, name) : NULL);
		} else if ((uo = config_opt_by_cli(name))) {
			const char *v = opt_value(argc, argv, &i, eq, name);

			if (config_opt_parse(uo, name, v, &rc->cfg, err, sizeof(err)) < 0)
				prog_usage_error("run", "%s", err);
			/* a snapshot's path as resolved (absolute) for the processes */
			setenv(uo->env, uo == &config_opts[CONFIG_FRAGMENT] ? rc->cfg.fragment : v,
			       1);
			rc->given[uo - config_opts] = v;
			if (uo == &config_opts[CONFIG_DEVICE]) {
				rc->dev.spec = v;
				rc->dev.dev = rc->cfg.device;
			}
		} else {
			prog_usage_error("run", "unknown option '%s' (see 'thpemu run --help')",
					 name);
		}
	}
	if (i >= argc)
		prog_usage_error("run",
				 "no command given (usage: thpemu run [OPTIONS] -- CMD ARGS...)");
	rc->cmd = &argv[i];
	if (rc->given[CONFIG_TRACE] && !rc->given[CONFIG_TRACE][0]) /* not "no trace" */
		prog_usage_error("run",
				 "--trace: an empty path (give a file to write the trace to)");
	if (rc->machine) /* the machine's own configuration, for the program and the report */
		named_run_attach(rc->machine, rc->given, &rc->cfg);
	absolute_trace(rc);
	check_outputs(rc);
}

#define RUN_EXIT_UNMANAGED 3 /* --require-managed, and something ran (or would run) unmanaged */

/* Will the program be managed? A static binary will not: LD_PRELOAD has no dynamic loader to
 * act on. With --require-managed, neither that nor a user who may not open a userfaultfd starts
 * anything: one line, exit 3. */
static void check_managed(struct run_ctx *rc)
{
	char path[PATH_MAX] = "", why[400];

	rc->is_static = cli_program_static(rc->cmd[0], path, sizeof(path)) == 1;
	if (!rc->require_managed)
		return;
	if (rc->is_static) {
		prog_error("run",
			   "--require-managed: '%s' is a static binary: LD_PRELOAD cannot load "
			   "thpemu, it would run unmanaged; not started",
			   path);
		exit(RUN_EXIT_UNMANAGED);
	}
	if (cli_userfaultfd_access(why, sizeof(why)) < 0) {
		prog_error("run", "--require-managed: %s; not started", why);
		exit(RUN_EXIT_UNMANAGED);
	}
}

/* --require-managed after the program: which program ran unmanaged (or was stepped aside from)
 * and why, in one line. */
static void say_unmanaged(const struct run_ctx *rc, const struct uffd_program_info *prog)
{
	unsigned all = prog->unmanaged + prog->stepped_aside;
	const struct uffd_aside *a = rc->naside ? &rc->aside[0] : NULL;

	if (!a) {
		prog_error("run", "--require-managed: %u process%s ran unmanaged", all,
			   all == 1 ? "" : "es");
		return;
	}
	prog_error("run", "--require-managed: pid %d (%s) %s: %s%s", a->pid, a->comm,
		   a->stepped_aside ? "was stepped aside from" : "ran unmanaged", a->why,
		   all > 1 ? " (and others: see the summary)" : "");
}

/* The private run directory (tmpdir_create), after removing those of runs that were killed
 * (their launcher is dead: nothing else would ever remove them). */
static int make_run_dir(struct run_ctx *rc)
{
	char err[PATH_MAX + 200];

	tmpdir_sweep("thpemu-run");
	if (tmpdir_create("thpemu-run", rc->run_dir, sizeof(rc->run_dir), err, sizeof(err)) < 0) {
		prog_error("run", "%s", err);
		return -1;
	}
	setenv("THPEMU_RUN_DIR", rc->run_dir, 1);
	return 0;
}

/* The jemalloc to preload: libthpemu-jemalloc.so (Debian's jemalloc without its C++ part, built
 * from libjemalloc-dev: no libstdc++ to load in every process), beside libthpemu.so in a build
 * that made it, else Debian's libjemalloc.so.2. NULL if neither is there. */
static const char *find_jemalloc(char *buf, size_t len)
{
#ifdef THPEMU_JEMALLOC_LIB
	char why[3 * PATH_MAX];

	if (prog_find_lib("libthpemu-jemalloc.so", buf, len, why, sizeof(why)) == 0)
		return buf;
#else
	(void)buf;
	(void)len;
#endif
	return access(THPEMU_JEMALLOC_PATH, R_OK) == 0 ? THPEMU_JEMALLOC_PATH : NULL;
}

/* LD_PRELOAD = libthpemu.so [jemalloc] [whatever was there]. */
static int set_preload(struct run_ctx *rc)
{
	char lib[PATH_MAX], jbuf[PATH_MAX], val[3 * PATH_MAX], why[3 * PATH_MAX];
	const char *old = getenv("LD_PRELOAD");
	const char *jem = NULL;

	if (prog_find_lib("libthpemu.so", lib, sizeof(lib), why, sizeof(why)) < 0) {
		prog_error("run", "%s", why);
		return -1;
	}
	if (rc->cfg.allocator == CONFIG_ALLOC_JEMALLOC) {
		jem = find_jemalloc(jbuf, sizeof(jbuf));
		if (!jem) {
			prog_error("run",
				   "--allocator jemalloc: neither libthpemu-jemalloc.so nor %s is "
				   "there (install libjemalloc2); glibc malloc stays unmanaged",
				   THPEMU_JEMALLOC_PATH);
			rc->cfg.allocator = CONFIG_ALLOC_NONE;
			setenv("THPEMU_ALLOCATOR", "none", 1);
		}
	}
	snprintf(val, sizeof(val), "%s%s%s%s%s", lib, jem ? " " : "", jem ? jem : "",
		 old && *old ? " " : "", old ? old : "");
	return setenv("LD_PRELOAD", val, 1);
}

/* In the program's process, before exec: the dirtier and writeback run here, not in what this
 * program execs. */
static void set_io_pid(void *arg)
{
	char me[24];

	(void)arg;
	snprintf(me, sizeof(me), "%d", (int)getpid());
	setenv("THPEMU_IO_PID", me, 1);
}

/* Start the program and wait for it, relaying signals and job control (run_proc.c); the terminal
 * is thpemu run's again afterwards. Its exit status, 128 + N if a signal killed it, -1 if it
 * could not be started or waited for. */
static int run_child(struct run_ctx *rc)
{
	int status, err = run_proc_start(&rc->proc, rc->cmd, set_io_pid, NULL);

	if (err < 0) {
		prog_error("run", "fork: %s", strerror(-err));
		return -1;
	}
	rc->child = rc->proc.pid;
	status = run_proc_wait(&rc->proc);
	run_proc_end(&rc->proc);
	rc->child_status = status;
	if (status < 0)
		return -1;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/* A statistics file of the run directory: DIR/PID.stats (the last program of process PID) or
 * DIR/PID.eN.stats (its earlier programs, N counting up; or an earlier process with that pid,
 * whose exit hook ran). */
struct stats_file {
	int pid;   /* from the name; a name of another form: negative, a group of its own */
	int order; /* N of PID.eN.stats; INT_MAX for PID.stats */
	char name[48];
};

static int by_pid_order(const void *x, const void *y)
{
	const struct stats_file *a = x, *b = y;

	if (a->pid != b->pid)
		return (a->pid > b->pid) - (a->pid < b->pid);
	return (a->order > b->order) - (a->order < b->order);
}

/* A decimal number of at most 9 digits at s; its end in *end. -1 if none. */
static int small_number(const char *s, const char **end)
{
	int v = 0, n = 0;

	while (s[n] >= '0' && s[n] <= '9' && n < 9)
		v = v * 10 + (s[n++] - '0');
	*end = s + n;
	return n ? v : -1;
}

static void parse_stats_name(struct stats_file *f, int unparsed)
{
	const char *p;

	f->pid = small_number(f->name, &p);
	f->order = INT_MAX;
	if (f->pid >= 0 && p[0] == '.' && p[1] == 'e') {
		f->order = small_number(p + 2, &p);
		if (f->order < 0)
			f->pid = -1;
	}
	if (f->pid < 0 || strcmp(p, ".stats") != 0) {
		f->pid = -1 - unparsed; /* read on its own */
		f->order = INT_MAX;
	}
}

/* Every *.stats file of the run directory, sorted by pid and program order. */
static struct stats_file *list_stats(const char *dir, size_t *n)
{
	DIR *d = opendir(dir);
	struct stats_file *v = NULL;
	struct dirent *de;
	size_t cap = 0;

	*n = 0;
	while (d && (de = readdir(d))) {
		if (!strstr(de->d_name, ".stats") || strlen(de->d_name) >= sizeof(v->name))
			continue; /* not a record (a longer name is none of the library's) */
		if (*n == cap) {
			struct stats_file *p = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof(*v));

			if (!p)
				break;
			v = p;
		}
		snprintf(v[*n].name, sizeof(v->name), "%.*s", (int)sizeof(v->name) - 1,
			 de->d_name); /* fits: checked above */
		parse_stats_name(&v[*n], (int)*n);
		(*n)++;
	}
	if (d)
		closedir(d);
	if (*n)
		qsort(v, *n, sizeof(*v), by_pid_order);
	return v;
}

static uint64_t timespec_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Is the process of this record still alive: its pid is taken by a live process that started
 * before the record was made (a later one reused the pid)? /proc counts from boot, suspends
 * included; the record's clock is CLOCK_MONOTONIC. */
static bool still_running(const struct uffd_stats *st)
{
	unsigned long long start;
	long tck = sysconf(_SC_CLK_TCK);
	uint64_t tick, offset;
	char state;

	if (st->pid <= 0 || tck <= 0 || tmpdir_proc_start(st->pid, &start, &state) < 0 ||
	    state == 'Z' || state == 'X')
		return false;
	tick = 1000000000ULL / (uint64_t)tck;
	offset = timespec_ns(CLOCK_BOOTTIME) - timespec_ns(CLOCK_MONOTONIC);
	return start * tick <= st->start_mono_ns + offset + tick;
}

/* One process being gathered: its programs' records merged as the total merges them. */
struct proc_acc {
	struct uffd_stats *acc;
	unsigned programs; /* records merged so far (0: none open) */
	int32_t first_ppid;
	char first_comm[16];
};

static void proc_open(struct proc_acc *pa, int32_t ppid, const char *comm)
{
	memset(pa->acc, 0, sizeof(*pa->acc));
	obs_faults_init(&pa->acc->faults);
	pa->programs = 0;
	pa->first_ppid = ppid;
	snprintf(pa->first_comm, sizeof(pa->first_comm), "%.*s", (int)sizeof(pa->first_comm) - 1,
		 comm);
}

/* Add one program's record (its counters unless it ran unmanaged: the total leaves those out
 * too, so the processes' faults add up to the total's). */
static void proc_add(struct proc_acc *pa, const struct uffd_stats *st)
{
	struct uffd_stats *a = pa->acc;

	if (st->state != UFFD_PROC_UNMANAGED)
		uffd_stats_merge(a, st);
	a->pid = st->pid;
	a->start_mono_ns = st->start_mono_ns;
	memcpy(a->exe, st->exe, sizeof(a->exe));
	memcpy(a->comm, st->comm, sizeof(a->comm));
	memcpy(a->cmdline, st->cmdline, sizeof(a->cmdline));
	pa->programs++;
}

/* The process's summary, its last program's record in state (or EXECED: none came after);
 * note: why it ran unmanaged, when it did. */
static void proc_close(const struct run_ctx *rc, struct proc_acc *pa, uint32_t state,
		       const char *note, struct uffd_proc_list *procs)
{
	struct uffd_proc_summary p;

	uffd_proc_summarise(&p, pa->acc);
	p.ppid = pa->first_ppid;
	p.execs = pa->programs - 1;
	if (p.execs)
		memcpy(p.exec_from, pa->first_comm, sizeof(p.exec_from));
	if (note && note[0])
		snprintf(p.note, sizeof(p.note), "%.*s", (int)sizeof(p.note) - 1, note);
	if (state == UFFD_PROC_EXITED)
		p.end = UFFD_END_exited;
	else if (state == UFFD_PROC_UNMANAGED)
		p.end = UFFD_END_unmanaged;
	else if (state == UFFD_PROC_EXECED)
		p.end = UFFD_END_exec_unseen;
	else if (p.pid == rc->child && rc->child_status >= 0 && WIFSIGNALED(rc->child_status)) {
		p.end = UFFD_END_killed;
		p.signal = WTERMSIG(rc->child_status);
	} else
		p.end = still_running(pa->acc) ? UFFD_END_running : UFFD_END_no_clean_exit;
	uffd_procs_add(procs, &p);
	pa->programs = 0;
}

/* A program the emulator did not manage to its end, for the summary and the report. */
static void add_aside(struct run_ctx *rc, int pid, const char *comm, bool stepped, const char *why)
{
	struct uffd_aside *a;

	if (rc->naside == UFFD_ASIDE_MAX)
		return;
	a = &rc->aside[rc->naside++];
	a->pid = pid;
	a->stepped_aside = stepped;
	snprintf(a->comm, sizeof(a->comm), "%.15s", comm);
	snprintf(a->why, sizeof(a->why), "%.*s", (int)sizeof(a->why) - 1,
		 why && why[0] ? why : "(no reason recorded)");
}

/* Merge one record into the total; note what is not managed, and outputs that failed. */
static void merge_total(struct run_ctx *rc, const struct uffd_stats *st, struct uffd_stats *total,
			struct uffd_program_info *prog)
{
	const char *note = st->note[0] ? st->note + 1 : "";

	if (st->output_error[0]) { /* its trace or THPEMU_REPORT: said once, here */
		prog_error("run", "%s", st->output_error);
		rc->output_failed = true;
	}
	if (st->host.stepped_aside) {
		prog->stepped_aside++;
		add_aside(rc, st->pid, st->comm, true, note);
	}
	if (st->state == UFFD_PROC_EXECED) {
		/* the same process before it exec'd: its work counts, it does not */
		uffd_stats_merge(total, st);
		if (!total->note[0])
			memcpy(total->note, st->note, sizeof(total->note));
	} else if (st->state == UFFD_PROC_UNMANAGED) {
		prog->unmanaged++;
		add_aside(rc, st->pid, st->comm, false, note);
		if (!total->note[0])
			memcpy(total->note, st->note, sizeof(total->note));
	} else {
		prog->processes++;
		prog->no_clean_exit += st->state != UFFD_PROC_EXITED;
		uffd_stats_merge(total, st);
	}
}

/* Did the program thpemu run started end in an image that left no record (last: its last
 * record, or NULL)? Why, or NULL. Known for that process only: it is the one thpemu run sees
 * as it ends (run_proc.c reads the zombie's name and ids). */
static const char *child_unseen(struct run_ctx *rc, const struct uffd_stats *last)
{
	const struct run_proc *p = &rc->proc;
	unsigned me = (unsigned)geteuid();

	if (last && (last->state == UFFD_PROC_EXITED || last->state == UFFD_PROC_UNMANAGED))
		return NULL; /* its last program wrote it */
	if (!last && rc->is_static)
		snprintf(rc->unseen_why, sizeof(rc->unseen_why),
			 "static binary: LD_PRELOAD cannot load thpemu");
	else if (p->ended_seen && (p->ended_uid != me || p->ended_euid != me))
		snprintf(rc->unseen_why, sizeof(rc->unseen_why),
			 "its last program, %s, ran as uid %u, which cannot write the statistics "
			 "of thpemu run (uid %u): not seen, counted unmanaged",
			 prog_esc(p->ended_comm), p->ended_euid, me);
	else if (!last && rc->child > 0)
		snprintf(rc->unseen_why, sizeof(rc->unseen_why),
			 "it left no record: LD_PRELOAD did not load thpemu (a static or "
			 "set-user-ID program, or LD_PRELOAD removed)");
	else
		return NULL;
	return rc->unseen_why;
}

/* The program's process, whose last image left no record: counted unmanaged, with why; its
 * earlier programs' records (pa, if any) are merged in as those of a process that exec'd. */
static void close_unseen(struct run_ctx *rc, struct proc_acc *pa, const char *why,
			 struct uffd_proc_list *procs, struct uffd_program_info *prog)
{
	const char *comm = rc->proc.ended_comm[0] ? rc->proc.ended_comm : "?";

	if (!pa->programs) { /* no program of it left a record: what thpemu run ran */
		size_t k = 0;

		proc_open(pa, getpid(), comm);
		pa->acc->pid = rc->child;
		for (char **a = rc->cmd; *a && k + 1 < sizeof(pa->acc->cmdline); a++)
			k += (size_t)snprintf(pa->acc->cmdline + k, sizeof(pa->acc->cmdline) - k,
					      "%s%s", k ? " " : "", *a);
	}
	pa->programs++;
	snprintf(pa->acc->comm, sizeof(pa->acc->comm), "%.15s", comm);
	prog->unmanaged++;
	add_aside(rc, rc->child, comm, false, why);
	proc_close(rc, pa, UFFD_PROC_UNMANAGED, why, procs);
}

/* Merge every DIR/PID.stats into the total and summarise each process (a pid's programs in
 * exec order: the records of one pid up to one not EXECED are one process); unlink them. */
static void collect(struct run_ctx *rc, struct uffd_stats *total, struct uffd_program_info *prog,
		    struct uffd_proc_list *procs)
{
	struct uffd_stats *st = calloc(1, sizeof(*st));
	struct proc_acc pa = {.acc = calloc(1, sizeof(*pa.acc))};
	char path[PATH_MAX + 300];
	const char *unseen = NULL;
	bool child_seen = false;
	size_t n;
	struct stats_file *files = list_stats(rc->run_dir, &n);

	memset(total, 0, sizeof(*total));
	obs_faults_init(&total->faults);
	for (size_t i = 0; st && pa.acc && i < n; i++) {
		bool last = i + 1 == n || files[i + 1].pid != files[i].pid;

		snprintf(path, sizeof(path), "%s/%s", rc->run_dir, files[i].name);
		if (uffd_stats_read(path, st) == 0) {
			child_seen |= st->pid == rc->child;
			if (last && st->pid == rc->child && (unseen = child_unseen(rc, st)))
				st->state = UFFD_PROC_EXECED; /* it exec'd the unseen one */
			merge_total(rc, st, total, prog);
			if (!pa.programs)
				proc_open(&pa, st->ppid, st->comm);
			proc_add(&pa, st);
			if (st->state != UFFD_PROC_EXECED)
				proc_close(rc, &pa, st->state, st->note[0] ? st->note + 1 : "",
					   procs);
		}
		unlink(path);
		if (pa.programs && last && unseen)
			close_unseen(rc, &pa, unseen, procs, prog);
		/* a pid whose last record is EXECED exec'd a program that left none */
		else if (pa.programs && last)
			proc_close(rc, &pa, UFFD_PROC_EXECED, NULL, procs);
		unseen = NULL;
	}
	if (st && pa.acc && !child_seen && (unseen = child_unseen(rc, NULL)))
		close_unseen(rc, &pa, unseen, procs, prog);
	uffd_procs_finish(procs);
	prog->aside = rc->aside;
	prog->naside = rc->naside;
	free(files);
	free(pa.acc);
	free(st);
	rmdir(rc->run_dir);
}

/* The 2011-format stall report: to --stall-report FILE, else to stderr when there are events. */
static void write_stall_report(struct run_ctx *rc)
{
	const struct run_stalls *s = &rc->stalls;
	FILE *f;

	if (rc->stall_out) {
		f = cli_output_stream(rc->stall_out);
		if (s->text)
			fwrite(s->text, 1, s->text_len, f);
		else
			fprintf(f, "No stall report: no managed process wrote one.\n");
		if (cli_output_close(rc->stall_out) < 0)
			rc->output_failed = true;
		rc->stall_out = NULL;
	} else if (!rc->quiet && (s->events || s->wait_events) && s->text) {
		fputc('\n', stderr);
		fwrite(s->text, 1, s->text_len, stderr);
	}
}

static void write_report(struct run_ctx *rc, const struct uffd_stats *total,
			 struct uffd_program_info *prog)
{
	char *dev_json = run_device_json(&rc->dev);

	prog->stalls_json = rc->stalls.json;
	prog->device_json = dev_json;
	if (!rc->quiet)
		uffd_report_summary(stderr, total, prog);
	write_stall_report(rc);
	if (rc->report_out &&
	    uffd_report_json(cli_output_stream(rc->report_out), &rc->cfg, total, prog) < 0) {
		prog_error("run", "--report: '%s': the report could not be made (out of memory)",
			   rc->report);
		cli_output_discard(rc->report_out);
		rc->output_failed = true;
	} else if (rc->report_out && cli_output_close(rc->report_out) < 0) {
		rc->output_failed = true;
	}
	rc->report_out = NULL;
	free(dev_json);
}

/* The configuration the program's processes will read (the environment is how they get it):
 * the options given, as parsed, and for the others what thpemu run inherited. The machine is
 * made from it, never from the environment read back. A value the processes will refuse leaves
 * them unmanaged (each says so in one line) and the run without a machine, as without thpemu
 * run; a policy plugin they would load is checked like one given. */
static void procs_config(struct run_ctx *rc)
{
	char err[700];

	rc->procs_cfg = rc->cfg;
	rc->procs_cfg_ok =
	    config_inherit(&rc->procs_cfg, rc->given, rc->inherited, err, sizeof(err)) == 0;
	if (rc->procs_cfg_ok && strcmp(config_plugin(&rc->procs_cfg), config_plugin(&rc->cfg)) &&
	    cli_check_plugin(rc->procs_cfg.policy.plugin[0] ? "THPEMU_POLICY"
							    : "THPEMU_POLICY_PLUGIN",
			     config_plugin(&rc->procs_cfg), err, sizeof(err)) < 0)
		prog_usage_error("run", "%s", err);
}

/* One machine for the whole program tree (host.h), configured as the processes will read it,
 * the device included (run_device_config). Without it (it could not be made) every process
 * makes a pool of its own, as before. */
static bool start_host(struct run_ctx *rc)
{
	struct config hc = rc->procs_cfg;
	char err[700];

	if (!rc->procs_cfg_ok || hc.disable ||
	    run_device_config(&rc->dev, &hc, err, sizeof(err)) < 0)
		return false;
	if (run_host_start(&rc->host, &hc, err, sizeof(err)) < 0) {
		if (!rc->quiet)
			fprintf(stderr,
				"thpemu run: no shared machine (%s): each process gets a "
				"pool of its own\n",
				err);
		return false;
	}
	return true;
}

/* After the program (its io stopped before the device went): the machine's counters are the run's
 * (each process's copy of them is a snapshot of the same machine), and the machine checks its
 * books. */
static void stop_host(struct run_ctx *rc, struct uffd_stats *total, struct uffd_program_info *prog)
{
	struct run_host *h = &rc->host;
	char why[300] = "";
	struct json_w w;
	int bad;

	run_host_stats(h, total->vmstat, &total->counts, &total->io);
	/* the per-size mTHP counters too: each process's sum would count the machine's N times */
	obs_mthp_snapshot(&total->mthp, mm_policy(h->mm), h->mm);
	run_host_mem_peak(h, &total->mem); /* the processes that lived at once */
	bad = run_host_check(h, why, sizeof(why));
	if (jw_mem_open(&w, JW_LINE) == 0) { /* one line in the report, as "writers" */
		jw_obj_begin(&w, NULL);
		jw_bool(&w, "shared", true);
		jw_u64(&w, "processes_reaped", h->reaped);
		jw_u64(&w, "frames_returned", h->frames_back);
		jw_u64(&w, "repairs", h->m.hdr->repairs);
		jw_str(&w, "check", bad < 0 ? "failed" : bad > 0 ? "skipped" : "ok");
		run_host_writers_json(&w, "writers", &h->m.hdr->writers);
		jw_obj_end(&w);
		rc->machine_json = jw_mem_close(&w);
	}
	prog->machine_json = rc->machine_json;
	if (bad < 0 && !total->note[0])
		snprintf(total->note, sizeof(total->note), " machine check failed: %.200s", why);
	run_host_destroy(h);
}

static int run_main(int argc, char **argv)
{
	struct run_ctx rc = {
	    .child = -1,
	    .child_status = -1,
	    .dev = {.pid = -1, .status = -1, .child_setup = run_proc_child_signals}};
	struct uffd_program_info prog = {0};
	struct uffd_proc_list procs;
	struct uffd_stats *total;
	char err[1024];
	uint64_t t0;
	int status;

	config_defaults(&rc.cfg);
	config_env_save(rc.inherited); /* before parse puts the options there */
	parse(argc, argv, &rc);
	if (cli_run_check_config(&rc.cfg, NULL, err, sizeof(err)) < 0)
		prog_usage_error("run", "%s", err);
	procs_config(&rc);
	check_managed(&rc);
	open_outputs(&rc);
	run_proc_init(&rc.proc); /* before any thread: they inherit its blocked signals */
	if (make_run_dir(&rc) < 0)
		return 1;
	rc.dev.parent = rc.run_dir;
	run_device_start(&rc.dev, rc.cfg.seed, rc.quiet);
	if (set_preload(&rc) < 0) {
		run_device_stop(&rc.dev);
		tmpdir_rmtree(rc.run_dir);
		return 1;
	}
	rc.hosting = !rc.machine && start_host(&rc);
	if (rc.hosting) {
		run_device_join(&rc.dev, getenv("THPEMU_MACHINE"), rc.quiet);
		run_host_spares(&rc.host, rc.run_dir); /* the device's slot is the machine's own */
		run_host_coverage_start(&rc.host);     /* from the program's start */
	}
	if (rc.is_static && !rc.quiet)
		fprintf(stderr,
			"thpemu run: %s is a static binary: LD_PRELOAD cannot load thpemu; it runs "
			"unmanaged\n",
			prog_esc(rc.cmd[0]));
	t0 = clock_now_ns();
	prog.start_mono_s = (double)t0 / 1e9;
	status = run_child(&rc);
	prog.wall_s = (double)(clock_now_ns() - t0) / 1e9;
	if (rc.hosting) {
		run_host_coverage(&rc.host, &rc.cov);
		prog.coverage = &rc.cov;
	}
	if (rc.hosting) /* its writeback ends while the device is still there */
		run_host_stop(&rc.host, 1000000000ULL);
	run_device_stop(&rc.dev);
	prog.argv = rc.cmd;
	prog.exit_status = status;
	prog.policy_spec = rc.cfg.policy_spec;
	total = calloc(1, sizeof(*total));
	if (!total || uffd_procs_init(&procs, 0) < 0) {
		tmpdir_rmtree(rc.run_dir);
		free(total);
		return status < 0 ? 1 : status;
	}
	collect(&rc, total, &prog, &procs);
	prog.procs = &procs;
	run_stalls_collect(rc.run_dir, &rc.stalls, &procs); /* whose stalls: pid and comm */
	if (rc.hosting)
		stop_host(&rc, total, &prog);
	if (rc.machine) { /* the figures of the machine, which other programs share */
		named_run_stats(rc.machine, total, &rc.machine_json);
		prog.machine_json = rc.machine_json;
	}
	tmpdir_rmtree(rc.run_dir); /* what collect did not take: the owner record, stray files */
	if (!prog.processes && !rc.naside && !total->note[0])
		snprintf(total->note, sizeof(total->note),
			 " no process was managed (a static or setuid binary ignores LD_PRELOAD)");
	write_report(&rc, total, &prog);
	free(total);
	free(rc.machine_json);
	uffd_procs_free(&procs);
	run_stalls_free(&rc.stalls);
	free(rc.dev.stats_json);
	if (rc.output_failed) /* said in one line each */
		return 1;
	if (rc.require_managed && prog.unmanaged + prog.stepped_aside) {
		say_unmanaged(&rc, &prog);
		return RUN_EXIT_UNMANAGED;
	}
	if (status >= 0)
		run_proc_die_like(rc.child_status); /* killed: thpemu run ends the same way */
	return status < 0 ? 1 : status;
}

CLI_COMMAND(run, "run", "run a program under the live emulator and report its faults", run_main)

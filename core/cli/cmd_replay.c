/* thpemu replay: act a fault trace out live, under the emulator and any policy.
 *
 *   thpemu replay [RUN-OPTIONS] [--speed F] TRACE
 *
 * becomes `thpemu run [RUN-OPTIONS] -- thpemu-replayer TRACE [--speed F]`, with the recording's
 * --policy, --pool, --fragment and --seed unless given, --allocator none (the replayer's own
 * heap is not part of the workload) and the recording's zero pages: --zero-page 1 when it mapped
 * them (a version 2 trace with zero_page=1: its zero decisions and first writes are records), else
 * --zero-page 0 (a version 1 trace, or a run with --zero-page 0, decided reads as writes). The
 * replayer
 * (core/replayer/replayer.c) maps, touches, frees and advises exactly what the recorded process
 * did, at the recorded times, from one thread per recorded thread; so two policies can be run live
 * on an identical fault sequence. Options are checked by `thpemu run`, which reports them as its
 * own.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "obs/trace.h"

#define CMD	 "replay"
#define MAX_ARGS 128
#define MAX_OUT	 16

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: thpemu replay [RUN-OPTIONS] [--speed F] TRACE\n\n"
	    "Replays a fault trace (thpemu run --trace FILE) live: a small replayer process\n"
	    "maps, touches, frees and advises the same memory at the same relative times, one\n"
	    "thread per recorded thread, under the emulator with the options given. Without\n"
	    "them the recording's --policy, --pool, --fragment and --seed are used, so\n"
	    "  thpemu replay --policy linux-3.3 app.trace\n"
	    "runs the identical fault sequence under another kernel. A recorded huge fault\n"
	    "stands for a touch of its whole 2 MiB extent. Zero pages are as recorded: on\n"
	    "(--zero-page 1) for a recording that mapped them, off for one that did not (a\n"
	    "trace of thpemu before trace format 2); --zero-page overrides.\n\n"
	    "  --speed F       replay F times faster than recorded (default 1)\n"
	    "  RUN-OPTIONS     any option of 'thpemu run' (--policy, --report, --device, ...)\n\n"
	    "Exit status: the replayer's (0; 1 if the trace cannot be replayed), 2 for a bad "
	    "option.\n");
}

struct replay_args {
	const char *trace, *speed;
	char *run[MAX_ARGS + 2];
	int nrun;
	bool has_policy, has_pool, has_fragment, has_seed, has_allocator, has_zero_page, quiet;
	const char *out_opt[MAX_OUT], *out[MAX_OUT]; /* run's output options given */
	int nout;
};

static void push(struct replay_args *a, const char *s)
{
	if (a->nrun + 1 >= MAX_ARGS)
		prog_usage_error(CMD, "too many options (at most %d)", MAX_ARGS / 2);
	a->run[a->nrun++] = (char *)s;
}

static void note_given(struct replay_args *a, const char *name)
{
	a->has_policy |= !strcmp(name, "--policy");
	a->has_pool |= !strcmp(name, "--pool");
	a->has_fragment |= !strcmp(name, "--fragment");
	a->has_seed |= !strcmp(name, "--seed");
	a->has_allocator |= !strcmp(name, "--allocator");
	a->has_zero_page |= !strcmp(name, "--zero-page");
}

/* The replayer's rule (replayer.c), checked here: a bad value is refused before anything runs. */
static void check_speed(const char *v)
{
	char *end;
	double f = strtod(v, &end);

	if (end == v || *end || !(f > 0) || f > 1e6)
		prog_usage_error(
		    CMD,
		    "--speed: '%s' is not accepted (a positive number up to 1000000, e.g. "
		    "0.5 or 10)",
		    v);
}

/* thpemu run's output options, to be kept apart from the trace read. */
static void note_output(struct replay_args *a, const char *name, const char *val)
{
	static const char *const outs[] = {"--report", "--stall-report", "--trace"};

	for (size_t k = 0; k < sizeof(outs) / sizeof(outs[0]); k++)
		if (!strcmp(name, outs[k]) && a->nout < MAX_OUT) {
			a->out_opt[a->nout] = outs[k];
			a->out[a->nout++] = val;
		}
}

static void parse(int argc, char **argv, struct replay_args *a)
{
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *eq = strchr(arg, '=');
		char name[64];

		if (!strcmp(arg, "--"))
			continue;
		if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			usage(stdout);
			exit(0);
		}
		if (arg[0] != '-') {
			if (a->trace)
				prog_usage_error(CMD, "one trace only ('%s' and '%s')", a->trace,
						 arg);
			a->trace = arg;
			continue;
		}
		snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
		if (!strcmp(name, "--speed")) {
			if (!eq && i + 1 >= argc)
				prog_usage_error(CMD, "--speed needs a value");
			a->speed = eq ? eq + 1 : argv[++i];
			check_speed(a->speed);
			continue;
		}
		note_given(a, name);
		a->quiet |= !strcmp(name, "--quiet");
		push(a, arg);
		if (!eq && cli_run_opt_takes_value(name)) {
			if (i + 1 >= argc)
				prog_usage_error(CMD, "%s needs a value", name);
			push(a, argv[++i]);
		}
		note_output(a, name, eq ? eq + 1 : a->run[a->nrun - 1]);
	}
	if (!a->trace)
		prog_usage_error(CMD, "no trace given (usage: thpemu replay [RUN-OPTIONS] TRACE)");
	for (int k = 0; k < a->nout; k++) /* run would truncate the trace before it is read */
		cli_distinct_paths(CMD, a->out_opt[k], a->out[k], "the trace to replay", a->trace);
}

/* "--key" "value" from the trace's header unless the user gave the option. */
static void from_header(struct replay_args *a, const struct obs_trace *t, bool given,
			const char *opt, const char *key)
{
	char v[512];

	if (given || !obs_trace_get(t, key, v, sizeof(v)) || !v[0])
		return;
	push(a, opt);
	push(a, strdup(v));
}

static int replay_main(int argc, char **argv)
{
	struct replay_args a = {0};
	char self[PATH_MAX], replayer[PATH_MAX], err[600];
	struct obs_trace t;

	parse(argc, argv, &a);
	if (obs_trace_load_header(a.trace, &t, err, sizeof(err)) < 0)
		prog_usage_error(CMD, "%s", err);
	snprintf(self, sizeof(self), "%s/thpemu", prog_self_dir());
	snprintf(replayer, sizeof(replayer), "%s/thpemu-replayer", prog_self_dir());
	if (access(replayer, X_OK) < 0) {
		prog_error(CMD, "cannot find %s: %s", replayer, strerror(errno));
		return 1;
	}
	{
		struct replay_args b = a; /* the run options first, the defaults after */

		a.nrun = 0;
		push(&a, "run");
		from_header(&a, &t, b.has_policy, "--policy", "policy");
		from_header(&a, &t, b.has_pool, "--pool", "pool_bytes");
		from_header(&a, &t, b.has_fragment, "--fragment", "fragment");
		from_header(&a, &t, b.has_seed, "--seed", "seed");
		if (!b.has_allocator) {
			push(&a, "--allocator");
			push(&a, "none");
		}
		if (!b.has_zero_page) {
			push(&a, "--zero-page");
			push(&a, obs_trace_zero_pages(&t) ? "1" : "0");
		}
		for (int i = 0; i < b.nrun; i++)
			push(&a, b.run[i]);
	}
	obs_trace_free(&t);
	push(&a, "--");
	push(&a, replayer);
	push(&a, a.trace);
	if (a.quiet)
		push(&a, "--quiet");
	if (a.speed) {
		push(&a, "--speed");
		push(&a, a.speed);
	}
	memmove(&a.run[1], &a.run[0], (size_t)a.nrun * sizeof(a.run[0]));
	a.run[0] = self;
	a.run[a.nrun + 1] = NULL;
	fflush(NULL);
	execv(self, a.run);
	prog_error(CMD, "cannot execute %s: %s", self, strerror(errno));
	return 1;
}

CLI_COMMAND(replay, "replay", "replay a fault trace live under any policy (thpemu run --trace)",
	    replay_main)

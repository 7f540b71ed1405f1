/* thpemu machine: named machines that programs attach to (named.h, machined.c).
 *
 *   thpemu machine start NAME [OPTIONS]   start the daemon; returns once the machine is ready
 *   thpemu machine status NAME [--json]   its live counters and processes
 *   thpemu machine stop NAME              stop it (attached processes step aside), write the
 *                                         report
 *
 * start takes the options of `thpemu run` that configure a machine (from core/config's table:
 * what every process of the machine shares) and validates them all, as run does, before anything
 * starts; the daemon's host is made from them as parsed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "host/named.h"
#include "config/config.h"

#define STATUS_TIMEOUT_MS 5000
#define STOP_TIMEOUT_MS	  60000

/* What a machine is made of; the rest of run's options are per process. */
static const enum config_id machine_keys[] = {CONFIG_POLICY,	      CONFIG_FS,       CONFIG_POOL,
					      CONFIG_STALL_THRESHOLD, CONFIG_FRAGMENT, CONFIG_SEED,
					      CONFIG_DEVICE,	      CONFIG_DIRTY};

static bool is_machine_opt(const struct config_opt *o)
{
	for (size_t i = 0; i < sizeof(machine_keys) / sizeof(machine_keys[0]); i++)
		if (o == &config_opts[machine_keys[i]])
			return true;
	return false;
}

static void usage(FILE *f)
{
	char lhs[64];

	fprintf(f,
		"usage: thpemu machine start NAME [OPTIONS]\n"
		"       thpemu machine status NAME [--json]\n"
		"       thpemu machine stop NAME\n\n"
		"A named machine: one emulated machine (pool, page cache, writeback, kernel "
		"threads)\nthat programs started with 'thpemu run --machine NAME -- CMD' attach "
		"to, at the same\ntime or one after another. It stays until stopped, even with "
		"no process attached.\nstop detaches the processes still attached: they go on "
		"unmanaged, their data intact.\nA machine is private to the user who started "
		"it. NAME: 1 to %d of %s.\n\nstart options:\n",
		NAMED_NAME_MAX, NAMED_NAME_CHARS);
	fprintf(f, "  %-24s %s\n", "--report FILE",
		"write the machine's JSON report there at stop");
	fprintf(f, "  %-24s %s\n", "--quiet", "no message about the device on stderr");
	for (size_t i = 0; i < sizeof(machine_keys) / sizeof(machine_keys[0]); i++) {
		const struct config_opt *o = &config_opts[machine_keys[i]];

		snprintf(lhs, sizeof(lhs), "%s %s", o->cli, o->metavar);
		fprintf(f, "  %-24s %s [%s]\n", lhs, o->help, o->def[0] ? o->def : "none");
	}
	fprintf(f, "\nstart prints 'machine NAME started (pid N)' once it is ready. Policies, "
		   "devices\nand the dirtier: see 'thpemu run --help'.\n\nExit status: 0 done; 2 a "
		   "bad option or name, no such machine, a name already\nrunning or held by "
		   "another user's process; 1 thpemu failed.\n");
}

static const char *machine_name(int argc, char **argv, const char *sub)
{
	if (argc < 3)
		prog_usage_error("machine", "%s needs a machine NAME (see 'thpemu machine --help')",
				 sub);
	if (argv[2][0] == '-') /* an option where the NAME goes: never a name */
		prog_usage_error("machine", "%s: unknown option '%s' (see 'thpemu machine --help')",
				 sub, argv[2]);
	if (!named_valid(argv[2]))
		prog_usage_error("machine", "'%s' is not a machine name (1 to %d of %s)", argv[2],
				 NAMED_NAME_MAX, NAMED_NAME_CHARS);
	return argv[2];
}

static void no_machine(const char *name)
{
	prog_usage_error("machine", "no machine %s (start it with thpemu machine start %s)", name,
			 name);
}

/* ---- start ------------------------------------------------------------------------------------
 */

static const char *opt_value(int argc, char **argv, int *i, const char *eq, const char *name)
{
	if (eq)
		return eq + 1;
	if (*i + 1 >= argc)
		prog_usage_error("machine", "%s needs a value", name);
	return argv[++*i];
}

static void parse_start(int argc, char **argv, struct named_daemon_opts *o, struct config *cfg,
			const char *given[CONFIG_NR])
{
	char err[512], name[64];

	for (int i = 3; i < argc; i++) {
		const char *a = argv[i], *eq = strchr(a, '=');
		const struct config_opt *uo;

		snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - a) : (int)strlen(a), a);
		if (!strcmp(name, "--quiet") && !eq) {
			o->quiet = true;
		} else if (!strcmp(name, "--report")) {
			o->report = opt_value(argc, argv, &i, eq, name);
		} else if ((uo = config_opt_by_cli(name)) && is_machine_opt(uo)) {
			const char *v = opt_value(argc, argv, &i, eq, name);

			if (config_opt_parse(uo, name, v, cfg, err, sizeof(err)) < 0)
				prog_usage_error("machine", "%s", err);
			/* a snapshot's path as resolved (absolute): the daemon runs in / */
			setenv(uo->env, uo == &config_opts[CONFIG_FRAGMENT] ? cfg->fragment : v, 1);
			given[uo - config_opts] = v;
			if (uo == &config_opts[CONFIG_DEVICE]) {
				o->device_spec = v;
				o->device = cfg->device;
			}
		} else if (uo) {
			prog_usage_error("machine",
					 "%s is an option of each program (thpemu run --machine "
					 "NAME %s ...), not of a machine",
					 name, name);
		} else {
			prog_usage_error("machine",
					 "unknown option '%s' (see 'thpemu machine --help')", a);
		}
	}
}

static int start_main(int argc, char **argv)
{
	struct named_daemon_opts o = {0};
	struct config cfg, mc;
	const char *given[CONFIG_NR] = {0};
	char *inherited[CONFIG_NR], err[1024];
	int pid = 0, rc;

	o.name = machine_name(argc, argv, "start");
	config_defaults(&cfg);
	config_env_save(inherited);
	parse_start(argc, argv, &o, &cfg, given);
	if (cli_run_check_config(&cfg, NULL, err, sizeof(err)) < 0)
		prog_usage_error("machine", "%s", err);
	/* the machine's host as its processes are configured: what they inherit completes it */
	mc = cfg;
	if (config_inherit(&mc, given, inherited, err, sizeof(err)) < 0) {
		prog_error("machine", "machine %s could not start: %s", o.name, err);
		return 1;
	}
	if (o.report)
		o.report_f = cli_open_output("machine", "--report", o.report);
	o.seed = cfg.seed;
	o.cfg = &mc;
	rc = named_daemon_start(&o, &pid, err, sizeof(err));
	if (rc == -EEXIST && pid > 0)
		prog_usage_error("machine", "machine %s is running (pid %d)", o.name, pid);
	if (rc == -EEXIST)
		prog_usage_error(
		    "machine",
		    "machine %s: its name is taken by a process that does not answer as "
		    "a machine's daemon",
		    o.name);
	if (rc == -EPERM)
		prog_usage_error("machine", "machine %s: %s; cannot start it", o.name, err);
	if (rc < 0) {
		prog_error("machine", "machine %s could not start: %s", o.name, err);
		return 1;
	}
	printf("machine %s started (pid %d)\n", o.name, pid);
	return 0;
}

/* ---- status, stop -----------------------------------------------------------------------------
 */

/* Ask the machine; exits 2 if there is none or another user holds its name, 1 on any other
 * failure. */
static char *ask(const char *name, const char *req, int timeout_ms)
{
	char *body = NULL, err[512];
	size_t len;
	int rc = named_request(name, req, timeout_ms, &body, &len, NULL, err, sizeof(err));

	if (rc == -ENOENT)
		no_machine(name);
	if (rc == -EPERM)
		prog_usage_error("machine", "machine %s: %s; refusing it", name, err);
	if (rc < 0) {
		prog_error("machine", "machine %s: %s", name, err);
		exit(1);
	}
	return body;
}

static int status_main(int argc, char **argv)
{
	const char *name = machine_name(argc, argv, "status");
	bool json = false;
	char *body;

	for (int i = 3; i < argc; i++) {
		if (strcmp(argv[i], "--json") != 0)
			prog_usage_error("machine",
					 "status: unknown option '%s' (accepted: --json)", argv[i]);
		json = true;
	}
	body = ask(name, json ? "status json" : "status", STATUS_TIMEOUT_MS);
	fputs(body, stdout);
	if (json)
		fputc('\n', stdout);
	free(body);
	return 0;
}

static int stop_main(int argc, char **argv)
{
	const char *name = machine_name(argc, argv, "stop");
	char *body, *rep, *left;

	if (argc > 3)
		prog_usage_error("machine", "stop takes no option (given '%s')", argv[3]);
	body = ask(name, "stop", STOP_TIMEOUT_MS);
	rep = strstr(body, "report=");
	left = strstr(body, "processes_left=");
	if (rep)
		rep[strcspn(rep, "\n")] = '\0';
	printf("machine %s stopped%s%s\n", name, rep && rep[7] ? ", report " : "",
	       rep && rep[7] ? rep + 7 : "");
	if (left && atoi(left + 15) > 0)
		fprintf(stderr, "thpemu machine: %d process(es) did not step aside in time\n",
			atoi(left + 15));
	free(body);
	return 0;
}

static int machine_main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (argc >= 3 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "start"))
		return start_main(argc, argv);
	if (!strcmp(argv[1], "status"))
		return status_main(argc, argv);
	if (!strcmp(argv[1], "stop"))
		return stop_main(argc, argv);
	prog_usage_error("machine", "unknown subcommand '%s' (accepted: start, status, stop)",
			 argv[1]);
}

CLI_COMMAND(machine, "machine", "start, inspect and stop named machines programs attach to",
	    machine_main)

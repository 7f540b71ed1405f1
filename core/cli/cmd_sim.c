/* thpemu sim: run a built-in scenario against the emulated kernel in virtual time.
 *
 * Usage errors (a bad policy, scenario, size, duration, device or cost file) print one line
 * naming the option and the accepted values and exit 2; a run that cannot write its report
 * exits 1. The options sim shares with `thpemu run` (--policy, --policy-plugin, --fs, --pool,
 * --stall-threshold, --seed, --device, --zero-page) are parsed by core/config's table, as run's
 * are, and the parsed policy is what the simulator gets.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "config/config.h"
#include "sim/sim.h"
#include "snapshot/snapshot.h"
#include "util/units.h"

#define CMD	 "sim"
#define MAX_OPTS 64

/* The options sim shares with `thpemu run`, parsed by core/config's table as run parses them:
 * the same values accepted, the same one-line errors, one policy parser. */
static const enum config_id sim_keys[] = {CONFIG_POLICY, CONFIG_POLICY_PLUGIN,	 CONFIG_FS,
					  CONFIG_POOL,	 CONFIG_STALL_THRESHOLD, CONFIG_SEED,
					  CONFIG_DEVICE, CONFIG_ZERO_PAGE};

struct sim_args {
	struct config cfg;	      /* sim_keys, parsed */
	const char *given[CONFIG_NR]; /* ... as given, by id (NULL: not given) */
	const char *scenario, *json, *costs, *replay;
	bool duration_set;
	const char *opts[MAX_OPTS];
	unsigned nopts;
};

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: thpemu sim --policy POLICY --scenario SCENARIO [--seed N] [--pool SIZE]\n"
	    "                  [--duration DUR] [--json FILE|-] [--costs FILE]\n"
	    "                  [--device PRESET[:KEY=VALUE,...]] [--fs vfat|ext4|tmpfs]\n"
	    "                  [--stall-threshold DUR] [--zero-page BOOL] [--opt KEY=VALUE]...\n"
	    "       thpemu sim --replay TRACE [--policy POLICY] [the options above]\n\n"
	    "Runs a scenario against the emulated kernel in virtual time: deterministic (the same\n"
	    "inputs and seed give byte-identical JSON) and much faster than real time.\n\n"
	    "  --policy POLICY        kernel profile or spec string (below)\n"
	    "  --policy-plugin FILE.so|NAME  THP policy plugin (thpemu_policy.h) choosing each\n"
	    "                         fault's orders when the policy names none with its key\n"
	    "                         plugin=PATH (env THPEMU_POLICY_PLUGIN); a NAME without '/'\n"
	    "                         is an installed plugin (e.g. mthp_under_frag)\n"
	    "  --scenario SCENARIO    built-in workload (below)\n"
	    "  --replay TRACE         replay a fault trace (thpemu run --trace) instead: the same\n"
	    "                         faults and memory changes at their recorded times, on the\n"
	    "                         recording's initial pool (its --pool, --fragment and --seed\n"
	    "                         unless given here; --policy defaults to the recording's);\n"
	    "                         the report's \"replay\" section compares the decisions\n"
	    "  --seed N               randomness of the scenario and the device (default 1)\n"
	    "  --pool SIZE            emulated memory, 8M..64G, as thpemu run (default: the "
	    "scenario's)\n"
	    "  --duration DUR         virtual time to simulate (default: the scenario's)\n"
	    "  --json FILE|-          write the JSON report (- for stdout; otherwise a human\n"
	    "                         summary goes to stdout)\n"
	    "  --costs FILE           calibration file: KEY=VALUE lines with the cost keys below\n"
	    "  --device SPEC          slow device for writeback (default %s, or the\n"
	    "                         scenario's): none or a preset with device-model keys, as\n"
	    "                         thpemu run's\n"
	    "  --fs vfat|ext4|tmpfs   file system of the device's files: the policy key fs\n"
	    "                         (default: the scenario's, else the policy's, vfat in every\n"
	    "                         profile; vfat has no ->migratepage, ext4 migrates dirty\n"
	    "                         pages and never writes them from reclaim)\n"
	    "  --stall-threshold DUR  faults at least this long are per-fault stalls, single "
	    "waits\n"
	    "                         (writeback, writeout, congestion nap) per-wait stall events\n"
	    "                         (default 1s)\n"
	    "  --zero-page BOOL       a read first touch maps the zero page where the kernel\n"
	    "                         does (the huge zero page where a THP could go, 6.x) and\n"
	    "                         takes no frame until written, as thpemu run's (default 1;\n"
	    "                         0: a read is decided as a write). The built-in scenarios\n"
	    "                         write before they read; a replay reads where the trace did,\n"
	    "                         with zero pages as recorded unless this is given\n"
	    "  --opt KEY=VALUE        a scenario parameter (below); init=snapshot:FILE starts\n"
	    "                         the pool from a snapshot (thpemu snapshot), the pool then\n"
	    "                         the snapshot's zone unless --pool is given\n\n",
	    SIM_DEFAULT_DEVICE);
	fprintf(f, "Policies:\n");
	policy_help(f);
	fprintf(f, "\nScenarios:\n");
	sim_scenarios_help(f);
	fprintf(f, "\nCost keys (--costs FILE; durations with a unit):\n");
	sim_costs_help(f);
	fprintf(f, "\nDevices (--device PRESET[:KEY=VALUE,...]):\n");
	devm_help(f);
}

static void scenario_names(char *buf, size_t len)
{
	const struct sim_scenario *const *s = sim_scenarios();
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned i = 0; s[i] && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "", s[i]->name);
}

/* "--key value" or "--key=value": the value of option `name` at argv[*i], or NULL. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
	const char *a = argv[*i];
	size_t n = strlen(name);

	if (strncmp(a, name, n) != 0)
		return NULL;
	if (a[n] == '=')
		return a + n + 1;
	if (a[n] != '\0')
		return NULL;
	if (*i + 1 >= argc)
		prog_usage_error(CMD, "%s needs a value (see 'thpemu sim --help')", name);
	return argv[++*i];
}

/* The pool's limits are the live emulator's (THPEMU_POOL in core/config/config.h, which are
 * core/mm's): one range for every command. */
static const struct config_opt *pool_opt(void)
{
	return &config_opts[CONFIG_POOL];
}

/* One of sim_keys by its option name, or NULL. */
static const struct config_opt *sim_key(const char *arg)
{
	size_t n = strcspn(arg, "=");

	for (size_t k = 0; k < sizeof(sim_keys) / sizeof(sim_keys[0]); k++) {
		const struct config_opt *o = &config_opts[sim_keys[k]];

		if (strlen(o->cli) == n && !strncmp(arg, o->cli, n))
			return o;
	}
	return NULL;
}

static void parse_key(struct sim_args *a, const struct config_opt *o, const char *name,
		      const char *v)
{
	char err[1024];

	if (config_opt_parse(o, name, v, &a->cfg, err, sizeof(err)) < 0)
		prog_usage_error(CMD, "%s", err);
	a->given[o - config_opts] = v;
}

static void parse_args(int argc, char **argv, struct sim_config *c, struct sim_args *a)
{
	const char *plugin = getenv("THPEMU_POLICY_PLUGIN"); /* as the library reads it */
	const struct config_opt *o;

	config_defaults(&a->cfg);
	if (plugin && *plugin)
		parse_key(a, &config_opts[CONFIG_POLICY_PLUGIN], NULL, plugin);
	for (int i = 1; i < argc; i++) {
		const char *v;
		uint64_t u;

		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			exit(0);
		}
		if ((o = sim_key(argv[i]))) {
			v = opt_value(argc, argv, &i, o->cli);
			parse_key(a, o, o->cli, v);
		} else if ((v = opt_value(argc, argv, &i, "--duration"))) {
			if (units_parse_duration(v, &u) || u == 0)
				prog_usage_error(CMD,
						 "--duration: bad duration '%s' (positive, with a "
						 "unit: 90s, 10m, 1h)",
						 v);
			c->duration_ns = u;
			a->duration_set = true;
		} else if ((v = opt_value(argc, argv, &i, "--scenario")))
			a->scenario = v;
		else if ((v = opt_value(argc, argv, &i, "--json")))
			a->json = v;
		else if ((v = opt_value(argc, argv, &i, "--costs")))
			a->costs = v;
		else if ((v = opt_value(argc, argv, &i, "--replay")))
			a->replay = v;
		else if ((v = opt_value(argc, argv, &i, "--opt"))) {
			if (a->nopts == MAX_OPTS)
				prog_usage_error(CMD, "--opt: at most %d", MAX_OPTS);
			a->opts[a->nopts++] = v;
		} else if (argv[i][0] != '-')
			prog_usage_error(
			    CMD,
			    "unexpected argument '%s' (sim takes options only; a trace "
			    "goes with --replay)",
			    argv[i]);
		else
			prog_usage_error(CMD, "unknown option '%s' (see 'thpemu sim --help')",
					 argv[i]);
	}
	if (a->json && strcmp(a->json, "-"))
		cli_check_output(CMD, "--json", a->json);
	cli_distinct_paths(CMD, "--json", a->json, "--replay", a->replay);
	cli_distinct_paths(CMD, "--json", a->json, "--costs", a->costs);
}

/* --replay: the trace, and its recording's settings as defaults (its policy parsed as if given
 * with --policy). */
static void resolve_replay(struct sim_config *c, struct sim_args *a)
{
	struct sim_replay_info in;
	char err[1024];
	unsigned keep = (a->given[CONFIG_SEED] ? SIM_REPLAY_KEEP_SEED : 0) |
			(a->duration_set ? SIM_REPLAY_KEEP_DURATION : 0) |
			(a->given[CONFIG_ZERO_PAGE] ? SIM_REPLAY_KEEP_ZERO_PAGE : 0);

	if (a->scenario)
		prog_usage_error(CMD,
				 "--replay and --scenario exclude each other (the trace is the "
				 "workload)");
	if (sim_replay_load(a->replay, &c->replay, err, sizeof(err)))
		prog_usage_error(CMD, "--replay: %s", err);
	sim_replay_info(c->replay, &in);
	if (!a->given[CONFIG_POLICY])
		parse_key(a, &config_opts[CONFIG_POLICY], "--policy",
			  strdup(in.policy[0] ? in.policy : "modern-always"));
	if (!a->given[CONFIG_POOL] && in.pool_bytes >= pool_opt()->min &&
	    in.pool_bytes <= pool_opt()->max)
		c->pool_bytes = in.pool_bytes;
	if (sim_replay_configure(c, keep, err, sizeof(err)))
		prog_usage_error(CMD, "--replay: %s", err);
}

/* Two --opt K=V with the same key: the parser would take the last one. */
static void check_repeats(const struct sim_args *a)
{
	for (unsigned i = 0; i < a->nopts; i++)
		for (unsigned j = 0; j < i; j++) {
			size_t k = strcspn(a->opts[i], "=");

			if (strcspn(a->opts[j], "=") == k && !strncmp(a->opts[i], a->opts[j], k))
				prog_usage_error(
				    CMD,
				    "--opt: '%.*s' is given twice ('%s' and '%s'); give "
				    "each key once",
				    (int)k, a->opts[i], a->opts[j], a->opts[i]);
		}
}

/* --device: what the simulator models of it, the device model of none or a preset with its
 * keys. A directory, or the keys of the live writeback engine, mean nothing here. */
static void resolve_device(struct sim_config *c, const struct sim_args *a)
{
	const struct io_device_spec *d = &a->cfg.device;
	const char *spec = a->given[CONFIG_DEVICE];
	struct io_device_spec none;
	char err[512];

	if (!spec)
		return;
	if (d->kind == IO_DEV_PATH)
		prog_usage_error(CMD,
				 "--device: '%s': a path is a real device's directory, and the "
				 "simulator models the device (accepted: none or a preset, each "
				 "optionally followed by :KEY=VALUE,...)",
				 prog_esc(spec));
	if (io_device_parse("none", &none, err, sizeof(err)) == 0 &&
	    (d->timeout_ns != none.timeout_ns || d->nr_requests != none.nr_requests ||
	     d->max_request != none.max_request))
		prog_usage_error(CMD,
				 "--device: '%s': timeout=, nr-requests= and max-request= are "
				 "keys of the live writeback engine; the simulator's writeback is "
				 "its own (accepted: the device model's keys)",
				 prog_esc(spec));
	if (strlen(spec) >= sizeof(c->device_spec))
		prog_usage_error(CMD, "--device: '%s' is too long (at most %zu characters)",
				 prog_esc(spec), sizeof(c->device_spec) - 1);
	c->device = d->model;
	snprintf(c->device_spec, sizeof(c->device_spec), "%s", spec);
}

/* --opt init=snapshot:FILE is read as --fragment snapshot:FILE is (core/config's table): the
 * file must be a snapshot, and the pool is its zone unless --pool is given. */
static void snapshot_pool(struct sim_config *c, struct sim_args *a, const char *opt)
{
	char err[1024];

	if (strncmp(opt, "init=" SNAP_PREFIX, strlen("init=" SNAP_PREFIX)))
		return;
	if (config_opt_parse(&config_opts[CONFIG_FRAGMENT], "--opt init", opt + strlen("init="),
			     &a->cfg, err, sizeof(err)) < 0)
		prog_usage_error(CMD, "%s", err);
	if (!a->given[CONFIG_POOL])
		c->pool_bytes = a->cfg.pool_bytes;
}

/* Whether a policy spec (NAME:KEY=VALUE,...) sets the key fs itself. */
static bool spec_sets_fs(const char *spec)
{
	for (const char *p = spec ? strchr(spec, ':') : NULL; p; p = strchr(p, ','))
		if (!strncmp(++p, "fs=", 3))
			return true;
	return false;
}

/* Turn the collected arguments into a complete configuration, or exit 2. */
static void resolve(struct sim_config *c, struct sim_args *a)
{
	char err[1024], names[256];

	check_repeats(a);
	scenario_names(names, sizeof(names));
	if (a->given[CONFIG_POOL])
		c->pool_bytes = a->cfg.pool_bytes;
	if (a->given[CONFIG_SEED])
		c->seed = a->cfg.seed;
	if (a->given[CONFIG_STALL_THRESHOLD])
		c->stall_threshold_ns = a->cfg.stall_threshold_ns;
	if (a->given[CONFIG_ZERO_PAGE])
		c->zero_page = a->cfg.zero_page;
	if (a->replay)
		resolve_replay(c, a);
	if (!a->given[CONFIG_POLICY])
		prog_usage_error(CMD, "--policy is required (a profile such as linux-3.1, or "
				      "NAME:KEY=VALUE,...; see 'thpemu sim --help')");
	resolve_device(c, a);
	/* what run refuses before it starts: a key twice in a spec, a plugin that does not load */
	if (cli_run_check_config(&a->cfg, NULL, err, sizeof(err)) < 0)
		prog_usage_error(CMD, "%s", err);
	c->policy = a->cfg.policy; /* --fs applied (the policy key fs, as run's) */
	snprintf(c->policy.plugin, sizeof(c->policy.plugin), "%s", config_plugin(&a->cfg));
	if (!a->replay) {
		if (!a->scenario)
			prog_usage_error(CMD, "--scenario is required (accepted: %s)", names);
		c->scenario = sim_scenario_find(a->scenario);
		if (!c->scenario)
			prog_usage_error(CMD, "--scenario: unknown scenario '%s' (accepted: %s)",
					 a->scenario, names);
		sim_params_defaults(c->scenario, &c->params);
		if (sim_config_scenario_machine(c, a->given[CONFIG_DEVICE] != NULL,
						a->given[CONFIG_FS] ||
						    spec_sets_fs(a->given[CONFIG_POLICY]),
						err, sizeof(err)))
			prog_usage_error(CMD, "--scenario: %s", err);
	}
	for (unsigned i = 0; i < a->nopts; i++) {
		if (sim_params_set(c->scenario, &c->params, a->opts[i], err, sizeof(err)))
			prog_usage_error(CMD, "--opt: %s", err);
		snapshot_pool(c, a, a->opts[i]);
	}
	if (a->costs && sim_costs_load(&c->costs, a->costs, err, sizeof(err)))
		prog_usage_error(CMD, "--costs: %s", err);
}

/* --json FILE (written whole, util/outfile.h) or --json - (stdout). 0, or 1 after one line. */
static int write_json(const struct sim_result *r, struct cli_output *out, const char *path)
{
	int rc = sim_report_json(r, out ? cli_output_stream(out) : stdout, true);

	if (rc && out) {
		prog_error(CMD, "--json: '%s': the report could not be made (out of memory)", path);
		cli_output_discard(out);
		return 1;
	}
	if (rc) {
		prog_error(CMD, "--json: error writing to stdout: %s", strerror(-rc));
		return 1;
	}
	return out && cli_output_close(out) < 0 ? 1 : 0;
}

static int sim_main(int argc, char **argv)
{
	struct sim_config c;
	static struct sim_args a;
	struct sim_result *r;
	char err[1024];
	struct cli_output *json = NULL;
	int rc;

	sim_config_init(&c);
	parse_args(argc, argv, &c, &a);
	resolve(&c, &a);
	err[0] = '\0';
	rc = sim_run_scenario(&c, &r, err, sizeof(err));
	if (rc && !err[0]) /* a failure nobody described: at least say what it was */
		snprintf(err, sizeof(err), "the scenario could not run: %s", strerror(-rc));
	if (rc == -EINVAL)
		prog_usage_error(CMD, "%s", err);
	if (rc) {
		prog_error(CMD, "%s", err);
		return 1;
	}
	rc = 0;
	if (a.json && strcmp(a.json, "-")) /* checked before the run (parse_args) */
		json = cli_output_open(CMD, "--json", a.json);
	if (a.json)
		rc = write_json(r, json, a.json);
	if (!a.json || strcmp(a.json, "-") != 0)
		sim_report_text(r, stdout);
	sim_result_free(r);
	sim_replay_free(c.replay);
	return rc;
}

CLI_COMMAND(sim, "sim", "run a scenario against the emulated kernel in virtual time", sim_main)

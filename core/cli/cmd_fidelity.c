/* thpemu fidelity: thpemu's emulated kernel against a real kernel, on the same workload from the
 * same starting state (core/oracle/README.md, "Fidelity").
 *
 *   thpemu fidelity [OPTIONS] --workload NAME [ARGS...]
 *
 * Per setting: N boots of the real kernel through the oracle's run code (core/oracle/run.c),
 * each guest snapshotting its memory where the workload's phase begins; then M runs of the same
 * workload under `thpemu run --fragment snapshot:FILE` (this executable), each from one boot's
 * snapshot, its output read by the same parser; then the table (core/oracle/fidelity.c).
 * Every option is checked before anything is fetched, booted or run.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "mm/mm_policy.h"
#include "oracle/fidelity.h"
#include "oracle/oracle.h"
#include "policy/policy.h"
#include "report/runs.h"
#include "util/json.h"
#include "util/units.h"

#define CMD "fidelity"

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: thpemu fidelity [OPTIONS] --workload NAME [ARGS...]\n\n"
	    "Compares thpemu's emulated kernel with a real one on the same workload from the\n"
	    "same starting state. Per setting: --boots boots of a real kernel under qemu (as\n"
	    "thpemu oracle does), each guest writing a snapshot of its physical memory where the\n"
	    "workload's phase begins; then --runs runs of the same workload under `thpemu run\n"
	    "--fragment snapshot:FILE`, each from one boot's snapshot; then a table: per row\n"
	    "(huge %% of the region's 2 MiB extents at first touch and at the end, "
	    "thp_fault_alloc,\n"
	    "thp_fault_fallback, compact_stall, compact_success, compact_fail, pgmigrate_success,\n"
	    "compact_migrate_scanned, compact_free_scanned, all over the workload's phase; and\n"
	    "thp_file_alloc, thp_file_fallback, thp_file_mapped and, per size 16kB..1024kB,\n"
	    "anon_fault_alloc, anon_fault_fallback, shmem_alloc, shmem_fallback where one is\n"
	    "non-zero) the real kernel's min / median / max beside thpemu's and a verdict, and\n"
	    "the pairs of settings\n"
	    "where the two move in opposite directions (core/oracle/README.md, \"Fidelity\").\n\n"
	    "The workload:\n"
	    "  --workload NAME       a workload of the suite; every later argument is its own, as\n"
	    "                        in thpemu oracle. With --at phase: fragfault, unevictable,\n"
	    "                        mthp or shmem (under thpemu their filler is the snapshot's,\n"
	    "                        so they run with --fill 0); with --at start: any. A\n"
	    "                        percentage\n"
	    "                        (--fill 90%%) is resolved to the bytes the guest's workload\n"
	    "                        resolved (its info line) for thpemu's side\n"
	    "  --workload PATH       your own program, static (the guest has no libc), with\n"
	    "                        --dynamic; always --at start (taken by /init before it\n"
	    "                        starts); its rows are the counters over the whole program\n"
	    "                        (/init's program-begin/-end; thpemu's run report's vmstat)\n"
	    "  --dynamic PATH        the same program built dynamically, for thpemu's side\n"
	    "                        (LD_PRELOAD cannot reach a static one); before --workload:\n"
	    "                        every argument after it is the workload's\n"
	    "  --at phase|start      where each guest snapshots its memory: right before the\n"
	    "                        workload's phase (default: both sides start the phase from\n"
	    "                        the same state), or at the workload's start (thpemu's side\n"
	    "                        builds the fragmentation itself)\n\n"
	    "The settings (one table each, at most 8):\n"
	    "  --enabled MODE        transparent_hugepage/enabled for all (default always)\n"
	    "  --defrag LIST         comma list of transparent_hugepage/defrag modes, one setting\n"
	    "                        each (default always,madvise,defer,never); thpemu's policy\n"
	    "                        for a setting is the kernel's (thpemu policies): 6.12\n"
	    "                        thp-ENABLED/DEFRAG, 6.1 linux-6.1:enabled=ENABLED,defrag=\n"
	    "                        DEFRAG, with the pinned mode's proactiveness=0\n"
	    "  --set KEY=VALUE[,...] more settings for every setting, as thpemu oracle's --set,\n"
	    "                        each on both sides: the guest's knob and the policy key\n"
	    "                        that models it (shrink_underused, hugepages-SIZEkB,\n"
	    "                        shmem_enabled, hugepages-SIZEkB/shmem_enabled, tmpfs.huge,\n"
	    "                        khugepaged/KNOB, vm.compaction_proactiveness,\n"
	    "                        vm.compact_unevictable_allowed); repeatable\n\n"
	    "The real kernel:\n"
	    "  --kernel 6.12|6.1     Debian's newest kernel of the series (default 6.12)\n"
	    "  --mem SIZE            guest memory, 256M..4G (default 512M)\n"
	    "  --mode pinned|free    as thpemu oracle (default pinned)\n"
	    "  --smp N               vCPUs in free mode, 1..16 (default 2)\n"
	    "  --boots N             boots per setting, 1..32 (default 3); boot I's seed SEED+I\n"
	    "  --jobs N              boots side by side, 1..64 (default: the online CPUs when\n"
	    "                        pinned, 1 in free mode); the table is the same as with\n"
	    "                        --jobs 1 (thpemu's runs go one at a time)\n"
	    "  --timeout DUR         a boot without its end marker by then is killed (default "
	    "10m)\n"
	    "  --cache DIR, --offline, --qemu PATH, --busybox PATH   as thpemu oracle\n"
	    "  --disk SIZE           a vfat disk for the guest's workload, at $ORACLE_DISK\n"
	    "  --disk-write-rate RATE  throttle its writes (qemu throttling.bps-write), e.g.\n"
	    "                        3MB/s. The real side only: under thpemu the workload\n"
	    "                        writes where it would without a disk ($TMPDIR, /tmp)\n\n"
	    "thpemu's side:\n"
	    "  --runs N              runs per setting, 1..32 (default: --boots); run J starts\n"
	    "                        from boot J's snapshot (cycling) with --seed SEED+J\n"
	    "  (thpscale and thpcompact without --disk run with --device fast --fs tmpfs: their\n"
	    "  file is page cache of the pool, as on the guest's tmpfs)\n\n"
	    "  --seed N              the first seed (default 1)\n"
	    "  --json FILE           the table, every boot's and run's values (kind \"fidelity\")\n"
	    "  --html FILE           the table as a self-contained HTML page\n"
	    "  --keep DIR            keep every boot's console log and snapshot and every run's\n"
	    "                        output and report (DIR/SETTING/...), and what made the\n"
	    "                        real side (DIR/fidelity-real.json)\n"
	    "  --real-from DIR       no boots: the real side is the one an earlier run kept with\n"
	    "                        --keep DIR; thpemu's side runs again from its snapshots.\n"
	    "                        The kept run must be this request (--kernel, --mem,\n"
	    "                        --mode, --smp, --boots, --seed, --at, the workload and\n"
	    "                        its arguments, --enabled, --defrag, --set, --disk,\n"
	    "                        --disk-write-rate): else refused, naming what differs\n"
	    "  --quiet               no progress lines on stderr\n"
	    "  --check               check the options (and --real-from's run) and exit: 0 when\n"
	    "                        they would run; no tool looked for, nothing written\n"
	    "                        (--json, --html and --keep neither opened nor made)\n\n"
	    "Needs root for thpemu's side (userfaultfd; the workload reads /proc/kpageflags), "
	    "qemu\n"
	    "and a static busybox for the real side. Exit status: 0 every boot and run ended well\n"
	    "(verdicts do not change it); 1 a boot or a run failed (the table says which), or a\n"
	    "tool was missing; 2 bad usage, or a --real-from DIR kept by another request.\n");
}

/* The options of a workload that take a size which may be a percentage, and the key of the
 * workload's info line holding the bytes it resolved. */
static const struct {
	const char *opt, *info;
} resolved[] = {
    {"--fill", "fill_bytes"},
    {"--region", "region_bytes"},
    {"--anon", "anon_bytes"},
    {"--pressure", "pressure_bytes"},
};

/* The info key of an option's resolved bytes, or NULL. */
static const char *resolved_key(const char *opt)
{
	for (size_t k = 0; k < sizeof(resolved) / sizeof(resolved[0]); k++)
		if (!strcmp(opt, resolved[k].opt))
			return resolved[k].info;
	return NULL;
}

/* The workloads whose state before the phase is a filler alone: under thpemu the snapshot is
 * that filler, so they run with --fill 0. */
static const char *const phase_workloads[] = {"fragfault", "unevictable", "mthp", "shmem", NULL};

struct boot_rec {
	char snapshot[PATH_MAX]; /* "" none */
	struct oracle_pair info[16];
	int ninfo;
};

struct fopts {
	struct oracle_run_cfg cfg; /* the real side's template */
	struct oracle_boot_opts boot;
	const char *enabled, *at, *json, *html, *keep, *dynamic, *real_from;
	bool program, at_given; /* --workload PATH: a program outside the suite */
	char defrag[FID_MAX_SETTINGS][24];
	struct oracle_settings extra; /* --set: both sides */
	char extra_policy[256];	      /* their policy keys, ",key=value..." */
	int nset, runs;
	bool quiet, check;
	char builtin[PATH_MAX], helper[PATH_MAX], wl_dyn[PATH_MAX], self[PATH_MAX], dyn[PATH_MAX];
	char busybox[PATH_MAX], cache[PATH_MAX], dir[PATH_MAX];
	bool made_dir;
	/* the setting being run */
	struct fid_table *t;
	int k;
	struct boot_rec boots[FID_MAX_SAMPLES];
};

static const char *value(int argc, char **argv, int *i)
{
	if (*i + 1 >= argc)
		prog_usage_error(CMD, "%s needs a value (see thpemu fidelity --help)", argv[*i]);
	return argv[++*i];
}

static void parse_defrag(struct fopts *o, const char *list)
{
	char buf[256], *save, err[256];
	struct oracle_settings s;

	if (strlen(list) >= sizeof(buf))
		prog_usage_error(CMD, "--defrag: the list is too long");
	snprintf(buf, sizeof(buf), "%s", list);
	o->nset = 0;
	for (char *m = strtok_r(buf, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
		oracle_settings_init(&s);
		if (oracle_settings_set(&s, "defrag", m, ORACLE_ORIGIN_USER, err, sizeof(err)))
			prog_usage_error(CMD, "--defrag: %s", err);
		for (int i = 0; i < o->nset; i++)
			if (!strcmp(o->defrag[i], m))
				prog_usage_error(CMD, "--defrag: '%s' is listed twice", m);
		if (o->nset == FID_MAX_SETTINGS)
			prog_usage_error(CMD, "--defrag: at most %d settings", FID_MAX_SETTINGS);
		snprintf(o->defrag[o->nset++], sizeof(o->defrag[0]), "%s", m);
	}
	if (!o->nset)
		prog_usage_error(CMD, "--defrag: no mode in '%s'", list);
}

/* --set: each setting the guest knows and thpemu's policies model, made on both sides. */
static void parse_set(struct fopts *o, const char *list)
{
	char err[512], kv[96];
	int first = o->extra.n;
	size_t used = strlen(o->extra_policy);

	if (oracle_settings_parse(&o->extra, list, err, sizeof(err)))
		prog_usage_error(CMD, "--set: %s", err);
	for (int i = first; i < o->extra.n; i++) {
		const char *key = o->extra.s[i].knob->key;
		int n;

		if (!strcmp(key, "enabled") || !strcmp(key, "defrag"))
			prog_usage_error(CMD, "--set: give %s with --%s", key, key);
		if (oracle_setting_policy(key, o->extra.s[i].value, kv, sizeof(kv)))
			prog_usage_error(
			    CMD,
			    "--set: thpemu models no %s (accepted: shrink_underused, "
			    "hugepages-SIZEkB, shmem_enabled, hugepages-SIZEkB/shmem_enabled, "
			    "tmpfs.huge, khugepaged/KNOB, vm.compaction_proactiveness, "
			    "vm.compact_unevictable_allowed)",
			    key);
		n = snprintf(o->extra_policy + used, sizeof(o->extra_policy) - used, ",%s", kv);
		if (n < 0 || (size_t)n >= sizeof(o->extra_policy) - used)
			prog_usage_error(CMD, "--set: too many settings");
		used += (size_t)n;
	}
}

/* One option at argv[*i]; 1 when it was --workload (the rest is the workload's). */
static int option(struct fopts *o, int argc, char **argv, int *i)
{
	struct oracle_run_cfg *c = &o->cfg;
	const char *a = argv[*i];
	char err[512];
	uint64_t n;
	int rc;

	if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
		usage(stdout);
		exit(0);
	} else if (!strcmp(a, "--workload")) {
		c->workload = value(argc, argv, i);
		return 1;
	} else if ((rc = oracle_boot_opt(&o->boot, argc, argv, i, err, sizeof(err)))) {
		if (rc < 0)
			prog_usage_error(CMD, "%s", err);
	} else if (!strcmp(a, "--at")) {
		o->at = value(argc, argv, i);
		o->at_given = true;
		if (strcmp(o->at, "phase") && strcmp(o->at, "start"))
			prog_usage_error(CMD, "--at: '%s' is not phase or start", o->at);
	} else if (!strcmp(a, "--dynamic")) {
		o->dynamic = value(argc, argv, i);
	} else if (!strcmp(a, "--enabled")) {
		o->enabled = value(argc, argv, i);
	} else if (!strcmp(a, "--set")) {
		parse_set(o, value(argc, argv, i));
	} else if (!strcmp(a, "--defrag")) {
		parse_defrag(o, value(argc, argv, i));
	} else if (!strcmp(a, "--runs")) {
		if (oracle_opt_uint(a, value(argc, argv, i), 1, FID_MAX_SAMPLES, &n, err,
				    sizeof(err)))
			prog_usage_error(CMD, "%s", err);
		o->runs = (int)n;
	} else if (!strcmp(a, "--json")) {
		o->json = value(argc, argv, i);
	} else if (!strcmp(a, "--html")) {
		o->html = value(argc, argv, i);
	} else if (!strcmp(a, "--keep")) {
		o->keep = value(argc, argv, i);
	} else if (!strcmp(a, "--real-from")) {
		struct stat st;

		o->real_from = value(argc, argv, i);
		if (stat(o->real_from, &st) || !S_ISDIR(st.st_mode))
			prog_usage_error(CMD, "--real-from: '%s' is not a directory (a --keep DIR)",
					 o->real_from);
	} else if (!strcmp(a, "--quiet")) {
		o->quiet = true;
	} else if (!strcmp(a, "--check")) {
		o->check = true;
	} else {
		prog_usage_error(CMD, "unknown option '%s' (see thpemu fidelity --help)", a);
	}
	return 0;
}

/* thpemu's policy for setting k: the profile of the kernel's era with the pair (6.12: the
 * thp-ENABLED/DEFRAG profile; 6.1: linux-6.1 with the pair as keys), and what the guest was
 * given. */
static void policy_of(const struct fopts *o, int k, char *buf, size_t len)
{
	/* --set's keys come last: a later key overrides (vm.compaction_proactiveness) */
	if (!strcmp(o->cfg.kernel, "6.1"))
		snprintf(buf, len, "linux-6.1:enabled=%s,defrag=%s%s%s", o->enabled, o->defrag[k],
			 o->cfg.pinned ? ",proactiveness=0" : "", o->extra_policy);
	else if (o->cfg.pinned)
		snprintf(buf, len, "thp-%s/%s:proactiveness=0%s", o->enabled, o->defrag[k],
			 o->extra_policy);
	else
		snprintf(buf, len, "thp-%s/%s%s%s", o->enabled, o->defrag[k],
			 o->extra_policy[0] ? ":" : "",
			 o->extra_policy[0] ? o->extra_policy + 1 : "");
}

static bool in_list(const char *const *l, const char *s)
{
	for (; *l; l++)
		if (!strcmp(*l, s))
			return true;
	return false;
}

/* --workload PATH: static for the guest, --dynamic for thpemu's side, at start, no
 * percentages (only the suite's info lines resolve them). */
static void check_program(struct fopts *o)
{
	const struct oracle_run_cfg *c = &o->cfg;
	char path[PATH_MAX];
	int rc;

	if (o->at_given && strcmp(o->at, "start"))
		prog_usage_error(CMD,
				 "--at phase: a program of yours has no phase the suite knows; "
				 "it runs --at start");
	o->at = "start";
	rc = cli_program_static(c->workload, path, sizeof(path));
	if (rc != 1)
		prog_usage_error(CMD, "--workload: '%s' is %s", c->workload,
				 rc == 0 ? "not static: the guest has no libc (build it -static)"
					 : "not an executable file");
	if (!o->dynamic)
		prog_usage_error(
		    CMD,
		    "--workload: '%s': give --dynamic PATH, the same program built "
		    "dynamically, for thpemu's side (LD_PRELOAD cannot reach a static one)",
		    c->workload);
	rc = cli_program_static(o->dynamic, o->dyn, sizeof(o->dyn));
	if (rc != 0)
		prog_usage_error(CMD, "--dynamic: '%s' is %s", o->dynamic,
				 rc == 1 ? "static: LD_PRELOAD cannot load thpemu into it"
					 : "not an executable file");
	for (int i = 0; i < c->nargs; i++)
		if (strchr(c->args[i], '%'))
			prog_usage_error(CMD,
					 "--workload: '%s': a percentage only for the suite's "
					 "--fill, --region, --anon or --pressure; give a size",
					 c->args[i]);
}

static void check_workload(struct fopts *o)
{
	struct oracle_run_cfg *c = &o->cfg;
	char why[512];

	if (!c->workload)
		prog_usage_error(CMD, "--workload NAME is required (see thpemu fidelity --help)");
	o->program = strchr(c->workload, '/') != NULL;
	if (o->program)
		check_program(o);
	else if (o->dynamic)
		prog_usage_error(CMD, "--dynamic: only with --workload PATH (a program of yours)");
	for (int i = 0; i < c->nargs; i++)
		if (oracle_arg_check(c->args[i], why, sizeof(why)))
			prog_usage_error(CMD, "--workload: '%s': %s", c->args[i], why);
	if (c->nargs > ORACLE_MAX_ARGS - 1)
		prog_usage_error(CMD, "--workload: at most %d arguments", ORACLE_MAX_ARGS - 1);
	if (!o->program && !strcmp(o->at, "phase") && !in_list(phase_workloads, c->workload))
		prog_usage_error(CMD,
				 "--at phase: '%s' builds state of its own before its phase; "
				 "use --at start (phase: fragfault, unevictable, mthp, shmem)",
				 c->workload);
	for (int i = 0; i < c->nargs; i++) {
		const char *a = c->args[i];

		if (!strncmp(a, "--", 2) && strchr(a, '=') && strchr(a, '%'))
			prog_usage_error(CMD,
					 "--workload: '%s': give a percentage as a separate "
					 "argument (--fill 90%%), so it can be resolved for thpemu",
					 a);
		if (strchr(a, '%') && (!i || !resolved_key(c->args[i - 1])))
			prog_usage_error(CMD,
					 "--workload: '%s': thpemu's side can resolve a percentage "
					 "only for --fill, --region, --anon or --pressure",
					 a);
	}
	if (prog_find_lib("thpemu-wl-static", o->builtin, sizeof(o->builtin), why, sizeof(why)) <
	    0) {
		prog_error(CMD, "the workload suite is missing: %s", why);
		exit(1);
	}
	if (!o->program && !oracle_builtin_workload(o->builtin, c->workload))
		prog_usage_error(CMD,
				 "--workload: '%s' is not a workload of the suite (thpemu-wl "
				 "--help lists them)",
				 c->workload);
	c->builtin_path = o->builtin;
}

/* ---- what made the real side ----------------------------------------------------------------
 * --keep DIR records the request its real side was made with in DIR/fidelity-real.json;
 * --real-from DIR compares it with the present request and refuses a difference before
 * anything runs, since the table would set this request's thpemu against another's kernel. */

#define REAL_RECORD	    "fidelity-real.json"
#define REAL_RECORD_VERSION 1

/* The record's keys in the order checked, and the option each comes from. */
static const struct {
	const char *key, *opt;
} real_keys[] = {
    {"kernel", "--kernel"},
    {"mem_bytes", "--mem"},
    {"mode", "--mode"},
    {"smp", "--smp"},
    {"boots", "--boots"},
    {"seed", "--seed"},
    {"at", "--at"},
    {"workload", "--workload"},
    {"args", "the workload's arguments"},
    {"enabled", "--enabled"},
    {"defrag", "--defrag"},
    {"set", "--set"},
    {"disk_bytes", "--disk"},
    {"disk_write_bps", "--disk-write-rate"},
};

/* Everything the real side's boots depend on: the kernel series, the guest's memory, mode and
 * vCPUs, the boots and their seeds (SEED+I), where the snapshot is taken, the workload and its
 * arguments, every setting the guest is given, and its disk. Not what only thpemu's side uses
 * (--runs, --dynamic) nor how the boots were watched (--timeout, --qemu, --cache). */
static json_t *real_identity(const struct fopts *o)
{
	const struct oracle_run_cfg *c = &o->cfg;
	json_t *id = json_object(), *args = json_array(), *defrag = json_array(),
	       *set = json_array();

	for (int i = 0; i < c->nargs; i++)
		json_array_append_new(args, json_string(c->args[i]));
	for (int k = 0; k < o->nset; k++)
		json_array_append_new(defrag, json_string(o->defrag[k]));
	for (int i = 0; i < o->extra.n; i++) {
		char kv[128];

		snprintf(kv, sizeof(kv), "%s=%s", o->extra.s[i].knob->key, o->extra.s[i].value);
		json_array_append_new(set, json_string(kv));
	}
	json_object_set_new(id, "kind", json_string("fidelity-real"));
	json_object_set_new(id, "version", json_integer(REAL_RECORD_VERSION));
	json_object_set_new(id, "kernel", json_string(c->kernel));
	json_object_set_new(id, "mem_bytes", json_integer((json_int_t)c->mem));
	json_object_set_new(id, "mode", json_string(c->pinned ? "pinned" : "free"));
	json_object_set_new(id, "smp", json_integer(c->pinned ? 1 : c->smp));
	json_object_set_new(id, "boots", json_integer(c->boots));
	json_object_set_new(id, "seed", json_integer((json_int_t)c->seed));
	json_object_set_new(id, "at", json_string(o->at));
	json_object_set_new(id, "workload", json_string(c->workload));
	json_object_set_new(id, "args", args);
	json_object_set_new(id, "enabled", json_string(o->enabled));
	json_object_set_new(id, "defrag", defrag);
	json_object_set_new(id, "set", set);
	json_object_set_new(id, "disk_bytes", json_integer((json_int_t)c->disk));
	json_object_set_new(id, "disk_write_bps", json_integer((json_int_t)c->disk_bps));
	return id;
}

/* A record's value as the option gives it: "512M", "always,never", "--fill 90%", "none". */
static void real_value(const char *key, const json_t *v, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	if (!v) {
		snprintf(buf, len, "nothing");
	} else if (json_is_string(v)) {
		snprintf(buf, len, "%s", json_string_value(v));
	} else if (json_is_integer(v)) {
		long long n = (long long)json_integer_value(v);

		if (!strcmp(key, "mem_bytes") && n > 0 && !(n & ((1 << 20) - 1)))
			snprintf(buf, len, "%lldM", n >> 20);
		else if (!strcmp(key, "disk_bytes") && !n)
			snprintf(buf, len, "none");
		else
			snprintf(buf, len, "%lld", n);
	} else if (json_is_array(v)) {
		for (size_t i = 0; i < json_array_size(v) && used < len; i++) {
			const json_t *e = json_array_get(v, i);

			used += (size_t)snprintf(buf + used, len - used, "%s%s",
						 i ? (strcmp(key, "args") ? "," : " ") : "",
						 json_is_string(e) ? json_string_value(e) : "?");
		}
		if (!json_array_size(v))
			snprintf(buf, len, "none");
	} else {
		snprintf(buf, len, "?");
	}
}

/* --real-from DIR: its record must be this request's and every boot's console log there; else
 * one line and exit 2, before anything runs. */
static void check_real_from(const struct fopts *o)
{
	char path[PATH_MAX], diff[1024], a[200], b[200];
	json_t *kept, *now;
	json_error_t e;
	size_t used = 0;

	oracle_fmt(path, sizeof(path), "%s/%s", o->real_from, REAL_RECORD);
	if (access(path, F_OK))
		prog_usage_error(
		    CMD,
		    "--real-from: '%s' has no %s: not a --keep DIR of thpemu fidelity, "
		    "or kept before thpemu recorded what made its real side, which "
		    "cannot then be checked against this request",
		    o->real_from, REAL_RECORD);
	kept = json_load_file(path, 0, &e);
	if (!kept)
		prog_usage_error(CMD, "--real-from: '%s': %s (line %d)", path, e.text, e.line);
	if (!json_is_string(json_object_get(kept, "kind")) ||
	    strcmp(json_string_value(json_object_get(kept, "kind")), "fidelity-real"))
		prog_usage_error(
		    CMD, "--real-from: '%s' is not a record of thpemu fidelity's real side", path);
	if (json_integer_value(json_object_get(kept, "version")) != REAL_RECORD_VERSION)
		prog_usage_error(CMD,
				 "--real-from: '%s' is a record of version %lld; this thpemu "
				 "reads version %d",
				 path,
				 (long long)json_integer_value(json_object_get(kept, "version")),
				 REAL_RECORD_VERSION);
	now = real_identity(o);
	diff[0] = '\0';
	for (size_t i = 0; i < sizeof(real_keys) / sizeof(real_keys[0]) && used < sizeof(diff);
	     i++) {
		const json_t *kv = json_object_get(kept, real_keys[i].key),
			     *nv = json_object_get(now, real_keys[i].key);

		if (kv && json_equal((json_t *)kv, (json_t *)nv))
			continue;
		real_value(real_keys[i].key, kv, a, sizeof(a));
		real_value(real_keys[i].key, nv, b, sizeof(b));
		used += (size_t)snprintf(diff + used, sizeof(diff) - used, "%s%s %s there, %s here",
					 used ? "; " : "", real_keys[i].opt, a, b);
	}
	json_decref(now);
	json_decref(kept);
	if (diff[0])
		prog_usage_error(
		    CMD,
		    "--real-from: '%s' was kept by another request (%s): its real side "
		    "is not this one's",
		    o->real_from, diff);
	for (int k = 0; k < o->nset; k++)
		for (int i = 0; i < o->cfg.boots; i++) {
			oracle_fmt(path, sizeof(path), "%s/%d-%s/real/boot-%d.log", o->real_from,
				   k + 1, o->defrag[k], i + 1);
			if (access(path, R_OK))
				prog_usage_error(CMD,
						 "--real-from: '%s': %s (the kept run ended before "
						 "this boot?)",
						 path, strerror(errno));
		}
}

/* --keep DIR (booting): the record of what made the real side, for a later --real-from DIR. */
static int write_real_record(const struct fopts *o)
{
	char path[PATH_MAX];
	json_t *id = real_identity(o);
	FILE *f = NULL;
	int rc = -1;

	/* an earlier request's boots kept in a reused DIR go first: --real-from never pairs this
	 * record with a console log or snapshot of a boot this request did not reach */
	for (int k = 0; k < o->nset; k++) {
		struct stat st;
		int e = 0;

		/* never through a symbolic link: only what thpemu made under DIR goes */
		oracle_fmt(path, sizeof(path), "%s/%d-%s", o->dir, k + 1, o->defrag[k]);
		if (!lstat(path, &st) && !S_ISDIR(st.st_mode))
			e = -ENOTDIR;
		oracle_fmt(path, sizeof(path), "%s/%d-%s/real", o->dir, k + 1, o->defrag[k]);
		if (e || (e = oracle_rm_rf(path)) < 0) {
			prog_error(CMD, "'%s': %s", path, strerror(-e));
			json_decref(id);
			return -1;
		}
	}
	oracle_fmt(path, sizeof(path), "%s/%s", o->dir, REAL_RECORD);
	errno = 0;
	if (!oracle_mkdir_p(o->dir, 0700) && (f = fopen(path, "we")))
		rc = json_dumpf(id, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER) ||
		     fputc('\n', f) == EOF;
	if (f && fclose(f))
		rc = -1;
	if (rc)
		prog_error(CMD, "'%s': %s", path, strerror(errno ? errno : EIO));
	json_decref(id);
	return rc ? -1 : 0;
}

/* Tools and parts: their absence is the environment's, exit 1. */
static void check_tools(struct fopts *o)
{
	struct oracle_run_cfg *c = &o->cfg;
	char why[512];
	int rc;

	if (o->real_from) /* nothing boots: only thpemu's side is needed */
		goto emu;
	if (cli_find_program(c->qemu)) {
		prog_error(CMD, "%s not found (apt-get install qemu-system-x86)", c->qemu);
		exit(1);
	}
	rc = cli_program_static(c->busybox, o->busybox, sizeof(o->busybox));
	if (rc != 1) {
		prog_error(CMD, "--busybox: '%s' is %s (apt-get install busybox-static)",
			   c->busybox, rc == 0 ? "not static: the guest has no libc" : "not found");
		exit(1);
	}
	c->busybox = o->busybox;
	if (prog_find_lib("thpemu-snapshot", o->helper, sizeof(o->helper), why, sizeof(why)) < 0 ||
	    cli_program_static(o->helper, why, sizeof(why)) != 1) {
		prog_error(CMD, "the static thpemu-snapshot is missing (%s)", o->helper);
		exit(1);
	}
emu:
	snprintf(o->wl_dyn, sizeof(o->wl_dyn), "%s/thpemu-wl", prog_self_dir());
	snprintf(o->self, sizeof(o->self), "%s/thpemu", prog_self_dir());
	if (access(o->wl_dyn, X_OK) || access(o->self, X_OK)) {
		prog_error(CMD, "'%s' or '%s' is missing", o->wl_dyn, o->self);
		exit(1);
	}
	if (cli_userfaultfd_access(why, sizeof(why))) {
		prog_error(CMD, "thpemu's side cannot run here: %s", why);
		exit(1);
	}
	if (geteuid()) {
		prog_error(CMD, "thpemu's side needs root: the workload reads /proc/kpageflags");
		exit(1);
	}
}

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	oracle_interrupted = 1;
	interrupted = 1;
}

/* ---- the real side --------------------------------------------------------------------------
 */

/* A progress line's huge % at first touch: "n/a" for a workload without fault lines. */
static const char *pct_word(const struct fid_sample *s, char *buf, size_t len)
{
	if (!s->have[0])
		return "n/a";
	snprintf(buf, len, "%.1f %%", s->v[0]);
	return buf;
}

static void on_boot(void *arg, int i, uint64_t seed, const char *status,
		    const struct oracle_result *r, const char *snapshot)
{
	struct fopts *o = arg;
	char pct[24];
	struct fid_setting *s = &o->t->set[o->k];
	struct boot_rec *b = &o->boots[i];

	if (i >= FID_MAX_SAMPLES)
		return;
	fid_sample_from_result(r, &s->real.s[i], o->program);
	s->real.seed[i] = seed;
	snprintf(s->real.status[i], sizeof(s->real.status[i]), "%s", status);
	if (!snapshot)
		snprintf(s->real.note[i], sizeof(s->real.note[i]), "no memory snapshot: %.70s",
			 r->memsnap.state == ORACLE_MEMSNAP_NONE   ? "none taken"
			 : r->memsnap.state == ORACLE_MEMSNAP_OPEN ? "incomplete"
								   : r->memsnap.why);
	s->real.n = i + 1;
	snprintf(b->snapshot, sizeof(b->snapshot), "%s", snapshot ? snapshot : "");
	b->ninfo = 0; /* the bytes a percentage resolved to: the keys of resolved[] */
	for (size_t k = 0; k < r->ninfo; k++)
		for (size_t m = 0; m < sizeof(resolved) / sizeof(resolved[0]); m++)
			if (!strcmp(r->info[k].key, resolved[m].info) &&
			    b->ninfo < (int)(sizeof(b->info) / sizeof(b->info[0])))
				b->info[b->ninfo++] = r->info[k];
	if (!o->t->kernel[0] && r->kernel[0])
		snprintf(o->t->kernel, sizeof(o->t->kernel), "%s (%.100s)", o->cfg.kernel,
			 r->kernel);
	if (!o->quiet)
		fprintf(stderr, "fidelity: %s: real boot %d/%d seed %llu: %s, huge %s%s\n", s->name,
			i + 1, o->cfg.boots, (unsigned long long)seed, status,
			pct_word(&s->real.s[i], pct, sizeof(pct)), snapshot ? "" : ", no snapshot");
}

static int run_real(struct fopts *o, int k, char *err, size_t errlen)
{
	struct oracle_run_cfg cfg = o->cfg;
	char dir[PATH_MAX];
	int rc;

	oracle_fmt(dir, sizeof(dir), "%s/%d-%s/real", o->dir, k + 1, o->defrag[k]);
	if (oracle_mkdir_p(dir, 0700)) {
		oracle_fmt(err, errlen, "'%s': %s", dir, strerror(errno));
		return -EIO;
	}
	cfg.keep = dir;
	oracle_settings_set(&cfg.settings, "enabled", o->enabled, ORACLE_ORIGIN_USER, err, errlen);
	oracle_settings_set(&cfg.settings, "defrag", o->defrag[k], ORACLE_ORIGIN_USER, err, errlen);
	for (int i = 0; i < o->extra.n; i++)
		oracle_settings_set(&cfg.settings, o->extra.s[i].knob->key, o->extra.s[i].value,
				    ORACLE_ORIGIN_USER, err, errlen);
	/* a 512M guest boots with THP off, khugepaged's defrag too: set as the default */
	if (!oracle_settings_get(&cfg.settings, "khugepaged/defrag"))
		oracle_settings_set(&cfg.settings, "khugepaged/defrag", "1", ORACLE_ORIGIN_USER,
				    err, errlen);
	cfg.snapshot_helper = o->helper;
	cfg.snapshot_at = o->at;
	cfg.on_boot = on_boot;
	cfg.on_boot_arg = o;
	cfg.quiet = true;
	o->k = k;
	memset(o->boots, 0, sizeof(o->boots));
	rc = oracle_run(&cfg, NULL, err, errlen);
	return rc < 0 ? rc : 0;
}

/* A whole file, NUL-terminated, its length in *len if len; NULL with errno. */
static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t n = 0, cap = 0;

	if (!f)
		return NULL;
	for (;;) {
		if (cap - n < 65536) {
			char *nb = realloc(buf, cap + 262144);

			if (!nb) {
				free(buf);
				fclose(f);
				errno = ENOMEM;
				return NULL;
			}
			buf = nb;
			cap += 262144;
		}
		size_t got = fread(buf + n, 1, cap - n - 1, f);

		n += got;
		if (!got)
			break;
	}
	buf[n] = '\0';
	fclose(f);
	if (len)
		*len = n;
	return buf;
}

/* Is the kept boot-I.snap the snapshot boot I's console log carries? 0, or -1 with why (a file
 * missing, or left by another run in a reused --keep DIR); 0 too when the log carries none. */
static int kept_snapshot(const char *path, int i, const struct oracle_result *r, char *why,
			 size_t len)
{
	size_t n, klen;
	const char *text = oracle_result_memsnap(r, &n);
	char *kept;
	bool same;

	if (!text)
		return 0;
	kept = read_all(path, &klen);
	if (!kept) {
		snprintf(why, len, "its kept snapshot boot-%d.snap: %s", i + 1, strerror(errno));
		return -1;
	}
	same = klen == n && !memcmp(kept, text, n);
	free(kept);
	if (!same)
		snprintf(why, len, "boot-%d.snap is not the snapshot its console log carries",
			 i + 1);
	return same ? 0 : -1;
}

/* --real-from DIR: the real side of an earlier run kept with --keep DIR (the same request,
 * check_real_from): each boot's console log read again by the same parser, its snapshot the one
 * kept beside it when the log carries that one whole; nothing boots. A boot is ok when its log
 * has the end marker, every setting applied and the workload's exit status 0 (run.c's
 * boot_status). */
static int replay_real(struct fopts *o, int k, char *err, size_t errlen)
{
	char dir[PATH_MAX], path[PATH_MAX], snap[PATH_MAX];

	o->k = k;
	memset(o->boots, 0, sizeof(o->boots));
	oracle_fmt(dir, sizeof(dir), "%s/%d-%s/real", o->real_from, k + 1, o->defrag[k]);
	for (int i = 0; i < o->cfg.boots && !interrupted; i++) {
		struct oracle_result r;
		const char *status = "ok";
		char *text, why[96] = "";
		size_t n;

		oracle_fmt(path, sizeof(path), "%s/boot-%d.log", dir, i + 1);
		text = read_all(path, NULL);
		if (!text) {
			oracle_fmt(err, errlen, "--real-from: '%s': %s", path, strerror(errno));
			return -EIO;
		}
		oracle_result_init(&r);
		oracle_result_text(&r, text);
		free(text);
		for (size_t j = 0; j < r.nsettings; j++)
			if (strcmp(r.settings[j].value, "ok"))
				status = "setting-failed";
		if (!r.ended)
			status = "no-end-marker";
		else if (!strcmp(status, "ok") && r.exit_status)
			status = "workload-failed";
		oracle_fmt(snap, sizeof(snap), "%s/boot-%d.snap", dir, i + 1);
		/* a log without a whole snapshot has none, whatever file lies beside it */
		on_boot(o, i, o->cfg.seed + (uint64_t)i, status, &r,
			oracle_result_memsnap(&r, &n) &&
				!kept_snapshot(snap, i, &r, why, sizeof(why))
			    ? snap
			    : NULL);
		if (why[0])
			snprintf(o->t->set[k].real.note[i], sizeof(o->t->set[k].real.note[i]), "%s",
				 why);
		oracle_result_free(&r);
	}
	return interrupted ? -EINTR : 0;
}

/* ---- thpemu's side --------------------------------------------------------------------------
 */

static const char *info_of(const struct boot_rec *b, const char *key)
{
	for (int i = 0; i < b->ninfo; i++)
		if (!strcmp(b->info[i].key, key))
			return b->info[i].value;
	return NULL;
}

/* The workload's arguments for thpemu: percentages replaced by the bytes the guest resolved,
 * and at phase --fill 0 (the filler is the snapshot's). 0, or -EINVAL with why. */
static int emu_args(const struct fopts *o, const struct boot_rec *b, char store[][32],
		    const char **argv, int *argc, char *why, size_t wlen)
{
	const struct oracle_run_cfg *c = &o->cfg;
	int n = 0;

	bool phase = !strcmp(o->at, "phase"), fill = false;

	for (int i = 0; i < c->nargs; i++) {
		const char *a = c->args[i], *next = i + 1 < c->nargs ? c->args[i + 1] : NULL;
		const char *key = resolved_key(a), *v;

		argv[n++] = a;
		if (phase && next && !strcmp(a, "--fill")) { /* the filler is the snapshot's */
			argv[n++] = "0";
			fill = true;
			i++;
			continue;
		}
		if (!next || !strchr(next, '%'))
			continue;
		v = key ? info_of(b, key) : NULL;
		if (!v) {
			snprintf(why, wlen, "'%s %s': the guest's info line has no %s", a, next,
				 key ? key : "bytes for it");
			return -EINVAL;
		}
		snprintf(store[i + 1], sizeof(store[0]), "%s", v);
		argv[n++] = store[i + 1];
		i++;
	}
	if (phase && !fill) {
		argv[n++] = "--fill";
		argv[n++] = "0";
	}
	*argc = n;
	return 0;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	if (f) {
		fputs(text ? text : "", f);
		fclose(f);
	}
}

/* The run's report (RUN.json), read once for all that is taken from it: NULL with why when it
 * is missing or not JSON. */
static json_t *load_report(const char *report, char *why, size_t len)
{
	json_error_t e;
	json_t *j = json_load_file(report, 0, &e);

	if (!j)
		snprintf(why, len, "its report: %.70s", e.text);
	return j;
}

/* host.huge_not_pmd of the run's report: huge decisions the host mapped with 4 KiB pages, so
 * that the extent lines (read on the host) say base where thpemu said huge. */
static double huge_not_pmd(json_t *rep)
{
	return rep ? rd_num(rep, "host.huge_not_pmd") : NAN;
}

/* A program's counters under thpemu: the run report's "vmstat", the emulated machine's over the
 * whole run, as /init's program-begin/-end are the guest's over the whole program. */
static void emu_counters(const json_t *rep, struct fid_sample *s)
{
	const json_t *vm = json_object_get(rep, "vmstat");

	for (int i = 0; i < FID_NROWS && json_is_object(vm); i++) {
		json_t *v = json_object_get(vm, fid_rows[i].key);

		if (fid_rows[i].kind != FID_COUNTER || !json_is_number(v))
			continue;
		s->v[i] = json_number_value(v);
		s->have[i] = true;
	}
}

/* The suite's workloads whose file is page cache in the guest's memory: thpscale's refill and
 * thpcompact's stripes go to the guest's tmpfs (/tmp; no --disk). Under thpemu they go on the
 * run's own device (thpemu-fusedev, preset fast), which joins the machine: every page written
 * is a page-cache frame of the emulated pool (fusedev/README.md), allocated where the guest's
 * tmpfs page was, into the holes, and met by compaction. The device's file system is tmpfs
 * without swap, as the guest's (the machine setting fs, core/mm/README.md): a page is never
 * dirty nor written back, never reclaimed, and compaction moves it in any mode. */
static bool file_in_pool(const struct fopts *o)
{
	return !o->program && !o->cfg.disk &&
	       (!strcmp(o->cfg.workload, "thpscale") || !strcmp(o->cfg.workload, "thpcompact"));
}

/* Did the run's device fall back to the in-process model (no FUSE)? Then the workload's file was
 * not on it, and not in the pool. */
static bool device_fell_back(const json_t *rep)
{
	return json_is_true(json_object_get(json_object_get(rep, "io"), "in_process_fallback"));
}

static void one_run(struct fopts *o, int k, int j, const char *dir)
{
	struct fid_setting *s = &o->t->set[k];
	const struct boot_rec *b = NULL;
	const char *argv[64];
	char store[ORACLE_MAX_ARGS][32], policy[320], frag[PATH_MAX + 16], seed[24],
	    report[PATH_MAX];
	char out[PATH_MAX], why[256], rwhy[96] = "";
	uint64_t sd = o->cfg.seed + (uint64_t)j;
	struct oracle_result r;
	struct oracle_cmd c;
	int n = 0, nb = 0, wl, wargc, rc;
	json_t *rep;
	double npmd;
	char pct[24];

	s->emu.seed[j] = sd;
	s->emu.n = j + 1;
	for (int i = 0; i < s->real.n; i++)
		nb += o->boots[i].snapshot[0] != 0;
	if (!nb) {
		snprintf(s->emu.status[j], sizeof(s->emu.status[j]), "no-snapshot");
		return;
	}
	/* run j from the j-th boot that left a snapshot, cycling */
	for (int i = 0, m = 0; i < s->real.n && !b; i++)
		if (o->boots[i].snapshot[0] && m++ == j % nb)
			b = &o->boots[i];
	policy_of(o, k, policy, sizeof(policy));
	snprintf(frag, sizeof(frag), "snapshot:%s", b->snapshot);
	snprintf(seed, sizeof(seed), "%llu", (unsigned long long)sd);
	oracle_fmt(report, sizeof(report), "%s/run-%d.json", dir, j + 1);
	argv[n++] = o->self;
	argv[n++] = "run";
	argv[n++] = "--policy";
	argv[n++] = policy;
	argv[n++] = "--fragment";
	argv[n++] = frag;
	argv[n++] = "--seed";
	argv[n++] = seed;
	argv[n++] = "--report";
	argv[n++] = report;
	if (file_in_pool(o)) {
		argv[n++] = "--device";
		argv[n++] = "fast";
		argv[n++] = "--fs";
		argv[n++] = "tmpfs";
	}
	argv[n++] = "--";
	wl = n;
	if (o->program) {
		argv[n++] = o->dyn;
	} else {
		argv[n++] = o->wl_dyn;
		argv[n++] = o->cfg.workload;
	}
	if (emu_args(o, b, store, argv + n, &wargc, why, sizeof(why))) {
		snprintf(s->emu.status[j], sizeof(s->emu.status[j]), "bad-arguments");
		snprintf(s->emu.note[j], sizeof(s->emu.note[j]), "%.90s", why);
		return;
	}
	n += wargc;
	argv[n] = NULL;
	if (j == 0 && k == 0) {
		size_t used = 0;

		for (int i = 1; i < n; i++)
			used += (size_t)snprintf(
			    o->t->emu_cmd + used,
			    used < sizeof(o->t->emu_cmd) ? sizeof(o->t->emu_cmd) - used : 0, "%s%s",
			    i > 1 ? " " : "thpemu ",
			    argv[i] == frag	? "snapshot:BOOT.snap"
			    : argv[i] == report ? "RUN.json"
			    : i == wl		? (o->program ? o->dynamic : "thpemu-wl")
						: argv[i]);
	}
	unlink(report);			   /* a reused --keep DIR's: never read as this run's */
	setenv("ORACLE_COUNTERS", "1", 1); /* the phase's counters: thpemu_vmstat() */
	setenv("ORACLE_SEED", seed, 1);
	unsetenv("ORACLE_SNAPSHOT"); /* the pool is the snapshot: none taken under thpemu */
	rc = oracle_cmd_run(argv, NULL, -1, &c);
	oracle_fmt(out, sizeof(out), "%s/run-%d.out", dir, j + 1);
	write_file(out, c.out);
	oracle_result_init(&r);
	if (c.out)
		oracle_result_text(&r, c.out);
	fid_sample_from_result(&r, &s->emu.s[j], o->program);
	rep = load_report(report, rwhy, sizeof(rwhy));
	if (o->program)
		emu_counters(rep, &s->emu.s[j]);
	if (rc == -ENOENT)
		snprintf(s->emu.status[j], sizeof(s->emu.status[j]), "not-started");
	else if (rc || (!o->program && !r.wl_protocol))
		snprintf(s->emu.status[j], sizeof(s->emu.status[j]), "run-failed");
	else if (!rep) /* a run that ended well always writes it: its values would be missing */
		snprintf(s->emu.status[j], sizeof(s->emu.status[j]), "no-report");
	else if (file_in_pool(o) && device_fell_back(rep))
		snprintf(s->emu.status[j], sizeof(s->emu.status[j]), "device-fallback");
	else
		snprintf(s->emu.status[j], sizeof(s->emu.status[j]), "ok");
	if (!strcmp(s->emu.status[j], "device-fallback"))
		snprintf(s->emu.note[j], sizeof(s->emu.note[j]),
			 "no FUSE device: the workload's file was not in the pool");
	else if (!strcmp(s->emu.status[j], "no-report"))
		snprintf(s->emu.note[j], sizeof(s->emu.note[j]), "%s", rwhy);
	else if (strcmp(s->emu.status[j], "ok"))
		snprintf(s->emu.note[j], sizeof(s->emu.note[j]), "%.80s",
			 c.err[0] ? oracle_cmd_why(&c) : "no ORACLE lines");
	npmd = huge_not_pmd(rep);
	json_decref(rep);
	if (!s->emu.note[j][0] && npmd > 0)
		snprintf(s->emu.note[j], sizeof(s->emu.note[j]),
			 "%.0f huge decisions the host mapped with 4 KiB pages (final %% is "
			 "the host's)",
			 npmd);
	if (!o->quiet)
		fprintf(stderr, "fidelity: %s: thpemu run %d/%d seed %llu: %s, huge %s\n", s->name,
			j + 1, o->runs, (unsigned long long)sd, s->emu.status[j],
			pct_word(&s->emu.s[j], pct, sizeof(pct)));
	oracle_result_free(&r);
	oracle_cmd_free(&c);
}

static int run_emu(struct fopts *o, int k, char *err, size_t errlen)
{
	char dir[PATH_MAX];

	oracle_fmt(dir, sizeof(dir), "%s/%d-%s/thpemu", o->dir, k + 1, o->defrag[k]);
	if (oracle_mkdir_p(dir, 0700)) {
		oracle_fmt(err, errlen, "'%s': %s", dir, strerror(errno));
		return -EIO;
	}
	for (int j = 0; j < o->runs && !interrupted; j++)
		one_run(o, k, j, dir);
	return interrupted ? -EINTR : 0;
}

/* ---- the command ---------------------------------------------------------------------------
 */

static int prepare_dir(struct fopts *o)
{
	const char *tmp = getenv("TMPDIR");

	if (o->keep) {
		snprintf(o->dir, sizeof(o->dir), "%s", o->keep);
		return 0;
	}
	snprintf(o->dir, sizeof(o->dir), "%s/thpemu-fidelity.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(o->dir)) {
		prog_error(CMD, "a work directory in '%s': %s", tmp && *tmp ? tmp : "/tmp",
			   strerror(errno));
		return -1;
	}
	o->made_dir = true;
	return 0;
}

static bool all_ok(const struct fid_table *t)
{
	for (int k = 0; k < t->nset; k++) {
		const struct fid_setting *s = &t->set[k];

		for (int i = 0; i < s->real.n; i++)
			if (strcmp(s->real.status[i], "ok") || s->real.note[i][0])
				return false;
		for (int i = 0; i < s->emu.n; i++)
			if (strcmp(s->emu.status[i], "ok"))
				return false;
		if (!s->real.n || !s->emu.n)
			return false;
	}
	return true;
}

static void describe(struct fopts *o, int argc, char **argv)
{
	struct fid_table *t = o->t;
	size_t used = 0;

	for (int i = 0; i < argc && used < sizeof(t->command); i++)
		used += (size_t)snprintf(t->command + used, sizeof(t->command) - used, "%s%s",
					 i ? " " : "thpemu ", argv[i]);
	used = 0;
	snprintf(t->mode, sizeof(t->mode), "%s", o->cfg.pinned ? "pinned" : "free");
	snprintf(t->at, sizeof(t->at), "%s", o->at);
	t->mem_bytes = o->cfg.mem;
	used = (size_t)snprintf(t->workload, sizeof(t->workload), "%s%s",
				o->program ? "" : "thpemu-wl ", o->cfg.workload);
	for (int i = 0; i < o->cfg.nargs && used < sizeof(t->workload); i++)
		used += (size_t)snprintf(t->workload + used, sizeof(t->workload) - used, " %s",
					 o->cfg.args[i]);
	t->nset = o->nset;
	for (int k = 0; k < o->nset; k++) {
		snprintf(t->set[k].name, sizeof(t->set[k].name), "enabled=%s defrag=%s", o->enabled,
			 o->defrag[k]);
		policy_of(o, k, t->set[k].policy, sizeof(t->set[k].policy));
	}
}

static int fidelity_main(int argc, char **argv)
{
	struct fopts *o = calloc(1, sizeof(*o));
	struct cli_output *out = NULL, *hout = NULL;
	struct sigaction sa = {.sa_handler = on_signal};
	struct mm_policy pol;
	char err[1024], policy[320];
	int rc = 0;

	if (!o)
		return 1;
	o->t = calloc(1, sizeof(*o->t));
	if (!o->t) {
		free(o);
		return 1;
	}
	o->cfg = (struct oracle_run_cfg){.kernel = "6.12",
					 .mem = 512ULL << 20,
					 .smp = 2,
					 .accel = "auto",
					 .boots = 3,
					 .seed = 1,
					 .timeout_ns = 600 * 1000000000ULL,
					 .qemu = "qemu-system-x86_64",
					 .busybox = "/bin/busybox"};
	o->boot = (struct oracle_boot_opts){.cmd = CMD,
					    .cfg = &o->cfg,
					    .mem_min = 256ULL << 20,
					    .mem_max = 4ULL << 30,
					    .boots_max = FID_MAX_SAMPLES,
					    .series_only = true};
	oracle_settings_init(&o->cfg.settings);
	o->enabled = "always";
	o->at = "phase";
	parse_defrag(o, "always,madvise,defer,never");
	for (int i = 1; i < argc; i++)
		if (option(o, argc, argv, &i)) {
			o->cfg.args = (const char *const *)argv + i + 1;
			o->cfg.nargs = argc - i - 1;
			if (o->cfg.nargs && !strcmp(argv[i + 1], "--")) {
				o->cfg.args++;
				o->cfg.nargs--;
			}
			break;
		}
	if (oracle_settings_set(&o->cfg.settings, "enabled", o->enabled, ORACLE_ORIGIN_USER, err,
				sizeof(err)))
		prog_usage_error(CMD, "--enabled: %s", err);
	oracle_settings_init(&o->cfg.settings); /* each setting's are made per run */
	o->cfg.pinned = !o->boot.mode || !strcmp(o->boot.mode, "pinned");
	if (o->cfg.disk_bps && !o->cfg.disk)
		prog_usage_error(CMD, "--disk-write-rate needs --disk");
	if (!o->runs)
		o->runs = o->cfg.boots;
	for (int k = 0; k < o->nset; k++) {
		policy_of(o, k, policy, sizeof(policy));
		if (policy_parse(policy, &pol, err, sizeof(err)))
			prog_usage_error(CMD, "thpemu has no policy for enabled=%s defrag=%s: %s",
					 o->enabled, o->defrag[k], err);
	}
	check_workload(o);
	if (o->real_from)
		check_real_from(o);
	cli_distinct_paths(CMD, "--json", o->json, "--html", o->html);
	if (o->check) { /* the options are good: nothing opened, nothing run */
		free(o->t);
		free(o);
		return 0;
	}
	if (o->keep)
		cli_output_dir(CMD, "--keep", o->keep);
	if (o->json)
		out = cli_output_open(CMD, "--json", o->json);
	if (o->html)
		hout = cli_output_open(CMD, "--html", o->html);
	check_tools(o);
	if (oracle_cache_dir(o->boot.cache, o->cache, sizeof(o->cache), err, sizeof(err))) {
		prog_error(CMD, "%s", err);
		return 1;
	}
	o->cfg.cache = o->cache;
	if (prepare_dir(o) || (o->keep && !o->real_from && write_real_record(o)))
		return 1;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	cli_sigpipe_ignore();
	describe(o, argc, argv);
	for (int k = 0; k < o->nset && !rc; k++) {
		rc = o->real_from ? replay_real(o, k, err, sizeof(err))
				  : run_real(o, k, err, sizeof(err));
		if (!rc)
			rc = run_emu(o, k, err, sizeof(err));
	}
	if (rc == -EINTR || interrupted)
		prog_error(CMD, "interrupted: the table holds what ran");
	else if (rc < 0)
		prog_error(CMD, "%s", err);
	if (!o->t->kernel[0])
		snprintf(o->t->kernel, sizeof(o->t->kernel), "%s", o->cfg.kernel);
	fid_build(o->t);
	fid_text(stdout, o->t);
	if (out) {
		struct json_w w;

		jw_init(&w, cli_output_stream(out), true);
		fid_json(&w, o->t);
		if (jw_finish(&w) || cli_output_close(out))
			rc = rc ? rc : 1;
	}
	if (hout) {
		fid_html(cli_output_stream(hout), o->t);
		if (cli_output_close(hout))
			rc = rc ? rc : 1;
	}
	rc = rc || !all_ok(o->t) ? 1 : 0;
	if (o->made_dir)
		oracle_rm_rf(o->dir);
	free(o->t);
	free(o);
	return cli_stdout_end(rc);
}

CLI_COMMAND(fidelity, "fidelity",
	    "thpemu's emulated kernel against a real one: same workload, same starting memory",
	    fidelity_main)

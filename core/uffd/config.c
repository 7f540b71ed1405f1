/* The THPEMU_* configuration: one table that the preload library parses, `thpemu run` maps its
 * options onto, and `thpemu run --help` and core/uffd/README.md list.
 *
 * Parsing never allocates (the library parses in its constructor, which an allocator's own
 * initialisation can precede) and reports a bad value in one line naming the variable or the
 * option and what is accepted.
 */
#include "uffd/uffd.h"

#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "util/text.h"
#include "util/units.h"

static const char *const bool_words[] = {"0", "1", "no", "yes", "false", "true", "off", "on", NULL};
static const char *const alloc_words[] = {"jemalloc", "none", NULL};
static const char *const log_words[] = {"quiet", "warn", "info", "debug", NULL};
static const char *const auto_words[] = {"auto", NULL};

const struct uffd_opt uffd_opts[] = {
    {"THPEMU_POLICY", "--policy", "P", UOPT_POLICY, "modern-always",
     "a profile (linux-3.1, linux-3.1+nostall, linux-3.3, modern-always, modern-defer, "
     "modern-defer+madvise, modern-madvise, modern-never) or PROFILE:KEY=VALUE,...",
     "emulated kernel THP/compaction policy", 0, 0, NULL, 0},
    /* the limits are core/mm's (MM_POOL_MIN, MM_POOL_MAX in mm/pool.c: mm_create refuses any
     * other size), so `thpemu run` refuses what the library would; tests/unit/uffd_config.c
     * checks that they agree */
    {"THPEMU_POOL", "--pool", "SIZE", UOPT_SIZE, "1G", "a size from 8M to 64G, e.g. 512M or 4G",
     "emulated physical memory (the program's managed memory is accounted in it)", 8 << 20,
     64ULL << 30, NULL, 0},
    {"THPEMU_STALL_THRESHOLD", "--stall-threshold", "DUR", UOPT_DURATION, "1s",
     "a duration such as 100ms or 1s",
     "a fault served slower than this is a stall (counted and reported)", 0, 0, NULL, 0},
    {"THPEMU_ALLOCATOR", "--allocator", "A", UOPT_ENUM, "jemalloc", "jemalloc or none",
     "allocator `thpemu run` preloads after the library (glibc malloc never reaches mmap)", 0, 0,
     alloc_words, UOPT_LAUNCHER},
    {"THPEMU_HANDLERS", "--handlers", "N", UOPT_UINT, "auto", "auto or 1..64",
     "fault handler threads (auto: CPUs + 2, at least 3, at most 16)", 1, UFFD_MAX_HANDLERS,
     auto_words, 0},
    {"THPEMU_MIN_REGION", "--min-region", "SIZE", UOPT_SIZE, "256K",
     "a size of at least 4K, e.g. 64K or 2M",
     "smallest private anonymous mapping managed (below 2M: 4 KiB faults only)", 4096, 1ULL << 40,
     NULL, 0},
    {"THPEMU_STAGING", "--staging", "N", UOPT_UINT, "8", "1..64",
     "prefaulted host THPs kept ready for huge faults", 1, 64, NULL, 0},
    {"THPEMU_FRAGMENT", "--fragment", "RECIPE", UOPT_RECIPE, "",
     "a recipe such as thpcompact or pagecache:60%,unmovable:0.5% (see thpemu sim --help)",
     "initial pool state (fragmentation recipe, core/mm)", 0, 0, NULL, 0},
    {"THPEMU_SEED", "--seed", "N", UOPT_UINT, "1", "a non-negative integer",
     "seed of the fragmentation recipe, the device model and the data the dirtier writes", 0,
     UINT64_MAX, NULL, 0},
    {"THPEMU_LOG", "--log", "LEVEL", UOPT_ENUM, "warn", "quiet, warn, info or debug",
     "what the library prints on stderr", 0, 0, log_words, 0},
    {"THPEMU_HOST_THP", "--host-thp", "BOOL", UOPT_BOOL, "1", "0/1, no/yes, false/true, off/on",
     "back huge decisions with real host THPs (0: 512 small pages, as on a host without THP)", 0,
     0, bool_words, 0},
    {"THPEMU_DISABLE", NULL, "BOOL", UOPT_BOOL, "0", "0/1, no/yes, false/true, off/on",
     "run the program unmanaged (calls pass straight through)", 0, 0, bool_words, 0},
    {"THPEMU_REPORT", NULL, "FILE", UOPT_PATH, "", "a file path (%p expands to the pid)",
     "write this process's JSON report there at exit (without `thpemu run`)", 0, 0, NULL, 0},
    {"THPEMU_TRACE", "--trace", "FILE", UOPT_PATH, "", "a file path (%p expands to the pid)",
     "record every fault and change to managed memory in FILE (binary, core/obs/trace.h), for "
     "thpemu sim --replay and thpemu replay; with thpemu run, processes other than the one it "
     "started write FILE.PID",
     0, 0, NULL, 0},
    {"THPEMU_RUN_DIR", NULL, "DIR", UOPT_PATH, "", "a directory",
     "set by `thpemu run`: each process keeps its live statistics in DIR/PID.stats", 0, 0, NULL,
     UOPT_INTERNAL},
    {"THPEMU_DEVICE", "--device", "DEV", UOPT_DEVICE, "",
     "none, a preset (usb2-stick-2011, sd-class4, ... see thpemu run --help) or a directory, "
     "each optionally followed by :KEY=VALUE,...",
     "slow device the page cache writes back to (thpemu run mounts thpemu-fusedev for a "
     "preset; none: an in-process device model)",
     0, 0, NULL, UOPT_LAUNCHER},
    {"THPEMU_DIRTY", "--dirty", "SPEC", UOPT_DIRTY, "",
     "SIZE or stream, then file=SIZE, rate=RATE, fsync=none|each|end, delete-after, read, "
     "dirty-ratio=PCT, background-ratio=PCT, start=DUR (see thpemu run --help)",
     "files a thread of the program's process streams through the emulated page cache (cp "
     "or rsync to a stick)",
     0, 0, NULL, 0},
    {"THPEMU_DEVICE_DIR", NULL, "DIR", UOPT_PATH, "", "a directory",
     "set by `thpemu run`: where the device of THPEMU_DEVICE is mounted", 0, 0, NULL,
     UOPT_INTERNAL},
    {"THPEMU_TEST_MIGRATE_GAP", NULL, "DUR", UOPT_DURATION, "0", "a duration such as 200us",
     "tests only: keep each migrated page out of the program's mapping this much longer (widens "
     "the window a fork must never see)",
     0, 0, NULL, UOPT_INTERNAL},
    {"THPEMU_IO_PID", NULL, "PID", UOPT_UINT, "0", "a process id",
     "set by `thpemu run` (or the first process): only this process runs the dirtier and "
     "writeback",
     0, UINT32_MAX, NULL, UOPT_INTERNAL},
};
const unsigned uffd_nopts = sizeof(uffd_opts) / sizeof(uffd_opts[0]);

unsigned uffd_handlers_auto(void)
{
	cpu_set_t set;
	int n = 2;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		n = CPU_COUNT(&set);
	n += 2;
	return n < 3 ? 3 : n > 16 ? 16 : (unsigned)n;
}

static int word_index(const char *const *words, const char *v)
{
	for (int i = 0; words && words[i]; i++)
		if (strcmp(words[i], v) == 0)
			return i;
	return -1;
}

/* The value as it may be echoed in a one-line message (util/text.h): escaped, cut if long. */
#define ESC_VAL 512

static int bad(const struct uffd_opt *o, const char *name, const char *val, const char *why,
	       char *err, size_t errlen)
{
	char v[ESC_VAL];

	text_escape(val, v, sizeof(v));
	if (name[0] == '-')
		snprintf(err, errlen, "%s: '%s' %s (accepted: %s)", name, v, why, o->accepted);
	else
		snprintf(err, errlen, "%s='%s' %s (accepted: %s)", name, v, why, o->accepted);
	return -EINVAL;
}

/* "NAME: 'VALUE': WHY" (or NAME='VALUE': WHY) with a reason from mm or io, which may quote parts
 * of the value: both escaped. */
static int bad_because(const char *name, const char *val, const char *why, char *err, size_t errlen)
{
	char v[ESC_VAL], w[ESC_VAL];

	snprintf(err, errlen, "%s%s'%s': %s", name, name[0] == '-' ? ": " : "=",
		 text_escape(val, v, sizeof(v)), text_escape(why, w, sizeof(w)));
	return -EINVAL;
}

static int copy_path(char *dst, size_t len, const struct uffd_opt *o, const char *name,
		     const char *val, char *err, size_t errlen)
{
	if (strlen(val) >= len)
		return bad(o, name, val, "is too long", err, errlen);
	strcpy(dst, val);
	return 0;
}

static int parse_uint(const struct uffd_opt *o, const char *name, const char *val, uint64_t *out,
		      char *err, size_t errlen)
{
	if (word_index(o->choices, val) == 0) {
		*out = 0; /* "auto" */
		return 0;
	}
	if (!val[0] || strspn(val, "0123456789") != strlen(val))
		return bad(o, name, val, "is not a non-negative integer", err, errlen);
	if (units_parse_uint(val, o->max, out) < 0 || *out < o->min)
		return bad(o, name, val, "is out of range", err, errlen);
	return 0;
}

/* The field of cfg an option fills (by variable name: the table stays plain data). */
static int store(const struct uffd_opt *o, const char *name, const char *val, uint64_t num,
		 int word, struct uffd_config *cfg, char *err, size_t errlen)
{
	const char *e = o->env + 7; /* past "THPEMU_" */

	if (!strcmp(e, "POOL"))
		cfg->pool_bytes = num;
	else if (!strcmp(e, "STALL_THRESHOLD"))
		cfg->stall_threshold_ns = num;
	else if (!strcmp(e, "ALLOCATOR"))
		cfg->allocator = (enum uffd_allocator)word;
	else if (!strcmp(e, "HANDLERS"))
		cfg->handlers = (unsigned)num;
	else if (!strcmp(e, "MIN_REGION"))
		cfg->min_region = num;
	else if (!strcmp(e, "STAGING"))
		cfg->staging = (unsigned)num;
	else if (!strcmp(e, "SEED"))
		cfg->seed = num;
	else if (!strcmp(e, "LOG"))
		cfg->log = (enum uffd_log_level)word;
	else if (!strcmp(e, "DISABLE"))
		cfg->disable = word & 1;
	else if (!strcmp(e, "HOST_THP"))
		cfg->host_thp = word & 1;
	else if (!strcmp(e, "FRAGMENT"))
		return copy_path(cfg->fragment, sizeof(cfg->fragment), o, name, val, err, errlen);
	else if (!strcmp(e, "REPORT"))
		return copy_path(cfg->report, sizeof(cfg->report), o, name, val, err, errlen);
	else if (!strcmp(e, "TRACE"))
		return copy_path(cfg->trace, sizeof(cfg->trace), o, name, val, err, errlen);
	else if (!strcmp(e, "RUN_DIR"))
		return copy_path(cfg->run_dir, sizeof(cfg->run_dir), o, name, val, err, errlen);
	else if (!strcmp(e, "DEVICE_DIR"))
		return copy_path(cfg->device_dir, sizeof(cfg->device_dir), o, name, val, err, errlen);
	else if (!strcmp(e, "IO_PID"))
		cfg->io_pid = num;
	else if (!strcmp(e, "TEST_MIGRATE_GAP"))
		cfg->test_migrate_gap_ns = num;
	return 0;
}

static int parse_policy(const struct uffd_opt *o, const char *name, const char *val,
			struct uffd_config *cfg, char *err, size_t errlen)
{
	char why[200];

	if (strlen(val) >= sizeof(cfg->policy_spec))
		return bad(o, name, val, "is too long", err, errlen);
	if (mm_policy_parse(val, &cfg->policy, why, sizeof(why)) < 0) /* names the bad part */
		return bad_because(name, val, why, err, errlen);
	strcpy(cfg->policy_spec, val);
	return 0;
}

/* --device / --dirty: the io module's parsers name the bad item and what they accept. */
static int parse_io(const struct uffd_opt *o, const char *name, const char *val,
		    struct uffd_config *cfg, char *err, size_t errlen)
{
	bool dev = o->type == UOPT_DEVICE;
	char *dst = dev ? cfg->device_spec : cfg->dirty_spec;
	char why[400];
	int rc;

	if (strlen(val) >= sizeof(cfg->device_spec))
		return bad(o, name, val, "is too long", err, errlen);
	rc = dev ? io_device_parse(val, &cfg->device, why, sizeof(why))
		 : io_dirty_parse(val, &cfg->dirty, why, sizeof(why));
	if (rc < 0) {
		bad_because(name, val, why, err, errlen);
		return rc;
	}
	strcpy(dst, val);
	return 0;
}

int uffd_opt_parse(const struct uffd_opt *o, const char *name, const char *val,
		   struct uffd_config *cfg, char *err, size_t errlen)
{
	uint64_t num = 0;
	int word = -1, rc = 0;

	if (!name)
		name = o->env;
	switch (o->type) {
	case UOPT_POLICY:
		return parse_policy(o, name, val, cfg, err, errlen);
	case UOPT_DEVICE:
	case UOPT_DIRTY:
		return parse_io(o, name, val, cfg, err, errlen);
	case UOPT_SIZE:
		if (units_parse_size(val, &num) < 0)
			return bad(o, name, val, "is not a size", err, errlen);
		if (num < o->min || num > o->max)
			return bad(o, name, val, "is out of range", err, errlen);
		break;
	case UOPT_DURATION:
		if (units_parse_duration(val, &num) < 0)
			return bad(o, name, val, "is not a duration", err, errlen);
		break;
	case UOPT_UINT:
		rc = parse_uint(o, name, val, &num, err, errlen);
		break;
	case UOPT_ENUM:
	case UOPT_BOOL:
		word = word_index(o->choices, val);
		if (word < 0)
			return bad(o, name, val, "is not accepted", err, errlen);
		break;
	case UOPT_RECIPE:
	case UOPT_PATH:
		break;
	}
	if (rc < 0)
		return rc;
	return store(o, name, val, num, word, cfg, err, errlen);
}

void uffd_config_defaults(struct uffd_config *cfg)
{
	char err[256];

	memset(cfg, 0, sizeof(*cfg));
	for (unsigned i = 0; i < uffd_nopts; i++)
		if (uffd_opts[i].def[0])
			uffd_opt_parse(&uffd_opts[i], NULL, uffd_opts[i].def, cfg, err,
				       sizeof(err));
}

int uffd_config_from_env(struct uffd_config *cfg, char *err, size_t errlen)
{
	uffd_config_defaults(cfg);
	for (unsigned i = 0; i < uffd_nopts; i++) {
		const char *v = getenv(uffd_opts[i].env);
		int rc;

		if (!v ||
		    (!v[0] && uffd_opts[i].type != UOPT_RECIPE && uffd_opts[i].type != UOPT_PATH))
			continue;
		rc = uffd_opt_parse(&uffd_opts[i], NULL, v, cfg, err, errlen);
		if (rc < 0)
			return rc;
	}
	return 0;
}

const struct uffd_opt *uffd_opt_by_cli(const char *cli)
{
	for (unsigned i = 0; i < uffd_nopts; i++)
		if (uffd_opts[i].cli && strcmp(uffd_opts[i].cli, cli) == 0)
			return &uffd_opts[i];
	return NULL;
}

const struct uffd_opt *uffd_opt_by_env(const char *env)
{
	for (unsigned i = 0; i < uffd_nopts; i++)
		if (strcmp(uffd_opts[i].env, env) == 0)
			return &uffd_opts[i];
	return NULL;
}

void uffd_opts_help(FILE *f, bool markdown)
{
	if (markdown)
		fprintf(f, "| Variable | `thpemu run` | Default | Accepted | Meaning |\n"
			   "|---|---|---|---|---|\n");
	for (unsigned i = 0; i < uffd_nopts; i++) {
		const struct uffd_opt *o = &uffd_opts[i];

		if (o->flags & UOPT_INTERNAL && !markdown)
			continue;
		if (markdown) {
			fprintf(f, "| `%s` | %s%s%s | `%s` | %s | %s |\n", o->env,
				o->cli ? "`" : "", o->cli ? o->cli : "", o->cli ? "`" : "",
				o->def[0] ? o->def : "(none)", o->accepted, o->help);
			continue;
		}
		fprintf(f, "  %-24s %-22s %s", o->env, o->cli ? o->cli : "", o->help);
		if (o->def[0])
			fprintf(f, " [%s]", o->def);
		fputc('\n', f);
	}
}

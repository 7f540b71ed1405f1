/* The THPEMU_* configuration: one table, read by the preload library (core/preload), mapped onto
 * `thpemu run`'s options and `thpemu ab`'s SPEC keys (core/cli), and printed by
 * `thpemu run --help` and as the Markdown table of core/live/README.md.
 *
 * Every option is written once, in CONFIG_OPTIONS below: its variable (THPEMU_ + the id), its
 * `thpemu run` option, the parser of its value, the field of struct config it fills, its
 * default and its help. Parsing, the lookups, the help and the README table are all derived
 * from that one line; options.c checks at compile time that each field has the type its parser
 * writes, so an option cannot be parsed into nothing or into the wrong place.
 *
 * Parsing never allocates (the library parses in its constructor, which an allocator's own
 * initialisation can precede) and reports a bad value in one line naming the variable or the
 * option and what is accepted.
 */
#ifndef THPEMU_CONFIG_H
#define THPEMU_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "io/io.h"
#include "mm/mm_policy.h"
#include "policy/policy.h" /* THPEMU_POLICY is policy_parse's */

#define CONFIG_MAX_HANDLERS 64

enum config_log_level { CONFIG_LOG_QUIET, CONFIG_LOG_WARN, CONFIG_LOG_INFO, CONFIG_LOG_DEBUG };
enum config_allocator { CONFIG_ALLOC_JEMALLOC, CONFIG_ALLOC_NONE };
enum config_host_fault { CONFIG_HOST_FAULT_THP, CONFIG_HOST_FAULT_PTE };

struct config {
	bool disable;  /* THPEMU_DISABLE: run the program unmanaged */
	bool host_thp; /* THPEMU_HOST_THP: stage real THPs (0: 4 KiB pages only) */
	/* THPEMU_ZERO_PAGE: a read first touch maps a zero page and takes no frame (its first
	 * write is a fault of its own, seen through write-protect) */
	bool zero_page;
	/* THPEMU_HOST_FAULT: the host's own path for a first touch (thp or pte) */
	enum config_host_fault host_fault;
	char policy_spec[160];	 /* as given (validated by mm_policy_parse) */
	struct mm_policy policy; /* parsed */
	char fs[8]; /* THPEMU_FS: vfat, ext4 or tmpfs, sets policy.fs ("" = the policy's) */
	char policy_plugin[192]; /* THPEMU_POLICY_PLUGIN: the plugin when the policy names none
				  * (config_plugin) */
	uint64_t pool_bytes;	 /* emulated physical memory */
	bool pool_given;	 /* --pool or THPEMU_POOL given: a snapshot's size does not apply */
	uint64_t stall_threshold_ns; /* a fault served slower than this is a stall; a single wait
				      * that long a per-wait stall event */
	enum config_allocator allocator; /* what `thpemu run` preloads (recorded in the report) */
	unsigned handlers;		 /* handler threads; 0 = auto (uffd_handlers_auto()) */
	uint64_t spin_ns;    /* an idle handler polls the userfaultfd this long before sleeping */
	uint64_t min_region; /* smallest mapping managed */
	unsigned staging;    /* prefaulted host THPs kept ready */
	char fragment[256];  /* mm_fragment recipe applied at start ("" = none) */
	uint64_t seed;	     /* recipe seed */
	enum config_log_level log;
	char report[512];  /* THPEMU_REPORT: per-process JSON written at exit ("" = none);
			    * "%p" expands to the pid */
	char run_dir[512]; /* THPEMU_RUN_DIR: set by `thpemu run`: stats files go there */
	char trace[512];   /* THPEMU_TRACE: fault trace file ("" = none); "%p" = the pid */
	/* io (core/io): the slow device and the dirtier, in the top-level process only */
	char device_spec[256];	      /* THPEMU_DEVICE as given ("" = none configured) */
	struct io_device_spec device; /* parsed */
	char dirty_spec[256];	      /* THPEMU_DIRTY as given ("" = no dirtier) */
	struct io_dirty_spec dirty;   /* parsed */
	char device_dir[512]; /* THPEMU_DEVICE_DIR: set by `thpemu run`: the mounted device */
	uint64_t io_pid;      /* THPEMU_IO_PID: the process that runs io (0 = this one) */
	char machine[64];     /* THPEMU_MACHINE: the shared machine to join ("" = a pool of its
			       * own); core/machine's rendezvous, "HOSTPID:FD" */
	uint64_t
	    test_migrate_gap_ns; /* THPEMU_TEST_MIGRATE_GAP: tests widen the migration window */
};

#define CONFIG_LAUNCHER 0x1 /* interpreted by `thpemu run` itself, recorded by the library */
#define CONFIG_INTERNAL 0x2 /* set by `thpemu run` for its children; not a user option */

/* The options, in the order of --help and the README table. One line each:
 *
 *   X(ID, CLI, METAVAR, PARSER, FIELD, DEFAULT, MIN, MAX, WORDS, FLAGS, ACCEPTED, HELP)
 *
 * ID       the variable is THPEMU_<ID>; config_opts[CONFIG_<ID>] is its entry
 * CLI      `thpemu run`'s option (and `thpemu ab`'s SPEC key without the dashes), or NULL
 * PARSER   size, duration, uint, words (one of WORDS), bool, policy, fs, plugin, recipe, path,
 *          device, dirty, rendezvous (options.c: the value's syntax and what is stored in FIELD)
 * FIELD    the member of struct config it fills (policy, device and dirty: the spec as given;
 *          the parsed form goes to policy, device and dirty)
 * DEFAULT  as text, parsed like any value ("" for none)
 * MIN, MAX bounds of size and uint values
 * WORDS    the accepted words of words and bool, or uint's word for 0 ("auto"); else NULL
 * ACCEPTED what is accepted, for the one-line error
 */
/* clang-format off */
#define CONFIG_OPTIONS(X)                                                                          \
	X(POLICY, "--policy", "P", policy, policy_spec, "modern-always", 0, 0, NULL, 0,            \
	  "a profile (linux-3.1, linux-3.1+nostall, linux-3.3, modern-always, modern-defer, "     \
	  "modern-defer+madvise, modern-madvise, modern-never) or PROFILE:KEY=VALUE,...",          \
	  "emulated kernel THP/compaction policy")                                                 \
	/* after POLICY: config_from_env applies the table in order, and parse_policy re-applies  \
	 * a given fs to a policy parsed later (--fs ext4 --policy P) */                          \
	X(FS, "--fs", "FS", fs, fs, "", 0, 0, NULL, 0, "vfat, ext4 or tmpfs",                     \
	  "file system of the slow device's files, the policy key fs (default: the policy's, vfat "\
	  "in every profile, what a 2011 USB stick carried): vfat has no ->migratepage, so sync "  \
	  "migration writes dirty pages out; ext4 migrates them (buffer_migrate_page) and its "    \
	  "delalloc ->writepage writes nothing from reclaim; tmpfs (without swap) never dirties "  \
	  "nor writes a page back, never reclaims one, and migrates it in any mode")              \
	X(POLICY_PLUGIN, "--policy-plugin", "FILE.so", plugin, policy_plugin, "", 0, 0, NULL, 0,   \
	  "a shared object's path, or the NAME of an installed plugin (e.g. mthp_under_frag), "    \
	  "optionally followed by ?ARGS",                                                          \
	  "THP policy plugin (thpemu_policy.h) choosing each fault's orders, when the policy "     \
	  "names none with its key plugin=PATH")                                                   \
	/* the limits are core/mm's (MM_POOL_MIN, MM_POOL_MAX in mm/pool.c: mm_create refuses any  \
	 * other size), so `thpemu run` refuses what the library would; tests/unit/config_options.c\
	 * checks that they agree */                                                               \
	X(POOL, "--pool", "SIZE", size, pool_bytes, "1G", 8 << 20, 64ULL << 30, NULL, 0,          \
	  "a size from 8M to 64G, e.g. 512M or 4G",                                                \
	  "emulated physical memory (the program's managed memory is accounted in it)")            \
	X(STALL_THRESHOLD, "--stall-threshold", "DUR", duration, stall_threshold_ns, "1s", 0, 0,   \
	  NULL, 0, "a duration such as 100ms or 1s",                                               \
	  "a fault served slower than this is a stall, a single wait that long a per-wait stall "   \
	  "event (both counted and reported)")                     \
	X(ALLOCATOR, "--allocator", "A", words, allocator, "jemalloc", 0, 0, config_alloc_words,   \
	  CONFIG_LAUNCHER, "jemalloc or none",                                                     \
	  "allocator `thpemu run` preloads after the library (glibc malloc never reaches mmap); "  \
	  "jemalloc: libthpemu-jemalloc.so, jemalloc without its C++ part, else Debian's "         \
	  "libjemalloc.so.2")                                                                      \
	X(HANDLERS, "--handlers", "N", uint, handlers, "auto", 1, CONFIG_MAX_HANDLERS,             \
	  config_auto_words, 0, "auto or 1..64",                                                   \
	  "fault handler threads at most, made as faults overlap (auto: CPUs + 2, 3..16)")         \
	X(SPIN, "--spin", "DUR", duration, spin_ns, "0", 0, 0, NULL, 0,                            \
	  "a duration such as 50us (0: never)",                                                    \
	  "the listening handler polls the userfaultfd this long before it sleeps: fewer "        \
	  "handler wake-ups (faster first touches where a CPU is spare), for a CPU's worth of "    \
	  "polling")                                                                               \
	X(MIN_REGION, "--min-region", "SIZE", size, min_region, "256K", 4096, 1ULL << 40, NULL, 0, \
	  "a size of at least 4K, e.g. 64K or 2M",                                                 \
	  "smallest private anonymous mapping managed (below 2M: 4 KiB faults only)")              \
	X(STAGING, "--staging", "N", uint, staging, "8", 1, 64, NULL, 0, "1..64",                  \
	  "prefaulted host THPs kept ready for huge faults")                                       \
	X(FRAGMENT, "--fragment", "RECIPE", recipe, fragment, "", 0, 0, NULL, 0,                   \
	  "a recipe such as thpcompact or pagecache:60%,unmovable:0.5% (see thpemu sim --help), "  \
	  "or snapshot:FILE (thpemu snapshot)",                                                    \
	  "initial pool state (fragmentation recipe, core/mm), or a snapshot of a real machine's " \
	  "memory (core/snapshot: the pool is its zone's size unless --pool is given)")            \
	X(SEED, "--seed", "N", uint, seed, "1", 0, UINT64_MAX, NULL, 0, "a non-negative integer",  \
	  "seed of the fragmentation recipe, the device model and the data the dirtier writes")    \
	X(LOG, "--log", "LEVEL", words, log, "warn", 0, 0, config_log_words, 0,                    \
	  "quiet, warn, info or debug", "what the library prints on stderr")                       \
	X(HOST_THP, "--host-thp", "BOOL", bool, host_thp, "1", 0, 0, config_bool_words, 0,         \
	  "0/1, no/yes, false/true, off/on",                                                       \
	  "back huge decisions with real host THPs (0: 512 small pages, as on a host without THP)")\
	X(ZERO_PAGE, "--zero-page", "BOOL", bool, zero_page, "1", 0, 0, config_bool_words, 0,      \
	  "0/1, no/yes, false/true, off/on",                                                       \
	  "a read first touch maps the zero page (the huge zero page where a THP could go, 6.x) "  \
	  "and takes no frame until the page is written, as the kernel does; the write is seen "   \
	  "through userfaultfd write-protect (0: a read is decided and accounted as a write)")     \
	X(HOST_FAULT, "--host-fault", "MODE", words, host_fault, "thp", 0, 0,                      \
	  config_host_fault_words, 0, "thp or pte",                                                \
	  "the host's path for a first touch of managed memory: thp (host VMA MADV_HUGEPAGE: a "   \
	  "first write has the host clear a 2 MiB folio it then discards) or pte "                 \
	  "(MADV_NOHUGEPAGE: no such clear; the empty page table is freed before a huge move, "    \
	  "CONFIG_PT_RECLAIM): faster 2 MiB faults")                                               \
	X(DISABLE, NULL, "BOOL", bool, disable, "0", 0, 0, config_bool_words, 0,                   \
	  "0/1, no/yes, false/true, off/on",                                                       \
	  "run the program unmanaged (calls pass straight through)")                               \
	X(REPORT, NULL, "FILE", path, report, "", 0, 0, NULL, 0,                                   \
	  "a file path (%p expands to the pid)",                                                   \
	  "write this process's JSON report there at exit (without `thpemu run`)")                 \
	X(TRACE, "--trace", "FILE", path, trace, "", 0, 0, NULL, 0,                                \
	  "a file path (%p expands to the pid)",                                                   \
	  "record every fault and change to managed memory in FILE (binary, core/obs/trace.h), "  \
	  "for thpemu sim --replay and thpemu replay; with thpemu run, processes other than the "  \
	  "one it started write FILE.PID")                                                         \
	X(RUN_DIR, NULL, "DIR", path, run_dir, "", 0, 0, NULL, CONFIG_INTERNAL, "a directory",     \
	  "set by `thpemu run`: each process keeps its live statistics in DIR/PID.stats")          \
	X(DEVICE, "--device", "DEV", device, device_spec, "", 0, 0, NULL, CONFIG_LAUNCHER,         \
	  "none, a preset (usb2-stick-2011, sd-class4, ... see thpemu run --help) or a "           \
	  "directory, each optionally followed by :KEY=VALUE,...",                                 \
	  "slow device the page cache writes back to (thpemu run mounts thpemu-fusedev for a "     \
	  "preset; none: an in-process device model)")                                             \
	X(DIRTY, "--dirty", "SPEC", dirty, dirty_spec, "", 0, 0, NULL, 0,                          \
	  "SIZE or stream, then file=SIZE, rate=RATE, fsync=none|each|end, delete-after, read, "   \
	  "dirty-ratio=PCT, background-ratio=PCT, start=DUR (see thpemu run --help)",              \
	  "files a thread of the program's process streams through the emulated page cache (cp "   \
	  "or rsync to a stick)")                                                                  \
	X(DEVICE_DIR, NULL, "DIR", path, device_dir, "", 0, 0, NULL, CONFIG_INTERNAL,              \
	  "a directory", "set by `thpemu run`: where the device of THPEMU_DEVICE is mounted")      \
	X(TEST_MIGRATE_GAP, NULL, "DUR", duration, test_migrate_gap_ns, "0", 0, 0, NULL,           \
	  CONFIG_INTERNAL, "a duration such as 200us",                                             \
	  "tests only: keep each migrated page and each collapsing range out of the program's "    \
	  "mapping, and each collapse's copy write-protected, this much longer (widens the window a fork must never see, or the program's "  \
	  "accesses must meet)")                                                                   \
	X(IO_PID, NULL, "PID", uint, io_pid, "0", 0, UINT32_MAX, NULL, CONFIG_INTERNAL,            \
	  "a process id",                                                                          \
	  "set by `thpemu run` (or the first process): only this process runs the dirtier and "   \
	  "writeback")                                                                             \
	X(MACHINE, NULL, "HOSTPID:FD", rendezvous, machine, "", 0, 0, NULL, CONFIG_INTERNAL,       \
	  "HOSTPID:FD, two decimal numbers (the host's process id and its descriptor of the "      \
	  "machine), as `thpemu run` sets it",                                                     \
	  "set by `thpemu run`: every process of the run faults against this one shared machine "  \
	  "(pool, page cache, writeback) instead of a pool of its own")
/* clang-format on */

enum config_id {
#define CONFIG_X_ID(id, ...) CONFIG_##id,
	CONFIG_OPTIONS(CONFIG_X_ID)
#undef CONFIG_X_ID
	    CONFIG_NR
};

struct config_parser; /* options.c: one per PARSER */

/* One THPEMU_* variable, as CONFIG_OPTIONS describes it. */
struct config_opt {
	const char *env;     /* "THPEMU_POLICY" */
	const char *cli;     /* "--policy", or NULL when `thpemu run` has no such option */
	const char *metavar; /* "P" */
	const struct config_parser *parser;
	size_t offset, size;	  /* the field of struct config it fills */
	const char *def;	  /* default, as text ("" for none) */
	uint64_t min, max;	  /* size and uint bounds */
	const char *const *words; /* words / bool words, or uint's word for 0; NULL-terminated */
	unsigned flags;		  /* CONFIG_LAUNCHER, CONFIG_INTERNAL */
	const char *accepted;	  /* what is accepted, for one-line errors */
	const char *help;
};

/* Indexed by enum config_id. */
extern const struct config_opt config_opts[CONFIG_NR];

void config_defaults(struct config *cfg);
/* Parse one value into cfg. Returns 0 or -EINVAL with a one-line message naming the variable
 * (or `name`, e.g. "--pool") and the accepted values in err. */
int config_opt_parse(const struct config_opt *o, const char *name, const char *val,
		     struct config *cfg, char *err, size_t errlen);
/* What core/io is to do for cfg: the device (THPEMU_DEVICE, or the model when none), where it
 * is mounted, the dirtier and the seed (the live emulator's io and a machine's host alike). */
void config_io(const struct config *cfg, struct io_config *ic);
/* Defaults overridden by every THPEMU_* set in the environment (getenv; no allocation). An
 * empty value leaves the default, except for the file, directory and recipe options. This is
 * how a managed process is configured; a command parses its options into a struct config and
 * passes that on (to its machine's host, to the simulator), never reading back what it put in
 * the environment for its processes. */
int config_from_env(struct config *cfg, char *err, size_t errlen);
/* Apply vals[id] (NULL: none) to cfg in table order, as config_from_env applies the
 * environment's values. 0, or -EINVAL at the first bad value (err names its variable). */
int config_apply(struct config *cfg, const char *const vals[CONFIG_NR], char *err, size_t errlen);
/* A command that starts processes (thpemu run, machine start) configures what it makes for them
 * as they will be configured: saves the THPEMU_* variables it inherited (malloc'd copies, NULL
 * when unset) before it sets any, then completes the options it parsed (given[id] not NULL)
 * with the saved values of the others. 0, or -EINVAL with err naming a variable the processes
 * will refuse too. */
void config_env_save(char *saved[CONFIG_NR]);
int config_inherit(struct config *cfg, const char *const given[CONFIG_NR],
		   char *const saved[CONFIG_NR], char *err, size_t errlen);
/* The policy plugin a process loads: the policy's key plugin=, else THPEMU_POLICY_PLUGIN
 * (--policy-plugin). "" when none. */
const char *config_plugin(const struct config *cfg);
const struct config_opt *config_opt_by_cli(const char *cli);
const struct config_opt *config_opt_by_env(const char *env);
/* A THPEMU_MACHINE value: "HOSTPID:FD", HOSTPID > 0, both decimal ints. */
bool config_rendezvous(const char *val, int *pid, int *fd);
/* The table as text: `thpemu run --help`'s environment list (user options only), or the
 * Markdown table of core/live/README.md (every option; `thpemu run --help-markdown`). */
void config_help(FILE *f, bool markdown);

#endif

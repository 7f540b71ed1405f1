/* The live emulator as the rest of thpemu sees it: core/preload creates it and forwards the
 * program's memory calls to it, `thpemu run` (core/cli) reads the statistics every process keeps
 * and writes the merged report. How it works, and everything the uffd files share among
 * themselves, is in uffd_internal.h (core/live only).
 *
 * Errors: negative errno inside. Nothing here exits or aborts the host program.
 */
#ifndef THPEMU_UFFD_H
#define THPEMU_UFFD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config/config.h"
#include "io/io.h"
#include "mm/mm.h"
#include "obs/faults.h"
#include "obs/mthp.h"

struct obs_coverage;

#define UFFD_PAGE_SIZE	4096UL
#define UFFD_HPAGE_SIZE (2UL << 20)

/* ---- statistics shared with `thpemu run` ---------------------------------------------------- */

/* Host-side counters: what the real machine did for the emulated decisions. */
#define UFFD_HOST_COUNTERS(X)                                                                      \
	X(messages, "fault messages read from the userfaultfd")                                    \
	X(dup_messages, "messages for a page already owned or present (duplicates, storms)")       \
	X(migrating_waits, "faults on a page mid-migration, left for the migrator to wake")        \
	X(real_pmd_faults, "huge decisions that ended PMD-mapped on the host (PAGEMAP_SCAN)")      \
	X(huge_not_pmd, "huge decisions that ended 4 KiB-mapped on the host")                      \
	X(huge_unverified, "huge decisions whose host mapping could not be checked")               \
	X(huge_move_fallbacks, "huge decisions the host refused (served as 4 KiB instead)")        \
	X(pt_reclaims, "empty host page tables freed before a huge move (--host-fault pte)")       \
	X(staging_refills, "2 MiB staging chunks prefaulted by the refill thread")                 \
	X(staging_misses, "huge faults that found no ready staging chunk")                         \
	X(host_thp_unavailable, "staging chunks the host backed with 4 KiB pages")                 \
	X(anon_migrations, "program pages really migrated (unmap, copy, remap)")                   \
	X(anon_migrate_ns, "time spent migrating program pages (claim, unmap, copy, remap; ns)")   \
	X(anon_migrate_busy, "migrations refused: page busy, shared or not movable")               \
	X(move_misreports, "UFFDIO_MOVEs that moved the page but reported an error (recovered)")   \
	X(nomem_faults, "faults served outside the exhausted pool")                                \
	X(eexist, "benign EEXIST races")                                                           \
	X(uffd_errors, "unexpected userfaultfd errors (the region falls back to unmanaged)")       \
	X(regions_failed, "regions given back to the kernel after an error")                       \
	X(regions_created, "mappings managed")                                                     \
	X(regions_adopted, "mappings made before initialisation and managed afterwards")           \
	X(bytes_managed, "bytes under management now")                                             \
	X(bytes_managed_peak, "peak bytes under management")                                       \
	X(unmanaged_maps, "eligible mappings left unmanaged (table full, register failed)")        \
	X(orphan_pages, "registered pages no region knew, given back to the kernel")               \
	X(reentrant_calls, "interposed calls passed through while the emulator was busy")          \
	X(fixed_over_managed, "MAP_FIXED mappings replacing managed memory")                       \
	X(mremaps, "mremap calls on managed memory")                                               \
	X(mremap_unmanaged, "mremap calls whose result was left unmanaged")                        \
	X(pages_freed, "pages returned by munmap / MADV_DONTNEED / MADV_FREE")                     \
	X(huge_splits, "huge extents split by a partial free")                                     \
	X(stalls, "faults slower than the stall threshold")                                        \
	X(stall_ns, "total service time of those faults (ns)")                                     \
	X(latency_max_ns, "longest fault service time (ns)")                                       \
	X(stepped_aside, "1 if the emulator stepped aside for the process (note says why)")        \
	X(fork_deferred, "migrations not started because the program was forking")                 \
	X(cred_changes, "per-thread credential changes also made on the emulator's threads")       \
	X(machine_requests,                                                                        \
	  "pages of other processes this one's compaction asked them to migrate")                  \
	X(machine_request_busy, "... of which refused or unanswered in time (counted busy)")       \
	X(machine_served, "migrations of this process's pages asked by other processes")           \
	X(fork_inherited_pages, "pages a fork child inherited (its parent's frames: not its own)") \
	X(collapses, "4 KiB ranges collapsed into a huge extent (khugepaged and MADV_COLLAPSE)")   \
	X(collapse_host_small, "... of which the host mapped with 4 KiB pages (no THP, refused)")  \
	X(collapse_failed, "collapses abandoned (the range changed, a page busy or pinned)")       \
	X(collapse_copy_ns, "total time the program's accesses to collapsing ranges waited (ns)")  \
	X(collapse_copy_max_ns, "longest such wait (ns)")                                          \
	X(madv_collapse_calls, "MADV_COLLAPSE calls on managed memory")                            \
	X(khugepaged_visits, "khugepaged visits of this process's address space")                  \
	X(underused_splits, "THPs the shrinker found underused and this process split for real")   \
	X(underused_pages_freed, "zero-filled subpages those splits unmapped and freed")           \
	X(own_populated,                                                                           \
	  "pages of the emulator's own the kernel populated for the program (mlock)")              \
	X(deepbind_loads, "libraries the program loaded with RTLD_DEEPBIND, loaded without it")    \
	X(ranges_released, "managed ranges given back for the program's own userfaultfd")

struct uffd_host_stats {
#define UFFD_X_FIELD(name, help) uint64_t name;
	UFFD_HOST_COUNTERS(UFFD_X_FIELD)
#undef UFFD_X_FIELD
};
extern const char *const uffd_host_names[];
extern const char *const uffd_host_help[];
#define UFFD_NR_HOST (sizeof(struct uffd_host_stats) / sizeof(uint64_t))

#define UFFD_STATS_MAGIC   0x7473756d65706874ULL /* "thpemust" */
#define UFFD_STATS_VERSION 12
#define UFFD_STALL_RECS	   256 /* stall events kept per process (more are only counted) */

/* One fault slower than the stall threshold, as the handler saw it. Captured stacks (stallcap.c)
 * go to a file at exit; these records stand in when a process never got there. */
struct uffd_stall_rec {
	uint64_t t_start_ns;  /* message read, CLOCK_MONOTONIC */
	uint64_t duration_ns; /* service time */
	uint64_t addr;	      /* faulting address */
	int32_t tid;	      /* faulting thread */
	uint8_t cause;	      /* enum mm_cause: the largest contributor */
	uint8_t ready;	      /* published (release store) once the record is complete */
	char comm[16];	      /* faulting thread's name */
};

enum uffd_proc_state {
	UFFD_PROC_RUNNING,   /* managed, not yet at exit (or it died without running destructors) */
	UFFD_PROC_EXITED,    /* the library's exit hook ran: everything is final */
	UFFD_PROC_UNMANAGED, /* initialisation failed or disabled: note says why */
	UFFD_PROC_EXECED,    /* the process exec'd: a later record of the same pid continues it */
};

/* Why anonymous memory of the program is not managed (the memory census, core/live/census.c). */
#define UFFD_UNMANAGED_REASONS(X)                                                                  \
	X(brk, "brk heap (glibc malloc's main arena: run with --allocator jemalloc)")              \
	X(stack, "a stack ([stack], MAP_STACK thread stacks) or MADV_NOHUGEPAGE memory")           \
	X(file, "private copies of a file's pages (a file mapping)")                               \
	X(shared, "shared memory (MAP_SHARED, shmem)")                                             \
	X(prot, "a protection thpemu does not manage (executable or read-only)")                   \
	X(small, "mappings smaller than --min-region (each, even where neighbours merged)")        \
	X(unseen, "never passed the interposers (made before the library started, by a raw "       \
		  "system call, or left unmanaged: host.unmanaged_maps)")

enum uffd_unmanaged_why {
#define UFFD_X_ENUM(name, help) UFFD_WHY_##name,
	UFFD_UNMANAGED_REASONS(UFFD_X_ENUM)
#undef UFFD_X_ENUM
	    UFFD_WHY_NR
};
extern const char *const uffd_why_names[];
extern const char *const uffd_why_help[];

#define UFFD_CENSUS_TOP 8

struct uffd_unmanaged_map {
	uint64_t start, size, anon; /* address, bytes mapped, anonymous bytes resident */
	int32_t pid;
	uint32_t why;  /* enum uffd_unmanaged_why */
	char name[64]; /* smaps' name: [heap], a path, or empty */
};

/* The program's memory as /proc/self/smaps shows it when the process exits: resident anonymous
 * memory in managed mappings, thpemu's own (MADV_DONTDUMP: guard_vm_map) and the rest, with
 * reasons. */
struct uffd_census {
	uint32_t processes; /* processes whose census is in */
	uint32_t vmas;
	uint64_t rss, anon, anon_managed, anon_own;
	uint64_t why_anon[UFFD_WHY_NR];			/* unmanaged anonymous bytes by reason */
	struct uffd_unmanaged_map top[UFFD_CENSUS_TOP]; /* the largest, by anonymous bytes */
};

/* One process's record. With THPEMU_RUN_DIR it lives in a MAP_SHARED file <dir>/<pid>.stats that
 * handlers update in place, so `thpemu run` can read it even after _exit or a crash. */
/* The start-up round-trip probe (probe.c): quantiles of the bare userfaultfd round trip seen by
 * the touching thread (rt) and of the handler's service time (svc), in ns. */
#define UFFD_PROBES  256
#define UFFD_PROBE_Q 7 /* min, p10, p50, p90, p99, max, mean */
struct uffd_probe {
	uint32_t n; /* probes measured (0: none) */
	uint32_t pad;
	uint64_t rt_ns[UFFD_PROBE_Q];
	uint64_t svc_ns[UFFD_PROBE_Q];
};

struct uffd_stats {
	uint64_t magic;
	uint32_t version;
	uint32_t size; /* sizeof(struct uffd_stats) of the writer */
	int32_t pid, ppid;
	uint32_t state; /* enum uffd_proc_state */
	uint32_t handlers;
	uint32_t host_fault; /* the host fault path in effect (enum config_host_fault) */
	uint64_t start_mono_ns, last_update_mono_ns;
	uint64_t pool_bytes;
	char exe[256];
	char comm[16];	    /* /proc/self/comm when the library started (the program's name) */
	char cmdline[1024]; /* argv joined by spaces, truncated */
	char policy[352];   /* canonical spec (mm_policy_format; plugin=PATH included) */
	char note[256];	    /* first warning (why unmanaged, pool exhausted, ...) */
	uint64_t
	    vmstat[MM_STAT_NR];	 /* snapshot of mm's counters (refreshed periodically, at exit) */
	struct mm_counts counts; /* pool occupancy at the last snapshot */
	struct obs_mthp mthp;	 /* per-size mTHP settings and statistics, same snapshot */
	struct uffd_host_stats host;
	struct obs_faults faults; /* per-fault latency histograms */
	uint32_t nstall_recs;	  /* records reserved (atomic; may exceed UFFD_STALL_RECS) */
	struct uffd_stall_rec stall_recs[UFFD_STALL_RECS];
	struct io_stats io;	 /* the writeback engine and dirtier (core/io), if running */
	struct uffd_census mem;	 /* at exit */
	struct uffd_probe probe; /* the start-up round-trip probe */
	/* An output of this process that could not be completed (its trace, its THPEMU_REPORT):
	 * one line naming it and why, "" if none; `thpemu run` prints it and exits 1. */
	char output_error[512];
};

static inline void uffd_stat_add(uint64_t *c, uint64_t n)
{
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}
static inline void uffd_stat_max(uint64_t *c, uint64_t v)
{
	uint64_t cur = __atomic_load_n(c, __ATOMIC_RELAXED);

	while (v > cur &&
	       !__atomic_compare_exchange_n(c, &cur, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* Merge src into dst (sums, maxima, histograms). */
void uffd_stats_merge(struct uffd_stats *dst, const struct uffd_stats *src);
/* A record DIR/PID.stats left by this pid's previous program (it exec'd) is kept as
 * DIR/PID.eN.stats in state EXECED, so that the new program's record does not erase what the
 * old one did (its counters, why the emulator stepped aside). A record in state EXITED is of
 * an earlier process that had this pid (its exit hook ran: it did not exec): it is kept as it
 * is, a process of its own. */
void uffd_stats_keep_previous(const char *dir, int pid);
/* Fill the record's identity from /proc/self: pid, ppid, exe, comm, cmdline. */
void uffd_stats_identify(struct uffd_stats *st);

/* ---- processes: the report's per-process view (procs.c) ------------------------------------ */

/* How a process of the run ended, as far as `thpemu run` can tell. */
#define UFFD_PROC_ENDS(X)                                                                          \
	X(exited, "its exit hook ran: its counters are final")                                     \
	X(no_clean_exit, "it ended without its exit hook (_exit, a crash, a signal)")              \
	X(killed, "killed by a signal (the process thpemu run started: its wait status says so)")  \
	X(running, "still running when the report was written")                                    \
	X(unmanaged, "ran unmanaged (the library could not, or was told not to, manage it)")       \
	X(exec_unseen, "exec'd a program that left no record (static, set-user-ID, no preload)")

enum uffd_proc_end {
#define UFFD_X_ENUM(name, help) UFFD_END_##name,
	UFFD_PROC_ENDS(UFFD_X_ENUM)
#undef UFFD_X_ENUM
	    UFFD_END_NR
};
extern const char *const uffd_proc_end_names[];
extern const char *const uffd_proc_end_help[];

/* One process of the run as the report lists it, made by `thpemu run` from the statistics files
 * once the program ended (never on the fault path). A pid that exec'd is one entry: its identity
 * is its last program's, its counters those of every program it ran. */
struct uffd_proc_summary {
	int32_t pid, ppid;  /* ppid: its first program's parent */
	uint32_t end;	    /* enum uffd_proc_end */
	uint32_t execs;	    /* earlier programs of this pid merged in (exec'd predecessors) */
	int32_t signal;	    /* UFFD_END_killed: the signal */
	bool stepped_aside; /* the emulator stepped aside for one of its programs */
	char comm[16];	    /* its last program's name */
	char exec_from[16]; /* execs > 0: its first program's name */
	char cmdline[256];  /* its last program's, truncated */
	uint64_t faults, huge, nomem;  /* base = faults - huge (nomem included, as in "faults") */
	double p50_us, p99_us, max_us; /* per-fault service latency, huge and base together */
	uint64_t stalls, stall_ns;     /* faults slower than the stall threshold, their time */
	uint64_t anon, anon_managed;   /* its memory at its largest (its census: program's anon) */
	char note[160];		       /* why it ran unmanaged or stepped aside (its note), or "" */
};

#define UFFD_PROCS_MAX 4096 /* processes a report lists; the least busy beyond are counted */

/* The processes of a run: the busiest max by faults, in pid order once finished. */
struct uffd_proc_list {
	struct uffd_proc_summary *v;
	unsigned n, cap, max;
	uint64_t omitted, omitted_faults; /* processes left out (the least busy), their faults */
};

/* 0, or -ENOMEM. max 0 means UFFD_PROCS_MAX. */
int uffd_procs_init(struct uffd_proc_list *l, unsigned max);
void uffd_procs_free(struct uffd_proc_list *l);
/* Counters, identity (pid, ppid, comm, cmdline) and stepped_aside from a record (one program's,
 * or several merged); end, execs, exec_from and signal are the caller's. */
void uffd_proc_summarise(struct uffd_proc_summary *p, const struct uffd_stats *st);
void uffd_procs_add(struct uffd_proc_list *l, const struct uffd_proc_summary *p);
/* Keep the busiest max (counting the rest) and sort by pid. */
void uffd_procs_finish(struct uffd_proc_list *l);
/* A finished list's entry for pid, or NULL. */
const struct uffd_proc_summary *uffd_procs_find(const struct uffd_proc_list *l, int pid);

/* ---- report -------------------------------------------------------------------------------- */

struct obs_stalls; /* obs/stall.h */

/* A program of the run the emulator did not manage to its end: it ran unmanaged (the library
 * said why in its record, or `thpemu run` knows: a static binary, an image that left no record),
 * or the emulator stepped aside for it. `thpemu run` lists them in the summary and the report. */
struct uffd_aside {
	int32_t pid;
	bool stepped_aside; /* else it ran unmanaged */
	char comm[16];
	char why[256];
};
#define UFFD_ASIDE_MAX 64 /* listed; more are only counted */

struct uffd_program_info {
	char *const *argv;	   /* NULL-terminated, or NULL */
	struct obs_stalls *stalls; /* this process's captured stall events, or NULL */
	struct obs_stalls *waits;  /* and its per-wait events (obs/stall.h), or NULL */
	const char *stalls_json;   /* or the merged "stalls" object as JSON text (thpemu run) */
	const char *device_json;   /* the launcher's device facts as a JSON object, or NULL */
	const char *cmdline;	   /* used when argv is NULL */
	int exit_status;	   /* -1 when unknown (still running at report time) */
	double wall_s;
	double start_mono_s;	/* when the run began, CLOCK_MONOTONIC (stall event times) */
	unsigned processes;	/* managed processes merged */
	unsigned unmanaged;	/* processes that ran unmanaged */
	unsigned no_clean_exit; /* processes whose exit hook never ran (_exit, crash) */
	unsigned stepped_aside; /* programs the emulator stepped aside for */
	const struct uffd_aside *aside; /* thpemu run: the unmanaged and stepped-aside programs */
	unsigned naside;		/* listed in aside (at most UFFD_ASIDE_MAX) */
	const char *policy_spec; /* the policy asked for (shown when no process applied it) */
	const struct uffd_proc_list *procs; /* thpemu run: every process (finished), or NULL */
	const char *machine_json; /* the shared machine's facts as a JSON object, or NULL */
	const struct obs_coverage *coverage; /* the machine's AnonHugePages over the run, or NULL */
};

/* Write the run report (JSON, keys shared with `thpemu sim` through obs/faults.h). */
int uffd_report_json(FILE *f, const struct config *cfg, const struct uffd_stats *st,
		     const struct uffd_program_info *prog);
/* A few human lines to f (stderr); with more than one process, a table of the busiest. */
void uffd_report_summary(FILE *f, const struct uffd_stats *st,
			 const struct uffd_program_info *prog);

/* ---- the live emulator ----------------------------------------------------------------------- */

struct uffd_live;

/* Create the emulator: open the userfaultfd (syscall, else /dev/userfaultfd), create the pool,
 * apply the recipe, set up staging, scratch and stats, start handler, refill and background
 * threads. On failure err says why in one line and nothing is left behind. */
int uffd_live_create(const struct config *cfg, struct uffd_live **out, char *err, size_t errlen);
/* Stop the threads and free everything (tests; the preload library never stops its handlers,
 * so a program exiting with threads still faulting cannot hang). */
void uffd_live_destroy(struct uffd_live *lv);
/* Refresh the stats snapshot of mm's counters. */
void uffd_live_snapshot(struct uffd_live *lv);
/* Write this process's JSON report to f (a consistent copy of its statistics). */
int uffd_live_report(struct uffd_live *lv, FILE *f, const char *cmdline);
/* THPEMU_REPORT at exit: the report written whole to path (util/outfile.h: a temporary file
 * renamed into place once complete); if it cannot be, one line on stderr and in the statistics'
 * output_error, and an earlier file there is left as it was. */
void uffd_report_write_file(struct uffd_live *lv, const char *path, const char *cmdline);
/* Exit hook: final snapshot, state EXITED, per-process JSON when configured. */
void uffd_live_exit(struct uffd_live *lv, const char *cmdline);
/* In a fork child: forget everything of the parent's (the kernel unregistered the child's
 * VMAs). On a shared machine the child joins it as a process of its own and the new emulator
 * is returned; otherwise (or if that fails: one line on stderr) NULL, the child is unmanaged. */
struct uffd_live *uffd_live_forked_child(struct uffd_live *lv);
/* Step aside for good: io stopped, no migration in flight, every managed range handed back to
 * the kernel with its data, every emulator thread gone (the process is as single-threaded as
 * the program made it). The statistics stay for the exit report, which says why. */
void uffd_live_detach(struct uffd_live *lv, const char *why);
/* The machine this process is on is being stopped (`thpemu machine stop`): fn is called once,
 * on the emulator's background thread, which stepping aside joins, so fn must leave the step
 * aside to a thread of its own. */
typedef void (*uffd_machine_stop_fn)(void);
void uffd_set_machine_stop_hook(uffd_machine_stop_fn fn);
/* prctl(PR_SET_THP_DISABLE): no huge decisions for this process from now on (6.x profiles). */
void uffd_live_thp_disable(struct uffd_live *lv, bool disable);
/* The warning of a run whose program's anonymous memory (at least min_bytes of it) is mostly
 * unmanaged, with the main reason, on f; true if said. */
bool uffd_memory_warning(FILE *f, const struct uffd_census *c, uint64_t min_bytes);
/* A machine's processes' memory at its largest: each live process publishes its latest census
 * in its slot as words, and the machine keeps the sum over the live slots with the most program
 * memory (words_program: machine_mem_offer, by the process at each census and by the host's
 * sampler); it replaces the report's figures if it is larger than the largest single
 * process's (peak_words). */
uint64_t uffd_census_words_program(const uint64_t *w);
void uffd_census_peak_words(struct uffd_census *dst, const uint64_t *w);
/* A mapping call passed through to the kernel unmanaged (the memory census remembers the small
 * eligible ones: core/live/census.c), and an unmapping outside managed memory. */
void uffd_passthrough_mapped(struct uffd_live *lv, long addr, size_t len, int prot, int flags);
void uffd_passthrough_unmapped(struct uffd_live *lv, void *addr, size_t len);
/* The program is registering [lo, hi) with a userfaultfd of its own (UFFDIO_REGISTER): a range
 * can be registered with one userfaultfd only (fs/userfaultfd.c: userfaultfd_register, -EBUSY),
 * so every managed mapping it overlaps is handed back to the kernel first, its data intact - as
 * for a CRIU lazy restore or a QEMU postcopy, whose pages the program serves itself. */
void uffd_release_for_program(struct uffd_live *lv, uintptr_t lo, uintptr_t hi);
/* The program's mlock(2) family succeeded: mlock/mlock2 (all false), mlockall(flags)
 * (all true), munlockall (all true, flags -1). */
void uffd_live_mlocked(struct uffd_live *lv, bool all, int flags);
/* Print "thpemu: MSG NUM TAIL" once per bit and keep it as the report's note (no stdio, no
 * allocation: safe on the fault path). */
void uffd_say_once(struct uffd_live *lv, int bit, const char *msg, uint64_t num, const char *tail);
/* A consistent copy of the process's statistics (for writing a report while handlers run). */
void uffd_live_stats_copy(struct uffd_live *lv, struct uffd_stats *out);
/* Keep msg as the report's note if it has none yet (nothing printed). */
void uffd_note(struct uffd_live *lv, const char *msg);

/* Set on the emulator's own threads (and by the shim while it works): interposed calls made on
 * such a thread pass straight through. */
extern __thread int uffd_tls_passthrough;

/* The process's statistics, updated in place while the emulator runs (read them with atomic
 * loads; uffd_stat_add to count). */
struct uffd_stats *uffd_live_stats(struct uffd_live *lv);
/* The configuration the emulator was created with. */
const struct config *uffd_live_config(const struct uffd_live *lv);
/* False in a process made from the emulator's by a fork of the address space (atfork handlers
 * or not: a raw clone, _Fork), true in the emulator's own process and in vfork / CLONE_VM
 * children that share it. Cheap: a load. */
bool uffd_live_own_process(const struct uffd_live *lv);

/* ---- the program's memory calls (core/preload forwards eligible calls here) -------------------
 */

/* Is this mapping one the emulator manages (private anonymous, read-write, large enough, not a
 * stack or hugetlb)? */
bool uffd_mmap_eligible(const struct uffd_live *lv, size_t len, int prot, int flags, int fd);
/* mmap for an eligible mapping (or a MAP_FIXED one over managed memory). Returns the address or
 * -errno, exactly as the kernel would. */
long uffd_mmap(struct uffd_live *lv, void *addr, size_t len, int prot, int flags, int fd, long off);
/* True if [addr, addr + len) overlaps managed memory (cheap check before the calls below). */
bool uffd_is_managed(struct uffd_live *lv, const void *addr, size_t len);
int uffd_munmap(struct uffd_live *lv, void *addr, size_t len);
int uffd_madvise(struct uffd_live *lv, void *addr, size_t len, int advice);
long uffd_mremap(struct uffd_live *lv, void *old, size_t oldlen, size_t newlen, int flags,
		 void *new_addr);
/* Manage a mapping made before the emulator existed (pre-init calls from an allocator):
 * resident pages stay as they are (unaccounted), missing ones become first touches. */
int uffd_adopt(struct uffd_live *lv, void *addr, size_t len, int prot);

#endif

/* The live emulator: userfaultfd regions, handler pool, staging THPs and the live mm environment.
 *
 * Method. Private anonymous mappings of the program (interposed by core/shim) become *regions*:
 * 2 MiB-aligned when large enough, MADV_HUGEPAGE on the host, registered with one userfaultfd in
 * MISSING mode (UFFD_FEATURE_MOVE | THREAD_ID, no EVENT_* features). A pool of handler threads
 * reads fault messages one at a time and, for each first touch, asks core/mm (the emulated kernel,
 * driven through a live environment: real clock, a mutex, real zeroing, real page migration) for
 * a decision, then materialises it for real:
 *   huge  a prefaulted 2 MiB staging THP, cleared, is UFFDIO_MOVEd to the aligned extent: the
 *         program gets a real PMD mapping (do_huge_pmd_anonymous_page);
 *   base  a zeroed 4 KiB page is UFFDIO_COPYed (write fault) or the zero page is mapped
 *         (UFFDIO_ZEROPAGE, read fault) (do_anonymous_page);
 * and when compaction migrates one of the program's 4 KiB frames, the page is really unmapped
 * (UFFDIO_MOVE to a registered scratch page, DONTWAKE: accesses wait as on a migration entry),
 * copied and remapped (UFFDIO_COPY back, waking the waiters) (migrate_pages/unmap_and_move).
 *
 * State machines (all transitions are atomic byte CAS; core/as/as.h has the full rules):
 *   extent  EMPTY -> FILLING -> HUGE | SMALL        (SMALL is terminal until a whole-extent free)
 *   page    EMPTY -> FILLING -> PRESENT <-> MIGRATING, any -> GONE (unmapped), PRESENT -> EMPTY
 * The owner of a transient state (FILLING, MIGRATING) is the only thread that may leave it; the
 * program's munmap/madvise, under the region's write lock, only flags such pages (FREED) and the
 * owner finalises. Materialising ioctls run under the region's read lock, so an unmap never
 * interleaves between "check the page is still wanted" and "map it". A fault message on a page
 * some thread owns is dropped: the owner's ioctl (or its explicit UFFDIO_WAKE) wakes it.
 *
 * Errors: negative errno inside. Nothing here exits or aborts the host program.
 */
#ifndef THPEMU_UFFD_H
#define THPEMU_UFFD_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "as/as.h"
#include "io/io.h"
#include "io/waitq.h"
#include "guard/guard.h"
#include "mm/mm.h"
#include "obs/faults.h"
#include "obs/stall.h"

#define UFFD_PAGE_SIZE	  4096UL
#define UFFD_HPAGE_SIZE	  (2UL << 20)
#define UFFD_MAX_HANDLERS 64

/* ---- configuration: the THPEMU_* table ------------------------------------------------------- */

enum uffd_log_level { UFFD_LOG_QUIET, UFFD_LOG_WARN, UFFD_LOG_INFO, UFFD_LOG_DEBUG };
enum uffd_allocator { UFFD_ALLOC_JEMALLOC, UFFD_ALLOC_NONE };

struct uffd_config {
	bool disable;		       /* THPEMU_DISABLE: run the program unmanaged */
	bool host_thp;		       /* THPEMU_HOST_THP: stage real THPs (0: 4 KiB pages only) */
	char policy_spec[160];	       /* as given (validated by mm_policy_parse) */
	struct mm_policy policy;       /* parsed */
	uint64_t pool_bytes;	       /* emulated physical memory */
	uint64_t stall_threshold_ns;   /* a fault served slower than this is a stall event */
	enum uffd_allocator allocator; /* what `thpemu run` preloads (recorded in the report) */
	unsigned handlers;	       /* handler threads; 0 = auto (uffd_handlers_auto()) */
	uint64_t min_region;	       /* smallest mapping managed */
	unsigned staging;	       /* prefaulted host THPs kept ready */
	char fragment[256];	       /* mm_fragment recipe applied at start ("" = none) */
	uint64_t seed;		       /* recipe seed */
	enum uffd_log_level log;
	char report[512];  /* THPEMU_REPORT: per-process JSON written at exit ("" = none);
			    * "%p" expands to the pid */
	char run_dir[512]; /* THPEMU_RUN_DIR: set by `thpemu run`: stats files go there */
	char trace[512];   /* THPEMU_TRACE: fault trace file ("" = none); "%p" = the pid */
	/* io (core/io): the slow device and the dirtier, in the top-level process only */
	char device_spec[256];	      /* THPEMU_DEVICE as given ("" = none configured) */
	struct io_device_spec device; /* parsed */
	char dirty_spec[256];	      /* THPEMU_DIRTY as given ("" = no dirtier) */
	struct io_dirty_spec dirty;   /* parsed */
	char device_dir[512];	      /* THPEMU_DEVICE_DIR: set by `thpemu run`: the mounted device */
	uint64_t io_pid;	      /* THPEMU_IO_PID: the process that runs io (0 = this one) */
	uint64_t test_migrate_gap_ns; /* THPEMU_TEST_MIGRATE_GAP: tests widen the migration window */
};

enum uffd_opt_type {
	UOPT_BOOL,
	UOPT_SIZE,
	UOPT_DURATION,
	UOPT_UINT,
	UOPT_ENUM,
	UOPT_POLICY,
	UOPT_RECIPE,
	UOPT_PATH,
	UOPT_DEVICE, /* io_device_parse */
	UOPT_DIRTY,  /* io_dirty_parse */
};

#define UOPT_LAUNCHER 0x1 /* interpreted by `thpemu run` itself, recorded by the library */
#define UOPT_INTERNAL 0x2 /* set by `thpemu run` for its children; not a user option */

/* One THPEMU_* variable: its `thpemu run` option, type, default and help. */
struct uffd_opt {
	const char *env;     /* "THPEMU_POLICY" */
	const char *cli;     /* "--policy", or NULL when `thpemu run` has no such option */
	const char *metavar; /* "P" */
	enum uffd_opt_type type;
	const char *def;      /* default, as text ("" for none) */
	const char *accepted; /* what is accepted, for one-line errors */
	const char *help;
	uint64_t min, max;	    /* UOPT_UINT bounds */
	const char *const *choices; /* UOPT_ENUM / UOPT_BOOL words, NULL-terminated */
	unsigned flags;
};

extern const struct uffd_opt uffd_opts[];
extern const unsigned uffd_nopts;

void uffd_config_defaults(struct uffd_config *cfg);
/* Parse one value into cfg. Returns 0 or -EINVAL with a one-line message naming the variable
 * (or `name`, e.g. "--pool") and the accepted values in err. */
int uffd_opt_parse(const struct uffd_opt *o, const char *name, const char *val,
		   struct uffd_config *cfg, char *err, size_t errlen);
/* Defaults overridden by every THPEMU_* set in the environment (getenv; no allocation). */
int uffd_config_from_env(struct uffd_config *cfg, char *err, size_t errlen);
const struct uffd_opt *uffd_opt_by_cli(const char *cli);
const struct uffd_opt *uffd_opt_by_env(const char *env);
/* The table as text: `thpemu run --help` (cli) or a Markdown table (README). */
void uffd_opts_help(FILE *f, bool markdown);
unsigned uffd_handlers_auto(void);

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
	X(staging_refills, "2 MiB staging chunks prefaulted by the refill thread")                 \
	X(staging_misses, "huge faults that found no ready staging chunk")                         \
	X(host_thp_unavailable, "staging chunks the host backed with 4 KiB pages")                 \
	X(anon_migrations, "program pages really migrated (unmap, copy, remap)")                   \
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
	X(fork_deferred, "migrations not started because the program was forking")                \
	X(cred_changes, "per-thread credential changes also made on the emulator's threads")

struct uffd_host_stats {
#define UFFD_X_FIELD(name, help) uint64_t name;
	UFFD_HOST_COUNTERS(UFFD_X_FIELD)
#undef UFFD_X_FIELD
};
extern const char *const uffd_host_names[];
extern const char *const uffd_host_help[];
#define UFFD_NR_HOST (sizeof(struct uffd_host_stats) / sizeof(uint64_t))

#define UFFD_STATS_MAGIC   0x7473756d65706874ULL /* "thpemust" */
#define UFFD_STATS_VERSION 5
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

/* Why anonymous memory of the program is not managed (the memory census, core/uffd/census.c). */
#define UFFD_UNMANAGED_REASONS(X)                                                                  \
	X(brk, "brk heap (glibc malloc's main arena: run with --allocator jemalloc)")              \
	X(stack, "a stack ([stack], MAP_STACK thread stacks) or MADV_NOHUGEPAGE memory")           \
	X(file, "private copies of a file's pages (a file mapping)")                              \
	X(shared, "shared memory (MAP_SHARED, shmem)")                                             \
	X(prot, "a protection thpemu does not manage (executable or read-only)")                   \
	X(small, "a mapping smaller than --min-region")                                            \
	X(unseen, "never passed the interposers (made before the library started, by a raw "      \
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
	uint32_t why; /* enum uffd_unmanaged_why */
	char name[64];	    /* smaps' name: [heap], a path, or empty */
};

/* The program's memory as /proc/self/smaps shows it when the process exits: resident anonymous
 * memory in managed mappings, thpemu's own (MADV_DONTDUMP: sys_mmap_own) and the rest, with
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
struct uffd_stats {
	uint64_t magic;
	uint32_t version;
	uint32_t size; /* sizeof(struct uffd_stats) of the writer */
	int32_t pid, ppid;
	uint32_t state; /* enum uffd_proc_state */
	uint32_t handlers;
	uint64_t start_mono_ns, last_update_mono_ns;
	uint64_t pool_bytes;
	char exe[256];
	char cmdline[1024]; /* argv joined by spaces, truncated */
	char policy[160];   /* canonical spec (mm_policy_format) */
	char note[256];	    /* first warning (why unmanaged, pool exhausted, ...) */
	uint64_t
	    vmstat[MM_STAT_NR];	 /* snapshot of mm's counters (refreshed periodically, at exit) */
	struct mm_counts counts; /* pool occupancy at the last snapshot */
	struct uffd_host_stats host;
	struct obs_faults faults; /* per-fault latency histograms */
	uint32_t nstall_recs;	  /* records reserved (atomic; may exceed UFFD_STALL_RECS) */
	struct uffd_stall_rec stall_recs[UFFD_STALL_RECS];
	struct io_stats io;	  /* the writeback engine and dirtier (core/io), if running */
	struct uffd_census mem;	  /* at exit */
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
#define UFFD_COUNT(lv, name) uffd_stat_add(&(lv)->stats->host.name, 1)

struct uffd_live;
/* Take the memory census of this process into lv->stats->mem (reads /proc/self/smaps; at exit). */
void uffd_census_take(struct uffd_live *lv);
/* Add src's census to dst (sums; the largest unmanaged mappings of both). */
void uffd_census_merge(struct uffd_census *dst, const struct uffd_census *src);

/* Merge src into dst (sums, maxima, histograms). */
void uffd_stats_merge(struct uffd_stats *dst, const struct uffd_stats *src);
/* A record DIR/PID.stats left by this pid's previous program (it exec'd) is kept as
 * DIR/PID.eN.stats in state EXECED, so that the new program's record does not erase what the
 * old one did (its counters, why the emulator stepped aside). */
void uffd_stats_keep_previous(const char *dir, int pid);

/* ---- report -------------------------------------------------------------------------------- */

struct uffd_program_info {
	char *const *argv;	    /* NULL-terminated, or NULL */
	struct obs_stalls *stalls;  /* this process's captured stall events, or NULL */
	const char *stalls_json;    /* or the merged "stalls" object as JSON text (thpemu run) */
	const char *device_json;    /* the launcher's device facts as a JSON object, or NULL */
	const char *cmdline;	    /* used when argv is NULL */
	int exit_status;	    /* -1 when unknown (still running at report time) */
	double wall_s;
	double start_mono_s;	    /* when the run began, CLOCK_MONOTONIC (stall event times) */
	unsigned processes;	/* managed processes merged */
	unsigned unmanaged;	/* processes that ran unmanaged */
	unsigned no_clean_exit; /* processes whose exit hook never ran (_exit, crash) */
};

/* Write the run report (JSON, keys shared with `thpemu sim` through obs/faults.h). */
int uffd_report_json(FILE *f, const struct uffd_config *cfg, const struct uffd_stats *st,
		     const struct uffd_program_info *prog);
/* A few human lines to f (stderr). */
void uffd_report_summary(FILE *f, const struct uffd_stats *st,
			 const struct uffd_program_info *prog);

/* ---- regions ------------------------------------------------------------------------------- */

/* The page and extent states and their rules are core/as's (as.h); these are its names here. */
enum uffd_page_state {
	UP_EMPTY = AS_P_EMPTY,
	UP_FILLING = AS_P_FILLING,
	UP_PRESENT = AS_P_PRESENT,
	UP_MIGRATING = AS_P_MIGRATING,
	UP_GONE = AS_P_GONE,
};
#define UP_STATE(s)   AS_P_STATE(s)
#define UP_F_FREED    AS_P_FREED
#define UP_F_UNMAPPED AS_P_UNMAPPED

enum uffd_ext_state {
	UX_EMPTY = AS_X_EMPTY,
	UX_FILLING = AS_X_FILLING,
	UX_HUGE = AS_X_HUGE,
	UX_SMALL = AS_X_SMALL,
};
#define UX_STATE(s)    AS_X_STATE(s)
#define UX_F_DISTURBED AS_X_DISTURBED
#define UX_ADV_MASK    AS_ADV_MASK
#define UX_ADV_SPLIT   AS_ADV_SPLIT

struct uffd_region {
	union { /* core/as's region: geometry, span and state arrays, by either name */
		struct as_region as;
		struct {
			AS_REGION_MEMBERS
		};
	};
	uint32_t cid; /* cookie id: owner cookies are cid << 32 | page index */
	int prot;
	int refs;	       /* atomic; the table holds one while the region is live */
	uint8_t dead;	       /* removed from the table (unmapped, transferred or failed) */
	uint8_t failed;	       /* an ioctl error gave the region back to the kernel */
	uint8_t no_huge_move;  /* the host refused huge moves here (VMA mismatch): 4 KiB only */
	pthread_rwlock_t busy; /* read: a handler materialising or migrating; write: the program
				* changing the mapping (munmap, madvise, mremap, MAP_FIXED) */
	void *meta;	       /* one private mapping holding the four state arrays */
	size_t meta_len;
};

#define UFFD_REGION_SLOTS 32768 /* regions alive at once */

/* Cookie ids have their own slots so that a region transferred by mremap keeps the cookies mm
 * already stores for its frames. */
struct uffd_cid_slot {
	uint16_t gen;	       /* bumped on free; part of the cid (never 0) */
	struct uffd_region *r; /* current holder, NULL when free */
};

struct uffd_table {
	pthread_rwlock_t lock;	     /* protects the sorted array and both slot tables */
	struct uffd_region **sorted; /* live regions ordered by lo */
	unsigned n;
	struct uffd_region *slots;  /* UFFD_REGION_SLOTS region structs */
	uint8_t *used;		    /* per region slot */
	struct uffd_cid_slot *cids; /* UFFD_REGION_SLOTS cookie ids */
	unsigned hint, cid_hint;    /* next slots to try */
};

static inline uint64_t uffd_cookie(const struct uffd_region *r, uint32_t page)
{
	return ((uint64_t)r->cid << 32) | page;
}

static inline uint32_t uffd_page_of(const struct uffd_region *r, uintptr_t addr)
{
	return as_page_of(&r->as, addr);
}

static inline uint32_t uffd_ext_of(const struct uffd_region *r, uintptr_t addr)
{
	return as_ext_of(&r->as, addr);
}

static inline uintptr_t uffd_ext_addr(const struct uffd_region *r, uint32_t e)
{
	return as_ext_addr(&r->as, e);
}

int uffd_table_init(struct uffd_table *t);
void uffd_table_destroy(struct uffd_table *t);
/* Region containing addr in its live span, with a reference, or NULL. */
struct uffd_region *uffd_region_get(struct uffd_table *t, uintptr_t addr);
/* Region owning a cookie (current one, after a transfer), with a reference, or NULL. */
struct uffd_region *uffd_region_by_cookie(struct uffd_table *t, uint64_t owner);
void uffd_region_put(struct uffd_table *t, struct uffd_region *r);
/* Regions overlapping [lo, hi), in address order, with references; returns how many (<= max). */
unsigned uffd_regions_overlapping(struct uffd_table *t, uintptr_t lo, uintptr_t hi,
				  struct uffd_region **out, unsigned max);
/* The state bytes, atomically (core/as). */
static inline uint32_t uffd_pfn_get(const struct uffd_region *r, uint32_t p)
{
	return as_pfn(&r->as, p);
}
static inline void uffd_pfn_set(struct uffd_region *r, uint32_t p, uint32_t pfn)
{
	as_pfn_set(&r->as, p, pfn);
}
static inline uint8_t uffd_pstate(const struct uffd_region *r, uint32_t p)
{
	return as_pstate(&r->as, p);
}
static inline void uffd_pstate_set(struct uffd_region *r, uint32_t p, uint8_t s)
{
	as_pstate_set(&r->as, p, s);
}
static inline bool uffd_pstate_cas(struct uffd_region *r, uint32_t p, uint8_t from, uint8_t to)
{
	return as_pstate_cas(&r->as, p, from, to);
}
static inline uint8_t uffd_xadv(const struct uffd_region *r, uint32_t e)
{
	return as_xadv(&r->as, e);
}
static inline void uffd_xadv_set(struct uffd_region *r, uint32_t e, uint8_t adv)
{
	as_xadv_set(&r->as, e, adv);
}
static inline uint8_t uffd_xstate(const struct uffd_region *r, uint32_t e)
{
	return as_xstate(&r->as, e);
}
static inline void uffd_xstate_set(struct uffd_region *r, uint32_t e, uint8_t s)
{
	as_xstate_set(&r->as, e, s);
}
static inline bool uffd_xstate_cas(struct uffd_region *r, uint32_t e, uint8_t from, uint8_t to)
{
	return as_xstate_cas(&r->as, e, from, to);
}

/* A new region for [lo, hi) (page aligned), pages EMPTY, extents EMPTY where wholly inside. With
 * insert it goes into the table at once; otherwise the caller fills its states first and calls
 * uffd_region_insert. If keep_cid is non-zero the region takes over that cookie id (a transfer:
 * mm's frames keep their cookies). Returns 0, -ENOSPC (table full), -EEXIST (overlaps a live
 * span) or -ENOMEM. */
int uffd_region_create(struct uffd_table *t, uintptr_t lo, uintptr_t hi, int prot,
		       uint32_t keep_cid, bool insert, struct uffd_region **out);
int uffd_region_insert(struct uffd_table *t, struct uffd_region *r);
/* Drop a region that was never inserted. */
void uffd_region_discard(struct uffd_table *t, struct uffd_region *r);
/* Does [lo, hi) overlap any live span? (no references taken) */
bool uffd_table_overlaps(struct uffd_table *t, uintptr_t lo, uintptr_t hi);
/* Remove r from the table (dead); frees it when the last reference goes. */
void uffd_region_remove(struct uffd_table *t, struct uffd_region *r);
/* Shrink the live span past GONE pages at either end; removes r when nothing is live. */
void uffd_region_trim(struct uffd_table *t, struct uffd_region *r);
/* Recompute the state of extents [e0, e1] from their pages (no owner may hold them). */
static inline void uffd_region_recompute_extents(struct uffd_region *r, uint32_t e0, uint32_t e1)
{
	as_recompute_extents(&r->as, e0, e1);
}
static inline bool uffd_ext_inside(const struct uffd_region *r, uint32_t e)
{
	return as_ext_inside(&r->as, e);
}

/* ---- staging: prefaulted host THPs --------------------------------------------------------- */

enum uffd_slot_state { US_FREE, US_READY, US_TAKEN, US_FILLING };

struct uffd_staging {
	uint8_t *area; /* nslots * 2 MiB, 2 MiB aligned, MADV_HUGEPAGE | MADV_DONTFORK */
	size_t area_len;
	void *area_map; /* the mapping as made (area is aligned inside it) */
	size_t area_map_len;
	unsigned nslots;
	unsigned depth;	      /* READY chunks the refill thread keeps */
	uint8_t *state;	      /* per slot, enum uffd_slot_state (atomic) */
	uint8_t *huge;	      /* per slot: the host gave a PMD-mapped THP */
	pthread_mutex_t lock; /* refill thread sleep/wake */
	pthread_cond_t cond;
	bool stop;
	bool started;
	pthread_t thread;
	struct uffd_host_stats *host; /* counters (the process's stats) */
	int pagemap_fd;		      /* /proc/self/pagemap, for PAGEMAP_SCAN checks */
	bool collapse;		      /* try MADV_COLLAPSE when a populated chunk is not a THP */
	struct guard_thread gt;	      /* the refill thread's registration (credentials) */
};

int uffd_staging_init(struct uffd_staging *s, unsigned depth, unsigned extra,
		      struct uffd_host_stats *host, int pagemap_fd, bool host_thp);
int uffd_staging_start(struct uffd_staging *s); /* the refill thread */
void uffd_staging_destroy(struct uffd_staging *s);
/* Take a chunk (ready, else populate one now). Returns the slot index or -errno. */
int uffd_staging_take(struct uffd_staging *s);
/* Give back a slot whose chunk was moved away whole (its range is empty again). */
void uffd_staging_spent(struct uffd_staging *s, int slot);
static inline void *uffd_staging_addr(const struct uffd_staging *s, int slot)
{
	return s->area + (size_t)slot * UFFD_HPAGE_SIZE;
}
/* Give a slot back: intact (still a whole populated chunk) or spent (moved away, split). */
void uffd_staging_release(struct uffd_staging *s, int slot, bool intact);
/* Populate one chunk (MADV_POPULATE_WRITE, never a read fault: a huge zero page must not reach
 * the pool) and check whether the host backs it with a THP; returns 1 huge, 0 small, -errno. */
int uffd_populate_chunk(int pagemap_fd, void *chunk, bool collapse);
/* PAGEMAP_SCAN: 1 if [addr, addr + len) is PMD-mapped, 0 if not, -errno if unknown. */
int uffd_range_is_pmd(int pagemap_fd, uintptr_t addr, size_t len);

/* ---- the live emulator --------------------------------------------------------------------- */

struct uffd_live;

/* One thread that calls into mm (a handler, or the background thread): the `call` argument of
 * every mm hook. Everything it needs on the fault path is preallocated here. */
struct uffd_worker {
	struct uffd_live *lv;
	unsigned idx;
	int tid;
	pthread_t thread;
	bool started;
	int slot;	       /* staging slot taken by clear_huge for the fault in progress */
	uint8_t *scratch;      /* UFFD_SCRATCH_PAGES registered pages for migration */
	unsigned scratch_next; /* next unused scratch page (DONTNEEDed in batches) */
	uintptr_t fault_addr;  /* the fault being served (for hooks and stall reports) */
	int busy;	       /* atomic: serving a message (the exit hook waits for it) */
	int fault_tid;
	uint64_t fault_t0;     /* when its message was read */
	bool unwind_cold;      /* captured a stack without libunwind's trace cache: build it */
	struct guard_thread gt; /* registration with core/guard (credentials) */
};
#define UFFD_SCRATCH_PAGES 32

/* What a per-fault hook sees (issue 6 traces, issue 5 stall capture). */
struct uffd_fault_event {
	uintptr_t addr;
	int tid; /* faulting thread (UFFD_FEATURE_THREAD_ID) */
	bool write;
	uint64_t t_read_ns;		/* message read (CLOCK_MONOTONIC) */
	uint64_t latency_ns;		/* read to wake-up */
	const struct mm_fault_rec *rec; /* mm's record (outcome, steps, cause) */
	int real_pmd;			/* huge: 1 PMD-mapped, 0 not, -1 unknown; base: -1 */
	const struct uffd_worker *worker;
};
typedef void (*uffd_fault_hook_fn)(void *arg, const struct uffd_fault_event *ev);

/* Optional page-cache data hook (issue 5: memcpy in the page-cache arena). */
typedef int (*uffd_copy_file_fn)(void *arg, uint64_t owner, uint32_t from, uint32_t to);

struct uffd_live {
	struct uffd_config cfg;
	int uffd;
	int ctl_fd;	   /* semaphore eventfd the handlers poll: a stop or a credential request */
	/* A page that reads 1 in the process the emulator was made for and 0 in any process made
	 * from it by a fork of the address space (MADV_WIPEONFORK), atfork handlers or not (a raw
	 * clone, _Fork); a vfork or CLONE_VM child shares the page, and the emulator, as it should. */
	const uint32_t *forkcheck;
	uint64_t features; /* granted by UFFDIO_API */
	struct mm *mm;
	struct mm_env env;
	pthread_mutex_t mm_lock;
	struct waitq wbq; /* writeback waits (wait_writeback hook; io wakes it) */
	int pagemap_fd;	  /* /proc/self/pagemap for PAGEMAP_SCAN */
	struct uffd_table table;
	struct uffd_staging staging;
	unsigned nworkers; /* handlers; worker[nworkers] is the background thread */
	struct uffd_worker workers[UFFD_MAX_HANDLERS + 1];
	uint8_t *scratch_area; /* registered, DONTFORK, (nworkers + 1) * UFFD_SCRATCH_PAGES */
	size_t scratch_len;
	void *zero_page;	   /* 4 KiB of zeros (unmanaged) for UFFDIO_COPY */
	struct uffd_stats *stats;  /* shared file (run dir) or private */
	pthread_mutex_t snap_lock; /* the stats' non-atomic parts: snapshot, note, state */
	size_t stats_len;
	int stats_fd;
	bool may_huge; /* the policy can ever decide huge (uffd_host_advise) */
	bool child;    /* a fork child: everything passes through */
	bool detached; /* stepped aside (seccomp, unshare...): threads gone, memory unregistered */
	bool thp_disabled; /* prctl(PR_SET_THP_DISABLE) (atomic) */
	bool stopping;
	uint32_t bg_wake; /* futex word: wakes the background thread early */
	bool bg_stop;
	int said;		/* bit mask of one-time warnings already printed */
	uintptr_t unknown_addr; /* last registered address no region claimed (atomic) */
	uint32_t unknown_hits;	/* consecutive messages for it (livelock guard) */
	uffd_fault_hook_fn fault_hook;
	void *fault_hook_arg;
	uffd_copy_file_fn copy_file;
	void *copy_file_arg;
	struct io *io;               /* writeback engine and dirtier (top-level process), or NULL */
	struct uffd_stallcap *stallcap; /* stall events with stacks, or NULL */
	struct uffd_tracer *tracer;     /* THPEMU_TRACE recording (trace.c), or NULL */
};

/* Create the emulator: open the userfaultfd (syscall, else /dev/userfaultfd), create the pool,
 * apply the recipe, set up staging, scratch and stats, start handler, refill and background
 * threads. On failure err says why in one line and nothing is left behind. */
int uffd_live_create(const struct uffd_config *cfg, struct uffd_live **out, char *err,
		     size_t errlen);
/* Stop the threads and free everything (tests; the preload library never stops its handlers,
 * so a program exiting with threads still faulting cannot hang). */
void uffd_live_destroy(struct uffd_live *lv);
/* Refresh the stats snapshot of mm's counters. */
void uffd_live_snapshot(struct uffd_live *lv);
/* A consistent copy of the process's statistics (for writing a report while handlers run). */
void uffd_live_stats_copy(struct uffd_live *lv, struct uffd_stats *out);
/* Write this process's JSON report to f (a consistent copy of its statistics). */
int uffd_live_report(struct uffd_live *lv, FILE *f, const char *cmdline);
/* Exit hook: final snapshot, state EXITED, per-process JSON when configured. */
void uffd_live_exit(struct uffd_live *lv, const char *cmdline);
/* In a fork child: forget everything (the kernel unregistered the child's VMAs). */
void uffd_live_forked_child(struct uffd_live *lv);
/* Step aside for good: io stopped, no migration in flight, every managed range handed back to
 * the kernel with its data, every emulator thread gone (the process is as single-threaded as
 * the program made it). The statistics stay for the exit report, which says why. */
void uffd_live_detach(struct uffd_live *lv, const char *why);
/* prctl(PR_SET_THP_DISABLE): no huge decisions for this process from now on (6.x profiles). */
void uffd_live_thp_disable(struct uffd_live *lv, bool disable);
void uffd_live_set_fault_hook(struct uffd_live *lv, uffd_fault_hook_fn fn, void *arg);
void uffd_live_set_copy_file(struct uffd_live *lv, uffd_copy_file_fn fn, void *arg);
/* Print "thpemu: MSG NUM TAIL" once per bit and keep it as the report's note (no stdio, no
 * allocation: safe on the fault path). */
void uffd_say_once(struct uffd_live *lv, int bit, const char *msg, uint64_t num, const char *tail);
/* pattern with every "%p" replaced by this process's id (THPEMU_REPORT, THPEMU_TRACE). */
void uffd_expand_pid(const char *pattern, char *out, size_t len);
void uffd_note(struct uffd_live *lv, const char *msg);
int uffd_open_fd(uint64_t features, uint64_t *granted, char *err, size_t errlen);

/* Set on the emulator's own threads (and by the shim while it works): interposed calls made on
 * such a thread pass straight through. */
extern __thread int uffd_tls_passthrough;

/* ---- the program's memory calls (core/shim forwards eligible calls here) ------------------- */

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

/* ---- io: the slow device and the dirtier (iolive.c) ----------------------------------------- */

/* Start core/io in this process if THPEMU_DEVICE or THPEMU_DIRTY ask for it and this is the
 * process `thpemu run` started (THPEMU_IO_PID). A device that cannot be used falls back to the
 * in-process model; nothing here fails the emulator (problems go to the report's io.note). */
void uffd_io_start(struct uffd_live *lv);
/* Stop the dirtier and the flusher (at exit: waits up to 1 s for writes in flight). */
void uffd_io_stop(struct uffd_live *lv);

/* ---- stall events with stacks (stallcap.c) ---------------------------------------------------- */

struct uffd_stallcap;

/* Set up stall capture: the event store, libunwind, the application-stack signal and the
 * watchdog thread that asks a thread blocked in a long fault for its stack. Returns 0 or -errno
 * (then stalls are only counted). */
int uffd_stallcap_start(struct uffd_live *lv);
void uffd_stallcap_stop(struct uffd_live *lv);
/* Handler thread, before serving faults. */
void uffd_stallcap_thread_init(struct uffd_worker *w);
/* Handler thread, between faults: after its first capture, build the thread's fast unwinder
 * (obs_unwind_thread_warm), off every fault's latency and only on threads that capture. */
void uffd_stallcap_idle(struct uffd_worker *w);
/* A fault begins / ends on worker w (handler threads). */
void uffd_stallcap_fault_begin(struct uffd_worker *w, uintptr_t addr, int tid, uint64_t t_read);
void uffd_stallcap_fault_end(struct uffd_worker *w, const struct mm_fault_rec *rec,
			     uint64_t latency_ns);
/* Inside a hook that blocks (wait_writeback, writeout): capture the handler's stack here, keep
 * it if this is the longest block of the fault. Returns a token for uffd_stallcap_blocked. */
uint64_t uffd_stallcap_blocking(struct uffd_worker *w, struct obs_stack *scratch);
void uffd_stallcap_blocked(struct uffd_worker *w, struct obs_stack *scratch, uint64_t token);
/* From a [locked] hook inside long compaction or reclaim: capture the stack once the fault has
 * been in service for half the threshold and no blocking point gave one. */
void uffd_stallcap_long_running(struct uffd_worker *w);
/* The events: JSON ("stalls" object) and the 2011 text report, at exit. */
struct obs_stalls *uffd_stallcap_store(struct uffd_live *lv);
/* Write DIR/PID.stalls.json and DIR/PID.stalls.txt for `thpemu run`. */
void uffd_stallcap_write_files(struct uffd_live *lv, const char *dir);

/* ---- fault traces (trace.c; format: core/obs/trace.h) --------------------------------------- */

struct uffd_tracer;

/* Start recording to THPEMU_TRACE (before the handlers start). 0, or -errno with one line in
 * err (the path cannot be written, or is someone else's link: the emulator does not start). */
int uffd_trace_start(struct uffd_live *lv, char *err, size_t errlen);
/* Exit hook: write what the rings hold and the END record; recording goes on. */
void uffd_trace_exit(struct uffd_live *lv);
/* Stop the writer, write the rest, close the file (uffd_live_destroy). */
void uffd_trace_stop(struct uffd_live *lv);
void uffd_trace_forked_child(struct uffd_live *lv);
bool uffd_tracing(const struct uffd_live *lv);
/* A served fault (handler thread; lock-free, allocation-free): cand = mm was asked with huge_ok,
 * decision = mm's outcome, host_small = mm said huge but the host mapped 4 KiB pages. */
void uffd_trace_fault(const struct uffd_worker *w, const struct uffd_fault_event *ev, bool cand,
		      unsigned decision, bool host_small);
/* A change to managed memory made by the program's thread (enum obs_trace_type, OBS_TRF_*). */
void uffd_trace_event(struct uffd_live *lv, unsigned type, uintptr_t addr, uint64_t len,
		      uint64_t val2, unsigned flags, unsigned advice);

/* ---- internals shared by the uffd files (and unit tests) ----------------------------------- */

/* Serve one fault message (handler.c). */
void uffd_handle_fault(struct uffd_worker *w, uintptr_t addr, bool write, int tid, uint64_t t_read);
/* The mm environment (env.c). */
extern const struct mm_env_ops uffd_env_ops;
/* Take the mm lock on behalf of mm's next ops->lock() call on this thread: a hook that must not
 * let any other thread into mm between its return and mm's re-lock calls this last. */
void uffd_env_prelock(struct uffd_live *lv);
/* Drop a prelock mm never consumed (defensive; returns true if there was one). */
bool uffd_env_prelock_drop(struct uffd_live *lv);
/* Migrate one program page for real (migrate.c): the migrate_anon hook's body. */
int uffd_migrate_page(struct uffd_worker *w, uint64_t owner, uint32_t from, uint32_t to);
/* Give a failed region back to the kernel (unregister, free its frames, wake everyone). */
void uffd_region_fail(struct uffd_live *lv, struct uffd_region *r, int err);
/* core/as's environment for this process (frames go back to lv's mm) and its counters. */
void uffd_as_env(struct uffd_live *lv, struct as_env *env);
void uffd_as_count(struct uffd_live *lv, const struct as_counts *c);
/* Free the frames behind pages [p0, p1) of r (caller holds r->busy for writing). Pages owned by
 * a handler are flagged instead; `unmap` decides GONE vs EMPTY. */
void uffd_region_release_pages(struct uffd_live *lv, struct uffd_region *r, uint32_t p0,
			       uint32_t p1, bool unmap);

/* munmap semantics for [lo, hi) on the managed regions it overlaps, running real(arg) (the
 * actual system call) under their locks (mapops.c). */
long uffd_unmap_managed(struct uffd_live *lv, uintptr_t lo, uintptr_t hi, long (*real)(void *arg),
			void *arg);
/* bytes_managed gauge */
void uffd_gauge_add(struct uffd_live *lv, uint64_t bytes);
/* The host madvise of managed memory: MADV_HUGEPAGE (huge decisions possible), MADV_NOHUGEPAGE
 * (--host-thp 0), or none. */
void uffd_host_advise(struct uffd_live *lv, uintptr_t lo, size_t len);
void uffd_gauge_sub(struct uffd_live *lv, uint64_t bytes);

/* uffdio wrappers: 0 or -errno (moved/copied bytes reported through *done when not NULL). */
int uffd_io_copy(int fd, uintptr_t dst, const void *src, size_t len, bool wake, int64_t *done);
int uffd_io_zeropage(int fd, uintptr_t dst, size_t len);
int uffd_io_move(int fd, uintptr_t dst, uintptr_t src, size_t len, uint64_t mode, int64_t *done);
int uffd_io_wake(int fd, uintptr_t start, size_t len);
int uffd_io_register(int fd, uintptr_t start, size_t len);
/* mincore(2): 1 if the page at addr is mapped, 0 if not, -errno. */
int uffd_page_resident(uintptr_t addr);
int uffd_io_unregister(int fd, uintptr_t start, size_t len);

#endif

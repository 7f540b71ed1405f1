/* The statistics record every managed process keeps, and `thpemu run` reads: data only.
 *
 * The live emulator (core/live, in the preloaded libthpemu.so) writes it, in place, in a
 * MAP_SHARED file of the run directory; `thpemu run`, the machine daemon and the report library
 * (core/report: run.h merges records and writes the run report) read it. Neither links the other:
 * this header is what they share, so it holds types and constants only (the name tables are
 * defined in core/report/stats.c). The names keep the live emulator's uffd_ prefix: the writer's
 * code counts into these fields by name (uffd_stat_add(&st->host.messages, 1)).
 *
 * A record is read only if its magic, version and size are this build's (uffd_stats_read):
 * change the layout, change UFFD_STATS_VERSION.
 */
#ifndef THPEMU_REPORT_STATS_H
#define THPEMU_REPORT_STATS_H

#include <stdint.h>

#include "io/io.h"
#include "mm/mm.h"
#include "obs/faults.h"
#include "obs/mthp.h"

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
	X(huge_clears, "2 MiB staging chunks thpemu cleared itself (memset)")                      \
	X(huge_clears_skipped, "huge faults given a chunk the host had just zeroed (no memset)")   \
	X(huge_clear_charged_ns, "a clear's measured cost charged to each of those faults (ns)")   \
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
	X(collapse_wp_writes, "writes to collapsing ranges let through while their pages were "    \
			      "copied (write-protected)")                                          \
	X(collapse_swapped, "collapses whose range held pages the host had swapped out (read "     \
			    "back in, not taken for holes)")                                       \
	X(madv_collapse_calls, "MADV_COLLAPSE calls on managed memory")                            \
	X(khugepaged_visits, "khugepaged visits of this process's address space")                  \
	X(underused_splits, "THPs the shrinker found underused and this process split for real")   \
	X(underused_pages_freed, "zero-filled subpages those splits unmapped and freed")           \
	X(own_populated,                                                                           \
	  "pages of the emulator's own the kernel populated for the program (mlock)")              \
	X(deepbind_loads, "libraries the program loaded with RTLD_DEEPBIND, loaded without it")    \
	X(ranges_released, "managed ranges given back for the program's own userfaultfd")          \
	X(zero_faults, "read first touches that mapped the 4 KiB zero page (no frame)")            \
	X(huge_zero_faults, "read first touches that mapped the huge zero page (no frame)")        \
	X(zero_reads, "reads of zero pages the host had not mapped yet (no fault in the kernel)")  \
	X(zero_wp_faults, "first writes to zero pages (write-protect messages: a frame each)")     \
	X(shmem_maps, "shared memory mappings managed (MAP_SHARED anonymous, memfd, /dev/shm)")    \
	X(shmem_faults, "first touches of shared memory pages served (any process's first)")       \
	X(shmem_huge, "... that allocated a PMD-size shmem folio (delivered as 4 KiB PTEs)")       \
	X(shmem_mthp, "... that allocated an mTHP shmem folio (delivered as 4 KiB PTEs)")          \
	X(shmem_base, "... that allocated a 4 KiB shmem page")                                     \
	X(shmem_cached, "... whose page another process's fault had allocated (its folio)")        \
	X(shmem_pages, "shmem pages filled (UFFDIO_COPY) for those faults")                        \
	X(shmem_pages_released, "shmem frames freed when their object went")                       \
	X(shmem_pages_punched, "shmem frames freed by a hole punched or a truncation")             \
	X(shmem_remaps, "mremap calls on managed shared memory (the mapping followed)")            \
	X(shmem_fault_ns, "total service time of shared memory faults (ns)")                       \
	X(exit_faults, "first touches by thpemu's exit work (its reports), served outside the "    \
		       "emulated kernel: not the program's faults")                                \
	X(own_faults, "first touches by thpemu's own threads (handlers, background, watchdog, "    \
		      "...), served outside the emulated kernel: not the program's faults")

struct uffd_host_stats {
#define UFFD_X_FIELD(name, help) uint64_t name;
	UFFD_HOST_COUNTERS(UFFD_X_FIELD)
#undef UFFD_X_FIELD
};
extern const char *const uffd_host_names[];
extern const char *const uffd_host_help[];
#define UFFD_NR_HOST (sizeof(struct uffd_host_stats) / sizeof(uint64_t))

#define UFFD_STATS_MAGIC   0x7473756d65706874ULL /* "thpemust" */
#define UFFD_STATS_VERSION 18
#define UFFD_STALL_RECS	   256 /* stall events kept per process (more are only counted) */

/* Records made ahead: the host of a `thpemu run` keeps RUN_DIR/.spare.K (K below
 * UFFD_STATS_SPARES) made, each a zeroed file of the record's length, UFFD_STATS_FILE_LEN
 * (core/host/host.c: spares_top_up), once the run has lived a keeper tick; a process starting
 * claims the one of its pid (K = pid % UFFD_STATS_SPARES) by renaming it to PID.stats
 * (core/live/live.c: stats_map), which costs it a rename instead of an inode's creation and
 * sizing. The name has no ".stats" in it: nothing reads a spare as a record. Their number is
 * prime, so that pids a process's threads space out evenly still spread over every spare. */
#define UFFD_STATS_SPARES    17
#define UFFD_STATS_SPARE_FMT "%s/.spare.%u"
#define UFFD_STATS_FILE_LEN  ((sizeof(struct uffd_stats) + 4095) & ~(size_t)4095)

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
	X(shared, "shared memory: not managed (MAP_SHARED anonymous, memfd, SysV or POSIX shm; "   \
		  "its Pss)")                                                                      \
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

/* One process's record. With THPEMU_RUN_DIR it lives in a MAP_SHARED file <dir>/<pid>.stats that
 * handlers update in place, so `thpemu run` can read it even after _exit or a crash. */
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
	char comm[16];	    /* the program's name when the library started (its main thread's) */
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

#endif

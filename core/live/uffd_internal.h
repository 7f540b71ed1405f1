/* The live emulator's internals, shared by the core/live files (the rest of thpemu uses uffd.h):
 * userfaultfd regions, handler pool, staging THPs and the live mm environment.
 *
 * Method. Private anonymous mappings of the program (interposed by core/preload) become *regions*:
 * 2 MiB-aligned when large enough, MADV_HUGEPAGE on the host, registered with one userfaultfd in
 * MISSING mode (UFFD_FEATURE_MOVE | THREAD_ID, no EVENT_* features). A pool of handler threads
 * reads fault messages one at a time and, for each first touch, asks core/mm (the emulated kernel,
 * driven through a live environment: real clock, a mutex, real zeroing, real page migration) for
 * a decision, then materialises it for real:
 *   huge  a prefaulted 2 MiB staging THP, cleared, is UFFDIO_MOVEd to the aligned extent: the
 *         program gets a real PMD mapping (do_huge_pmd_anonymous_page);
 *   base  a zeroed 4 KiB page is UFFDIO_COPYed (write fault) or the zero page is mapped
 *         (UFFDIO_ZEROPAGE, read fault) (do_anonymous_page);
 *   zero  (--zero-page, ranges registered MISSING | WP) a read first touch takes no frame: a
 *         page of zeros is UFFDIO_COPYed write-protected, and its first write comes back as a
 *         WP message that asks mm for the frame and lifts the protection (handler.c);
 * and when compaction migrates one of the program's 4 KiB frames, the page is really unmapped
 * (UFFDIO_MOVE to a registered scratch page, DONTWAKE: accesses wait as on a migration entry),
 * copied and remapped (UFFDIO_COPY back, waking the waiters) (migrate_pages/unmap_and_move).
 *
 * State machines (all transitions are atomic byte CAS; core/addrspace/as.h has the full rules):
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
#ifndef THPEMU_UFFD_INTERNAL_H
#define THPEMU_UFFD_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>

#include "addrspace/as.h"
#include "inprocess/guard.h"
#include "io/waitq.h"
#include "machine/machine.h"
#include "obs/stall.h"
#include "live/uffd.h"
#include "policy/plugin.h"

#define UFFD_MTHP_MAX_BYTES (4096UL << 8) /* the largest mTHP folio (order 8, 1 MiB) */
#define UFFD_MAX_HANDLERS   CONFIG_MAX_HANDLERS
#define UFFD_EPOLL_MAX	    8 /* epoll instances at most (descriptors are scarce: core/inprocess) */

/* Handler threads when THPEMU_HANDLERS is auto: CPUs + 2, at least 3, at most 16 (live.c). */
unsigned uffd_handlers_auto(void);

#define UFFD_COUNT(lv, name) uffd_stat_add(&(lv)->stats->host.name, 1)

/* ---- the memory census (census.c) ------------------------------------------------------------ */

#define UFFD_SMALL_RANGES 256

/* Does this kernel and glibc let the light census give smaps's figures (census.c)? */
bool uffd_census_light_supported(void);

struct uffd_live;
/* Take the memory census of this process: lv->stats->mem keeps the one in which the program had
 * the most memory, its slot on a machine the latest (reads /proc/self/smaps). */
void uffd_census_take(struct uffd_live *lv);
/* Read a census into c without keeping it: the light one (/proc/self/maps and PAGEMAP_SCAN) where
 * it tells all the full one (/proc/self/smaps) does, else the full one (AUTO), or only one of
 * them. 1: the light one was read, 0: the full one, -1: none. */
enum uffd_census_how { UFFD_CENSUS_AUTO, UFFD_CENSUS_LIGHT, UFFD_CENSUS_FULL };
int uffd_census_read(struct uffd_live *lv, struct uffd_census *c, enum uffd_census_how how);
/* The background tick: a census if the process grew by a quarter since the last one (or the
 * period has passed), within 5 % of this thread's time. */
void uffd_census_tick(struct uffd_live *lv);
/* The program is about to free bytes of managed memory: a large free of memory at its largest
 * first takes a census (what a short run held at its largest would otherwise go unseen). */
void uffd_census_before_free(struct uffd_live *lv, uint64_t bytes);
/* An eligible mapping below --min-region passed through: remember it, so that a larger VMA the
 * kernel merged from such neighbours is "small", not "unseen". And one unmapped. */
void uffd_census_note_small(struct uffd_live *lv, uintptr_t lo, uintptr_t hi);
void uffd_census_forget_small(struct uffd_live *lv, uintptr_t lo, uintptr_t hi);

/* ---- regions ------------------------------------------------------------------------------- */

/* A managed mapping. Its geometry, span and state bytes (AS_P_*, AS_X_*) are core/addrspace's
 * region, read and changed through as.h with &r->as: as_pstate(&r->as, p), as_page_of(&r->as,
 * addr), ... */
struct uffd_region {
	union { /* core/addrspace's region: geometry, span and state arrays, by either name */
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
	uint32_t proc_slot;	    /* this process's machine slot (0 without a machine): in every
				     * cookie id, so owner cookies name their process */
};

static inline uint64_t uffd_cookie(const struct uffd_region *r, uint32_t page)
{
	return ((uint64_t)r->cid << 32) | page;
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
	uint8_t *zeroed;      /* per slot: the chunk holds zeros nobody wrote over (the host's
			       * populate zeroed it, or thpemu cleared it) */
	uint64_t clear_ns;    /* a 2 MiB clear's cost as measured here (0: not yet; atomic) */
	pthread_mutex_t lock; /* refill thread sleep/wake */
	pthread_cond_t cond;
	bool stop;
	bool started;
	bool lazy;   /* prefill only once a huge fault has taken a chunk (a fork child, which
		      * often execs at once: its chunks would be zeroed for nothing) */
	bool wanted; /* a chunk was taken (atomic) */
	/* without a refill thread yet: asked for (want_refill(want_arg)) when a chunk is taken */
	void (*want_refill)(void *arg);
	void *want_arg;
	bool refilling; /* filling up to the depth (atomic): set below half, cleared when full */
	uint64_t quiet_until; /* no fill starts before this (clock_now_ns; atomic) while a chunk is
			       * ready: a handler is migrating (uffd_staging_quiet) */
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
/* A handler is migrating program pages now: hold fills back for UFFD_STAGING_QUIET_NS. */
void uffd_staging_quiet(struct uffd_staging *s, uint64_t now);
/* Give back a slot whose chunk was moved away whole (its range is empty again). */
void uffd_staging_spent(struct uffd_staging *s, int slot);
static inline void *uffd_staging_addr(const struct uffd_staging *s, int slot)
{
	return s->area + (size_t)slot * UFFD_HPAGE_SIZE;
}
/* Give a slot back: intact (still a whole populated chunk) or spent (moved away, split). An
 * intact chunk that was written (uffd_staging_written) goes back to the host all the same: it
 * is never handed out again with data in it. */
void uffd_staging_release(struct uffd_staging *s, int slot, bool intact);
/* The taker of slot is about to write data into its chunk (a collapse's copy). */
void uffd_staging_written(struct uffd_staging *s, int slot);
/* Make slot's chunk a zeroed 2 MiB for a huge fault, clearing each 2 MiB once: a chunk the
 * host's populate zeroed and nobody wrote is not cleared again, and the fault is charged a
 * clear's cost as measured here (returned, ns; 0 when this call cleared it, timed by the
 * caller's own clock). A chunk not known to be zero, or the first before any clear was
 * measured, is cleared here (memset). */
uint64_t uffd_staging_zero(struct uffd_staging *s, int slot);
/* Populate one chunk (MADV_POPULATE_WRITE, never a read fault: a huge zero page must not reach
 * the pool) and check whether the host backs it with a THP; returns 1 huge, 0 small, -errno. */
int uffd_populate_chunk(int pagemap_fd, void *chunk, bool collapse);
/* PAGEMAP_SCAN: 1 if [addr, addr + len) is PMD-mapped, 0 if not, -errno if unknown. */
int uffd_range_is_pmd(int pagemap_fd, uintptr_t addr, size_t len);
/* PAGEMAP_SCAN: 1 if no page of [addr, addr + len) is present or swapped, 0 if one is, -errno. */
int uffd_range_is_empty(int pagemap_fd, uintptr_t addr, size_t len);
/* /proc/self/pagemap: mark in vec (one byte a page, mincore's layout, bit 0) every page of
 * [addr, addr + len) (at most 2 MiB) that the host swapped out; returns how many, or -errno. */
int uffd_range_swapped(int pagemap_fd, uintptr_t addr, size_t len, unsigned char *vec);
/* --host-fault pte: 1 if MADV_DONTNEED frees an emptied range's page table here, so that the
 * range can take a PMD again; 0 if not (or no host THP to tell with). */
int uffd_pt_reclaim_works(int pagemap_fd);

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
	int slot;		 /* staging slot taken by clear_huge for the fault in progress */
	uint64_t clear_ahead_ns; /* the fault's clear done ahead of time, charged to it (ns) */
	uint8_t *scratch;	 /* UFFD_SCRATCH_PAGES registered pages for migration */
	unsigned scratch_next;	 /* next unused scratch page (DONTNEEDed in batches) */
	uint8_t *cscratch; /* 2 MiB registered, empty between collapses (collapse.c), or NULL */
	/* the range this worker's collapse copies while it is only write-protected, or 0
	 * (atomic), and its pages written meanwhile (atomic: handler.c marks them) */
	uintptr_t cwp_addr;
	uint64_t cwp_dirty[512 / 64];
	uintptr_t fault_addr; /* the fault being served (for hooks and stall reports) */
	int busy;	      /* atomic: serving a message (the exit hook waits for it) */
	int fault_tid;
	int last_ptid;		/* the faulting thread of this handler's previous message */
	uint32_t ready;		/* futex word: the handler's start-up is done (start_threads) */
	uint64_t fault_t0;	/* when its message was read */
	bool unwind_cold;	/* captured a stack without libunwind's trace cache: build it */
	struct guard_thread gt; /* registration with core/inprocess (credentials) */
};
#define UFFD_SCRATCH_PAGES 128
#define UFFD_EXTRA_WORKERS 3 /* background, khugepaged, MADV_COLLAPSE */
#define UFFD_W_BG(lv)	   (&(lv)->workers[(lv)->nworkers])
#define UFFD_W_KHD(lv)	   (&(lv)->workers[(lv)->nworkers + 1])
#define UFFD_W_MADV(lv)	   (&(lv)->workers[(lv)->nworkers + 2])

/* What a per-fault hook sees (fault traces, stall capture). */
struct uffd_fault_event {
	uintptr_t addr;
	int tid; /* faulting thread (UFFD_FEATURE_THREAD_ID) */
	bool write;
	bool wp_zero;			/* the first write to a zero page (mm_fault_req.wp_zero) */
	uint64_t t_read_ns;		/* message read (CLOCK_MONOTONIC) */
	uint64_t latency_ns;		/* read to wake-up */
	const struct mm_fault_rec *rec; /* mm's record (outcome, steps, cause) */
	int real_pmd;			/* huge: 1 PMD-mapped, 0 not, -1 unknown; base: -1 */
	const struct uffd_worker *worker;
};
typedef void (*uffd_fault_hook_fn)(void *arg, const struct uffd_fault_event *ev);

/* Optional page-cache data hook (the page-cache arena's memcpy). */
typedef int (*uffd_copy_file_fn)(void *arg, uint64_t owner, uint32_t from, uint32_t to);

struct uffd_live {
	struct config cfg;
	struct policy_plugin plugin; /* the policy plugin (cfg.policy.plugin), when it loaded */
	int uffd;
	/* How the idle handler that listens waits (live.c, "waiting for a fault"): blocked in
	 * read(2) on the userfaultfd (block_read), woken for a stop or a credential request by a
	 * touch of kick_page; or, where the kernel refuses RWF_NOWAIT reads of a userfaultfd, in
	 * epoll on an O_NONBLOCK one beside ctl_fd. */
	bool block_read;
	char *kick_page;   /* block_read: a registered page of ours; a touch sends a message */
	uint32_t kicks;	   /* touches of kick_page under way (atomic) */
	uint32_t listener; /* block_read: 1 + index of the handler blocked in read, or 0 (atomic) */
	uint32_t handlers_alive; /* handler threads not yet gone (atomic) */
	/* Threads made when first needed (live.c, "threads made on demand"): handlers
	 * [0, handlers_made) exist, at most nworkers (atomic); todo holds the UFFD_TODO_* starts
	 * asked of the background thread (atomic); a thread is made only under start_lock and
	 * while starts_closed is false (stopping and stepping aside close it first). */
	uint32_t handlers_made;
	uint32_t todo;
	bool starts_closed;
	pthread_mutex_t start_lock;
	int ctl_fd; /* epoll: semaphore eventfd the handlers poll: a stop or a credential request */
	/* epoll instances the idle handlers wait in (handler i in ep_fd[i % n_ep]): the uffd with
	 * EPOLLEXCLUSIVE, so that a fault wakes one idle handler, and ctl_fd */
	int ep_fd[UFFD_EPOLL_MAX];
	unsigned n_ep;
	uint32_t spinner; /* a handler is polling (--spin) (atomic) */
	/* One idle handler at a time listens on the userfaultfd; the others park on park_seq (a
	 * futex word) until a handler's fault turns slow or faults of other threads queue up
	 * (uffd_handlers_cover), or a stop or credential request comes (all atomic). */
	uint32_t listeners, parked, park_seq;
	/* A page that reads 1 in the process the emulator was made for and 0 in any process made
	 * from it by a fork of the address space (MADV_WIPEONFORK), atfork handlers or not (a raw
	 * clone, _Fork); a vfork or CLONE_VM child shares the page, and the emulator, as it should.
	 */
	const uint32_t *forkcheck;
	uint64_t features; /* granted by UFFDIO_API */
	struct mm *mm;
	struct mm_env env;
	pthread_mutex_t mm_lock;
	struct waitq wbq; /* writeback waits (wait_writeback hook; io wakes it) */
	struct waitq *wq; /* the writeback waits in use: &wbq, or the machine's (shared) */
	struct rqs *rqs;  /* the machine's 3.x request list (io/rqshare.h), NULL if none */
	/* One machine shared with other processes (machine.c), when THPEMU_MACHINE names one: mm
	 * and the writeback waits live in its segment, the host runs io and the background
	 * threads, and the background thread here serves the machine's migration requests. */
	struct machine mach;
	bool on_machine;
	int mslot;		/* this process's slot (0 without a machine) */
	bool machine_stop_told; /* the stop hook ran for this process (machine.c) */
	/* the background thread leaves uffd_machine_serve: bit 0 to stop serving the machine's
	 * requests, bit 1 (UFFD_AGENT_POKE, cleared by it) to make a thread it was asked for */
	uint32_t agent_stop;
	int pagemap_fd; /* /proc/self/pagemap for PAGEMAP_SCAN */
	struct uffd_table table;
	struct uffd_staging staging;
	unsigned nworkers; /* handlers; worker[nworkers] is the background thread,
			    * [nworkers + 1] khugepaged's, [nworkers + 2] MADV_COLLAPSE callers' */
	struct uffd_worker workers[UFFD_MAX_HANDLERS + UFFD_EXTRA_WORKERS];
	uint8_t *scratch_area; /* registered, DONTFORK, (nworkers + 3) * UFFD_SCRATCH_PAGES, then
				* 3 * 2 MiB of collapse scratch (2 MiB aligned) */
	size_t scratch_len;
	void *scratch_map; /* the mapping as made (scratch_area is aligned inside it) */
	size_t scratch_map_len;
	pthread_mutex_t madv_lock; /* one MADV_COLLAPSE at a time (the kernel's mmap_lock write) */
	uint32_t cwp_users;	   /* handlers in uffd_collapse_wp_write (atomic, collapse.c) */
	uint32_t khd_wake;	   /* futex word: wakes the khugepaged thread early */
	bool khd_stop;
	void *zero_page;  /* 4 KiB of zeros (unmanaged) for UFFDIO_COPY */
	void *zero_block; /* UFFD_MTHP_MAX_BYTES of zeros (never written: the host's zero page)
			   * for an mTHP folio's one UFFDIO_COPY */
	struct uffd_stats *stats;    /* shared file (run dir) or private */
	pthread_mutex_t snap_lock;   /* the stats' non-atomic parts: snapshot, note, state */
	pthread_mutex_t census_lock; /* one census at a time (background tick or exit) */
	struct uffd_census_state {   /* census.c, under census_lock but for the atomics */
		uint64_t last_rss, last_ns, took_ns, next_ns;
		uint64_t managed_at_last; /* anon_managed of the last census */
		struct {
			uintptr_t lo, hi;
		} small[UFFD_SMALL_RANGES]; /* small eligible mappings that passed through */
		unsigned nsmall;
		int small_lock;
		bool light_off; /* no PAGEMAP_SCAN: the full census only */
	} census;
	size_t stats_len;
	int stats_fd;
	bool may_huge;	    /* the policy can ever decide huge (uffd_host_advise) */
	bool pt_reclaim;    /* --host-fault pte in effect: host VMAs MADV_NOHUGEPAGE, the empty page
			     * table freed before each huge move */
	bool zero_wp;	    /* zero pages (--zero-page): managed ranges registered MISSING | WP, a
			     * read first touch takes no frame (handler.c: zero pages) */
	bool child;	    /* a fork child: everything passes through */
	bool child_of_fork; /* made in a fork child (joining its parent's machine) */
	bool detached; /* stepped aside (seccomp, unshare...): threads gone, memory unregistered */
	uint8_t thp_disable; /* enum mm_thp_disable: the process's prctl state (atomic) */
	bool locks_used;     /* the program called mlock, mlock2 or mlockall (atomic) */
	bool mcl_future;     /* ... mlockall(MCL_FUTURE) without MCL_ONFAULT is in force (atomic) */
	bool stopping;
	uint32_t bg_wake; /* futex word: wakes the background thread early */
	bool bg_stop;
	int said;		/* bit mask of one-time warnings already printed */
	uintptr_t unknown_addr; /* last registered address no region claimed (atomic) */
	uint32_t unknown_hits;	/* consecutive messages for it (livelock guard) */
	/* the start-up round-trip probe (probe.c) */
	uintptr_t probe_base;
	size_t probe_len; /* atomic; 0 once the probe is over */
	uint32_t probe_stop, probe_inflight;
	uint64_t probe_svc_ns[UFFD_PROBES]; /* each probe's service time, written by its handler */
	uffd_fault_hook_fn fault_hook;
	void *fault_hook_arg;
	uffd_copy_file_fn copy_file;
	void *copy_file_arg;
	struct io *io; /* writeback engine and dirtier (top-level process), or NULL */
	struct uffd_stallcap *stallcap; /* stall events with stacks, or NULL */
	struct uffd_tracer *tracer;	/* THPEMU_TRACE recording (trace.c), or NULL */
	struct uffd_shmem *shmem;	/* shared memory mappings (shmem.c), or NULL */
	/* the thread running thpemu's exit hook, once it runs (atomic; 0 before): its faults,
	 * like those of the emulator's own threads at any time, are served outside the emulated
	 * kernel (handler.c: own_fault) */
	int32_t exit_tid;
};
void uffd_live_set_fault_hook(struct uffd_live *lv, uffd_fault_hook_fn fn, void *arg);
void uffd_live_set_copy_file(struct uffd_live *lv, uffd_copy_file_fn fn, void *arg);
/* pattern with every "%p" replaced by this process's id (THPEMU_REPORT, THPEMU_TRACE). */
void uffd_expand_pid(const char *pattern, char *out, size_t len);
/* This process's trace file: THPEMU_TRACE expanded, with ".PID" for a process that is not the
 * run's first. */
void uffd_trace_path(const struct config *cfg, char *out, size_t len);
int uffd_open_fd(uint64_t features, uint64_t *granted, char *err, size_t errlen);
/* Tests only: make the next emulators wait in epoll as on a kernel without RWF_NOWAIT reads of a
 * userfaultfd. */
extern bool uffd_test_force_epoll;

/* ---- io: the slow device and the dirtier (iolive.c) ----------------------------------------- */

/* Start core/io in this process if THPEMU_DEVICE or THPEMU_DIRTY ask for it and this is the
 * process `thpemu run` started (THPEMU_IO_PID). A device that cannot be used falls back to the
 * in-process model; nothing here fails the emulator (problems go to the report's io.note). */
void uffd_io_start(struct uffd_live *lv);
/* Stop the dirtier and the flusher (at exit: waits up to 1 s for writes in flight). */
void uffd_io_stop(struct uffd_live *lv);

/* ---- a shared machine (machine.c) ------------------------------------------------------------ */

/* Join the machine named by THPEMU_MACHINE (parent: a fork child's copy of its parent's live
 * emulator, whose mapping of the segment it inherited). Sets lv->mm, lv->wq, lv->mslot. */
int uffd_machine_join(struct uffd_live *lv, const struct uffd_live *parent, char *err,
		      size_t errlen);
/* Stepping aside: the host takes our frames back. */
void uffd_machine_leave(struct uffd_live *lv);
/* Ask slot's process (0: the host) to do op; waits bounded. The request's result, -ENOENT (gone)
 * or -EBUSY (no answer in time). */
int uffd_machine_request(struct uffd_live *lv, struct uffd_worker *w, int slot, uint32_t op,
			 uint64_t owner, uint32_t from, uint32_t to);
/* copy_file_page on the machine: the arena is in the segment. */
int uffd_machine_copy_file(struct uffd_live *lv, uint32_t from, uint32_t to);
/* The background thread: serve requests for our pages for up to slice_ns. */
void uffd_machine_serve(struct uffd_live *lv, struct uffd_worker *w, uint64_t slice_ns);
/* Make the background thread leave uffd_machine_serve (stop). */
void uffd_machine_kick(struct uffd_live *lv);
/* Starts asked of the background thread (uffd_live.todo): one more handler, the stall watchdog,
 * the staging refill thread. Any thread may ask (a handler included: it may not make a thread
 * itself, pthread_create allocates with the program's allocator). */
enum { UFFD_TODO_HANDLER = 1, UFFD_TODO_WATCHDOG = 2, UFFD_TODO_REFILL = 4 };
void uffd_live_want(struct uffd_live *lv, uint32_t what);
/* Make it leave uffd_machine_serve for one turn of its loop (a thread to make). */
void uffd_machine_poke(struct uffd_live *lv);
#define UFFD_AGENT_POKE 2u
/* A fork child: adopt every mapping the parent's (copied) table managed. */
void uffd_machine_adopt_inherited(struct uffd_live *lv, const struct uffd_live *parent);
/* uffd_adopt, counting the pages found present (resident) in *present. */
int uffd_adopt_range(struct uffd_live *lv, void *addr, size_t len, int prot, uint64_t *present);

/* ---- stall events with stacks (stallcap.c) ----------------------------------------------------
 */

struct uffd_stallcap;

/* Set up stall capture: the event store, libunwind, the application-stack signal and the
 * watchdog thread that asks a thread blocked in a long fault for its stack. Returns 0 or -errno
 * (then stalls are only counted). */
int uffd_stallcap_start(struct uffd_live *lv);
/* The watchdog thread, made on the background thread when a fault may first stall (UFFD_TODO_
 * WATCHDOG): 0, or -errno (stalls then get no application stack). */
int uffd_stallcap_start_watchdog(struct uffd_live *lv);
void uffd_stallcap_stop(struct uffd_live *lv);
/* The calling thread runs thpemu's exit hook from now on: its faults' events are marked
 * own_exit (they are thpemu's report writing, not the program). */
void uffd_stallcap_exiting(struct uffd_live *lv);
/* Handler thread, before serving faults: its stack's bounds (from the emulator's arena where it
 * was carved; else from /proc/self/maps if maps_ok, else none: no libunwind on it). */
void uffd_stallcap_thread_init(struct uffd_worker *w, bool maps_ok);
/* Handler thread, between faults: after its first capture, build the thread's fast unwinder
 * (obs_unwind_thread_warm), off every fault's latency and only on threads that capture. */
void uffd_stallcap_idle(struct uffd_worker *w);
/* A fault begins / ends on worker w (handler threads). */
void uffd_stallcap_fault_begin(struct uffd_worker *w, uintptr_t addr, int tid, uint64_t t_read);
void uffd_stallcap_fault_end(struct uffd_worker *w, const struct mm_fault_rec *rec,
			     uint64_t latency_ns);
/* Inside a hook that blocks (wait_writeback, writeout): capture the handler's stack here, keep
 * it if this is the longest block of the fault, with the owner cookie of the page waited on (0:
 * none), which the stall event turns into whose page it was. Returns a token for
 * uffd_stallcap_blocked. */
uint64_t uffd_stallcap_blocking(struct uffd_worker *w, struct obs_stack *scratch);
void uffd_stallcap_blocked(struct uffd_worker *w, struct obs_stack *scratch, uint64_t token,
			   uint64_t owner);
/* From a [locked] hook inside long compaction or reclaim: capture the stack once the fault has
 * been in service for half the threshold and no blocking point gave one. */
void uffd_stallcap_long_running(struct uffd_worker *w);
/* The events: JSON ("stalls" object) and the 2011 text report, at exit. */
struct obs_stalls *uffd_stallcap_store(struct uffd_live *lv);
/* The per-wait events (obs/stall.h), or NULL. */
struct obs_stalls *uffd_stallcap_waits(struct uffd_live *lv);
/* ops->waited: a wait of at least the threshold becomes a per-wait event ([locked]: no
 * allocation, no blocking, no libunwind). */
void uffd_stallcap_waited(struct uffd_worker *w, const struct mm_wait *wt);
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

/* thpemu's own threads (live.c), whose faults are served outside the emulated kernel at any time
 * (handler.c: own_fault): a lock-free table of thread ids, this process's. A thread of ours
 * calls uffd_thread_started first thing (it also records it with core/inprocess) and
 * uffd_thread_leave on its way out, and is joined with uffd_thread_join, which takes it out of
 * the table (its C library teardown, after uffd_thread_leave, allocates and frees); core/io's
 * threads are entered by their thread_init hook and taken out by their thread_gone hook once
 * joined (iolive.c: uffd_own_thread_gone), and core/preload's machine-stop thread enters and
 * leaves itself (uffd.h). UFFD_OWN_TIDS is twice what a process can have (64 handlers, a few
 * others); a thread that found no room would stay the program's. */
#define UFFD_OWN_TIDS 128
void uffd_thread_started(struct guard_thread *gt);
void uffd_thread_leave(struct guard_thread *gt);
int uffd_thread_join(pthread_t th, struct guard_thread *gt);
/* Thread tid of ours is gone (joined): out of the table. */
void uffd_own_thread_gone(int tid);
bool uffd_own_thread_is(int tid);
/* A fork child: none of the parent's threads is here. */
void uffd_own_threads_forget(void);

/* Serve one fault message (handler.c); wp: a write to a write-protected page (a zero page). */
void uffd_handle_fault(struct uffd_worker *w, uintptr_t addr, bool write, bool wp, int tid,
		       uint64_t t_read);
/* The mm environment (env.c). */
extern const struct mm_env_ops uffd_env_ops;
/* ---- collapse (collapse.c) ------------------------------------------------------------------- */

/* The owner's half of a khugepaged visit (the khugepaged_scan hook's body, here or for the
 * machine's khugepaged through the mailbox): mm_khugepaged_scan_mm over our regions. */
int uffd_khugepaged_visit(struct uffd_worker *w, uint64_t *addr, unsigned budget, bool *done);
/* MADV_COLLAPSE of [lo, hi) (managed part): 0 or -errno (madvise_collapse). */
int uffd_madv_collapse(struct uffd_live *lv, uintptr_t lo, uintptr_t hi);
/* A write-protect message on a page of a range a collapse is copying (handler.c, the page
 * MIGRATING): the page is marked written and made writable again (the writer woken). False
 * when no collapse copies that range now (the message is the collapse's to wake). */
bool uffd_collapse_wp_write(struct uffd_live *lv, uintptr_t addr);
/* khugepaged's thread of a process with a pool of its own. */
void *uffd_khugepaged_main(void *arg);
void uffd_khugepaged_ping(void *arg);

/* The start-up round-trip probe (probe.c): register its pages (create), run it (the background
 * thread, first thing), serve one of its messages (a handler: false if addr is not a probe
 * page), and keep a stop from waiting on it. */
#define UFFD_PROBE_GRACE_NS (200ull * 1000 * 1000) /* how long a stop lets a probe finish */
int uffd_probe_init(struct uffd_live *lv);
void uffd_probe_run(struct uffd_live *lv, struct guard_thread *gt);
bool uffd_probe_serve(struct uffd_worker *w, uintptr_t addr, uint64_t t_read);
void uffd_probe_stop(struct uffd_live *lv);
void uffd_probe_release(struct uffd_live *lv); /* destroy: the probe's range, threads stopped */

/* Migrate one program page for real (migrate.c): the migrate_anon hook's body. */
int uffd_migrate_page(struct uffd_worker *w, uint64_t owner, uint32_t from, uint32_t to);
/* THPEMU_TEST_MIGRATE_GAP: a migrated page or a collapsing range stays out of the mapping (and a
 * collapse's copy write-protected) this much longer (tests widen the window a fork, or the
 * program's accesses, must meet). */
void uffd_test_gap(struct uffd_live *lv);
/* migrate_anon_batch: this process's pages, each result in ret[i] (uffd_migrate_page's). */
void uffd_migrate_batch(struct uffd_worker *w, unsigned n, const uint64_t *owner,
			const uint32_t *from, const uint32_t *to, int *ret);
/* migrate.c, also for split.c: an empty scratch page of worker w, and whether a move from src
 * to dst that reported an error moved the page anyway (counted in move_misreports). */
uint8_t *uffd_scratch_page(struct uffd_worker *w);
bool uffd_moved_anyway(struct uffd_live *lv, uintptr_t dst, uintptr_t src);
/* Judge the THP at head (extent_owner: its page 0's cookie) and split it for real if underused
 * (split.c): the split_underused hook's body. 1 split, 0 not underused, -EAGAIN busy, -ENOENT. */
int uffd_split_underused(struct uffd_worker *w, uint64_t extent_owner, uint32_t head);
/* Give a failed region back to the kernel (unregister, free its frames, wake everyone). */
void uffd_region_fail(struct uffd_live *lv, struct uffd_region *r, int err);
/* core/addrspace's environment for this process (frames go back to lv's mm) and its counters. */
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
 * (--host-thp 0 or --host-fault pte), or none. */
/* A handler is about to block (a writeback wait, a long compaction or reclaim pass) or sees
 * faults of several threads: if no idle handler listens on the userfaultfd, wake a parked one
 * (live.c: handler_next) so that other faults are not left waiting behind this one. w is the
 * hook's caller; the background threads (not handlers) wake nobody. */
void uffd_handlers_cover(struct uffd_worker *w);
void uffd_host_advise(struct uffd_live *lv, uintptr_t lo, size_t len);
void uffd_gauge_sub(struct uffd_live *lv, uint64_t bytes);

/* uffdio wrappers: 0 or -errno (moved/copied bytes reported through *done when not NULL). */
int uffd_io_copy(int fd, uintptr_t dst, const void *src, size_t len, bool wake, int64_t *done);
int uffd_io_zeropage(int fd, uintptr_t dst, size_t len);
/* ... with a mode: UFFDIO_ZEROPAGE_MODE_DONTWAKE leaves the waiters asleep */
int uffd_io_zeropage_mode(int fd, uintptr_t dst, size_t len, uint64_t mode);
int uffd_io_move(int fd, uintptr_t dst, uintptr_t src, size_t len, uint64_t mode, int64_t *done);
/* UFFDIO_MOVE of [src, src + len) to dst, going on after partial progress (-EAGAIN with bytes
 * moved, at most 64 tries): 0 or the last -errno; *moved says how far it got. */
int uffd_io_move_all(int fd, uintptr_t dst, uintptr_t src, size_t len, uint64_t mode,
		     size_t *moved);
int uffd_io_wake(int fd, uintptr_t start, size_t len);
struct uffd_msg;
/* One message from the (blocking) userfaultfd: sizeof(*msg) or -errno; nowait: -EAGAIN instead
 * of blocking (preadv2 RWF_NOWAIT). */
long uffd_io_read(int fd, struct uffd_msg *msg, bool nowait);
/* Does the kernel take RWF_NOWAIT reads of a userfaultfd (fd: a new, empty one)? */
bool uffd_io_nowait_reads(int fd);
int uffd_io_register(int fd, uintptr_t start, size_t len);
/* Register program memory [start, start + len): MISSING, and WP when zero pages are on. */
int uffd_register_managed(const struct uffd_live *lv, uintptr_t start, size_t len);
/* UFFDIO_COPY(MODE_WP) of the 4 KiB page of zeros at src to dst: a zero page mapped
 * write-protected in one step (no window for an unseen write). It wakes nobody (DONTWAKE): the
 * caller wakes the waiters once the page's state says ZERO, or a write woken at once would
 * fault on the protection, find the page still owned, be dropped and never be woken again. */
int uffd_io_copy_wp(int fd, uintptr_t dst, const void *src);
/* UFFDIO_WRITEPROTECT mode 0 of [start, start + len): the protection lifted, waiters woken. */
int uffd_io_unprotect(int fd, uintptr_t start, size_t len);
/* ... with a mode: UFFDIO_WRITEPROTECT_MODE_DONTWAKE lifts it and leaves the waiters asleep */
int uffd_io_unprotect_mode(int fd, uintptr_t start, size_t len, uint64_t mode);
int uffd_io_protect(int fd, uintptr_t start, size_t len);
/* mincore(2): 1 if the page at addr is mapped, 0 if not, -errno. */
int uffd_page_resident(uintptr_t addr);
int uffd_io_unregister(int fd, uintptr_t start, size_t len);

/* ---- shared memory (shmem.c) ------------------------------------------------------------------
 */

/* The process's shmem mappings (lv->shmem): made at creation, gone with the emulator. */
int uffd_shmem_init(struct uffd_live *lv);
void uffd_shmem_destroy(struct uffd_live *lv);
/* A fault at addr: true if a shmem mapping of ours holds it (then it is served). */
bool uffd_shmem_fault(struct uffd_worker *w, uintptr_t addr, uint64_t t_read);
/* A fork child on a machine takes its parent's shmem mappings (same objects). */
void uffd_shmem_forked(struct uffd_live *lv, const struct uffd_live *parent);
/* khugepaged's and MADV_COLLAPSE's walk: the first 2 MiB-aligned range at or after *addr whole
 * inside a shmem mapping: *addr set to it, *scan its object, first page index and VMA
 * (mm_collapse_scan.shmem_*). 0, or -ENOENT when there is none. */
int uffd_shmem_next_range(struct uffd_live *lv, uint64_t *addr, struct mm_collapse_scan *scan);
/* The parts of [lo, hi) inside shmem mappings, in address order: up to max [lo, hi) pairs. */
unsigned uffd_shmem_spans(struct uffd_live *lv, uintptr_t lo, uintptr_t hi, uintptr_t (*out)[2],
			  unsigned max);
/* MADV_COLLAPSE of the shmem mappings in [lo, hi) (collapse.c): 0 or -errno. */
int uffd_shmem_madv_collapse(struct uffd_live *lv, uintptr_t lo, uintptr_t hi);
/* remap.c: reserve len bytes at an address of the given 2 MiB phase (returned, or -errno;
 * the reservation in *res, *res_len), and give back what is around [dst, dst + len). */
long uffd_reserve_phase(size_t len, uintptr_t phase, long *res, size_t *res_len);
void uffd_unreserve(long res, size_t res_len, uintptr_t dst, size_t len);

#endif

/* The emulated kernel memory manager: the one interface every other part of thpemu drives.
 *
 * Method. A pool of N emulated 4 KiB frames forms one zone. Frames carry a state (free, anon,
 * part of a huge anon extent, file clean/dirty/writeback, unmovable) and a reverse-map word (the
 * owner cookie). Free frames sit on buddy free lists (orders 0..10) per migratetype; pageblocks
 * (order 9) carry a migratetype and a skip bit. A THP fault runs the slow path of the selected
 * policy profile (freelist at LOW, at MIN, async compaction, direct reclaim, a second compaction
 * in ASYNC / SYNC_LIGHT / SYNC mode, fallback to a 4 KiB frame), and records what it cost.
 *
 * mm/ is pure: no syscalls, no threads, no clock, no environment variables, no files, no stdio.
 * Time, waiting, locking and the real work of a decision (copying a migrated page, zeroing a
 * huge extent) come from an environment (struct mm_env) so that the same code runs live (real
 * time, real waits, real copies, several handler threads) and in the simulator (virtual time,
 * costs from a cost table, one thread); what comes from the machine (the `host` policy's sysfs
 * values, policy plugins) is read and loaded above mm (core/policy). The libc it calls is
 * string, memory, formatting into a buffer, number parsing and math, and calloc/free only where
 * a pool is made and destroyed: tests/unit/mm_purity.sh checks the built objects' undefined
 * symbols against that list (CI fails on anything else).
 *
 * Concurrency contract. Every public function takes the environment lock (ops->lock) itself and
 * must be called without it. Hooks marked [unlocked] are called with the lock released: mm must
 * leave its structures consistent before calling them (frames being migrated are ISOLATED, so no
 * other caller touches them) and re-validate after; an [unlocked] hook returns without the
 * lock, and whatever other callers do between its return and mm's re-lock is for mm to find
 * there (for migrate_anon: a free of the page's new frame, mm_anon_free). Hooks marked [locked]
 * are called with the lock held and must neither block nor call back into mm. In a pool shared
 * by processes, mm_repair may rebuild the model while a hook runs: mm then abandons what it
 * held across the hook (the repair put it back) and reports a failure (see mm_repair).
 *
 * Errors: negative errno. Nothing in mm/ aborts.
 */
#ifndef THPEMU_MM_H
#define THPEMU_MM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mm/mm_policy.h"

#define MM_PAGE_SHIFT		   12
#define MM_PAGE_SIZE		   (1UL << MM_PAGE_SHIFT)
#define MM_MAX_ORDER		   10 /* orders 0..MM_MAX_ORDER inclusive (the kernel's NR_PAGE_ORDERS = 11) */
#define MM_NR_ORDERS		   (MM_MAX_ORDER + 1)
#define MM_PAGEBLOCK_ORDER	   9
#define MM_HPAGE_ORDER		   9
#define MM_HPAGE_NR		   (1U << MM_HPAGE_ORDER) /* 512 frames per huge extent */
#define MM_HPAGE_SIZE		   (MM_PAGE_SIZE << MM_HPAGE_ORDER)
#define MM_MTHP_MIN_ORDER	   2 /* multi-size THP for anon memory: orders 2..8 below the PMD */
#define MM_NO_PFN		   UINT32_MAX
#define MM_COMPACT_CLUSTER_MAX	   32
#define MM_COMPACT_MAX_DEFER_SHIFT 6
#define MM_KHUGEPAGED_SLOTS	   256 /* address spaces khugepaged can know */

/* Migratetypes, in the kernel's 6.12 numbering. THP and page cache are MOVABLE. */
enum mm_migratetype {
	MM_MT_UNMOVABLE,
	MM_MT_MOVABLE,
	MM_MT_RECLAIMABLE,
	MM_MT_NR,
};

/* Owner cookies (the reverse map). mm stores them and hands them back to hooks; apart from the
 * FOREIGN bit it does not interpret them. Pages of one huge extent get consecutive cookies. */
#define MM_OWNER_FOREIGN                                                                           \
	(1ULL << 63) /* anon memory of "other processes" (fragmentation recipes):                  \
		      * migrating it moves metadata only, no real copy */
#define MM_OWNER_FILE_BIT (1ULL << 62)
#define MM_OWNER_UNEVICTABLE                                                                       \
	(1ULL << 61) /* with FOREIGN: the page is on the unevictable LRU (mlocked, PG_unevictable) \
		      */
#define MM_OWNER_FILE(file_id, index)                                                              \
	(MM_OWNER_FILE_BIT | ((uint64_t)(file_id) << 36) | ((uint64_t)(index) & ((1ULL << 36) - 1)))
#define MM_OWNER_FILE_ID(o)    (((o) & ~MM_OWNER_FILE_BIT & ~MM_OWNER_FOREIGN) >> 36)
#define MM_OWNER_FILE_INDEX(o) ((o) & ((1ULL << 36) - 1))
/* Shared memory (shmem.c): page `index` of shmem object `obj` (1..MM_SHMEM_MAX_OBJECT), one
 * cookie whoever maps it; both top bits, so neither a file's nor an anon page's. */
#define MM_OWNER_SHMEM_BITS (MM_OWNER_FOREIGN | MM_OWNER_FILE_BIT)
#define MM_SHMEM_MAX_OBJECT ((1U << 26) - 1)
#define MM_OWNER_SHMEM(obj, index)                                                                 \
	(MM_OWNER_SHMEM_BITS | ((uint64_t)(obj) << 36) | ((uint64_t)(index) & ((1ULL << 36) - 1)))
#define MM_OWNER_IS_SHMEM(o) (((o)&MM_OWNER_SHMEM_BITS) == MM_OWNER_SHMEM_BITS)

/* Migrate modes (enum migrate_mode). */
enum mm_migrate_mode {
	MM_MIGRATE_ASYNC,
	MM_MIGRATE_SYNC_LIGHT,
	MM_MIGRATE_SYNC,
};

/* What a fault's service time went to, for stall attribution. mm_cause_chain() names it, e.g.
 * "fault > sync compaction > migrate > wait on writeback". */
enum mm_cause {
	MM_CAUSE_NONE, /* freelist hit, nothing slow */
	MM_CAUSE_COMPACT_ASYNC,
	MM_CAUSE_COMPACT_SYNC_LIGHT,
	MM_CAUSE_COMPACT_SYNC,
	MM_CAUSE_COMPACT_WB_WAIT,  /* sync compaction waiting on a frame under writeback */
	MM_CAUSE_COMPACT_WRITEOUT, /* sync compaction writing a dirty page out */
	MM_CAUSE_COMPACT_MIGRATE,  /* copying pages (real copies live) */
	MM_CAUSE_RECLAIM,
	MM_CAUSE_RECLAIM_WB_WAIT,  /* direct reclaim's synchronous pass waiting on writeback */
	MM_CAUSE_ZEROING,	   /* clearing the 2 MiB extent */
	MM_CAUSE_COMPACT_THROTTLE, /* sync compaction napping: too_many_isolated */
	MM_CAUSE_RECLAIM_THROTTLE, /* direct reclaim napping: too_many_isolated, congestion */
	MM_CAUSE_NR,
};
const char *mm_cause_chain(enum mm_cause c);

/* One blocking wait inside the emulated kernel: what a task in D state was doing, as Mel
 * Gorman's 2011 stall monitor (watch-dstate) saw it. A fault that waits ten times is ten waits.
 * Reported through ops->waited after each wait, whatever its length. */
enum mm_wait_kind {
	MM_WAIT_COMPACT_WRITEBACK, /* unmap_and_move: wait_on_page_writeback (sleep_on_page) */
	MM_WAIT_COMPACT_WRITEOUT,  /* fallback_migrate_page: writeout() -> ->writepage */
	MM_WAIT_COMPACT_ISOLATED,  /* isolate_migratepages: too_many_isolated -> congestion_wait */
	MM_WAIT_RECLAIM_WRITEBACK, /* shrink_page_list's sync pass: wait_on_page_writeback */
	MM_WAIT_RECLAIM_WRITEOUT,  /* shrink_page_list: pageout() -> ->writepage */
	MM_WAIT_RECLAIM_ISOLATED,  /* shrink_inactive_list: too_many_isolated -> congestion_wait */
	MM_WAIT_RECLAIM_CONGESTED, /* do_try_to_free_pages / balance_pgdat: wait_iff_congested,
				    * congestion_wait */
	MM_WAIT_NR,
};
/* The kernel function that blocked ("sleep_on_page", "congestion_wait", ...), for the 2011
 * report's "comm function ms" line; and a short name for JSON ("compact-writeback", ...). */
const char *mm_wait_function(enum mm_wait_kind k);
const char *mm_wait_name(enum mm_wait_kind k);

struct mm_wait {
	enum mm_wait_kind kind;
	uint64_t t_start; /* env now() when it began */
	uint64_t ns;	  /* how long it blocked */
	uint64_t owner;	  /* the page's owner cookie (writeback, writeout), else 0 */
	uint32_t pfn;	  /* the frame waited on (writeback, writeout), else MM_NO_PFN */
	bool background;  /* kswapd (no program fault behind it) */
};

/* Slow-path steps, recorded in order per fault (profile step-sequence tests read these). */
enum mm_step {
	MM_STEP_FREELIST_LOW, /* fast path: get_page_from_freelist at the LOW watermark */
	MM_STEP_FREELIST_MIN, /* slow path freelist attempt at MIN */
	MM_STEP_WAKE_KSWAPD,  /* wake kswapd (or kcompactd: 6.12 mm/vmscan.c wakeup_kswapd) */
	MM_STEP_COMPACT_ASYNC,
	MM_STEP_COMPACT_SYNC_LIGHT,
	MM_STEP_COMPACT_SYNC,
	MM_STEP_COMPACT_DEFERRED, /* compaction skipped: zone deferred */
	MM_STEP_RECLAIM,
	MM_STEP_FALLBACK, /* gave up on order 9, 4 KiB frame instead */
	MM_STEP_NR,
};
const char *mm_step_name(enum mm_step s);

/* Compaction results (modern enum compact_result; 3.x results map onto a subset). */
enum mm_compact_result {
	MM_COMPACT_NOT_SUITABLE_ZONE,
	MM_COMPACT_SKIPPED,
	MM_COMPACT_DEFERRED,
	MM_COMPACT_NO_SUITABLE_PAGE,
	MM_COMPACT_CONTINUE,
	MM_COMPACT_COMPLETE,
	MM_COMPACT_PARTIAL_SKIPPED,
	MM_COMPACT_CONTENDED,
	MM_COMPACT_SUCCESS,
	MM_COMPACT_NR,
};
const char *mm_compact_result_name(enum mm_compact_result r);

/* Modelled costs charged through ops->alloc_cost (the simulator turns them into virtual time;
 * live, the real work is its own cost and the hook may do nothing). */
enum mm_cost {
	MM_COST_FAULT,	      /* fixed per-fault service overhead */
	MM_COST_BUDDY_OP,     /* one buddy allocation or free */
	MM_COST_SCAN_PFN,     /* one pfn examined by a compaction scanner */
	MM_COST_ISOLATE,      /* one page isolated */
	MM_COST_RECLAIM_PAGE, /* one page scanned by direct reclaim */
	MM_COST_NR,
};

/* vmstat counters with kernel names (mm_stat_names[]), plus a few of ours marked (ours). */
enum mm_stat {
	MM_STAT_THP_FAULT_ALLOC,
	MM_STAT_THP_FAULT_FALLBACK,
	MM_STAT_COMPACT_STALL,
	MM_STAT_COMPACT_SUCCESS,
	MM_STAT_COMPACT_FAIL,
	MM_STAT_COMPACT_MIGRATE_SCANNED,
	MM_STAT_COMPACT_FREE_SCANNED,
	MM_STAT_COMPACT_ISOLATED,
	MM_STAT_COMPACT_DEFERRED, /* (ours) direct compaction skipped by deferral */
	MM_STAT_COMPACT_DAEMON_WAKE,
	MM_STAT_COMPACT_DAEMON_MIGRATE_SCANNED,
	MM_STAT_COMPACT_DAEMON_FREE_SCANNED,
	MM_STAT_PGMIGRATE_SUCCESS,
	MM_STAT_PGMIGRATE_FAIL,
	MM_STAT_ALLOCSTALL,
	MM_STAT_PGSCAN_DIRECT,
	MM_STAT_PGSTEAL_DIRECT,
	MM_STAT_PGSCAN_KSWAPD,
	MM_STAT_PGSTEAL_KSWAPD,
	MM_STAT_KSWAPD_WAKE, /* (ours) kswapd woken */
	MM_STAT_PGALLOC,     /* frames allocated (any order, counted in frames) */
	MM_STAT_PGFREE,
	MM_STAT_EXTFRAG_STEAL,	  /* (ours) mm_page_alloc_extfrag events: fallback allocations */
	MM_STAT_COMPACT_WB_WAIT,  /* (ours) writeback waits inside compaction */
	MM_STAT_COMPACT_WRITEOUT, /* (ours) dirty pages written out by sync migration */
	MM_STAT_RECLAIM_WB_WAIT,  /* (ours) writeback waits inside direct reclaim */
	MM_STAT_NOMEM_FALLBACK,	  /* (ours) faults the pool could not serve at all */
	/* Added later, appended so that existing indices keep their value: */
	MM_STAT_THP_SPLIT_PAGE,		/* THPs split: mm_anon_split, a hole in a shmem THP */
	MM_STAT_COMPACT_BLOCKS_MOVED,	/* 3.x: migrate_pages batches run by compaction */
	MM_STAT_PGSCAN_DIRECT_THROTTLE, /* (ours) direct reclaim passes that waited on writeback */
	MM_STAT_PGWB_ERROR,		/* (ours) writebacks that completed with an error */
	MM_STAT_NR_VMSCAN_WRITE, /* dirty pages written out by direct reclaim (3.1 pageout) */
	/* THP over time (khugepaged.c, split.c): */
	MM_STAT_THP_COLLAPSE_ALLOC,	    /* collapse allocations that succeeded (khugepaged and
					     * MADV_COLLAPSE, before the collapse itself) */
	MM_STAT_THP_COLLAPSE_ALLOC_FAILED,  /* ... that failed */
	MM_STAT_KHUGEPAGED_PAGES_COLLAPSED, /* khugepaged/pages_collapsed: ranges khugepaged
					     * collapsed (huge pages, not MADV_COLLAPSE's) */
	MM_STAT_KHUGEPAGED_FULL_SCANS,	    /* khugepaged/full_scans */
	MM_STAT_KHUGEPAGED_PAGES_SCANNED,   /* (ours) khugepaged's scan progress, in pages */
	MM_STAT_THP_SCAN_EXCEED_NONE_PTE,   /* ranges refused for too many holes */
	MM_STAT_THP_SCAN_EXCEED_SHARED_PTE, /* ... for too many shared pages */
	MM_STAT_THP_SCAN_EXCEED_SWAP_PTE,   /* ... for too many swap entries */
	MM_STAT_THP_SPLIT_PMD,		    /* PMD mappings split (6.12: the folio may wait) */
	MM_STAT_THP_DEFERRED_SPLIT_PAGE,    /* partially mapped THPs put on the split queue */
	MM_STAT_THP_UNDERUSED_SPLIT_PAGE,   /* fully mapped THPs the shrinker split as underused */
	MM_STAT_THP_SPLIT_PAGE_FAILED,	    /* splits the shrinker could not do (busy) */
	MM_STAT_MADV_COLLAPSE,		    /* (ours) MADV_COLLAPSE ranges asked for */
	/* 3.x reclaim rules (vmscan.c): */
	MM_STAT_KSWAPD_WRITE,	     /* (ours) of nr_vmscan_write, the pages kswapd wrote */
	MM_STAT_NR_VMSCAN_IMMEDIATE, /* dirty pages reclaim marked PG_reclaim (3.2+) */
	MM_STAT_PGROTATED,	     /* PG_reclaim pages rotated to the inactive tail when
				      * their writeback ended (rotate_reclaimable_page) */
	MM_STAT_THROTTLE_CONGESTION, /* (ours) congestion naps (congestion_wait,
				      * wait_iff_congested) that slept */
	MM_STAT_THROTTLE_ISOLATED,   /* (ours) too_many_isolated naps (reclaim, compaction) */
	MM_STAT_ZONE_CONGESTED,	     /* (ours) times reclaim flagged the zone congested */
	MM_STAT_PLUGIN_CALLS,	     /* (ours) policy plugin select_orders calls */
	MM_STAT_PLUGIN_ERRORS,	     /* (ours) nonsense answers (built-in decision taken) */
	MM_STAT_PLUGIN_OVERTIME,     /* (ours) hook calls above THPEMU_POLICY_OVERTIME_NS */
	MM_STAT_THP_ZERO_PAGE_ALLOC, /* the huge zero folio allocated (get_huge_zero_page) */
	MM_STAT_THP_ZERO_PAGE_ALLOC_FAILED, /* ... its allocation failed (a read fell back) */
	/* Shared memory (shmem.c; 6.12 include/linux/vm_event_item.h THP_FILE_*): */
	MM_STAT_THP_FILE_ALLOC,		  /* PMD-size shmem folios allocated at a fault */
	MM_STAT_THP_FILE_FALLBACK,	  /* ... whose allocation failed */
	MM_STAT_THP_FILE_FALLBACK_CHARGE, /* ... whose memcg charge failed: always 0 (no memcg) */
	MM_STAT_THP_FILE_MAPPED,	  /* shmem THPs mapped by a PMD (do_set_pmd) */
	MM_STAT_NR,
};
extern const char *const mm_stat_names[MM_STAT_NR];

/* One fault's record: outcome, latency and where the time went. All times in ns of env time. */
#define MM_FAULT_MAX_STEPS 24 /* the modern NUMA two-pass path records up to ~14 steps */
enum mm_fault_outcome {
	MM_FAULT_HUGE,	/* pfn is the head of 512 frames, already cleared via ops->clear_huge */
	MM_FAULT_BASE,	/* pfn is one frame */
	MM_FAULT_NOMEM, /* the pool could not give a frame; caller serves it unaccounted */
	MM_FAULT_MTHP,	/* pfn is the head of 2^res.order frames (order 2..8, the naturally aligned
			 * block around the fault), cleared via ops->clear_folio; mapped by PTEs */
	/* Read faults of a caller that maps zero pages (req.zero_ok): no frame of the process
	 * (pfn MM_NO_PFN); a later write to the page is a fault of its own (req.wp_zero). */
	MM_FAULT_ZERO,	    /* the 4 KiB shared zero page (mm/memory.c do_anonymous_page) */
	MM_FAULT_HUGE_ZERO, /* the huge zero folio by a PMD (6.x do_huge_pmd_anonymous_page) */
};
/* What a write fault finds mapped (mm_fault_req.wp_zero). */
enum mm_wp_zero {
	MM_WP_NONE,	 /* pte_none / pmd_none: a first touch */
	MM_WP_ZERO,	 /* the page maps the 4 KiB zero page: do_wp_page copies it */
	MM_WP_HUGE_ZERO, /* the extent maps the huge zero PMD (res.zero_split says what became
			  * of it) */
};
struct mm_fault_rec {
	uint64_t t_start;	 /* env now() at entry */
	uint64_t total_ns;	 /* time spent in mm_fault, hooks included */
	uint64_t compact_ns;	 /* in direct compaction (includes its waits and copies) */
	uint64_t reclaim_ns;	 /* in direct reclaim (includes its waits) */
	uint64_t wb_wait_ns;	 /* waiting on writeback (compaction + reclaim) */
	uint64_t migrate_ns;	 /* in migrate_anon / copy_file_page hooks */
	uint64_t zero_ns;	 /* in clear_huge */
	uint32_t wb_waits;	 /* number of writeback waits */
	uint32_t wb_wait_max_us; /* longest single writeback wait, in microseconds */
	uint32_t migrated;	 /* pages migrated successfully for this fault */
	uint32_t migrate_failed;
	uint32_t reclaimed;
	uint8_t outcome; /* enum mm_fault_outcome */
	uint8_t order;	 /* frames served: 2^order (res.order: 0 base, 2..8 mTHP, 9 huge) */
	uint8_t cause;	 /* enum mm_cause: the largest contributor */
	uint8_t nsteps;	 /* steps[]: the huge attempt's steps, then FALLBACK if it failed;
			  * a 4 KiB allocation adds its steps only past its fast path */
	struct {
		uint8_t step; /* enum mm_step */
		uint8_t
		    result; /* compaction: enum mm_compact_result; others: 1 success, 0 failure */
	} steps[MM_FAULT_MAX_STEPS];
};

enum mm_vma_advice {
	MM_VMA_DEFAULT,
	MM_VMA_HUGEPAGE,   /* MADV_HUGEPAGE */
	MM_VMA_NOHUGEPAGE, /* MADV_NOHUGEPAGE */
};

/* The process's prctl(PR_SET_THP_DISABLE) state: 6.18's two mm flags (include/linux/mm_types.h
 * MMF_DISABLE_THP_COMPLETELY, MMF_DISABLE_THP_EXCEPT_ADVISED; one of them at most is set). Both
 * are in MMF_INIT_MASK: a fork child and an exec'd image keep them (kernel/fork.c mm_init). */
enum mm_thp_disable {
	MM_THP_DISABLE_NONE,
	MM_THP_DISABLE_COMPLETELY,     /* PR_SET_THP_DISABLE, 1, 0: no THP in any VMA */
	MM_THP_DISABLE_EXCEPT_ADVISED, /* ..., 1, PR_THP_DISABLE_EXCEPT_ADVISED: MADV_HUGEPAGE only
					*/
};

struct mm_fault_req {
	uint64_t owner; /* cookie of the faulting 4 KiB page */
	uint64_t
	    extent_owner; /* cookie of page 0 of its 2 MiB extent (page i = extent_owner + i) */
	enum mm_vma_advice advice;
	enum mm_thp_disable thp_disable; /* the faulting process's (mm_vma_thp_disabled) */
	bool huge_ok; /* extent aligned, wholly inside the region and still empty */
	bool write;
	/* The caller can map zero pages: a read first touch then gets MM_FAULT_ZERO or
	 * MM_FAULT_HUGE_ZERO where the era maps one, and no frame. Without it a read is decided
	 * like a write (the live emulator: it cannot see the later write, core/live/README.md). */
	bool zero_ok;
	enum mm_wp_zero wp_zero; /* a write fault on a zero-page mapping (write must be set) */
	uint32_t as_id; /* the faulting address space, for khugepaged_enter (0: the only one) */
	/* Multi-size THP (6.8+): bit k (2..8) set when the naturally aligned 2^k-page block
	 * around the fault lies inside the region and all its pages are empty (pte_none);
	 * as_mthp_orders computes it. 0: no mTHP candidate (today's callers: 4 KiB fallback as
	 * before). When nonzero, extent_owner must be the cookie of page 0 of the 2 MiB extent
	 * (page i = extent_owner + i), as for a huge_ok request, so that the block's cookies are
	 * known. Read faults never take an mTHP (the kernel maps the zero page). */
	uint16_t orders_ok;
	/* For a policy plugin only (thpemu_fault_info): the faulting address and its region
	 * (VMA), in the caller's address space; 0 when the caller does not know. */
	uint64_t addr, region_start, region_len;
};

struct mm_fault_res {
	enum mm_fault_outcome outcome;
	uint32_t pfn;
	uint8_t order; /* frames served: 2^order (0 base, 2..8 mTHP, 9 huge) */
	/* a write to the huge zero PMD split it (6.12 do_huge_pmd_wp_page -> __split_huge_pmd):
	 * the extent's other 511 pages map the 4 KiB zero page now, the written one got res.pfn */
	bool zero_split;
	struct mm_fault_rec rec;
};

/* Optional tracepoints (names and fields as 6.12's include/trace/events/{compaction,migrate,
 * kmem}.h). */
enum mm_trace_kind {
	MM_TRACE_COMPACTION_BEGIN, /* a=migrate_pfn b=free_pfn c=zone_end d=mode */
	MM_TRACE_COMPACTION_END,   /* a=migrate_pfn b=free_pfn c=zone_end d=status */
	MM_TRACE_MIGRATEPAGES,	   /* a=nr_migrated b=nr_failed */
	MM_TRACE_DEFERRED,	   /* a=considered b=defer_shift c=order_failed */
	MM_TRACE_DEFER_COMPACTION, /* a=considered b=defer_shift c=order_failed */
	MM_TRACE_DEFER_RESET,	   /* a=considered b=defer_shift c=order_failed */
	MM_TRACE_EXTFRAG,	   /* a=pfn b=alloc_order c=fallback_order d=change_ownership */
	MM_TRACE_NR,
};
struct mm_trace {
	enum mm_trace_kind kind;
	uint32_t order;
	uint64_t a, b, c, d;
};

struct mm_env_ops {
	/* [locked] Current time in ns (monotonic live, virtual in the simulator). */
	uint64_t (*now)(void *priv, void *call);
	/* The mm lock. NULL in single-threaded drivers. */
	void (*lock)(void *priv);
	void (*unlock)(void *priv);
	/* [unlocked] Block until frame pfn is no longer under writeback, or timeout_ns elapsed
	 * (0 = no bound). Returns 0, or -ETIMEDOUT. The live version is the kernel's
	 * wait_on_page_writeback (hashed futex waitqueue). */
	int (*wait_writeback)(void *priv, void *call, uint32_t pfn, uint64_t timeout_ns);
	/* [unlocked] Really migrate a program page: its data moves from frame `from` to frame `to`.
	 * Returns 0; -EAGAIN/-EBUSY (not migratable now: counts pgmigrate_fail, frames go back);
	 * -ENOENT (owner gone: mm frees both frames). Not called for MM_OWNER_FOREIGN frames. */
	int (*migrate_anon)(void *priv, void *call, uint64_t owner, uint32_t from, uint32_t to);
	/* [unlocked] migrate_anon for n pages at once, each result in ret[i]: unmap them all,
	 * then move them all (6.12 mm/migrate.c migrate_pages_batch, since 6.3; 3.x migrates one
	 * page at a time). Called in the modern era only; may be NULL (one migrate_anon a page). */
	void (*migrate_anon_batch)(void *priv, void *call, unsigned n, const uint64_t *owner,
				   const uint32_t *from, const uint32_t *to, int *ret);
	/* [unlocked] Copy a page-cache page's data from frame `from` to frame `to`. Returns 0 or
	 * -errno (migration of that page fails). */
	int (*copy_file_page)(void *priv, void *call, uint64_t owner, uint32_t from, uint32_t to);
	/* [unlocked] Zero the 2 MiB extent just allocated at head for a huge fault. Returns the
	 * time (ns) of a clear done ahead of time for this fault (a page the host zeroed when it
	 * was prepared), charged to the fault's zeroing on top of the hook's own time; 0 if none.
	 */
	uint64_t (*clear_huge)(void *priv, void *call, uint32_t head, uint64_t extent_owner);
	/* [locked] Charge a modelled cost of n units. */
	void (*alloc_cost)(void *priv, void *call, enum mm_cost what, uint64_t n);
	/* [unlocked] Start writeback of dirty page-cache frame pfn (sync migration's writeout()).
	 * The implementation calls mm_writeback_begin_one() and submits the I/O. Returns 0 or
	 * -errno. May be NULL (then dirty pages are simply not migratable in SYNC mode). */
	int (*writeout)(void *priv, void *call, uint64_t owner, uint32_t pfn);
	/* [locked] Tracepoint. May be NULL. */
	void (*trace)(void *priv, void *call, const struct mm_trace *ev);
	/* Zeroed memory for mm's own metadata (frame descriptors, indexes; for a shared pool the
	 * struct mm too), len bytes, and its release. Pages must cost nothing until touched.
	 * meta_alloc NULL: calloc / free. meta_free NULL with a meta_alloc: nothing is released
	 * (memory carved from a segment that goes away whole). Live, it must be memory no fault
	 * handler has to serve (never the program's allocator's); for a shared pool, memory mapped
	 * at the same address in every process that attaches. */
	void *(*meta_alloc)(void *priv, size_t len);
	void (*meta_free)(void *priv, void *p, size_t len);
	/* [unlocked] khugepaged visits address space as_id (khugepaged_scan_mm_slot): its owner
	 * scans its 2 MiB ranges from *addr on with at most `budget` pages of progress, by calling
	 * mm_khugepaged_scan_mm with a walker of its own regions (so a collapse is done by the
	 * process whose memory it is), sets *addr where the next visit resumes and *done when it
	 * passed its last range. Returns the progress made (>= 0), or -ENOENT when as_id is gone
	 * (khugepaged forgets it). NULL: khugepaged never visits anyone. */
	int (*khugepaged_scan)(void *priv, void *call, uint32_t as_id, uint64_t *addr,
			       unsigned budget, bool *done);
	/* [unlocked] The THP shrinker (6.12 deferred_split_scan) found a fully mapped THP on the
	 * split queue: its owner counts the zero-filled subpages and, if mm_thp_underused() says
	 * so, splits it for real: zero-filled subpages unmapped and freed (the kernel maps the
	 * shared zero page there), the others kept as 4 KiB pages (mm_anon_split_folio, then
	 * mm_anon_free of each freed subpage). Returns 1 split, 0 not underused (it leaves the
	 * queue for good), -EAGAIN busy (it stays queued) or -ENOENT (no such THP any more).
	 * NULL: no THP is ever judged underused. */
	int (*split_underused)(void *priv, void *call, uint64_t extent_owner, uint32_t head);
	/* [unlocked] A reclaim or compaction throttle (3.x congestion_wait(BLK_RW_ASYNC, HZ/10),
	 * wait_iff_congested; 6.12 reclaim_throttle): sleep until the device leaves write
	 * congestion (clear_bdi_congested wakes the sleepers) or timeout_ns passed. With
	 * iff_congested, return at once when no device is congested (wait_iff_congested's
	 * cond_resched). kind says which throttle it is. Returns 0. NULL: throttles cost nothing.
	 */
	int (*throttle)(void *priv, void *call, enum mm_wait_kind kind, uint64_t timeout_ns,
			bool iff_congested);
	/* [locked] Every blocking wait just ended (writeback wait, writeout, throttle), in the
	 * thread that waited: per-wait stall events are built from these. Must not block or
	 * allocate. May be NULL. */
	void (*waited)(void *priv, void *call, const struct mm_wait *w);
	/* [locked] Is the device's write queue congested now (bdi_write_congested)? 3.1's
	 * may_write_to_queue asks before a small-order direct reclaim writes a page out. Must not
	 * block. NULL: never congested. */
	bool (*congested)(void *priv, void *call);
	/* [unlocked] Zero the 2^order frames (order 2..8) just allocated at head for an mTHP
	 * fault; owner is page 0's cookie (folio_zero_user). May be NULL: the owner zeroes each
	 * page as it maps it, as for a 4 KiB fault. */
	void (*clear_folio)(void *priv, void *call, uint32_t head, unsigned order, uint64_t owner);
};

struct mm_env {
	const struct mm_env_ops *ops;
	void *priv;
};

struct mm_config {
	uint64_t pool_bytes;	    /* rounded down to whole pageblocks; at least 8 MiB */
	struct mm_policy policy;    /* see mm_policy.h */
	unsigned extfrag_threshold; /* vm.extfrag_threshold, 0..1000; 0 in a config means 500 */
	uint64_t min_free_kbytes;   /* 0: the kernel formula for the policy's era */
	unsigned watermark_scale_factor; /* 0 means the kernel default 10 (modern era) */
	/* One pool shared by several processes: the struct mm and every array come from
	 * meta_alloc (shared memory at one address everywhere), and the environment given to
	 * mm_create is bound for the creating process only (see mm_attach). */
	bool shared;
};

struct mm;

/* Create a pool (all frames free, pageblocks MOVABLE). Returns 0, -EINVAL (bad config: err
 * says why) or -ENOMEM (host could not allocate the metadata). */
int mm_create(const struct mm_config *cfg, const struct mm_env *env, struct mm **out, char *err,
	      size_t errlen);
/* Free the pool (a shared one through the calling process's meta_free, then mm_detach). */
void mm_destroy(struct mm *mm);

/* ---- A pool shared by processes (mm_config.shared) ---------------------------------------- */

/* An environment's function pointers and priv are per process (ASLR), so a shared pool never
 * reads one from its shared struct: every process that calls into it binds its own first.
 * Bindings live in a small process-global table keyed by the mm pointer (at most 4 shared
 * pools per process); a fork child inherits the parent's (same image, same addresses).
 * mm_attach: bind env for the calling process (replacing a binding it has; do that only while
 * no other thread of the process is inside mm). Returns 0, -EINVAL (not a shared pool) or
 * -ENOSPC (table full). mm_create binds the creator. A process that calls mm without a binding
 * runs with no lock and no hooks: a bug of the caller.
 * mm_detach: forget the binding; only once no thread of this process uses the pool. */
int mm_attach(struct mm *mm, const struct mm_env *env);
void mm_detach(struct mm *mm);
/* A process is gone: free every program anon frame (base or huge extent; never page cache,
 * never MM_OWNER_FOREIGN) whose owner & mask == value, as if the owner had called
 * mm_anon_free on each (huge extents go back as order-9 blocks). A frame another caller holds
 * isolated (a compaction between its scanner and its copy, with the lock released) is marked
 * and freed by that caller when it lets go, as for mm_anon_free; a page whose migrate_anon call
 * is in flight has both its frames marked (whatever the hook returns, both are freed). Returns
 * the frames freed or so marked. Takes the lock. */
uint32_t mm_release_owners(struct mm *mm, uint64_t mask, uint64_t value);
/* The lock holder died mid-update (the robust mutex said EOWNERDEAD): rebuild every derived
 * structure (free lists, LRU, page-cache index, dirty ring, every count) from the frame
 * descriptors and end every isolation, putting each frame back where its state says (repair.c
 * says what is kept and what is lost). Call it with the lock held, from inside the lock hook's
 * owner-died path: it does not take the lock itself. Callers in other processes that were
 * inside an [unlocked] hook abandon what they held when they relock (a compaction fails as
 * contended, those pages not migrated; a reclaim pass stops; a huge fault whose extent was
 * taken back falls back to 4 KiB). Returns 0, or -EUCLEAN when the descriptors themselves are
 * inconsistent (the model cannot be trusted: stop using it). */
int mm_repair(struct mm *mm);
uint32_t mm_nr_frames(const struct mm *mm);
/* Bytes of host memory spent on metadata per frame (target: at most 32). */
double mm_metadata_bytes_per_frame(const struct mm *mm);
const struct mm_policy *mm_policy(const struct mm *mm);

/* ---- Anonymous memory ------------------------------------------------------------------ */

/* Serve a page fault: decide huge or base per the policy, allocate, clear (huge) and fill res.
 * Returns 0 (res->outcome may be MM_FAULT_NOMEM) or -EINVAL. */
int mm_fault(struct mm *mm, const struct mm_fault_req *req, struct mm_fault_res *res, void *call);
/* Free a program's anon frame (order 0), whole mTHP folio (order 2..8, head pfn: the owner
 * unmapped all of it at once) or whole huge extent (order 9, head pfn). An order-0 free of a
 * page of an mTHP folio unmaps that page: the folio goes on the deferred split queue (partially
 * mapped; without policy.deferred_split it is split at once) and goes back whole when its last
 * page does (mthp.c).
 * Races with compaction: if compaction has isolated the frame but not yet called migrate_anon,
 * mm marks it and frees it (and its migration target) itself without calling the hook. The owner
 * never calls this for a frame while a migrate_anon call on it is in flight; it makes that call
 * return -ENOENT instead, and mm then frees both frames. Once migrate_anon(from, to) has
 * returned 0 the page's frame is `to`; a free of `to` may arrive before mm has retaken its lock
 * and is honoured (mm frees `to` when it commits). Invalid or stale pfns are ignored. */
void mm_anon_free(struct mm *mm, uint32_t pfn, unsigned order, void *call);
/* mm_anon_free(pfn + i, 0) for i = 0 .. n - 1, in that order, under one lock (a munmap of
 * base pages whose frames are consecutive): the pool ends as those n calls leave it. */
void mm_anon_free_run(struct mm *mm, uint32_t pfn, uint32_t n, void *call);
/* Split a huge extent into 512 base anon frames (partial munmap / MADV_DONTNEED of a THP). */
int mm_anon_split(struct mm *mm, uint32_t head);

/* ---- THP over time: khugepaged, collapse, deferred split (khugepaged.c, split.c) ---------- */

/* What one 2 MiB range of an address space holds, as khugepaged's scan sees it (6.12
 * hpage_collapse_scan_pmd, 3.x khugepaged_scan_pmd). Filled by the owner (as_collapse_scan). */
/* Which shmem a mapping is (6.12 mm/shmem.c shmem_allowable_huge_orders): */
enum mm_shmem_kind {
	MM_SHMEM_ANON,	   /* MAP_SHARED|MAP_ANONYMOUS (vma_is_anon_shmem: per-size orders) */
	MM_SHMEM_INTERNAL, /* memfd, SysV shm: a file of the internal mount (shm_mnt), whose
			    * huge is shmem_enabled; PMD size only */
	MM_SHMEM_TMPFS,	   /* a file of a tmpfs mount (POSIX shm in /dev/shm): its huge= */
};
struct mm_shmem_vma {
	enum mm_shmem_kind kind;
	enum mm_vma_advice advice;
	enum mm_thp_disable thp_disable; /* the faulting process's prctl state */
	uint64_t i_size_pages;		 /* the object's size, in pages rounded up */
};

struct mm_collapse_scan {
	uint64_t extent_owner; /* owner cookie page 0 of the range would have */
	uint16_t none;	       /* pte_none pages: never touched, or freed */
	uint16_t zero;	       /* pages mapping the 4 KiB zero page (a read first touch) */
	uint16_t present;      /* mapped pages backed by a frame of the pool */
	uint16_t shared;       /* mapped pages not the process's own: shared copy-on-write with
				* another process (fork), or outside the pool */
	uint16_t swap;	       /* swap entries (always 0: anonymous memory is never swapped) */
	bool pmd_none;	       /* no page table: no page of the range was ever touched */
	bool huge;	       /* PMD-mapped already */
	bool vma_ok;	       /* a whole aligned 2 MiB inside one managed mapping */
	bool busy;	       /* a fault, a migration or a collapse owns part of it */
	enum mm_vma_advice advice;
	enum mm_thp_disable thp_disable; /* the process's prctl state (mm_vma_thp_disabled) */
	/* A range of a shmem mapping (the kernel's vma->vm_file path: hpage_collapse_scan_file):
	 * shmem_object 0 for anonymous memory. mm reads the object's page cache itself; of the
	 * fields above only vma_ok (the range whole inside the mapping, at an address aligned
	 * with its page index: thp_vma_suitable_order) is read. */
	uint32_t shmem_object; /* 1..MM_SHMEM_MAX_OBJECT */
	uint64_t shmem_index;  /* the range's first page index in the object (512-aligned) */
	uint64_t shmem_pgoff;  /* the mapping's first page index (vm_pgoff: where the VMA
				* check judges within_size) */
	struct mm_shmem_vma shmem_vma;
};

/* The kernel's scan_result (mm/khugepaged.c), the subset modelled. */
enum mm_scan_result {
	MM_SCAN_FAIL,
	MM_SCAN_SUCCEED,
	MM_SCAN_PMD_NULL,	   /* nothing mapped there yet (6.12 SCAN_PMD_NULL/NONE) */
	MM_SCAN_PMD_MAPPED,	   /* already huge */
	MM_SCAN_EXCEED_NONE_PTE,   /* more holes than max_ptes_none */
	MM_SCAN_EXCEED_SWAP_PTE,   /* more swap entries than max_ptes_swap */
	MM_SCAN_EXCEED_SHARED_PTE, /* more shared pages than max_ptes_shared */
	MM_SCAN_VMA_CHECK,	   /* the mapping may not be huge (advice, enabled, span) */
	MM_SCAN_PAGE_LOCK,	   /* a page is busy (lock, isolation): try again later */
	MM_SCAN_ALLOC_HUGE_PAGE_FAIL,
	MM_SCAN_PAGE_RO,       /* a PTE not writable: 3.x's zero-page PTE (6.12 SCAN_PAGE_RO) */
	MM_SCAN_COPY_FAIL,     /* the owner could not do it (the range changed meanwhile) */
	MM_SCAN_TRUNCATED,     /* shmem: no page of the object in the range (SCAN_TRUNCATED) */
	MM_SCAN_PAGE_COMPOUND, /* shmem, 6.1: a large folio smaller than 2 MiB in the range */
	MM_SCAN_NR,
};
const char *mm_scan_result_name(enum mm_scan_result r);
/* MADV_COLLAPSE's errno for a range's result under policy p (madvise_collapse_errno of its
 * era, 6.1 or 6.12): 0 success. */
int mm_scan_result_errno(const struct mm_policy *p, enum mm_scan_result r);

/* The address-space side of a scan, in the process whose memory it is. */
struct mm_khugepaged_walker {
	void *arg;
	/* The first 2 MiB range starting at or after *addr: set *addr to it and fill *scan.
	 * Returns 0, or -ENOENT when there is none (the end of the address space). */
	int (*next_range)(void *arg, uint64_t *addr, struct mm_collapse_scan *scan);
	/* [unlocked] Collapse the range at addr into the new block at head (its frames already
	 * owned by scan->extent_owner + i): the owner's accesses to the range wait, present pages'
	 * data is copied to the huge page, holes are zeroed, the old frames go back (mm_anon_free)
	 * and the range becomes one huge extent (as_collapse_*). Returns 0, or -EAGAIN when the
	 * range changed since it was scanned (mm then frees head). */
	int (*collapse)(void *arg, uint64_t addr, const struct mm_collapse_scan *scan,
			uint32_t head, void *call);
};

/* Register address space as_id with khugepaged (khugepaged_enter: at the first THP-eligible
 * fault, MADV_HUGEPAGE, fork). Idempotent. Returns 0, -ENOSPC (slot table full) or -EINVAL.
 * The driver says whom: mm_fault_req.as_id does it for faults. */
int mm_khugepaged_enter(struct mm *mm, uint32_t as_id);
/* as_id is gone (exit_mmap: khugepaged_exit). */
void mm_khugepaged_exit(struct mm *mm, uint32_t as_id);
/* khugepaged's thread: run a wake if one is due (khugepaged_do_scan, paced by scan_sleep and
 * alloc_sleep), visiting registered address spaces through the khugepaged_scan hook with the
 * mm lock released. Returns the ns until it wants to run again (UINT64_MAX: nothing registered
 * or khugepaged off: wait until mm_khugepaged_enter). */
uint64_t mm_khugepaged(struct mm *mm, void *call);
/* The owner's half of a visit (khugepaged_scan_mm_slot): walk ranges from *addr with budget
 * pages of progress (+512 per range whatever it holds), check each against the era's rules
 * (mm_collapse_check), allocate with khugepaged's gfp (mm_collapse_alloc) and collapse through
 * the walker; a collapse attempt ends the visit, as the kernel drops mmap_lock. Returns the
 * progress made; *addr and *done as for the hook. */
int mm_khugepaged_scan_mm(struct mm *mm, const struct mm_khugepaged_walker *w, uint64_t *addr,
			  unsigned budget, bool *done, void *call);
/* The era's rules for a range (khugepaged: max_ptes_none/swap/shared, enabled and advice;
 * MADV_COLLAPSE, khugepaged false: none of the limits, enabled ignored, NOHUGEPAGE honoured). */
enum mm_scan_result mm_collapse_check(struct mm *mm, const struct mm_collapse_scan *scan,
				      bool khugepaged);
/* MADV_COLLAPSE of one 2 MiB range in the calling thread (6.12 madvise_collapse ->
 * hpage_collapse_scan_pmd + collapse_huge_page): check, allocate with GFP_TRANSHUGE, collapse
 * through the walker. rec (may be NULL) gets the allocation's cost. The caller maps the result
 * with mm_scan_result_errno; a policy without madv_collapse is the caller's EINVAL. */
enum mm_scan_result mm_madv_collapse(struct mm *mm, const struct mm_khugepaged_walker *w,
				     uint64_t addr, struct mm_fault_rec *rec, void *call);
/* The allocation of a collapse: order 9 with khugepaged's gfp of the era (khugepaged true:
 * 3.x GFP_TRANSHUGE with __GFP_WAIT only under khugepaged/defrag and the second compaction in
 * policy.khugepaged_mode; 6.12 GFP_TRANSHUGE or _LIGHT, one pass, no THISNODE pass) or
 * MADV_COLLAPSE's (6.12 GFP_TRANSHUGE). Counts thp_collapse_alloc or _failed. The block is
 * FS_HUGE, owned by extent_owner + i, not PMD-mapped until mm_collapse_done. Returns 0 (*head)
 * or -ENOMEM. */
int mm_collapse_alloc(struct mm *mm, uint64_t extent_owner, bool khugepaged, uint32_t *head,
		      struct mm_fault_rec *rec, void *call);
/* The collapse into head is mapped (ok) or abandoned (!ok: head is freed). ok counts
 * pages_collapsed for khugepaged and, in 6.12 with shrink_underused, queues the THP for the
 * shrinker (deferred_split_folio(folio, false)). */
void mm_collapse_done(struct mm *mm, uint32_t head, bool khugepaged, bool ok);
/* A THP whose PMD is split (partial munmap / MADV_DONTNEED): 3.x split_huge_page at once
 * (this is mm_anon_split); with policy.deferred_split only the PMD goes (thp_split_pmd), the
 * frames stay FS_HUGE until the shrinker or the last unmap. Freeing a subpage of such a THP
 * (mm_anon_free order 0) marks it unmapped (thp_deferred_split_page on the first); the THP goes
 * back whole when the last subpage does. */
/* Split a THP into 512 base frames at once (split_folio), for the owner's split_underused
 * hook, or an mTHP folio (head of 2^k frames) into base frames: returns 0 or -EINVAL (not a
 * folio head). Counts thp_split_page (THP) and the order's split stat. */
int mm_anon_split_folio(struct mm *mm, uint32_t head);
/* thp_underused (6.12 mm/huge_memory.c): more than max_ptes_none of the 512 subpages are
 * zero-filled; never at max_ptes_none = 511. */
bool mm_thp_underused(const struct mm *mm, unsigned nr_zero);
/* Run the THP shrinker now (deferred_split_count/_scan) at reclaim priority prio (12..0), as
 * shrink_slab would; returns the THPs split. Reclaim calls it itself; exposed for tests. */
unsigned mm_shrink_thp(struct mm *mm, int prio, void *call);

/* ---- Page cache (driven by core/io and the simulator) ---------------------------------- */

/* Find the page-cache frame of owner (MM_OWNER_FILE), creating it if absent and create is set.
 * On success the frame is returned locked (compaction and reclaim skip it) in *pfn and
 * *created says whether it is new (content undefined). Allocation is order 0 MOVABLE and may
 * direct-reclaim clean file pages. Returns 0, -ENOENT (absent, !create), -ENOMEM, or -EAGAIN
 * when the frame is locked by another caller or is being copied by compaction with the mm lock
 * released (the kernel's lock_page would sleep briefly; retry after yielding). */
int mm_pagecache_get(struct mm *mm, uint64_t owner, bool create, uint32_t *pfn, bool *created,
		     void *call);
/* As mm_pagecache_get, for a block device's own page cache (reading /dev/sdX): its mapping is
 * GFP_USER, so a new page is allocated order 0 UNMOVABLE (fs/block_dev.c bdget in 3.x,
 * block/bdev.c bdev_alloc in 6.x). */
int mm_pagecache_get_bdev(struct mm *mm, uint64_t owner, bool create, uint32_t *pfn, bool *created,
			  void *call);
/* The state of owner's page-cache page without locking it: -ENOENT (not cached), or
 * MM_PC_DIRTY | MM_PC_WRITEBACK bits (0: clean). For a writer's fsync (thpemu-fusedev). */
#define MM_PC_DIRTY	1
#define MM_PC_WRITEBACK 2
int mm_pagecache_peek(struct mm *mm, uint64_t owner, uint32_t *pfn);
/* Unlock a frame from mm_pagecache_get; mark it dirty if dirtied; mark it referenced. */
void mm_pagecache_put(struct mm *mm, uint32_t pfn, bool dirtied);
/* Drop owner from the page cache (delete/truncate). A frame under writeback is freed when its
 * writeback ends. */
void mm_pagecache_remove(struct mm *mm, uint64_t owner);
/* mm_pagecache_remove(owner + i) for i = 0 .. n - 1, in order (a file's pages [index, index + n),
 * the index not crossing its 36 bits), under one lock. */
void mm_pagecache_remove_range(struct mm *mm, uint64_t owner, uint32_t n);
/* Move up to max dirty frames, oldest-dirtied first, to WRITEBACK and return them (pfns and
 * owners). The caller submits their I/O and calls mm_writeback_end() for each. */
unsigned mm_writeback_begin(struct mm *mm, unsigned max, uint32_t *pfns, uint64_t *owners);
/* Move one specific dirty frame to WRITEBACK (the writeout hook). Returns 0 or -EBUSY. */
int mm_writeback_begin_one(struct mm *mm, uint32_t pfn);
/* Writeback of pfn completed (err 0) or failed (-errno: the page is marked with the error and
 * counted, and becomes clean, as the kernel's end_page_writeback after an error). The caller
 * then wakes the frame's waiters. */
void mm_writeback_end(struct mm *mm, uint32_t pfn, int err);
/* Lock-free: is pfn under writeback right now? (for the live wait hook's futex loop) */
bool mm_frame_under_writeback(const struct mm *mm, uint32_t pfn);
/* The owner cookie of frame pfn now, read without the lock (for reports: whose page a wait was
 * on; it may change at any moment). 0 when free. */
uint64_t mm_frame_owner_peek(const struct mm *mm, uint32_t pfn);

/* ---- Other allocations, recipes, background work ---------------------------------------- */

/* Allocate 2^order frames of the given migratetype as UNMOVABLE (mt UNMOVABLE/RECLAIMABLE) or
 * foreign anon (mt MOVABLE, owner MM_OWNER_FOREIGN). For fragmentation recipes and tests. */
int mm_alloc_pages(struct mm *mm, unsigned order, enum mm_migratetype mt, uint64_t owner,
		   uint32_t *pfn, void *call);
void mm_free_pages(struct mm *mm, uint32_t pfn, unsigned order, void *call);

/* Apply an initial-state recipe: comma-separated items, each one of
 *   thpcompact          fill, then free half of every 2 MiB, holes filled by clean page cache
 *   pagecache:F         clean page cache filling fraction F of the pool (e.g. 60%)
 *   dirty:F             dirty page cache (writeback will start on it)
 *   unmovable:F         scattered unmovable 4 KiB frames (e.g. 0.5%), one per random pageblock
 *   anon:F              foreign anon frames scattered through the pool
 * Deterministic for a seed. Returns 0 or -EINVAL (err names the bad item). */
int mm_fragment(struct mm *mm, const char *recipe, uint64_t seed, char *err, size_t errlen,
		void *call);

/* A pool that starts from a snapshot of a real machine's memory (snapshot.c). mm reads no
 * file: the caller (core/snapshot) hands the frames over as runs, in pfn order from frame 0,
 * between mm_snapshot_begin and mm_snapshot_end, on a pool nothing has used yet; nothing else
 * may use the pool meanwhile. */
enum mm_snapshot_kind {
	MM_SNAP_FREE,	    /* free blocks of 2^order frames, on their pageblock's free list */
	MM_SNAP_ANON,	    /* movable allocations of a phantom owner (foreign anon) */
	MM_SNAP_FILE,	    /* clean page cache of a phantom file */
	MM_SNAP_FILE_DIRTY, /* dirty page cache (writeback will start on it) */
	MM_SNAP_UNMOVABLE,  /* kernel memory or memory the kernel never had: never moves or frees */
	MM_SNAP_UNEVICTABLE, /* foreign anon on the unevictable LRU (mlocked): migrated only when
			      * the policy's compact-unevictable-allowed is yes */
	MM_SNAP_NR,
};
struct mm_snapshot_run {
	uint32_t len;  /* frames (FREE: a multiple of 2^order, each block aligned) */
	uint8_t kind;  /* enum mm_snapshot_kind */
	uint8_t order; /* FREE: the blocks' order */
	bool active;   /* FILE, FILE_DIRTY: on the active LRU */
};
struct mm_snapshot { /* the caller's cursor */
	struct mm *mm;
	uint32_t next;	 /* the frame the next run starts at */
	uint64_t placed; /* cookies handed out (phantom owners) */
};
#define MM_SNAPSHOT_FILE_ID ((1ULL << 26) - 4096) /* the phantom file, clear of recipe files */
/* Take every frame of a pool nothing has allocated from yet off the free lists. 0, or -EBUSY. */
int mm_snapshot_begin(struct mm *mm, struct mm_snapshot *s);
/* Pageblock block's migratetype (before the runs that put free blocks in it). 0 or -EINVAL. */
int mm_snapshot_pageblock(struct mm_snapshot *s, uint32_t block, enum mm_migratetype mt);
/* Place n runs from s->next on. 0, or -EINVAL (err: a run past the pool, a misaligned free
 * block, an unknown kind) with nothing of the bad run placed. */
int mm_snapshot_runs(struct mm_snapshot *s, const struct mm_snapshot_run *r, unsigned n, char *err,
		     size_t errlen);
/* A pool of several zones (a snapshot of a whole node). The zones come in pfn order; the last is
 * the main zone, the first of the zonelist (its watermarks are mm_snapshot_end's), the others
 * are tried after it, highest first, each against its own watermark plus its lowmem_reserve
 * (6.12 mm/page_alloc.c get_page_from_freelist, __zone_watermark_ok). */
#define MM_MAX_LOWER_ZONES 3
struct mm_snapshot_zone {
	const char *name;
	uint32_t start, end; /* pool frames [start, end): contiguous, from 0 to the pool's end */
	uint32_t wmark[3];   /* min, low, high */
	uint32_t lowmem_reserve; /* pages kept from allocations that may use the main zone */
};
/* After mm_snapshot_begin, before the runs: n zones (1..MM_MAX_LOWER_ZONES + 1), boundaries on
 * 2^MM_MAX_ORDER frames (a buddy never spans two zones). 0, or -EINVAL with err. */
int mm_snapshot_zones(struct mm_snapshot *s, const struct mm_snapshot_zone *z, unsigned n,
		      char *err, size_t errlen);
/* Done: frames no run placed go back to the free lists, and the pool's watermarks become
 * wmark[] (min, low, high; zeros keep the formula's). 0, or -EINVAL when runs did not cover
 * the pool (the pool is consistent either way). */
int mm_snapshot_end(struct mm_snapshot *s, const uint32_t wmark[3], char *err, size_t errlen);

/* Run due background work (kswapd / kcompactd / proactive compaction per the policy).
 * Returns the ns until it wants to run again, or UINT64_MAX when idle until woken. */
uint64_t mm_background(struct mm *mm, void *call);

/* ---- Observation -------------------------------------------------------------------------- */

struct mm_counts {
	uint32_t nr_frames;
	uint32_t free;
	uint32_t anon;	    /* program anon frames, base and huge */
	uint32_t anon_huge; /* of which in huge extents (frames) */
	uint32_t foreign;   /* foreign anon frames */
	uint32_t file;	    /* page cache, all states */
	uint32_t file_dirty;
	uint32_t file_writeback;
	uint32_t unmovable;
	uint32_t isolated;
	uint32_t wmark_min, wmark_low, wmark_high;
	uint64_t min_free_kbytes;    /* after the THP raise (set_recommended_min_free_kbytes) */
	uint32_t free_blocks_order9; /* free 2 MiB blocks (an order-10 block counts as two) */
	uint32_t anon_pmd;	     /* frames of THPs mapped by a PMD (the emulated AnonHugePages);
				      * anon_huge less those of PTE-mapped THPs awaiting a split */
	uint32_t split_queue;	     /* THPs on the deferred split queue */
	uint32_t anon_partially_mapped; /* of which partially unmapped (nr_anon_partially_mapped) */
	uint32_t khugepaged_mms;	/* address spaces registered with khugepaged */
	uint32_t anon_mthp;		/* of anon, frames in mTHP folios (orders 2..8) */
	uint32_t shmem;			/* nr_shmem: every shmem object's frames, and with
					 * fs=tmpfs the page cache too (the machine's files are
					 * tmpfs files) */
	uint32_t shmem_huge;		/* of which in PMD-size folios (nr_shmem_hugepages x 512) */
	uint32_t file_pages;		/* nr_file_pages: the page cache (file) and the shmem
					 * objects' frames, as the kernel counts both */
	uint32_t nr_free[MM_NR_ORDERS];
};
void mm_get_counts(struct mm *mm, struct mm_counts *c);
/* Walk every frame, list and index (CONFIG_DEBUG_VM); return 0 or a negative number identifying
 * the first broken invariant (and describe it in err). Tests call it after every operation; a
 * shared machine's host after the run. Call without the lock, with nothing else running. */
int mm_check(struct mm *mm, char *err, size_t errlen);
void mm_get_stats(struct mm *mm, uint64_t out[MM_STAT_NR]);

/* Per-size THP statistics, transparent_hugepage/hugepages-<size>kB/stats/ of 6.12 (events since
 * boot, then two gauges). Order 9 is the PMD size: its fault and split events are the
 * thp_fault_* / thp_split_page / thp_deferred_split_page events counted again per size. */
struct mm_mthp_stats {
	uint64_t anon_fault_alloc;	     /* faults served at this order */
	uint64_t anon_fault_fallback;	     /* allocations at this order that failed */
	uint64_t anon_fault_fallback_charge; /* memcg charge failures: always 0 (no memcg) */
	uint64_t split;			     /* folios of this order split */
	uint64_t split_failed;		     /* splits the shrinker could not do */
	uint64_t split_deferred;	     /* folios queued as partially mapped */
	uint64_t nr_anon;		     /* gauge: anon folios of this order now */
	uint64_t nr_anon_partially_mapped;   /* gauge: of which partially unmapped */
	/* shared memory (6.12 MTHP_STAT_SHMEM_*; shmem.c): */
	uint64_t shmem_alloc;		/* shmem folios allocated at this order */
	uint64_t shmem_fallback;	/* allocations at this order that failed */
	uint64_t shmem_fallback_charge; /* memcg charge failures: always 0 (no memcg) */
};
/* Order MM_MTHP_MIN_ORDER..MM_HPAGE_ORDER; returns 0 or -EINVAL. */
int mm_get_mthp_stats(struct mm *mm, unsigned order, struct mm_mthp_stats *out);
/* The order (2..8) of the mTHP folio frame pfn belongs to, 0 for any other frame: an owner
 * unmapping a whole folio gives it back at that order (mm_anon_free(head, k)), not page by
 * page through the deferred split queue (6.12 zap_pte_range: folio_remove_rmap_ptes of the
 * whole batch leaves nothing partially mapped). */
unsigned mm_anon_folio_order(struct mm *mm, uint32_t pfn);
/* The orders (bit k) the policy lets an anonymous VMA with this advice fault in: 6.12
 * thp_vma_allowable_orders (the always mask, madvise under MADV_HUGEPAGE, inherit when
 * transparent_hugepage/enabled allows the VMA); 3.x: bit 9 when enabled allows it. */
uint16_t mm_thp_allowable_orders(const struct mm_policy *p, enum mm_vma_advice advice);
/* Are THPs disabled for a VMA with this advice in a process in state d (6.18
 * include/linux/huge_mm.h vma_thp_disabled)? MADV_NOHUGEPAGE or COMPLETELY: yes; EXCEPT_ADVISED:
 * unless the VMA is MADV_HUGEPAGE or the caller is MADV_COLLAPSE (forced_collapse). */
bool mm_vma_thp_disabled(enum mm_vma_advice advice, enum mm_thp_disable d, bool forced_collapse);
/* prctl(PR_SET_THP_DISABLE, thp_disable, flags, a4, a5) on the emulated kernel (6.18
 * kernel/sys.c prctl_set_thp_disable): 0 and *d updated, or -EINVAL (a4 or a5 set, flags other
 * than PR_THP_DISABLE_EXCEPT_ADVISED (2), or flags when enabling). A 3.x profile predates the
 * call (Linux 3.15): -ENOSYS, *d unchanged (the caller says so; the host's answer stands). */
int mm_prctl_set_thp_disable(const struct mm_policy *p, unsigned long thp_disable,
			     unsigned long flags, unsigned long a4, unsigned long a5,
			     enum mm_thp_disable *d);
/* What PR_GET_THP_DISABLE returns in state d (6.18 prctl_get_thp_disable: "1 | flags" when
 * disabled, 0 otherwise: 0, 1 or 3). */
int mm_prctl_get_thp_disable(enum mm_thp_disable d);
/* The state a PR_GET_THP_DISABLE answer v stands for (the host's, read at start-up: the flags
 * outlive exec); anything but 1 and 3 is NONE. */
enum mm_thp_disable mm_thp_disable_from_prctl(long v);
/* Fragmentation index for order (vmstat.c): -1000 if a suitable block exists, else 0..1000. */
int mm_fragmentation_index(struct mm *mm, unsigned order);
/* ---- Policy plugin (thpemu_policy.h) ------------------------------------------------------ */

struct thpemu_policy_v1;
/* A loaded plugin's table, and where its first nonsense answer / overtime call is reported
 * (one line, no newline; called with mm's lock held: must not block or call into mm). mm does
 * no loading: the caller dlopen()s (core/policy/plugin.c). */
struct mm_policy_hook {
	const struct thpemu_policy_v1 *pl;
	void (*note)(void *cookie, const char *msg);
	void *cookie;
};
/* Install (hook->pl non-NULL) or remove (hook NULL) the plugin: mm_fault asks it for the
 * orders of every anonymous fault (fault.c). Call before any fault. A shared pool keeps it per
 * process, in the calling process's binding (mm_attach first; mm_detach forgets it): function
 * pointers are per process, and each process of a machine loads its own copy. Returns 0, or
 * -EINVAL (a shared pool not attached here, no select_orders, abi_version other than 1). */
int mm_set_policy_hook(struct mm *mm, const struct mm_policy_hook *hook);

/* ---- Shared memory: shmem and tmpfs (shmem.c) ------------------------------------------------
 * One set of frames per object (a MAP_SHARED anonymous mapping, a memfd, a SysV segment, a
 * /dev/shm file), whichever processes map it: the first fault of a page allocates it for all
 * (the object's page cache), the frames go when the object does. Frames are FS_SHMEM, on no
 * LRU (6.12 mm_inline.h folio_is_file_lru: a swap-backed folio is on the anon LRU, which the
 * model does not scan: no swap, so never reclaimed) and never migrated (see README). */

/* enum mm_shmem_kind and struct mm_shmem_vma: above, with struct mm_collapse_scan. */
/* The folio orders (bit k, 2..9) a fault at page index of such a mapping may allocate under
 * policy p: 6.12 shmem_allowable_huge_orders (with __shmem_huge_global_enabled), 6.1
 * shmem_is_huge (bit 9 or nothing), 3.x nothing. The fault's write_end is 0 (shmem_fault). */
uint16_t mm_shmem_allowable_orders(const struct mm_policy *p, const struct mm_shmem_vma *v,
				   uint64_t index);
struct mm_shmem_req {
	uint32_t object; /* 1..MM_SHMEM_MAX_OBJECT: the object's identity on this machine */
	uint64_t index;	 /* the faulting page's index in the object */
	struct mm_shmem_vma vma;
	/* bit k (2..9): the naturally aligned 2^k pages around index are mapped whole by the
	 * faulting VMA at a 2^k-aligned address (6.12 thp_vma_suitable_order); 6.1 does not ask */
	uint16_t orders_ok;
};
/* A fault on a page not in the object's page cache (shmem_get_folio_gfp): the orders allowed
 * and suitable (no page of the object in the aligned range: shmem_suitable_orders), highest
 * first with the fault's THP gfp (vma_thp_gfp_mask, limit_gfp_mask leaving it as is), then one
 * 4 KiB frame. res: outcome HUGE (order 9), MTHP (2..8), BASE or NOMEM; pfn is the folio's head,
 * whose page index is index rounded down to 2^order; the frames are not cleared (the caller
 * fills them). Returns 0, -EEXIST (the page is cached already: res->pfn and res->order are its
 * frame and folio order, nothing allocated) or -EINVAL. */
int mm_shmem_fault(struct mm *mm, const struct mm_shmem_req *req, struct mm_fault_res *res,
		   void *call);
/* khugepaged's and MADV_COLLAPSE's VMA check for a range of a shmem mapping (scan->shmem_*):
 * 6.12 thp_vma_allowable_order(PMD_ORDER) -> shmem_allowable_huge_orders at the VMA's pgoff,
 * sysfs enforced for khugepaged only; 6.1 hugepage_vma_check -> shmem_is_huge; 3.x false.
 * A range that passes goes through hpage_collapse_scan_file / collapse_file in
 * mm_khugepaged_scan_mm and mm_madv_collapse: the object's page cache gets one PMD-size folio
 * for the range, its old frames are freed (the data stays where the caller keeps it). */
bool mm_shmem_collapse_allowable(const struct mm_policy *p, const struct mm_collapse_scan *s,
				 bool khugepaged);
/* khugepaged_enter_vma for a shmem mapping (mmap, MADV_HUGEPAGE): address space as_id is
 * registered when khugepaged may run and the mapping (advice, kind, size, its first page
 * index pgoff) may hold a PMD-size folio. Returns 0 (registered or not eligible), -ENOSPC. */
int mm_khugepaged_enter_shmem(struct mm *mm, uint32_t as_id, const struct mm_shmem_vma *v,
			      uint64_t pgoff);
/* The object is gone (its last reference: shmctl IPC_RMID and the last detach, the memfd's
 * last close, unlink and the last unmap): every frame of it is freed. Returns the frames freed. */
uint32_t mm_shmem_release(struct mm *mm, uint32_t object);
/* Bytes [lstart, lend] of the object leave its page cache (lend UINT64_MAX: to the end): a
 * hole punched (fallocate FALLOC_FL_PUNCH_HOLE, MADV_REMOVE) or a truncation (ftruncate to
 * lstart). As 6.12 and 6.1 mm/shmem.c shmem_undo_range: the whole pages inside are freed; a
 * large folio holding lstart's or lend's page that the range does not cover whole is split
 * first (mm/truncate.c truncate_inode_partial_folio -> split_folio, 4 KiB folios: the
 * model's split never fails), even when no whole page of it goes. Returns the frames freed. */
uint32_t mm_shmem_punch(struct mm *mm, uint32_t object, uint64_t lstart, uint64_t lend);

/* Proactive compaction's fragmentation score: % of free memory in blocks smaller than 2 MiB. */
unsigned mm_fragmentation_score(struct mm *mm);

#endif

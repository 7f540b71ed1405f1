/* Internals of the emulated memory manager, shared by the files of core/mm only (the kernel's
 * mm/internal.h). Nothing outside core/mm and its unit tests includes this header.
 *
 * Method. One zone of nr_frames 4 KiB frames. Every frame has a 24-byte descriptor (struct
 * mm_frame, the kernel's struct page): the owner cookie (reverse map), two list links that put it
 * on exactly one list at a time (a buddy free list when free, the inactive or active LRU when it
 * is page cache), a page-cache hash chain link, and four bytes of state. List heads are sentinel
 * descriptors stored after the last frame, so every list is circular and uniform. The page-cache
 * index (owner -> pfn, the address_space's xarray) is a chained hash whose chains run through
 * the descriptors; dirty frames are queued for writeback in a FIFO ring of pfns (oldest dirtied
 * first). Total metadata stays under 32 bytes per frame (mm_metadata_bytes_per_frame()).
 *
 * Locking. Public entry points take the environment lock; every function here expects it held
 * unless its comment says otherwise. Code that calls an [unlocked] hook leaves the frames it
 * works on ISOLATED (off every list, owned by the caller) and re-validates after relocking.
 */
#ifndef THPEMU_MM_INTERNAL_H
#define THPEMU_MM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mm/mm.h"

/* Functions a stall report's stack shows (the live emulator unwinds the handler thread): keep
 * them out of line and unrenamed so their kernel names appear as they are. */
#if defined(__clang__)
#define __stall_frame __attribute__((noinline))
#else
#define __stall_frame __attribute__((noinline, noclone))
#endif

/* ---- Frame descriptors ------------------------------------------------------------------- */

enum frame_state {
	FS_FREE,      /* in the buddy allocator, or isolated by a compaction free scanner */
	FS_ANON,      /* program anon base page, or foreign anon (owner has MM_OWNER_FOREIGN) */
	FS_HUGE,      /* one of the 512 frames of a program's huge extent (head = aligned pfn) */
	FS_FILE,      /* page cache */
	FS_UNMOVABLE, /* kernel allocation (UNMOVABLE or RECLAIMABLE migratetype) */
	FS_SENTINEL,  /* list head, never a real frame */
	FS_MTHP,      /* one of the 2^k frames (k = 2..8, in every frame's order byte) of a
		       * program's mTHP folio (head = pfn aligned down to 2^k), mapped by PTEs;
		       * head and subpage flags as a PTE-mapped THP's (mthp.c) */
	FS_SHMEM,     /* shared memory, owner MM_OWNER_SHMEM (shmem.c): in the page-cache index,
		       * on no list; the folio order (0, 2..9) in every frame's order byte */
};

/* Frame flags (struct mm_frame.flags). */
#define FF_ISOLATED   0x01 /* off its list, owned by a compaction or reclaim pass */
#define FF_LOCKED     0x02 /* page cache: held between mm_pagecache_get and _put (PG_locked) */
#define FF_DIRTY      0x04 /* page cache: dirty (PG_dirty) */
#define FF_ACTIVE     0x08 /* page cache: on the active LRU (PG_active) */
#define FF_REFERENCED 0x10 /* page cache: referenced since last scanned (PG_referenced) */
#define FF_GONE	      0x20 /* owner freed/removed it while someone else held it: free on release */
#define FF_ERROR      0x40 /* page cache: last writeback failed (PG_error) */
#define FF_MIGRATING  0x80 /* a copy hook is running on it with the lock released */
/* Flags of FS_HUGE frames (the page-cache bits above mean nothing there; split.c): */
#define FF_THP_PTE                                                                                 \
	FF_ACTIVE		     /* head: not mapped by a PMD (PMD split, or a collapse not    \
				      * yet mapped): a "PTE-mapped THP" */
#define FF_THP_QUEUED  FF_REFERENCED /* head: on the deferred split queue */
#define FF_THP_PARTIAL FF_DIRTY	     /* head: partially unmapped (PG_partially_mapped) */
#define FF_THP_UNMAPPED                                                                            \
	FF_LOCKED /* any frame: its subpage is unmapped; the head's hnext                          \
		   * counts them */
#define FF_THP_MASK (FF_THP_PTE | FF_THP_QUEUED | FF_THP_PARTIAL | FF_THP_UNMAPPED)

/* The order byte: buddy order of a free block head, or ORDER_TAIL inside a free block; bits 4-5
 * hold the migratetype of the free list the head sits on. FS_MTHP frames: the folio order. */
#define ORDER_MASK     0x0f
#define ORDER_TAIL     0x0f
#define ORDER_MT_SHIFT 4
#define ORDER_RECLAIM                                                                              \
	0x40 /* page cache: PG_reclaim (rotate to the inactive tail when its                       \
	      * writeback ends); kept in the order byte, FF_* being full */

struct mm_frame {
	uint64_t owner; /* reverse map cookie (0 when free) */
	uint32_t next;	/* list links: buddy free list, LRU, or a compaction's private list */
	uint32_t prev;
	uint32_t hnext; /* page-cache hash chain: the next frame + 1 (0 ends it) */
	uint8_t state;	/* enum frame_state */
	uint8_t order;	/* see ORDER_* */
	uint8_t flags;	/* FF_* */
	uint8_t wb;	/* 1 while under writeback; written atomically, read lock-free */
};

/* Sentinel list heads, indexed after the last frame. */
#define SENT_FREE(order, mt) ((order)*MM_MT_NR + (mt))
#define SENT_LRU_INACTIVE    (MM_NR_ORDERS * MM_MT_NR)
#define SENT_LRU_ACTIVE	     (SENT_LRU_INACTIVE + 1)
#define SENT_SPLIT_QUEUE     (SENT_LRU_ACTIVE + 1) /* deferred split queue: THP heads */
/* The free lists of lower zone z (0: the one below the pool's main zone; zones.c). */
#define SENT_LOWER_FREE(z, order, mt)                                                              \
	(SENT_SPLIT_QUEUE + 1 + ((z)*MM_NR_ORDERS + (order)) * MM_MT_NR + (mt))
#define NR_SENTINELS (SENT_LOWER_FREE(MM_MAX_LOWER_ZONES, 0, 0))

/* Pageblock byte: migratetype in the low bits, the compaction skip bit above. */
#define PB_MT_MASK 0x03
#define PB_SKIP	   0x04

/* Per-size events (6.12 enum mthp_stat_item, the event subset). */
enum mthp_event {
	MTHP_EV_ANON_FAULT_ALLOC,
	MTHP_EV_ANON_FAULT_FALLBACK,
	MTHP_EV_SPLIT,
	MTHP_EV_SPLIT_FAILED,
	MTHP_EV_SPLIT_DEFERRED,
	MTHP_EV_SHMEM_ALLOC,
	MTHP_EV_SHMEM_FALLBACK,
	MTHP_EV_NR,
};

/* ---- gfp and alloc flags (the subset THP and page cache allocations use) ----------------- */

#define GFP_DIRECT_RECLAIM   0x01 /* __GFP_WAIT (3.x) / __GFP_DIRECT_RECLAIM */
#define GFP_KSWAPD_RECLAIM   0x02 /* may wake kswapd (3.x: absence of __GFP_NO_KSWAPD) */
#define GFP_IO		     0x04
#define GFP_FS		     0x08
#define GFP_NORETRY	     0x10
#define GFP_THISNODE	     0x20
#define GFP_NOMEMALLOC	     0x40
#define GFP_HIGHUSER_MOVABLE (GFP_DIRECT_RECLAIM | GFP_KSWAPD_RECLAIM | GFP_IO | GFP_FS)

enum wmark { WMARK_MIN, WMARK_LOW, WMARK_HIGH, NR_WMARK };

#define ALLOC_WMARK_MASK    0x03 /* enum wmark in the low bits */
#define ALLOC_NO_WATERMARKS 0x04
#define ALLOC_KSWAPD	    0x08
#define ALLOC_NOFRAGMENT    0x10

/* ---- The zone and the whole manager -------------------------------------------------------- */

/* One zone's free area: what __zone_watermark_ok and __rmqueue read (struct zone's free_area[]
 * and NR_FREE_PAGES). */
struct free_area {
	uint32_t nr_free_pages;
	uint32_t nr_free[MM_NR_ORDERS];
	uint32_t nr_free_mt[MM_NR_ORDERS][MM_MT_NR];
};

/* A zone below the pool's main zone (zones.c): its frames, its own watermarks and free lists,
 * and its lowmem_reserve against allocations whose highest usable zone is the main one. */
struct lower_zone {
	char name[12];
	uint32_t start, end; /* pool frames [start, end) */
	uint32_t wmark[NR_WMARK];
	uint32_t lowmem_reserve;
	struct free_area area;
};

/* A policy plugin's hook as installed in one process, and whether its first nonsense /
 * overtime answer was reported there. */
struct mm_hook_state {
	struct mm_policy_hook h;
	bool err_noted, slow_noted;
};

struct mm {
	struct mm_env env;    /* private mm only: a shared one is bound per process (env.c) */
	struct mm_config cfg; /* policy and sysctls as given (defaults filled in) */
	uint32_t nr_frames;
	uint32_t nr_blocks;	 /* pageblocks */
	struct mm_frame *frames; /* nr_frames descriptors + NR_SENTINELS list heads */
	uint8_t *pageblock;	 /* per pageblock: PB_* */

	/* Buddy allocator (zone->free_area) of the main zone. The same counters are also
	 * reachable as one struct free_area (`area`), the form a lower zone's come in, so the
	 * allocator's code serves every zone. */
	union {
		struct free_area area;
		struct {
			uint32_t nr_free_pages; /* NR_FREE_PAGES: frames on the free lists */
			uint32_t nr_free[MM_NR_ORDERS]; /* free blocks per order, all types */
			uint32_t nr_free_mt[MM_NR_ORDERS][MM_MT_NR]; /* per order and list */
		};
	};
	/* Max-order blocks [fresh_pfn, fresh_end) have never been touched: they count as free and
	 * sit, in pfn order, at the tail of the MAX_ORDER MOVABLE free list, where they would be
	 * after memblock_free_all; materialise_free() writes their descriptors when the list or a
	 * scanner reaches them (a pool costs nothing until its memory is used). */
	uint32_t fresh_pfn, fresh_end;
	/* The zones below the main one (a snapshot of several zones; zones.c), in zonelist order:
	 * lower[0] is tried right after the main zone. The main zone is [zone_start_pfn,
	 * nr_frames); without lower zones zone_start_pfn is 0. */
	uint32_t zone_start_pfn;
	unsigned nr_lower;
	struct lower_zone lower[MM_MAX_LOWER_ZONES];

	/* Watermarks (zone->_watermark) and the modern boost. */
	uint64_t min_free_kbytes;
	uint32_t wmark[NR_WMARK];
	uint32_t watermark_boost;

	/* Page cache: hash index, LRU sizes, writeback FIFO. */
	uint32_t *pc_hash; /* bucket heads: pfn + 1, 0 when empty */
	uint32_t pc_hash_mask;
	/* Per pageblock: buddy heads on a free list in it (list_free_block / del_free_block), so
	 * that the free scanner passes a block with none in one step (the pfns still count as
	 * scanned). Not kernel state: the kernel reads every struct page. */
	uint16_t *pb_nbuddy;
	uint32_t nr_lru[2];	/* inactive, active (not counting isolated frames) */
	uint32_t *dirty_ring;	/* pfns in dirtying order; each frame at most once */
	uint64_t *dirty_queued; /* bitmap: frame has an entry in dirty_ring */
	uint32_t ring_head, ring_len;
	/* Set at the first pc_insert / the first frame queued for writeback, never cleared: until
	 * then pc_hash and dirty_queued are the zeroed memory they were made as, which mm_check
	 * need not read (in a machine's segment every page read is a shmem page allocated). */
	bool pc_used, dq_used;

	/* Per-state frame counts (mm_get_counts). */
	uint32_t nr_anon, nr_anon_huge, nr_foreign, nr_file, nr_file_dirty, nr_file_writeback;
	uint32_t nr_unmovable, nr_isolated;
	uint32_t nr_shmem, nr_shmem_huge; /* FS_SHMEM frames; of which in PMD-size folios */
	uint32_t nr_isolated_free; /* of nr_isolated: free frames held as migration targets */

	/* Per-zone compaction state (struct zone's compact_* fields). */
	unsigned compact_considered;
	unsigned compact_defer_shift;
	unsigned compact_order_failed;
	uint32_t compact_cached_migrate_pfn[2]; /* [0] async, [1] sync */
	uint32_t compact_cached_free_pfn;
	uint32_t compact_init_migrate_pfn;
	uint32_t compact_init_free_pfn;
	bool compact_blockskip_flush;

	/* Background actors. */
	bool kswapd_awake;     /* woken and not yet balanced */
	bool zone_congested;   /* 3.x ZONE_CONGESTED: reclaim found every dirty page it tried to
				* write backed by a congested device (wait_iff_congested sleeps) */
	bool boost_wake;       /* ZONE_BOOSTED_WATERMARK: wake kswapd after this alloc */
	unsigned kswapd_order; /* highest order asked of kswapd since it last slept */
	unsigned kswapd_failures;
	/* 3.x zone->pages_scanned and zone->all_unreclaimable (vmscan.c zone_scan_sync,
	 * zone_scanned): LRU pages scanned since a page was last freed, reset lazily when
	 * MM_STAT_PGFREE has moved past pages_scanned_pgfree; the flag set by kswapd after a pass
	 * over an unreclaimable zone */
	uint64_t pages_scanned;
	uint64_t pages_scanned_pgfree;
	bool all_unreclaimable;
	bool kcompactd_awake;
	unsigned kcompactd_max_order;
	uint64_t proactive_next_ns; /* when proactive compaction next checks (0 = at once) */
	unsigned proactive_defer;   /* consecutive non-improving proactive runs (<= 6) */

	uint64_t stats[MM_STAT_NR];
	uint32_t huge_zero_pfn; /* the huge zero folio's head (6.x), MM_NO_PFN until first used */

	/* THPs over time (split.c): frames of FS_HUGE blocks not mapped by a PMD (FF_THP_PTE),
	 * the deferred split queue's length, its partially mapped entries, and the THP
	 * shrinker's carried-over scan count (shrinker->nr_deferred). */
	uint32_t nr_huge_pte, nr_split_queue, nr_partially_mapped;
	uint64_t shrink_deferred;

	/* Multi-size THP (mthp.c): frames in mTHP folios, folios and partially mapped folios per
	 * order (2..8), and the per-size events of every order (9: the PMD size). */
	uint32_t nr_anon_mthp;
	uint32_t nr_mthp[MM_HPAGE_ORDER], nr_mthp_partial[MM_HPAGE_ORDER];
	uint64_t mthp_events[MM_HPAGE_ORDER + 1][MTHP_EV_NR];

	/* khugepaged (khugepaged.c): the registered address spaces (mm_slots, as_id + 1, in
	 * registration order), the scan cursor (slot index and address), the pacing. */
	struct {
		uint32_t ids[MM_KHUGEPAGED_SLOTS];
		uint32_t nr;
		uint32_t cursor;	  /* slot index; == nr: at the list head */
		uint64_t addr;		  /* where the cursor's visit resumes */
		uint64_t next_ns;	  /* when the next wake (or the resumption) is due */
		uint32_t resume_progress; /* 6.12: a wake suspended by alloc_sleep */
		uint8_t resume_pass;
		bool resuming;
		bool alloc_failed; /* the last visit's collapse could not allocate */
		bool running;	   /* a wake is in progress (one khugepaged) */
	} khp;

	/* Bumped by mm_repair. A caller back from an [unlocked] hook that finds it changed holds
	 * nothing any more: the frames it kept isolated were put back by the repair. */
	uint64_t epoch;
	/* Counts every release of the lock (mm_unlock): a caller that finds it unchanged knows
	 * nobody else ran meanwhile. */
	uint64_t unlocks;

	/* Policy plugin (fault.c): the hook of a private pool (a shared one's is per process, in
	 * env.c's binding), and the stall time of the last THPEMU_POLICY_STALL_WINDOW faults
	 * (ring and sum). */
	struct mm_hook_state hook_st;
	uint64_t stall_ring[16], stall_sum;
	unsigned stall_pos;
};

/* env.c: this process's plugin hook of mm (a shared pool's binding; NULL when unbound). */
struct mm_hook_state *mm_hook_state(struct mm *mm);

/* ---- Small helpers -------------------------------------------------------------------------- */

static inline struct mm_frame *pfn_frame(struct mm *mm, uint32_t pfn)
{
	return &mm->frames[pfn];
}

static inline uint32_t sentinel(const struct mm *mm, unsigned idx)
{
	return mm->nr_frames + idx;
}

static inline unsigned frame_order(const struct mm_frame *f)
{
	return f->order & ORDER_MASK;
}

static inline unsigned frame_list_mt(const struct mm_frame *f)
{
	return (f->order >> ORDER_MT_SHIFT) & 3;
}

/* The lower zone holding pfn, or NULL when it is the main zone's. */
static inline struct lower_zone *lower_zone_of(struct mm *mm, uint32_t pfn)
{
	if (pfn >= mm->zone_start_pfn)
		return NULL;
	for (unsigned z = 0; z + 1 < mm->nr_lower; z++)
		if (pfn >= mm->lower[z].start)
			return &mm->lower[z];
	return &mm->lower[mm->nr_lower - 1];
}

/* The free list (order, mt) of the zone holding pfn: its sentinel. */
static inline unsigned free_list_of(struct mm *mm, uint32_t pfn, unsigned order, unsigned mt)
{
	const struct lower_zone *z = lower_zone_of(mm, pfn);

	return z ? SENT_LOWER_FREE((unsigned)(z - mm->lower), order, mt) : SENT_FREE(order, mt);
}

/* Free pages of every zone (NR_FREE_PAGES summed over the node). */
static inline uint32_t node_free_pages(const struct mm *mm)
{
	uint32_t n = mm->nr_free_pages;

	for (unsigned z = 0; z < mm->nr_lower; z++)
		n += mm->lower[z].area.nr_free_pages;
	return n;
}

static inline bool frame_is_buddy(const struct mm_frame *f)
{
	return f->state == FS_FREE && !(f->flags & FF_ISOLATED) && frame_order(f) != ORDER_TAIL;
}

static inline bool frame_under_wb(const struct mm_frame *f)
{
	return __atomic_load_n(&f->wb, __ATOMIC_ACQUIRE) != 0;
}

static inline void frame_set_wb(struct mm_frame *f, bool on)
{
	__atomic_store_n(&f->wb, on ? 1 : 0, __ATOMIC_RELEASE);
}

static inline unsigned pageblock_mt(const struct mm *mm, uint32_t pfn)
{
	return mm->pageblock[pfn >> MM_PAGEBLOCK_ORDER] & PB_MT_MASK;
}

static inline void set_pageblock_mt(struct mm *mm, uint32_t pfn, unsigned mt)
{
	uint8_t *pb = &mm->pageblock[pfn >> MM_PAGEBLOCK_ORDER];

	*pb = (uint8_t)((*pb & ~PB_MT_MASK) | mt);
}

static inline bool pageblock_skip(const struct mm *mm, uint32_t pfn)
{
	return mm->pageblock[pfn >> MM_PAGEBLOCK_ORDER] & PB_SKIP;
}

static inline void set_pageblock_skip(struct mm *mm, uint32_t pfn)
{
	mm->pageblock[pfn >> MM_PAGEBLOCK_ORDER] |= PB_SKIP;
}

static inline uint32_t pageblock_start(uint32_t pfn)
{
	return pfn & ~(MM_HPAGE_NR - 1);
}

/* The 6.x mechanism (6.1 and 6.12): cached scanner positions, skip bits, compaction
 * priorities, per-order deferral, capture, the NUMA two-pass fault. A rule that differs between
 * 6.1 and 6.12 tests era_6_1() as well (core/mm/README.md lists them). */
static inline bool era_modern(const struct mm *mm)
{
	return mm->cfg.policy.era >= MM_ERA_6_1;
}

/* Linux 6.1 (Debian 12's LTS kernel): era_modern() is true for it too. */
static inline bool era_6_1(const struct mm *mm)
{
	return mm->cfg.policy.era == MM_ERA_6_1;
}

/* Multi-size THP for anonymous faults (6.8, alloc_anon_folio in mm/memory.c): 6.12 only. */
static inline bool era_has_mthp(const struct mm *mm)
{
	return mm->cfg.policy.era == MM_ERA_MODERN;
}

/* Compaction rules of the 6.x kernels, one predicate each so that a profile of another 6.x
 * kernel can take or leave them (compaction.c; the 3.x eras never reach the code they gate).
 * era_modern() is true for 6.1 too: the linux-6.1 profile runs 6.12's versions of these three
 * rules, with 6.1's own where written under each (era_6_1() in compaction.c).
 *
 * mm/compaction.c isolate_migratepages_block(), 6.12: the scan of a pageblock that starts at
 * its first pfn marks the block skipped (test_and_set_skip) the first time it takes the LRU
 * lock for a candidate, not only once the block yields nothing, and a bit found already set
 * ends the scan unless the block is being finished (cc->finish_pageblock). 6.1 differs
 * (modelled): it tests and sets only when that candidate is the block's first pfn, and a set
 * bit ends even a rescan. */
static inline bool compact_skip_on_first_isolation(const struct mm *mm)
{
	return era_modern(mm);
}

/* mm/compaction.c fast_isolate_freepages(), 6.12 (since 5.1): before the linear free scanner,
 * search the MOVABLE free lists below the requested order for a page in the top quarter (or
 * half) of the space the scanners have left. 6.1 differs in small ways: it does not check
 * that the pessimistic min_pfn block is a suitable target, and fast_isolate_around marks a
 * block skipped when it left the targets short rather than when it scanned the whole block. */
static inline bool compact_fast_isolate_freepages(const struct mm *mm)
{
	return era_modern(mm);
}

/* mm/compaction.c fast_find_migrateblock(), 6.12 (since 5.1): for an order above
 * PAGE_ALLOC_COSTLY_ORDER the migrate scanner starts at a pageblock with free MOVABLE pages of
 * orders order-1..3 in the first half (at the zone's start) or eighth of the remaining span.
 * 6.1 differs (modelled): it also searches while a block is being finished (6.12 returns at
 * once under cc->finish_pageblock), and marks the block it picks skipped at once, so that
 * 6.1's isolate_migratepages_block gives that block up unscanned. */
static inline bool compact_fast_find_migrateblock(const struct mm *mm)
{
	return era_modern(mm);
}

static inline void count_event(struct mm *mm, enum mm_stat s, uint64_t n)
{
	mm->stats[s] += n;
}

/* count_mthp_stat: order 2..9. */
static inline void count_mthp_event(struct mm *mm, unsigned order, enum mthp_event e)
{
	mm->mthp_events[order][e]++;
}

/* The folio order of an FS_MTHP frame and its folio's head. */
static inline unsigned mthp_order(const struct mm_frame *f)
{
	return f->order & ORDER_MASK;
}
static inline uint32_t mthp_head(const struct mm_frame *f, uint32_t pfn)
{
	return pfn & ~((1U << mthp_order(f)) - 1);
}

/* hugepage_pmd_enabled (6.12 mm/khugepaged.c): may PMD-size THPs exist at all (khugepaged
 * runs, min_free_kbytes is raised)? 3.x and 6.1 (hugepage_flags_enabled, no per-size files):
 * transparent_hugepage/enabled != never. */
static inline bool thp_pmd_enabled(const struct mm_policy *p)
{
	if (p->era != MM_ERA_MODERN)
		return p->enabled != MM_THP_NEVER;
	switch (p->hugepages[MM_HPAGE_ORDER]) {
	case MM_THP_SIZE_ALWAYS:
	case MM_THP_SIZE_MADVISE:
		return true;
	case MM_THP_SIZE_INHERIT:
		return p->enabled != MM_THP_NEVER;
	default:
		return false;
	}
}

/* policy.c: 0, or -EINVAL with a reason when a hand-built policy cannot run. */
int mm_policy_validate(const struct mm_policy *p, char *err, size_t errlen);

/* Locking and hooks (boundary.c). Every hook is called through these wrappers, which find the
 * environment of the calling process (mm->env, or its mm_attach binding of a shared mm). */
void mm_lock_env(struct mm *mm);
void mm_unlock_env(struct mm *mm);
/* A private mm whose environment has no lock (the simulator's one thread) takes none: inline,
 * because mm takes and drops it on every call (a page-cache lookup, a free). */
static inline void mm_lock(struct mm *mm)
{
	if (__builtin_expect(!mm->cfg.shared && !mm->env.ops->lock, 1))
		return;
	mm_lock_env(mm);
}
static inline void mm_unlock(struct mm *mm)
{
	mm->unlocks++;
	if (__builtin_expect(!mm->cfg.shared && !mm->env.ops->unlock, 1))
		return;
	mm_unlock_env(mm);
}
uint64_t mm_now(struct mm *mm, void *call);
void mm_charge(struct mm *mm, void *call, enum mm_cost what, uint64_t n);
void mm_trace(struct mm *mm, void *call, enum mm_trace_kind kind, unsigned order, uint64_t a,
	      uint64_t b, uint64_t c, uint64_t d);
/* Metadata memory: meta_alloc or calloc; what meta_alloc gave goes back through meta_free, or
 * nowhere when meta_free is NULL. The env_ forms serve mm_create before the mm exists. */
void *env_meta_alloc(const struct mm_env *env, size_t len);
void env_meta_free(const struct mm_env *env, void *p, size_t len);
void *mm_meta_alloc(struct mm *mm, size_t len);
void mm_meta_free(struct mm *mm, void *p, size_t len);
/* [unlocked] hooks, called with the lock released; a missing hook returns what mm.h says
 * (wait_writeback -ETIMEDOUT, writeout -EBUSY, the copies 0). */
bool mm_has_wait_writeback(struct mm *mm);
bool mm_has_writeout(struct mm *mm);
int mm_hook_wait_writeback(struct mm *mm, void *call, uint32_t pfn, uint64_t timeout_ns);
int mm_hook_writeout(struct mm *mm, void *call, uint64_t owner, uint32_t pfn);
int mm_hook_migrate_anon(struct mm *mm, void *call, uint64_t owner, uint32_t from, uint32_t to);
bool mm_has_migrate_anon_batch(struct mm *mm);
void mm_hook_migrate_anon_batch(struct mm *mm, void *call, unsigned n, const uint64_t *owner,
				const uint32_t *from, const uint32_t *to, int *ret);
int mm_hook_copy_file_page(struct mm *mm, void *call, uint64_t owner, uint32_t from, uint32_t to);
uint64_t mm_hook_clear_huge(struct mm *mm, void *call, uint32_t head, uint64_t extent_owner);
void mm_hook_clear_folio(struct mm *mm, void *call, uint32_t head, unsigned order, uint64_t owner);
bool mm_has_khugepaged_scan(struct mm *mm);
int mm_hook_khugepaged_scan(struct mm *mm, void *call, uint32_t as_id, uint64_t *addr,
			    unsigned budget, bool *done); /* -ENOENT without the hook */
int mm_hook_split_underused(struct mm *mm, void *call, uint64_t extent_owner,
			    uint32_t head); /* 0 (not underused) without the hook */
/* A throttle sleep ([unlocked]; nothing without the hook) and the per-wait report ([locked]). */
int mm_hook_throttle(struct mm *mm, void *call, enum mm_wait_kind kind, uint64_t timeout_ns,
		     bool iff_congested);
void mm_hook_waited(struct mm *mm, void *call, const struct mm_wait *w);
bool mm_hook_congested(struct mm *mm, void *call); /* false without the hook */
/* Release the lock for an [unlocked] hook (returns the epoch) and retake it after: false when
 * mm_repair ran meanwhile. Then the caller abandons its work without touching the frames it
 * held (sources, targets, a captured block, a reclaim batch): the repair put them back where
 * their state says. Internal calls report that as -ESTALE. */
uint64_t mm_unlock_for_hook(struct mm *mm);
bool mm_relock_after_hook(struct mm *mm, uint64_t epoch);

/* Lists of frames through next/prev (list.c). */
void flist_init(struct mm *mm, uint32_t head);
void flist_add(struct mm *mm, uint32_t head, uint32_t pfn);	 /* at the head */
void flist_add_tail(struct mm *mm, uint32_t head, uint32_t pfn); /* at the tail */
void flist_del(struct mm *mm, uint32_t pfn);
/* Rotate the list so pfn (on it) comes first / last (the kernel's move_freelist_head/tail). */
void flist_rotate_first(struct mm *mm, uint32_t head, uint32_t pfn);
void flist_rotate_last(struct mm *mm, uint32_t head, uint32_t pfn);
/* A run of consecutive entries, first ... last in list order, taken off as one chain (its inner
 * links kept, its outer ends MM_NO_PFN), and such a chain put back at a list's head, in its
 * order: what deleting the run entry by entry and adding it back in reverse does, in O(1). */
void flist_cut(struct mm *mm, uint32_t first, uint32_t last);
void flist_splice(struct mm *mm, uint32_t head, uint32_t first, uint32_t last);
static inline bool flist_empty(struct mm *mm, uint32_t head)
{
	return mm->frames[head].next == head;
}

/* ---- Per-fault accounting ------------------------------------------------------------------ */

/* What the current allocation is doing, for the fault record (the kernel's "current" plus the
 * trace points of one fault). Page-cache and recipe allocations use one without a record. */
struct fault_ctx {
	struct mm_fault_rec *rec;	/* NULL: not a program fault */
	void *call;			/* passed to every hook */
	uint64_t cause_ns[MM_CAUSE_NR]; /* time per contributor, for rec->cause */
	uint64_t hook_ns;  /* time in waits, writeouts and copies (already attributed) */
	uint64_t ahead_ns; /* work done ahead of time for this fault (clear_huge), charged to it */
	bool background;   /* kswapd: its waits are nobody's fault (mm_wait.background) */
	const struct thpemu_fault_info *pinfo; /* policy plugin's view of this fault, or NULL */
};

void fault_step(struct fault_ctx *fc, enum mm_step step, unsigned result);

/* ---- page_alloc.c: buddy allocator, watermarks, the allocation paths ----------------------- */

/* Mirrors struct alloc_context + the gfp/alloc_flags pair of one allocation. */
struct alloc_ctx {
	unsigned order;
	enum mm_migratetype mt;
	unsigned gfp;
	unsigned alloc_flags;
	struct fault_ctx *fc;
	bool mode_set; /* the compaction after reclaim runs in `mode` (khugepaged's
			* policy.khugepaged_mode), not the policy's second_mode */
	int mode;      /* enum mm_migrate_mode, or -1: none */
};

/* Capture of a block freed during compaction (struct capture_control). */
struct capture_control {
	unsigned order;
	uint32_t pfn; /* captured head, or MM_NO_PFN */
};

void setup_watermarks(struct mm *mm);
uint32_t wmark_pages(const struct mm *mm, enum wmark w);
bool zone_watermark_ok(struct mm *mm, unsigned order, uint32_t mark, unsigned alloc_flags);
uint32_t free_pages_blocks(const struct mm *mm); /* NR_FREE_PAGES_BLOCKS */
bool zone_watermark_ok_blocks(struct mm *mm, unsigned order, uint32_t mark);
/* vm.defrag_mode (6.15) in force: modern era only (policy_check rejects it in 3.x). */
static inline bool defrag_mode(const struct mm *mm)
{
	return mm->cfg.policy.era == MM_ERA_MODERN && mm->cfg.policy.defrag_mode;
}
uint32_t rmqueue(struct mm *mm, unsigned order, enum mm_migratetype mt, unsigned alloc_flags,
		 void *call);
uint32_t get_page_from_freelist(struct mm *mm, struct alloc_ctx *ac, unsigned alloc_flags);
bool buddy_merge_likely(struct mm *mm, uint32_t pfn, unsigned order);
void free_one_block(struct mm *mm, uint32_t pfn, unsigned order, struct capture_control *capc);
void free_frames(struct mm *mm, uint32_t pfn, unsigned order, struct capture_control *capc);
void del_free_block(struct mm *mm, uint32_t pfn);
/* Write the descriptors of the next never-touched max-order block and put it on its list
 * (false when none is left); all of them (before anything scans pfns or walks free lists). */
bool materialise_free(struct mm *mm);
void init_free_frames(struct mm *mm, uint32_t pfn, uint32_t n);
void materialise_all(struct mm *mm);
/* The first block of a free list, or MM_NO_PFN (materialising one if the list is the
 * never-touched blocks' and holds nothing else). */
uint32_t free_list_first(struct mm *mm, unsigned order, unsigned mt);
void add_free_block(struct mm *mm, uint32_t pfn, unsigned order, unsigned mt, bool tail);
void link_free_block(struct mm *mm, uint32_t pfn, unsigned order, unsigned mt);
uint32_t alloc_frames(struct mm *mm, struct alloc_ctx *ac);
void mark_allocated(struct mm *mm, uint32_t pfn, unsigned order, enum frame_state st,
		    uint64_t owner);
int fragmentation_index(struct mm *mm, unsigned order);
void wake_all_kswapds(struct mm *mm, struct alloc_ctx *ac);

/* slowpath.c */
uint32_t alloc_pages_mpol(struct mm *mm, struct alloc_ctx *ac);
uint32_t alloc_pages_one_pass(struct mm *mm, struct alloc_ctx *ac); /* no NUMA first pass */
uint32_t alloc_base_page(struct mm *mm, struct alloc_ctx *ac, bool last_resort);
/* alloc_base_page in two halves: the fast path (get_page_from_freelist at LOW, which reads only
 * ac->fc->call), then the slow path when it failed (ac->fc wholly initialised by then). */
uint32_t alloc_base_page_fast(struct mm *mm, struct alloc_ctx *ac);
uint32_t alloc_base_page_slow(struct mm *mm, struct alloc_ctx *ac, bool last_resort);

/* ---- pagecache.c ----------------------------------------------------------------------------- */

uint32_t pc_lookup(struct mm *mm, uint64_t owner);
void pc_insert(struct mm *mm, uint32_t pfn);
void pc_delete(struct mm *mm, uint32_t pfn);
void pc_replace(struct mm *mm, uint32_t oldpfn, uint32_t newpfn);
void set_page_dirty(struct mm *mm, uint32_t pfn);
void start_writeback(struct mm *mm, uint32_t pfn);
bool pc_off_lru(const struct mm *mm); /* fs=tmpfs: page-cache frames are on no LRU */
void lru_add(struct mm *mm, uint32_t pfn);
void lru_del(struct mm *mm, uint32_t pfn);
void putback_frame(struct mm *mm, uint32_t pfn);
bool release_if_gone(struct mm *mm, uint32_t pfn);
void pc_rebuild_ring(struct mm *mm);
void frame_free_owned(struct mm *mm, uint32_t pfn, struct capture_control *capc);
/* anon.c: the plain anon frames [a, b) (FS_ANON, not isolated) freed as one by one ascending */
void free_plain_run(struct mm *mm, uint32_t a, uint32_t b);
/* free_plain_run's frees without its counts: the frames [a, b), allocated, to the buddy as their
 * frees one by one in ascending order leave it (the caller has counted them out). */
void free_plain_blocks(struct mm *mm, uint32_t a, uint32_t b);

/* ---- compaction.c / migrate.c / vmscan.c ---------------------------------------------------- */

/* compaction.c */
bool compaction_deferred(struct mm *mm, unsigned order);
void defer_compaction(struct mm *mm, unsigned order);
void compaction_defer_reset(struct mm *mm, unsigned order, bool alloc_success);
bool compaction_restarting(struct mm *mm, unsigned order);
enum mm_compact_result compaction_suitable(struct mm *mm, unsigned order, unsigned alloc_flags);
void reset_isolation_suitable(struct mm *mm);

struct compact_control;
enum mm_compact_result compact_zone(struct mm *mm, struct compact_control *cc);
enum mm_compact_result try_to_compact_pages(struct mm *mm, struct alloc_ctx *ac,
					    enum mm_migrate_mode mode, uint32_t *captured);
uint64_t kcompactd_do_work(struct mm *mm, void *call);
void wakeup_kcompactd(struct mm *mm, unsigned order);
int proactive_compact_node(struct mm *mm, void *call);

/* migrate.c */
int wait_on_frame_writeback(struct mm *mm, struct fault_ctx *fc, uint32_t pfn, uint64_t timeout_ns,
			    enum mm_cause cause);
int reclaim_writeout(struct mm *mm, struct fault_ctx *fc, uint32_t pfn);
/* The throttles' timeouts: HZ/10 (3.x congestion_wait, wait_iff_congested) and HZ/50 (6.12
 * reclaim_throttle(VMSCAN_THROTTLE_ISOLATED)), whatever HZ is. */
#define NSEC_PER_HZ_10 100000000ULL
#define NSEC_PER_HZ_50 20000000ULL
/* ops->waited for one wait that just ended ([locked]). */
void mm_report_wait(struct mm *mm, struct fault_ctx *fc, enum mm_wait_kind kind, uint64_t t0,
		    uint64_t ns, uint32_t pfn, uint64_t owner);
/* A throttle nap (congestion_wait, wait_iff_congested, too_many_isolated's sleep): drops the
 * lock for ops->throttle, charges the time to cause. Returns 0 or -ESTALE (repaired). */
int throttle_nap(struct mm *mm, struct fault_ctx *fc, enum mm_wait_kind kind, uint64_t timeout_ns,
		 bool iff_congested, enum mm_cause cause);

/* khugepaged.c */
int khugepaged_enter_locked(struct mm *mm, uint32_t as_id);
/* The gfp mask and the mode of the compaction after reclaim of a collapse allocation. */
void collapse_alloc_ctx(const struct mm_policy *p, bool khugepaged, struct alloc_ctx *ac);
/* alloc_charge_folio: an order-9 block with that gfp, one pass (__folio_alloc), counted in
 * thp_collapse_alloc or thp_collapse_alloc_failed (a khugepaged failure backs off); MM_NO_PFN
 * on failure. The block is not marked: the caller owns it. May release the lock. */
uint32_t collapse_alloc_block(struct mm *mm, bool khugepaged, struct fault_ctx *fc);
/* shmem.c: hpage_collapse_scan_file and collapse_file on a range of a shmem mapping
 * (scan->shmem_object), its VMA checked already (mm_shmem_collapse_allowable). Called and
 * returns with the lock held (the allocation may release it). */
enum mm_scan_result shmem_collapse_range(struct mm *mm, const struct mm_collapse_scan *s,
					 bool khugepaged, struct fault_ctx *fc);

/* split.c: the PTE-mapped THP, the deferred split queue and the THP shrinker */
void thp_queue_add(struct mm *mm, uint32_t head, bool partial);
void thp_queue_del(struct mm *mm, uint32_t head);
unsigned split_free_unmapped(struct mm *mm, uint32_t head, uint32_t n, const uint64_t *unmapped);
void thp_forget(struct mm *mm, uint32_t head); /* a THP goes back whole: off the queue, counts */
void thp_unmap_subpage(struct mm *mm, uint32_t pfn);
void thp_unmap_subpages(struct mm *mm, uint32_t head, uint32_t p, uint32_t q); /* [p, q) */
bool thp_pmd_split(struct mm *mm, uint32_t head);
void thp_new_mapped(struct mm *mm, uint32_t head); /* a PMD maps a new THP (fault, collapse) */
unsigned shrink_thp(struct mm *mm, int prio, void *call, bool *stale);

/* mthp.c: multi-size THP folios */
uint32_t alloc_anon_folio(struct mm *mm, const struct mm_fault_req *req, struct fault_ctx *fc,
			  unsigned *order);
void mthp_unmap_subpage(struct mm *mm, uint32_t pfn);
void mthp_free_folio(struct mm *mm, uint32_t head);
unsigned mthp_split_locked(struct mm *mm, uint32_t head); /* returns the frames freed */
/* The gfp mask of a THP fault allocation, any order (fault.c: vma_thp_gfp_mask). */
unsigned thp_gfp_mask(const struct mm_policy *p, enum mm_vma_advice advice);
/* thp_gfp_mask as a policy plugin's slowpath hook amends it for this fault and order. */
unsigned fault_thp_gfp(struct mm *mm, const struct mm_fault_req *req, struct fault_ctx *fc,
		       unsigned order);
/* One mTHP order's allocation for a fault (order 2..8), its per-size event counted; a plugin's
 * order list calls it order by order. MM_NO_PFN when it failed. */
uint32_t alloc_anon_folio_order(struct mm *mm, const struct mm_fault_req *req, struct fault_ctx *fc,
				unsigned order);

/* vmscan.c */
uint32_t try_to_free_pages(struct mm *mm, struct alloc_ctx *ac);
void wakeup_kswapd(struct mm *mm, unsigned order, unsigned gfp);
uint64_t kswapd_run(struct mm *mm, void *call);

/* Debug / tests (fragment.c): put a frame of the given kind at pfn, which must be free; file
 * kinds take a MM_OWNER_FILE cookie and enter the page cache. Returns 0 or -EBUSY. */
enum mm_debug_kind {
	DBG_ANON,
	DBG_FOREIGN,
	DBG_UNMOVABLE,
	DBG_FILE_CLEAN,
	DBG_FILE_DIRTY,
	DBG_FILE_WRITEBACK,
};
int mm_debug_place(struct mm *mm, uint32_t pfn, enum mm_debug_kind kind, uint64_t owner);

#endif

/* core/snapshot: a snapshot of a machine's physical memory, and a pool that starts from it.
 *
 * Taking one (root, any Linux host or a qemu guest): every pfn of one zone gets a class from
 * /proc/kpageflags (free, anon, unevictable, file clean/dirty/writeback, slab, kernel, huge,
 * reserved), free pages their buddy order, every pageblock a migratetype inferred to match
 * /proc/pagetypeinfo's counts; /proc/zoneinfo gives the zone's range and watermarks, and
 * /proc/buddyinfo, read before and after the pass, is the check. The file is text, run-length
 * encoded, versioned (README.md).
 *
 * Loading one: the pool of `--fragment snapshot:FILE` is the snapshot's zone, frame for frame
 * (a smaller --pool samples it), handed to core/mm as runs (mm_snapshot_*); mm reads no file.
 *
 * Taking and writing use only libc (the same sources build the static thpemu-snapshot helper
 * a guest runs); reading and loading use only system calls and no allocation (the preload
 * library loads a snapshot in its constructor).
 */
#ifndef THPEMU_SNAPSHOT_H
#define THPEMU_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Version 2 holds several zones (a node: DMA, DMA32, Normal, ...); a snapshot of one zone is
 * still written as version 1, which every reader reads. */
#define SNAP_VERSION	     2
#define SNAP_MAX_FILE_ZONES  4	/* zones one file holds (core/mm: MM_MAX_LOWER_ZONES + 1) */
#define SNAP_MAX_ZIDX	     8	/* zoneinfo's protection entries kept (MAX_NR_ZONES) */
#define SNAP_MAX_ORDER	     10 /* orders 0..10: the kernel's NR_PAGE_ORDERS = 11 on x86-64 */
#define SNAP_NR_ORDERS	     (SNAP_MAX_ORDER + 1)
#define SNAP_PAGEBLOCK_ORDER 9
#define SNAP_PAGEBLOCK_NR    (1U << SNAP_PAGEBLOCK_ORDER)
#define SNAP_PAGE_SIZE	     4096
#define SNAP_PREFIX	     "snapshot:" /* --fragment snapshot:FILE */

/* The class of a pfn. One byte per pfn in memory (the class in the low nibble; a free block's
 * order, or SNAP_TAIL inside it, or SNAP_ACTIVE for file pages, in the high one); one letter
 * per run in the file. */
enum snap_class {
	SNAP_FREE,	  /* F: in the buddy allocator */
	SNAP_ANON,	  /* A: anonymous or shmem: movable, not reclaimable without swap */
	SNAP_UNEVICTABLE, /* U: mlocked or unevictable: movable, never reclaimed */
	SNAP_FILE,	  /* C: clean page cache */
	SNAP_FILE_DIRTY,  /* D: dirty page cache */
	SNAP_FILE_WB,	  /* W: page cache under writeback */
	SNAP_SLAB,	  /* S: slab */
	SNAP_KERNEL,	  /* K: other kernel memory (page tables, mapped pages without flags) */
	SNAP_HUGE,	  /* H: an anonymous THP of order >= 9 or a hugetlb page */
	SNAP_RESERVED,	  /* R: reserved, a hole, not the zone's, or never given to the kernel */
	SNAP_FLAGLESS,	  /* Z: no flags, mapped nowhere, among others: free on a per-cpu list, or
			   * a kernel allocation without a page type (nothing tells them apart) */
	SNAP_NR_CLASSES,
};
#define SNAP_CLASS_MASK 0x0f
#define SNAP_TAIL	0x0f /* high nibble of a free page inside a block */
#define SNAP_ACTIVE	0x10 /* file pages on the active LRU (lowercase letters) */
#define SNAP_HOLE                                                                                  \
	1 /* high nibble of a reserved page the kernel has no page for there                       \
	   * (no flags in a whole pageblock, or not the zone's): not in the                        \
	   * file (an R like any other), but pagetypeinfo does not count it */
#define SNAP_BYTE(c, hi) ((uint8_t)((c) | ((hi) << 4)))
extern const char snap_class_letter[SNAP_NR_CLASSES];
extern const char *const snap_class_name[SNAP_NR_CLASSES];

/* Pageblock migratetypes as /proc/pagetypeinfo names them (6.x; CMA only with CONFIG_CMA). */
enum snap_pti_type {
	SNAP_PTI_UNMOVABLE,
	SNAP_PTI_MOVABLE,
	SNAP_PTI_RECLAIMABLE,
	SNAP_PTI_HIGHATOMIC,
	SNAP_PTI_CMA,
	SNAP_PTI_ISOLATE,
	SNAP_PTI_NR,
};
extern const char *const snap_pti_name[SNAP_PTI_NR];
/* What the pool has: core/mm's three (its numbering: mm_migratetype). */
enum snap_mt { SNAP_MT_UNMOVABLE, SNAP_MT_MOVABLE, SNAP_MT_RECLAIMABLE, SNAP_MT_NR };
extern const char snap_mt_letter[SNAP_MT_NR];

struct snap_zone {
	int node;
	char name[16];
	uint64_t start_pfn, spanned, present, managed;
	uint64_t wmark[3]; /* min, low, high */
	uint64_t free;	   /* pages free (NR_FREE_PAGES) */
	uint64_t pcp;	   /* pages on per-cpu lists: free to the kernel, not in buddyinfo */
	unsigned idx;	   /* its index in the node (zone_idx: zoneinfo lists every zone) */
	uint64_t protection[SNAP_MAX_ZIDX]; /* zoneinfo's protection: lowmem_reserve[] */
	unsigned nprot;
	/* In a file of several zones: lowmem_reserve[the highest zone's index], the pages this
	 * zone keeps from allocations that may use the highest zone. */
	uint64_t lowmem_reserve;
};

struct snap_header {
	unsigned version;
	char host[65], kernel[65], date[32];
	unsigned page_size;
	struct snap_zone zone; /* the highest zone of the file (its only one in version 1) */
	unsigned nzones;       /* zones the range covers, in pfn order; the last is `zone` */
	struct snap_zone zones[SNAP_MAX_FILE_ZONES];
	unsigned nzones_declared;   /* version 2's "zones N" */
	uint64_t base_pfn, nr_pfns; /* the pfns the runs cover: the pool, frame 0 = base_pfn */
	uint64_t buddy_before[SNAP_NR_ORDERS], buddy_after[SNAP_NR_ORDERS];
	uint64_t free_blocks[SNAP_NR_ORDERS]; /* the free blocks the runs hold */
	bool have_pti;			      /* /proc/pagetypeinfo was read */
	uint64_t pti_blocks[SNAP_PTI_NR];
	uint64_t pti_free[SNAP_PTI_NR][SNAP_NR_ORDERS];
	uint64_t classes[SNAP_NR_CLASSES]; /* pages per class */
	uint64_t file_active;
	bool buddy_all;			/* kpageflags marks every free page BUDDY (6.17+) */
	uint64_t mt_blocks[SNAP_MT_NR]; /* pageblocks per type as assigned */
	uint64_t mt_free_error;		/* free pages on another type's list than pagetypeinfo */
	uint64_t mt_mixed;		/* pages whose class disagrees with their block's type */
	unsigned attempts;		/* passes until buddyinfo held still (or the best one) */
	uint64_t nr_blocks, nr_runs;	/* the two sections' lengths (lines) */
};

/* A snapshot in memory (what taking builds and the writer writes). */
struct snap {
	struct snap_header h;
	uint8_t *pfn;	   /* h.nr_pfns class bytes */
	uint8_t *block_mt; /* h.nr_pfns / SNAP_PAGEBLOCK_NR: enum snap_mt */
};
void snap_free(struct snap *s);

/* ---- kpf.c: the class rules and free blocks (pure) ---------------------------------------- */

/* Internal classes of the first pass (above SNAP_NR_CLASSES): a page kpageflags marks BUDDY,
 * and a page with no flags at all and a kpagecount of 0 (a free block's tail before 6.17, a
 * page on a per-cpu free list, kernel memory, a hole). */
#define SNAP_X_BUDDY 14
#define SNAP_X_ZERO  15
/* The class of each of n pages from their kpageflags and kpagecount words (pfns pfn0.., pfn0
 * aligned to a pageblock and n a multiple of one, so that a THP is whole): out[i] is a class
 * byte or SNAP_X_*. kpc NULL: every count 0. */
void snap_kpf_classify(const uint64_t *kpf, const uint64_t *kpc, uint64_t n, uint8_t *out);
/* Resolve the first pass over a whole range (base aligned to 2^SNAP_MAX_ORDER, n a multiple of
 * a pageblock): free blocks (buddy_all: every free page is BUDDY, the blocks are the greedy
 * aligned decomposition of each run; else only heads are, and orders are chosen to match
 * buddyinfo `want`), then SNAP_X_ZERO pages: whole pageblocks of them holes (reserved), the rest
 * SNAP_FLAGLESS.
 * Returns the heads that got no order from want (0 when the counts matched). */
uint64_t snap_resolve(uint8_t *pfn, uint64_t n, bool buddy_all,
		      const uint64_t want[SNAP_NR_ORDERS]);
/* Which way this kernel marks free pages: every page (true) or only each block's head. */
bool snap_buddy_all(uint64_t buddy_pages, const uint64_t buddyinfo[SNAP_NR_ORDERS]);
/* Pages per class, file pages on the active list, free blocks per order. */
void snap_count(const uint8_t *pfn, uint64_t n, struct snap_header *h);

/* ---- mtype.c: pageblock migratetypes (pure) ------------------------------------------------ */

/* Give each of the range's pageblocks a type so that the counts per type are pagetypeinfo's
 * (h->pti_blocks, scaled to the blocks that are not wholly reserved), from the classes of its
 * pages: the blocks with the most kernel and slab pages are not MOVABLE, of those the most
 * slab-heavy RECLAIMABLE; then swaps that bring the free pages per type and order closer to
 * pagetypeinfo's. Without pagetypeinfo every block is MOVABLE. Fills mt[] and h->mt_*. */
int snap_mtype_infer(const uint8_t *pfn, uint64_t n, struct snap_header *h, uint8_t *mt);

/* ---- procfs.c: the /proc files' text (pure parsers) and reading them ----------------------- */

#define SNAP_MAX_ZONES 32
int snap_parse_zoneinfo(const char *text, struct snap_zone *z, unsigned max, unsigned *nz);
/* The zone's line of buddyinfo. 0, -ENOENT (no such zone), -EINVAL (not 11 orders). */
int snap_parse_buddyinfo(const char *text, int node, const char *zone,
			 uint64_t out[SNAP_NR_ORDERS]);
/* The zone's free pages per type and order and blocks per type. 0, -ENOENT, -EINVAL (a
 * pageblock order other than 9). */
int snap_parse_pagetypeinfo(const char *text, int node, const char *zone,
			    uint64_t free[SNAP_PTI_NR][SNAP_NR_ORDERS],
			    uint64_t blocks[SNAP_PTI_NR]);
/* Read a whole (pseudo) file into buf (NUL-terminated). 0 or -errno. */
int snap_read_text(const char *path, char *buf, size_t len);
/* The zone a snapshot takes: name ("Normal", "0:Normal") or NULL for the one with the most
 * managed pages. NULL if none matches. */
const struct snap_zone *snap_pick_zone(const struct snap_zone *z, unsigned nz, const char *name);

/* ---- take.c: taking a snapshot (root) ---------------------------------------------------------
 */

struct snap_take_opts {
	const char *zone; /* NULL: the zone with the most managed pages; "all" or "NODE:all": every
			   * populated zone of the node (of the largest zone's node) */
	unsigned max_attempts; /* passes while buddyinfo moves (0: 3) */
	const char *proc;      /* "/proc" (tests point it elsewhere) */
};
/* 0, or -errno with a one-line reason in err (-ENOENT: no such zone; -EACCES: not root). */
int snap_take(const struct snap_take_opts *o, struct snap *s, char *err, size_t errlen);

/* ---- format.c: the file ------------------------------------------------------------------------
 */

int snap_write(FILE *f, const struct snap *s);

/* A streaming reader: a fixed buffer, system calls only. */
struct snap_reader {
	int fd;
	unsigned line;
	size_t len, pos;
	uint64_t blocks_left, runs_left;	 /* lines of the sections still to read */
	uint64_t blocks_want, blocks_seen, pfns; /* what the lines read so far covered */
	char buf[16384];
	char cur[512];
};
/* One run of the file: count pages of a class (a free run: count blocks of 2^order). */
struct snap_run {
	uint8_t cls, order;
	bool active;
	uint64_t pages;
};
/* Open path and read its header. 0, or -errno with err ("FILE: line N: why"). */
int snap_open(struct snap_reader *r, const char *path, struct snap_header *h, char *err,
	      size_t errlen);
/* The reader over fd (already open; snap_close closes it). */
int snap_read_header(struct snap_reader *r, struct snap_header *h, char *err, size_t errlen);
/* The next pageblock line: 1 (count blocks of *mt), 0 when the section is over, -errno. */
int snap_read_blocks(struct snap_reader *r, uint8_t *mt, uint64_t *count, char *err, size_t errlen);
/* The next run: 1, 0 after the last (the file's end checked), -errno. */
int snap_read_run(struct snap_reader *r, const struct snap_header *h, struct snap_run *run,
		  char *err, size_t errlen);
void snap_close(struct snap_reader *r);

/* ---- load.c: a pool from a snapshot ------------------------------------------------------------
 */

struct mm;
/* The pool a recipe asks for: for "snapshot:FILE" the snapshot's size in *bytes (and 1); for
 * any other recipe 0, *bytes untouched. -errno with err when the file is not a snapshot. */
int snap_recipe_pool(const char *recipe, uint64_t *bytes, char *err, size_t errlen);
/* Load FILE into a new, untouched pool: frame for frame when the pool is the snapshot's size,
 * sampled in 4 MiB units when it is smaller (a larger pool is refused). 0 or -errno. */
int snap_load(struct mm *mm, const char *path, char *err, size_t errlen);
/* --fragment: "snapshot:FILE" loads FILE, anything else is an mm_fragment recipe. */
int snap_fragment(struct mm *mm, const char *recipe, uint64_t seed, char *err, size_t errlen,
		  void *call);

/* ---- command.c: thpemu snapshot and the static thpemu-snapshot ------------------------------- */

int snap_command(int argc, char **argv, const char *prog);

#endif

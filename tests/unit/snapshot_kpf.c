/* core/snapshot's class rules: a kpageflags word to a class, a THP's order, free blocks from
 * every-page BUDDY (6.17+) and head-only BUDDY (older kernels) matched to buddyinfo, pages
 * without flags, and the counts. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "snapshot/snapshot.h"

#define B(n) (1ULL << (n))
/* the kernel's bit numbers (include/uapi/linux/kernel-page-flags.h, include/linux/...) */
enum {
	UPTODATE = 3,
	DIRTY = 4,
	LRU = 5,
	ACTIVE = 6,
	SLAB = 7,
	WRITEBACK = 8,
	BUDDY = 10,
	MMAP = 11,
	ANON = 12,
	SWAPBACKED = 14,
	HEAD = 15,
	TAIL = 16,
	HUGE = 17,
	UNEVICTABLE = 18,
	NOPAGE = 20,
	THP = 22,
	IDLE = 25,
	PGTABLE = 26,
	RESERVED = 32,
	MLOCKED = 33,
};

static uint8_t one(uint64_t flags)
{
	uint8_t out;

	snap_kpf_classify(&flags, NULL, 1, &out);
	return out;
}

TEST(each_rule)
{
	EXPECT_EQ(one(B(RESERVED)), SNAP_RESERVED);
	EXPECT_EQ(one(B(NOPAGE)), SNAP_RESERVED);
	EXPECT_EQ(one(B(BUDDY)), SNAP_X_BUDDY);
	EXPECT_EQ(one(B(BUDDY) | B(UPTODATE)), SNAP_X_BUDDY); /* PG_reported */
	EXPECT_EQ(one(0), SNAP_X_ZERO);
	EXPECT_EQ(one(B(IDLE)), SNAP_X_ZERO);
	EXPECT_EQ(one(B(SLAB)), SNAP_SLAB);
	EXPECT_EQ(one(B(SLAB) | B(TAIL)), SNAP_SLAB);
	EXPECT_EQ(one(B(HUGE) | B(HEAD)), SNAP_HUGE);
	EXPECT_EQ(one(B(ANON) | B(LRU) | B(MMAP) | B(SWAPBACKED)), SNAP_ANON);
	EXPECT_EQ(one(B(LRU) | B(SWAPBACKED) | B(MMAP)), SNAP_ANON); /* shmem */
	EXPECT_EQ(one(B(ANON) | B(LRU) | B(UNEVICTABLE) | B(MLOCKED)), SNAP_UNEVICTABLE);
	EXPECT_EQ(one(B(LRU) | B(UNEVICTABLE)), SNAP_UNEVICTABLE);
	EXPECT_EQ(one(B(LRU) | B(UPTODATE)), SNAP_FILE);
	EXPECT_EQ(one(B(LRU) | B(UPTODATE) | B(ACTIVE)), SNAP_FILE | SNAP_ACTIVE);
	EXPECT_EQ(one(B(LRU) | B(DIRTY)), SNAP_FILE_DIRTY);
	EXPECT_EQ(one(B(LRU) | B(DIRTY) | B(WRITEBACK)), SNAP_FILE_WB);
	EXPECT_EQ(one(B(PGTABLE)), SNAP_KERNEL);
	EXPECT_EQ(one(B(UPTODATE)), SNAP_KERNEL); /* page cache off the LRU: kernel */
	EXPECT_EQ(one(B(MMAP)), SNAP_KERNEL);
}

/* An anonymous THP of 512 pages is huge; an mTHP of 16 pages and a file folio of 512 are not. */
TEST(thp_order)
{
	uint64_t *k = calloc(2048, 8);
	uint8_t *out = malloc(2048);

	ASSERT(k != NULL && out != NULL);
	k[0] = B(ANON) | B(LRU) | B(HEAD) | B(THP);
	for (int i = 1; i < 512; i++)
		k[i] = B(ANON) | B(LRU) | B(TAIL) | B(THP);
	k[512] = B(ANON) | B(LRU) | B(HEAD) | B(THP);
	for (int i = 513; i < 528; i++)
		k[i] = B(ANON) | B(LRU) | B(TAIL) | B(THP);
	k[1024] = B(LRU) | B(UPTODATE) | B(HEAD) | B(THP);
	for (int i = 1025; i < 1536; i++)
		k[i] = B(LRU) | B(UPTODATE) | B(TAIL) | B(THP);
	snap_kpf_classify(k, NULL, 2048, out);
	EXPECT_EQ(out[0], SNAP_HUGE);
	EXPECT_EQ(out[511], SNAP_HUGE);
	EXPECT_EQ(out[512], SNAP_ANON);
	EXPECT_EQ(out[527], SNAP_ANON);
	EXPECT_EQ(out[528], SNAP_X_ZERO);
	EXPECT_EQ(out[1024], SNAP_FILE);
	EXPECT_EQ(out[1535], SNAP_FILE);
	free(k);
	free(out);
}

static unsigned order_at(const uint8_t *pfn, uint64_t p)
{
	return (pfn[p] & SNAP_CLASS_MASK) == SNAP_FREE ? pfn[p] >> 4 : 99;
}

/* Every free page BUDDY: the runs [1, 8) and [1024, 3072) become 1(0) 2(1) 4(2) and two
 * order-10 blocks. */
TEST(free_all_pages)
{
	uint64_t n = 4096, want[SNAP_NR_ORDERS] = {0};
	uint8_t *pfn = malloc(n);
	struct snap_header h;

	ASSERT(pfn != NULL);
	memset(pfn, SNAP_KERNEL, n);
	memset(pfn + 1, SNAP_X_BUDDY, 7);
	memset(pfn + 1024, SNAP_X_BUDDY, 2048);
	EXPECT_EQ(snap_resolve(pfn, n, true, want), 0);
	EXPECT_EQ(order_at(pfn, 1), 0);
	EXPECT_EQ(order_at(pfn, 2), 1);
	EXPECT_EQ(order_at(pfn, 4), 2);
	EXPECT_EQ(pfn[5], SNAP_BYTE(SNAP_FREE, SNAP_TAIL));
	EXPECT_EQ(order_at(pfn, 1024), 10);
	EXPECT_EQ(order_at(pfn, 2048), 10);
	snap_count(pfn, n, &h);
	EXPECT_EQ(h.classes[SNAP_FREE], 2055);
	EXPECT_EQ(h.free_blocks[0], 1);
	EXPECT_EQ(h.free_blocks[1], 1);
	EXPECT_EQ(h.free_blocks[2], 1);
	EXPECT_EQ(h.free_blocks[10], 2);
	free(pfn);
}

/* Heads only: a head at 0 with 3 zero pages after it may be order 0, 1 or 2; buddyinfo says
 * which orders exist, and heads with the least room take each order first. */
TEST(free_heads_match_buddyinfo)
{
	uint64_t n = 1024, want[SNAP_NR_ORDERS] = {[0] = 1, [1] = 1, [2] = 1};
	uint8_t *pfn = malloc(n);
	struct snap_header h;

	ASSERT(pfn != NULL);
	memset(pfn, SNAP_KERNEL, n);
	pfn[0] = SNAP_X_BUDDY; /* room 2: 1..3 without flags */
	memset(pfn + 1, SNAP_X_ZERO, 3);
	pfn[8] = SNAP_X_BUDDY; /* room 1 */
	pfn[9] = SNAP_X_ZERO;
	pfn[16] = SNAP_X_BUDDY; /* room 0 */
	EXPECT_EQ(snap_resolve(pfn, n, false, want), 0);
	EXPECT_EQ(order_at(pfn, 0), 2);
	EXPECT_EQ(order_at(pfn, 8), 1);
	EXPECT_EQ(order_at(pfn, 16), 0);
	snap_count(pfn, n, &h);
	EXPECT_EQ(h.free_blocks[2], 1);
	EXPECT_EQ(h.free_blocks[1], 1);
	EXPECT_EQ(h.free_blocks[0], 1);
	/* buddyinfo says two order-0 and one order-1: the room-2 head gets order 1 (the least room
	 * that fits goes first: the room-1 head), the others order 0; its spare zero pages are
	 * flagless (a per-cpu free page or kernel memory) */
	memset(pfn, SNAP_KERNEL, n);
	pfn[0] = SNAP_X_BUDDY;
	memset(pfn + 1, SNAP_X_ZERO, 3);
	pfn[8] = SNAP_X_BUDDY;
	pfn[9] = SNAP_X_ZERO;
	pfn[16] = SNAP_X_BUDDY;
	want[0] = 2;
	want[1] = 1;
	want[2] = 0;
	EXPECT_EQ(snap_resolve(pfn, n, false, want), 0);
	EXPECT_EQ(order_at(pfn, 8), 1);
	EXPECT_EQ(order_at(pfn, 0), 0);
	EXPECT_EQ(order_at(pfn, 16), 0);
	EXPECT_EQ(pfn[1], SNAP_FLAGLESS);
	/* buddyinfo moved: a head it does not count keeps order 0 and is reported */
	memset(pfn, SNAP_KERNEL, n);
	pfn[0] = pfn[4] = SNAP_X_BUDDY;
	memset(want, 0, sizeof(want));
	want[0] = 1;
	EXPECT_EQ(snap_resolve(pfn, n, false, want), 1);
	EXPECT_EQ(order_at(pfn, 0), 0);
	EXPECT_EQ(order_at(pfn, 4), 0);
	free(pfn);
}

/* A pageblock of pages without flags is a hole; a few among others are flagless. */
TEST(zero_pages)
{
	uint64_t n = 1024, want[SNAP_NR_ORDERS] = {0};
	uint8_t *pfn = malloc(n);

	ASSERT(pfn != NULL);
	memset(pfn, SNAP_X_ZERO, n);
	pfn[600] = SNAP_SLAB;
	snap_resolve(pfn, n, true, want);
	EXPECT_EQ(pfn[0], SNAP_BYTE(SNAP_RESERVED, SNAP_HOLE));
	EXPECT_EQ(pfn[511], SNAP_BYTE(SNAP_RESERVED, SNAP_HOLE));
	EXPECT_EQ(pfn[512], SNAP_FLAGLESS);
	EXPECT_EQ(pfn[600], SNAP_SLAB);
	free(pfn);
}

/* kpagecount is the mapcount (6.1 and 6.12 fs/proc/page.c kpagecount_read): a page without
 * flags that is mapped is kernel memory; one that is not (a per-cpu free page: free_pages_prepare
 * cleared its flags and found _mapcount -1) stays without flags, and among other pages becomes
 * flagless, as a vmalloc page (refcount 1, no mapping) would: the words cannot tell them apart.
 * A free block's tail (heads-only marking) has no flags and count 0 too and stays free. */
TEST(kpagecount_and_pages_without_flags)
{
	uint64_t n = 1024, want[SNAP_NR_ORDERS] = {[1] = 1};
	uint64_t *k = calloc(n, 8), *c = calloc(n, 8);
	uint8_t *out = malloc(n);

	ASSERT(k != NULL && c != NULL && out != NULL);
	for (uint64_t i = 0; i < n; i++) {
		k[i] = B(ANON) | B(LRU) | B(MMAP);
		c[i] = 1;
	}
	k[2] = B(BUDDY); /* an order-1 block, its tail without flags (heads only) */
	k[3] = 0, c[3] = 0;
	k[10] = 0, c[10] = 0;			       /* per-cpu free, or unmapped kernel memory */
	k[11] = B(IDLE), c[11] = 0;		       /* idle says nothing about an owner */
	k[12] = 0, c[12] = 1;			       /* mapped without flags: kernel */
	k[13] = B(ANON) | B(LRU) | B(MMAP), c[13] = 0; /* unmapped anon is anon */
	snap_kpf_classify(k, c, n, out);
	EXPECT_EQ(out[3], SNAP_X_ZERO);
	EXPECT_EQ(out[10], SNAP_X_ZERO);
	EXPECT_EQ(out[11], SNAP_X_ZERO);
	EXPECT_EQ(out[12], SNAP_KERNEL);
	EXPECT_EQ(out[13], SNAP_ANON);
	/* without kpagecount every count is 0 */
	snap_kpf_classify(k, NULL, n, out);
	EXPECT_EQ(out[12], SNAP_X_ZERO);
	snap_kpf_classify(k, c, n, out);
	EXPECT_EQ(snap_resolve(out, n, false, want), 0);
	EXPECT_EQ(order_at(out, 2), 1);
	EXPECT_EQ(out[3], SNAP_BYTE(SNAP_FREE, SNAP_TAIL));
	EXPECT_EQ(out[10], SNAP_FLAGLESS);
	EXPECT_EQ(out[11], SNAP_FLAGLESS);
	EXPECT_EQ(out[12], SNAP_KERNEL);
	free(k);
	free(c);
	free(out);
}

TEST(which_buddy_marking)
{
	uint64_t bi[SNAP_NR_ORDERS] = {[0] = 10, [10] = 100}; /* 110 blocks, 102410 pages */

	EXPECT(snap_buddy_all(102410, bi));
	EXPECT(snap_buddy_all(100000, bi));
	EXPECT(!snap_buddy_all(110, bi));
	EXPECT(!snap_buddy_all(500, bi));
	memset(bi, 0, sizeof(bi));
	EXPECT(snap_buddy_all(0, bi));
}

TEST_MAIN()

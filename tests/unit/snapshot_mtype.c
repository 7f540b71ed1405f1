/* core/snapshot's pageblock migratetypes: pagetypeinfo's counts per type, kernel-heavy blocks
 * not MOVABLE, slab-heavy ones RECLAIMABLE, swaps toward pagetypeinfo's free lists, holes
 * UNMOVABLE and uncounted, everything MOVABLE without pagetypeinfo. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "snapshot/snapshot.h"

#define NB 8
#define N  (NB * SNAP_PAGEBLOCK_NR)

static uint8_t *block(uint8_t *pfn, unsigned b)
{
	return pfn + b * SNAP_PAGEBLOCK_NR;
}

static void free_blocks(uint8_t *p, unsigned order, unsigned count)
{
	for (unsigned i = 0; i < count; i++) {
		p[i << order] = SNAP_BYTE(SNAP_FREE, order);
		memset(p + (i << order) + 1, SNAP_BYTE(SNAP_FREE, SNAP_TAIL), (1U << order) - 1);
	}
}

/* 0: kernel; 1: slab and file; 2: free; 3: anon; 4: a hole; 5-7: file with a little kernel. */
static uint8_t *zone(void)
{
	uint8_t *pfn = malloc(N);

	ASSERT(pfn != NULL);
	memset(pfn, SNAP_FILE, N);
	memset(block(pfn, 0), SNAP_KERNEL, SNAP_PAGEBLOCK_NR);
	memset(block(pfn, 1), SNAP_SLAB, 300);
	free_blocks(block(pfn, 2), 9, 1);
	memset(block(pfn, 3), SNAP_ANON, SNAP_PAGEBLOCK_NR);
	memset(block(pfn, 4), SNAP_BYTE(SNAP_RESERVED, SNAP_HOLE), SNAP_PAGEBLOCK_NR);
	for (unsigned b = 5; b < NB; b++)
		memset(block(pfn, b), SNAP_KERNEL, 3);
	return pfn;
}

TEST(counts_and_classes)
{
	struct snap_header h = {.have_pti = true};
	uint8_t *pfn = zone(), mt[NB];

	h.pti_blocks[SNAP_PTI_UNMOVABLE] = 1;
	h.pti_blocks[SNAP_PTI_RECLAIMABLE] = 1;
	h.pti_blocks[SNAP_PTI_MOVABLE] = 5;
	h.pti_free[SNAP_PTI_MOVABLE][9] = 1;
	ASSERT_EQ(snap_mtype_infer(pfn, N, &h, mt), 0);
	EXPECT_EQ(mt[0], SNAP_MT_UNMOVABLE);
	EXPECT_EQ(mt[1], SNAP_MT_RECLAIMABLE);
	EXPECT_EQ(mt[2], SNAP_MT_MOVABLE);
	EXPECT_EQ(mt[3], SNAP_MT_MOVABLE);
	EXPECT_EQ(mt[4], SNAP_MT_UNMOVABLE); /* the hole */
	EXPECT_EQ(h.mt_blocks[SNAP_MT_UNMOVABLE], 1);
	EXPECT_EQ(h.mt_blocks[SNAP_MT_RECLAIMABLE], 1);
	EXPECT_EQ(h.mt_blocks[SNAP_MT_MOVABLE], 5);
	EXPECT_EQ(h.mt_free_error, 0);
	/* mixed: the file pages in the slab block, the kernel pages in MOVABLE blocks 5-7 */
	EXPECT_EQ(h.mt_mixed, (SNAP_PAGEBLOCK_NR - 300) + 3 * 3);
	free(pfn);
}

/* pagetypeinfo counting other blocks (the zone changed) is scaled to the blocks there are. */
TEST(counts_scaled)
{
	struct snap_header h = {.have_pti = true};
	uint8_t *pfn = zone(), mt[NB];

	h.pti_blocks[SNAP_PTI_UNMOVABLE] = 2;
	h.pti_blocks[SNAP_PTI_HIGHATOMIC] = 2; /* folded into UNMOVABLE */
	h.pti_blocks[SNAP_PTI_MOVABLE] = 10;
	ASSERT_EQ(snap_mtype_infer(pfn, N, &h, mt), 0);
	EXPECT_EQ(h.mt_blocks[SNAP_MT_UNMOVABLE], 2); /* 4 of 14, of 7 blocks */
	EXPECT_EQ(h.mt_blocks[SNAP_MT_MOVABLE], 5);
	EXPECT_EQ(mt[0], SNAP_MT_UNMOVABLE);
	EXPECT_EQ(mt[1], SNAP_MT_UNMOVABLE);
	free(pfn);
}

/* Two blocks alike but for their free pages: the class order picks block 5 (3 kernel pages)
 * over block 6 (2), but pagetypeinfo has the free order-3 block on the UNMOVABLE list: a swap
 * makes block 6 UNMOVABLE and the free lists agree. */
TEST(swaps_follow_free_lists)
{
	struct snap_header h = {.have_pti = true};
	uint8_t *pfn = malloc(N), mt[NB];

	ASSERT(pfn != NULL);
	memset(pfn, SNAP_FILE, N);
	memset(block(pfn, 5), SNAP_KERNEL, 3);
	free_blocks(block(pfn, 5) + 8, 0, 4);
	memset(block(pfn, 6), SNAP_KERNEL, 2);
	free_blocks(block(pfn, 6) + 8, 3, 1);
	h.pti_blocks[SNAP_PTI_UNMOVABLE] = 1;
	h.pti_blocks[SNAP_PTI_MOVABLE] = NB - 1;
	h.pti_free[SNAP_PTI_UNMOVABLE][3] = 1;
	h.pti_free[SNAP_PTI_MOVABLE][0] = 4;
	ASSERT_EQ(snap_mtype_infer(pfn, N, &h, mt), 0);
	EXPECT_EQ(mt[6], SNAP_MT_UNMOVABLE);
	EXPECT_EQ(mt[5], SNAP_MT_MOVABLE);
	EXPECT_EQ(h.mt_free_error, 0);
	EXPECT_EQ(h.mt_blocks[SNAP_MT_UNMOVABLE], 1);
	free(pfn);
}

/* The free lists say the slab block's free order-2 block is MOVABLE's (since 6.10 a free page
 * sits on its block's list): another block, without free pages, is the UNMOVABLE one; of
 * those, the one with the most kernel pages. */
TEST(swaps_with_blocks_without_free_pages)
{
	struct snap_header h = {.have_pti = true};
	uint8_t *pfn = malloc(N), mt[NB];

	ASSERT(pfn != NULL);
	memset(pfn, SNAP_FILE, N);
	memset(block(pfn, 1), SNAP_SLAB, 100);
	free_blocks(block(pfn, 1) + 128, 2, 1);
	memset(block(pfn, 3), SNAP_KERNEL, 20);
	memset(block(pfn, 6), SNAP_KERNEL, 5);
	h.pti_blocks[SNAP_PTI_UNMOVABLE] = 1;
	h.pti_blocks[SNAP_PTI_MOVABLE] = NB - 1;
	h.pti_free[SNAP_PTI_MOVABLE][2] = 1;
	ASSERT_EQ(snap_mtype_infer(pfn, N, &h, mt), 0);
	EXPECT_EQ(mt[1], SNAP_MT_MOVABLE);
	EXPECT_EQ(mt[3], SNAP_MT_UNMOVABLE);
	EXPECT_EQ(h.mt_free_error, 0);
	free(pfn);
}

TEST(without_pagetypeinfo)
{
	struct snap_header h = {0};
	uint8_t *pfn = zone(), mt[NB];

	ASSERT_EQ(snap_mtype_infer(pfn, N, &h, mt), 0);
	for (unsigned b = 0; b < NB; b++)
		EXPECT_EQ(mt[b], b == 4 ? SNAP_MT_UNMOVABLE : SNAP_MT_MOVABLE);
	EXPECT_EQ(h.mt_blocks[SNAP_MT_MOVABLE], 7);
	EXPECT_EQ(h.mt_free_error, 0);
	free(pfn);
}

TEST_MAIN()

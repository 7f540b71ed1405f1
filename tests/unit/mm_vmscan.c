/* core/mm direct reclaim for a THP: 3.1-3.3's order-9 isolate_lru_pages, which takes the
 * inactive page-cache neighbours of each page from the LRU tail (stepping over free frames,
 * stopping at anything else), and how that decides the synchronous second shrink_page_list
 * pass: a batch whose pages were all freed or are under writeback (or, in 3.1, were just
 * written out by pageout) waits on them; a batch holding a page kept for another reason (a
 * dirty page 3.2 will not write) resets the reclaim mode and does not wait. 6.12 takes no
 * neighbours and has no synchronous pass. */
#include "harness.h"
#include "mm_fakeenv.h"
#include "mm/internal.h"

#define MIB (1ULL << 20)
#define MS  1000000ULL

#define TAG  100 /* the page at the LRU tail, in block 0 */
#define NB0  0	 /* clean neighbour at the block start */
#define W    2	 /* a neighbour under writeback, after a free frame (pfn 1) */
#define NB3  3	 /* a neighbour, clean or dirty */
#define ANON 4	 /* ends the neighbour walk */
#define W2   5	 /* under writeback, beyond the end of the walk */

static uint64_t own(uint32_t pfn)
{
	return MM_OWNER_FILE(3, pfn);
}

/* A 16 MiB pool with almost nothing free: block 0 holds the test pages, blocks 1-6 clean page
 * cache behind a foreign anon page at each block start (their neighbour walk takes nothing),
 * block 7 unmovable with every fourth frame free. The LRU, tail first: TAG, blocks 1-6, then
 * the neighbours. nb3 says what pfn 3 is; anon_first puts the walk's stop at the block start. */
static void reclaim_pool(struct fakeenv *fe, const char *spec, enum mm_debug_kind nb3,
			 bool anon_first)
{
	char err[256];

	ASSERT_EQ(fakeenv_init(fe, spec, 16 * MIB, false, err, sizeof(err)), 0);
	ASSERT_EQ(mm_debug_place(fe->mm, TAG, DBG_FILE_CLEAN, own(TAG)), 0);
	for (uint32_t pfn = 512; pfn < 3584; pfn++)
		ASSERT_EQ(mm_debug_place(fe->mm, pfn, pfn % 512 ? DBG_FILE_CLEAN : DBG_FOREIGN,
					 pfn % 512 ? own(pfn) : pfn),
			  0);
	for (uint32_t pfn = 3584; pfn < 4096; pfn++)
		if (pfn % 4)
			ASSERT_EQ(mm_debug_place(fe->mm, pfn, DBG_UNMOVABLE, 0), 0);
	for (uint32_t pfn = 6; pfn < 512; pfn++)
		if (pfn != TAG)
			ASSERT_EQ(mm_debug_place(fe->mm, pfn, DBG_UNMOVABLE, 0), 0);
	ASSERT_EQ(mm_debug_place(fe->mm, NB0, anon_first ? DBG_FOREIGN : DBG_FILE_CLEAN, own(NB0)),
		  0);
	ASSERT_EQ(mm_debug_place(fe->mm, W, DBG_FILE_WRITEBACK, own(W)), 0);
	ASSERT_EQ(mm_debug_place(fe->mm, NB3, nb3, own(NB3)), 0);
	ASSERT_EQ(mm_debug_place(fe->mm, ANON, DBG_FOREIGN, 7), 0);
	ASSERT_EQ(mm_debug_place(fe->mm, W2, DBG_FILE_WRITEBACK, own(W2)), 0);
	fe->wb_done_at[W] = 400 * MS;
	fe->wb_done_at[W2] = 800 * MS;
	fe->writeout_latency_ns = 300 * MS;
}

static struct mm_fault_res thp_fault(struct fakeenv *fe, enum mm_vma_advice advice)
{
	struct mm_fault_req req = {.owner = 1ULL << 9,
				   .extent_owner = 1ULL << 9,
				   .advice = advice,
				   .huge_ok = true,
				   .write = true};
	struct mm_fault_res res;
	char err[256];

	ASSERT_EQ(mm_fault(fe->mm, &req, &res, NULL), 0);
	ASSERT_EQ(mm_check(fe->mm, err, sizeof(err)), 0);
	return res;
}

static bool cached(struct fakeenv *fe, uint32_t pfn)
{
	uint32_t got;
	bool created;

	if (mm_pagecache_get(fe->mm, own(pfn), false, &got, &created, NULL))
		return false;
	mm_pagecache_put(fe->mm, got, false);
	return true;
}

static uint64_t stat(struct fakeenv *fe, enum mm_stat s)
{
	uint64_t st[MM_STAT_NR];

	mm_get_stats(fe->mm, st);
	return st[s];
}

/* 3.2: the tail page brings NB0, W (over the free pfn 1) and NB3 into its batch; everything
 * else in it is clean, so the synchronous pass waits on W, and only on W. */
TEST(lumpy_neighbour_under_writeback_makes_reclaim_wait)
{
	struct fakeenv fe;
	struct mm_fault_res res;

	reclaim_pool(&fe, "linux-3.2:second-compaction=none", DBG_FILE_CLEAN, false);
	res = thp_fault(&fe, MM_VMA_DEFAULT);
	EXPECT_EQ(res.outcome, MM_FAULT_BASE);
	EXPECT_EQ(fe.n_wait, 1);
	EXPECT_EQ(fe.wait_pfn[0], W);
	EXPECT_EQ(stat(&fe, MM_STAT_RECLAIM_WB_WAIT), 1);
	EXPECT_EQ(stat(&fe, MM_STAT_PGSCAN_DIRECT_THROTTLE), 1);
	EXPECT_EQ(res.rec.wb_waits, 1);
	EXPECT_EQ(res.rec.cause, MM_CAUSE_RECLAIM_WB_WAIT);
	EXPECT(!cached(&fe, NB0)); /* reclaimed with the tail page, though at the LRU head */
	EXPECT(!cached(&fe, NB3));
	EXPECT(!cached(&fe, W)); /* freed once its writeback ended */
	EXPECT(cached(&fe, W2)); /* beyond the foreign page: not taken */
	EXPECT(mm_frame_under_writeback(fe.mm, W2));
	fakeenv_destroy(&fe);
}

/* The walk starts at the block start: a foreign page there ends it before W. */
TEST(lumpy_walk_stops_at_the_first_page_it_cannot_take)
{
	struct fakeenv fe;

	reclaim_pool(&fe, "linux-3.2:second-compaction=none", DBG_FILE_CLEAN, true);
	thp_fault(&fe, MM_VMA_DEFAULT);
	EXPECT_EQ(fe.n_wait, 0);
	EXPECT_EQ(stat(&fe, MM_STAT_RECLAIM_WB_WAIT), 0);
	EXPECT(cached(&fe, NB3));
	EXPECT(cached(&fe, W));
	fakeenv_destroy(&fe);
}

/* 3.2 keeps a dirty page (no filesystem writeback from direct reclaim): keep_locked resets
 * the reclaim mode, so the batch holding W gets no synchronous pass. */
TEST(dirty_neighbour_resets_the_mode_in_32)
{
	struct fakeenv fe;

	reclaim_pool(&fe, "linux-3.2:second-compaction=none", DBG_FILE_DIRTY, false);
	thp_fault(&fe, MM_VMA_DEFAULT);
	EXPECT_EQ(fe.n_wait, 0);
	EXPECT_EQ(fe.n_writeout, 0);
	EXPECT_EQ(stat(&fe, MM_STAT_RECLAIM_WB_WAIT), 0);
	EXPECT_EQ(stat(&fe, MM_STAT_PGSCAN_DIRECT_THROTTLE), 0);
	EXPECT(cached(&fe, NB3)); /* kept, still dirty */
	EXPECT(cached(&fe, W));	  /* kept under writeback */
	fakeenv_destroy(&fe);
}

/* 3.1 writes the unreferenced dirty neighbour out itself (pageout, keep_lumpy), so the batch
 * still gets its synchronous pass and waits on both pages. */
TEST(dirty_neighbour_is_written_out_and_waited_on_in_31)
{
	struct fakeenv fe;

	reclaim_pool(&fe, "linux-3.1:second-compaction=none", DBG_FILE_DIRTY, false);
	thp_fault(&fe, MM_VMA_DEFAULT);
	EXPECT_EQ(fe.n_writeout, 1);
	EXPECT_EQ(stat(&fe, MM_STAT_NR_VMSCAN_WRITE), 1);
	EXPECT_EQ(fe.n_wait, 2);
	EXPECT_EQ(stat(&fe, MM_STAT_RECLAIM_WB_WAIT), 2);
	EXPECT(!cached(&fe, NB3));
	EXPECT(!cached(&fe, W));
	fakeenv_destroy(&fe);
}

/* 3.3 had the same isolation (the order check went in 3.4) and the same synchronous pass. */
TEST(lumpy_isolation_in_33)
{
	struct fakeenv fe;

	reclaim_pool(&fe, "linux-3.3:second-compaction=none", DBG_FILE_CLEAN, false);
	thp_fault(&fe, MM_VMA_DEFAULT);
	EXPECT_EQ(fe.n_wait, 1);
	EXPECT_EQ(stat(&fe, MM_STAT_RECLAIM_WB_WAIT), 1);
	EXPECT(!cached(&fe, NB0));
	fakeenv_destroy(&fe);
}

/* 6.12 takes order-0 pages only: the neighbours at the LRU head survive, nobody waits. */
TEST(modern_reclaim_takes_no_neighbours)
{
	struct fakeenv fe;

	reclaim_pool(&fe, "modern-always:second-compaction=none", DBG_FILE_CLEAN, false);
	thp_fault(&fe, MM_VMA_HUGEPAGE);
	EXPECT_GT(stat(&fe, MM_STAT_PGSTEAL_DIRECT), 0);
	EXPECT(!cached(&fe, TAG));
	EXPECT(cached(&fe, NB0));
	EXPECT(cached(&fe, W));
	EXPECT_EQ(fe.n_wait, 0);
	fakeenv_destroy(&fe);
}

TEST_MAIN()

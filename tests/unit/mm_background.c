/* core/mm background actors: kswapd balancing to HIGH, 6.12 defer mode handing compaction to
 * kswapd/kcompactd, proactive compaction and its back-off. */
#include "harness.h"
#include "mm_fakeenv.h"
#include "mm/internal.h"

#define MIB (1ULL << 20)
#define MS  1000000ULL

/* Fill the pool with clean page cache to just above MIN; a base fault below LOW wakes kswapd,
 * which reclaims to HIGH. */
TEST(kswapd_balances_to_high)
{
	struct fakeenv fe;
	struct mm_fault_req req = {.owner = 1, .extent_owner = 1, .advice = MM_VMA_NOHUGEPAGE};
	struct mm_fault_res res;
	struct mm_counts c;
	uint64_t st[MM_STAT_NR], next;
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "linux-3.2", 16 * MIB, false, err, sizeof(err)), 0);
	mm_get_counts(fe.mm, &c);
	for (uint32_t i = 0; c.free > c.wmark_min + 2; i++) {
		uint32_t pfn;
		bool created;

		ASSERT_EQ(mm_pagecache_get(fe.mm, MM_OWNER_FILE(1, i), true, &pfn, &created, NULL),
			  0);
		mm_pagecache_put(fe.mm, pfn, false);
		mm_get_counts(fe.mm, &c);
	}
	ASSERT_EQ(mm_fault(fe.mm, &req, &res, NULL), 0);
	ASSERT_EQ(res.outcome, MM_FAULT_BASE);
	mm_get_stats(fe.mm, st);
	EXPECT_EQ(st[MM_STAT_KSWAPD_WAKE], 1);
	EXPECT(fe.mm->kswapd_awake);
	/* one run balances it: every priority-12 pass reclaims SWAP_CLUSTER_MAX clean pages (3.2
	 * get_scan_count forces kswapd's scan of a list shorter than 1 << 12; 3.3's only over an
	 * all_unreclaimable zone), so balance_pgdat's loop_again keeps it above DEF_PRIORITY - 2,
	 * where it would nap */
	next = mm_background(fe.mm, NULL);
	EXPECT_EQ(next, UINT64_MAX);
	mm_get_stats(fe.mm, st);
	EXPECT_EQ(st[MM_STAT_THROTTLE_CONGESTION], 0);
	mm_get_counts(fe.mm, &c);
	EXPECT_GE(c.free, c.wmark_high);
	mm_get_stats(fe.mm, st);
	EXPECT_GT(st[MM_STAT_PGSTEAL_KSWAPD], 0);
	EXPECT(!fe.mm->kswapd_awake);
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	fakeenv_destroy(&fe);
}

/* 6.12 defer: the fault itself never compacts; kswapd and kcompactd do, and a later fault
 * finds the free 2 MiB block. */
TEST(defer_mode_compacts_in_background)
{
	struct fakeenv fe;
	struct mm_fault_req req = {.owner = 512, .extent_owner = 512, .huge_ok = true};
	struct mm_fault_res res;
	uint64_t st[MM_STAT_NR];
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "modern-defer", 32 * MIB, false, err, sizeof(err)), 0);
	for (uint32_t b = 0; b < 16; b++)
		ASSERT_EQ(mm_debug_place(fe.mm, b * 512 + 100, DBG_FOREIGN, b), 0);
	ASSERT_EQ(mm_fault(fe.mm, &req, &res, NULL), 0);
	EXPECT_EQ(res.outcome, MM_FAULT_BASE);
	EXPECT_EQ(res.rec.compact_ns + res.rec.reclaim_ns, 0);
	mm_get_stats(fe.mm, st);
	EXPECT_EQ(st[MM_STAT_COMPACT_STALL], 0);
	EXPECT(fe.mm->kswapd_awake || fe.mm->kcompactd_awake);
	mm_background(fe.mm, NULL);
	mm_get_stats(fe.mm, st);
	EXPECT_GE(st[MM_STAT_COMPACT_DAEMON_WAKE], 1);
	EXPECT_GT(st[MM_STAT_PGMIGRATE_SUCCESS], 0);
	EXPECT_GT(st[MM_STAT_COMPACT_DAEMON_MIGRATE_SCANNED], 0);
	req.owner = req.extent_owner = 1024;
	ASSERT_EQ(mm_fault(fe.mm, &req, &res, NULL), 0);
	EXPECT_EQ(res.outcome, MM_FAULT_HUGE);
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	fakeenv_destroy(&fe);
}

/* Proactive compaction runs while the score is above the high threshold, lowers it, and
 * checks again every 500 ms; a run that gains nothing backs off for 32 s. */
TEST(proactive_compaction)
{
	struct fakeenv fe;
	uint64_t next;
	unsigned before, after;
	char err[256];

	ASSERT_EQ(
	    fakeenv_init(&fe, "modern-always:proactiveness=50", 32 * MIB, false, err, sizeof(err)),
	    0);
	for (uint32_t b = 0; b < 16; b++)
		for (uint32_t i = 0; i < 8; i++)
			ASSERT_EQ(
			    mm_debug_place(fe.mm, b * 512 + 60 * i + 5, DBG_FOREIGN, b * 8 + i), 0);
	before = mm_fragmentation_score(fe.mm);
	EXPECT_EQ(before, 100);
	next = mm_background(fe.mm, NULL);
	after = mm_fragmentation_score(fe.mm);
	EXPECT_LE(after, 50);
	EXPECT_EQ(next, 500 * MS);
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	/* not due yet */
	fe.now += 100 * MS;
	EXPECT_EQ(mm_background(fe.mm, NULL), 400 * MS);
	fakeenv_destroy(&fe);

	/* unmovable fragmentation: no progress possible, back off */
	ASSERT_EQ(
	    fakeenv_init(&fe, "modern-always:proactiveness=50", 32 * MIB, false, err, sizeof(err)),
	    0);
	for (uint32_t b = 0; b < 16; b++)
		ASSERT_EQ(mm_debug_place(fe.mm, b * 512 + 5, DBG_UNMOVABLE, 0), 0);
	EXPECT_EQ(mm_background(fe.mm, NULL), (500 * MS) << 6);
	fakeenv_destroy(&fe);

	/* proactiveness 0: kcompactd never wakes on its own */
	ASSERT_EQ(
	    fakeenv_init(&fe, "modern-always:proactiveness=0", 32 * MIB, false, err, sizeof(err)),
	    0);
	EXPECT_EQ(mm_background(fe.mm, NULL), UINT64_MAX);
	fakeenv_destroy(&fe);
}

TEST_MAIN()

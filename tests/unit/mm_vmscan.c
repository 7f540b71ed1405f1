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

/* ---- 3.x reclaim rules: kswapd's own writeback, throttles, PG_reclaim, the file system ------ */

/* A 16 MiB pool full of page cache: the first `ndirty` frames placed (the LRU tail) are dirty,
 * the rest clean (or all dirty), down to a few frames above MIN; then an order-0 fault below
 * LOW wakes kswapd. Returns after kswapd has run to sleep (its 3.x naps included). */
static void kswapd_pool(struct fakeenv *fe, const char *spec, uint32_t ndirty)
{
	struct mm_fault_req req = {.owner = 1, .extent_owner = 1, .advice = MM_VMA_NOHUGEPAGE};
	struct mm_fault_res res;
	struct mm_counts c;
	char err[256];
	uint32_t pfn = 0;

	ASSERT_EQ(fakeenv_init(fe, spec, 16 * MIB, false, err, sizeof(err)), 0);
	for (mm_get_counts(fe->mm, &c); c.free > c.wmark_min + 2; mm_get_counts(fe->mm, &c)) {
		ASSERT_EQ(mm_debug_place(fe->mm, pfn,
					 pfn < ndirty ? DBG_FILE_DIRTY : DBG_FILE_CLEAN, own(pfn)),
			  0);
		pfn++;
	}
	ASSERT_EQ(mm_fault(fe->mm, &req, &res, NULL), 0);
	ASSERT(fe->mm->kswapd_awake);
	for (int runs = 0; runs < 20 && mm_background(fe->mm, NULL) != UINT64_MAX; runs++)
		;
	ASSERT_EQ(mm_check(fe->mm, err, sizeof(err)), 0);
}

/* 3.1: kswapd (PF_SWAPWRITE) writes every unreferenced dirty page it reaches. 3.2 and 3.3:
 * not at priorities 12-10, where a dirty page only gets PG_reclaim; 6.12 never. */
TEST(kswapd_writes_dirty_pages_per_era)
{
	struct fakeenv fe;

	kswapd_pool(&fe, "linux-3.1", 32);
	EXPECT_EQ(stat(&fe, MM_STAT_KSWAPD_WRITE), 32); /* its first batch: the dirty tail */
	EXPECT_EQ(stat(&fe, MM_STAT_KSWAPD_WRITE), fe.n_writeout);
	EXPECT_EQ(stat(&fe, MM_STAT_NR_VMSCAN_WRITE), fe.n_writeout);
	EXPECT_EQ(stat(&fe, MM_STAT_NR_VMSCAN_IMMEDIATE), 0);
	fakeenv_destroy(&fe);

	kswapd_pool(&fe, "linux-3.2", 32); /* met at priority 12 only */
	EXPECT_EQ(fe.n_writeout, 0);
	EXPECT_EQ(stat(&fe, MM_STAT_KSWAPD_WRITE), 0);
	EXPECT_GE(stat(&fe, MM_STAT_NR_VMSCAN_IMMEDIATE), 32); /* kept with PG_reclaim */
	fakeenv_destroy(&fe);

	kswapd_pool(&fe, "linux-3.1:kswapd-writepage=pressure", 32);
	EXPECT_EQ(fe.n_writeout, 0);
	fakeenv_destroy(&fe);

	kswapd_pool(&fe, "modern-always", 32);
	EXPECT_EQ(fe.n_writeout, 0);
	EXPECT_EQ(stat(&fe, MM_STAT_NR_VMSCAN_IMMEDIATE), 0);
	fakeenv_destroy(&fe);
}

/* Only dirty page cache: 3.2 kswapd keeps it at priorities 12-10 and writes it below, once
 * "under significant pressure" (priority < DEF_PRIORITY - 2). */
TEST(kswapd_writes_under_pressure_in_32)
{
	struct fakeenv fe;

	kswapd_pool(&fe, "linux-3.2", UINT32_MAX);
	EXPECT_GT(stat(&fe, MM_STAT_NR_VMSCAN_IMMEDIATE), 0);
	EXPECT_GT(stat(&fe, MM_STAT_KSWAPD_WRITE), 0);
	EXPECT_EQ(stat(&fe, MM_STAT_KSWAPD_WRITE), fe.n_writeout);
	fakeenv_destroy(&fe);
}

/* ---- 3.x balance_pgdat: loop_again and the nap (mm/vmscan.c, the same in 3.1.0, 3.2.7, 3.3.8) */

/* A 16 MiB pool of page cache, every `every`-th frame dirty (0: none, 1: all), filled from pfn
 * 0 (the LRU tail) until `above_min` frames above MIN are left (negative: below it); then
 * kswapd is woken at order 0. Nothing runs yet. */
static void kswapd_fill(struct fakeenv *fe, const char *spec, uint32_t every, int above_min)
{
	struct mm_counts c;
	char err[256];
	uint32_t pfn = 0;

	ASSERT_EQ(fakeenv_init(fe, spec, 16 * MIB, false, err, sizeof(err)), 0);
	for (mm_get_counts(fe->mm, &c); (int64_t)c.free > (int64_t)c.wmark_min + above_min;
	     mm_get_counts(fe->mm, &c)) {
		ASSERT_EQ(
		    mm_debug_place(fe->mm, pfn,
				   every && pfn % every == 0 ? DBG_FILE_DIRTY : DBG_FILE_CLEAN,
				   own(pfn)),
		    0);
		pfn++;
	}
	mm_lock(fe->mm);
	wakeup_kswapd(fe->mm, 0, 0);
	mm_unlock(fe->mm);
	ASSERT(fe->mm->kswapd_awake);
}

/* All clean: at 16 MiB a priority-12 pass scans the forced SWAP_CLUSTER_MAX (the inactive
 * list >> 12 is 0; 3.1/3.2 get_scan_count's force_scan for kswapd) and reclaims all 32, so each
 * round ends with "goto loop_again" at DEF_PRIORITY and kswapd balances in one run with passes
 * of 32 only. Without the restart its next passes would be at priorities 11, 10, 9 (1, 3 and 7
 * pages: list >> priority) and it would nap after the one at 9. 3.3's kswapd forces only over
 * an all_unreclaimable zone (kswapd_forces_a_short_list_only_when_unreclaimable_in_3_3). */
TEST(kswapd_loop_again_restarts_at_def_priority)
{
	static const char *const eras[] = {"linux-3.1", "linux-3.2"};

	for (unsigned i = 0; i < sizeof(eras) / sizeof(eras[0]); i++) {
		struct fakeenv fe;
		struct mm_counts c;
		char err[256];

		kswapd_fill(&fe, eras[i], 0, 2);
		mm_get_counts(fe.mm, &c);
		ASSERT_GT(c.wmark_high - c.free, 2 * 32); /* three rounds or more */
		EXPECT_EQ(mm_background(fe.mm, NULL), UINT64_MAX);
		mm_get_counts(fe.mm, &c);
		EXPECT_GE(c.free, c.wmark_high);
		EXPECT(!fe.mm->kswapd_awake);
		EXPECT_EQ(stat(&fe, MM_STAT_PGSCAN_KSWAPD) % 32, 0);
		EXPECT_GE(stat(&fe, MM_STAT_PGSCAN_KSWAPD), 3 * 32);
		EXPECT_EQ(stat(&fe, MM_STAT_PGSTEAL_KSWAPD), stat(&fe, MM_STAT_PGSCAN_KSWAPD));
		EXPECT_EQ(fe.n_throttle_kind[MM_WAIT_RECLAIM_CONGESTED], 0);
		ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
		fakeenv_destroy(&fe);
	}
}

/* kswapd over a short list that reclaim cannot free: a 16 MiB pool of page cache all under
 * writeback that does not complete (an order-0 kswapd keeps such pages and does not wait on
 * them), filled to just above MIN, nothing freed. Each kswapd run is one sweep of priorities 12
 * to 0 that reclaims nothing (then "goto loop_again"): S = sum of lru >> p over p = 11..0, plus
 * SWAP_CLUSTER_MAX when the priority-12 pass (lru >> 12 = 0) is forced. 3.1 and 3.2 (3.1.3 /
 * 3.2.0 mm/vmscan.c get_scan_count: "scanning_global_lru(sc) && current_is_kswapd()") force
 * every sweep. 3.3 (3.3.8 get_scan_count, b95a2f2d: "current_is_kswapd() &&
 * mz->zone->all_unreclaimable") forces only once balance_pgdat has found the zone
 * unreclaimable after a pass (zone_reclaimable: pages_scanned, the LRU pages scanned since the
 * last page freed, >= 6 x the file LRU), so from the sweep after the one in which the count
 * passed 6 x lru; with the 3.1/3.2 rule 3.3 would force from the first. */
static void kswapd_fill_writeback(struct fakeenv *fe, const char *spec)
{
	struct mm_counts c;
	char err[256];
	uint32_t pfn = 0;

	ASSERT_EQ(fakeenv_init(fe, spec, 16 * MIB, false, err, sizeof(err)), 0);
	for (mm_get_counts(fe->mm, &c); c.free > c.wmark_min + 2; mm_get_counts(fe->mm, &c)) {
		ASSERT_EQ(mm_debug_place(fe->mm, pfn, DBG_FILE_WRITEBACK, own(pfn)), 0);
		pfn++;
	}
	mm_lock(fe->mm);
	wakeup_kswapd(fe->mm, 0, 0);
	mm_unlock(fe->mm);
	ASSERT(fe->mm->kswapd_awake);
}

TEST(kswapd_forces_a_short_list_only_when_unreclaimable_in_3_3)
{
	static const char *const eras[] = {"linux-3.1", "linux-3.2", "linux-3.3"};

	for (unsigned i = 0; i < sizeof(eras) / sizeof(eras[0]); i++) {
		struct fakeenv fe;
		char err[256];
		uint64_t lru, sweep = 0, prev = 0, freed;
		unsigned first_forced = 0, crossed = 0;

		kswapd_fill_writeback(&fe, eras[i]);
		freed = stat(&fe, MM_STAT_PGFREE);
		lru = fe.mm->nr_lru[0];
		ASSERT_LT(lru, 4096); /* lru >> 12 is 0 */
		ASSERT_GE(lru, 2048); /* lru >> 11 is not */
		for (int p = 11; p >= 0; p--)
			sweep += lru >> p;
		for (unsigned run = 1; run <= 6; run++) {
			uint64_t scanned;

			mm_background(fe.mm, NULL);
			scanned = stat(&fe, MM_STAT_PGSCAN_KSWAPD) - prev;
			prev += scanned;
			ASSERT(scanned == sweep || scanned == sweep + 32);
			if (scanned == sweep + 32 && !first_forced)
				first_forced = run;
			if (first_forced)
				EXPECT_EQ(scanned, sweep + 32); /* it stays until a page is freed */
			if (!crossed && prev >= 6 * lru)
				crossed = run;
			/* not asserted: kswapd_awake. 3.x balance_pgdat skips an all_unreclaimable
			 * zone below DEF_PRIORITY and counts it balanced, so the real kswapd makes
			 * one forced pass over it and sleeps; the model sweeps on
			 * (core/mm/README.md, departures) */
		}
		EXPECT_EQ(stat(&fe, MM_STAT_PGSTEAL_KSWAPD), 0);
		EXPECT_EQ(stat(&fe, MM_STAT_PGFREE), freed); /* no page freed: nothing cleared it */
		ASSERT_GT(crossed, 0);
		ASSERT_LT(crossed, 5);
		EXPECT_EQ(first_forced, i < 2 ? 1 : crossed + 1);
		EXPECT(fe.mm->all_unreclaimable);
		ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
		fakeenv_destroy(&fe);
	}
}

/* The nap: the first one comes after a pass below DEF_PRIORITY - 2 - in 3.2/3.3 the first
 * priority at which kswapd writes, so by then it has written - and is congestion_wait's
 * HZ/10, whether or not the device is congested. */
static uint64_t nap_writes, nap_count;

static void count_nap(struct fakeenv *fe, enum mm_wait_kind kind)
{
	if (kind != MM_WAIT_RECLAIM_CONGESTED)
		return;
	if (!nap_count++)
		nap_writes = stat(fe, MM_STAT_KSWAPD_WRITE);
}

TEST(kswapd_naps_after_passes_below_def_priority_minus_2)
{
	static const char *const eras[] = {"linux-3.1", "linux-3.2", "linux-3.3"};

	for (unsigned i = 0; i < sizeof(eras) / sizeof(eras[0]); i++) {
		struct fakeenv fe;
		uint64_t t0;

		kswapd_fill(&fe, eras[i], 1, 2); /* all dirty: no pass reclaims 32 */
		fe.on_throttle = count_nap;
		nap_count = nap_writes = 0;
		t0 = fe.now;
		mm_background(fe.mm, NULL);
		EXPECT_GE(nap_count, 1);
		EXPECT_GT(nap_writes, 0);
		EXPECT_GE(fe.now - t0, nap_count * 100 * MS);
		fakeenv_destroy(&fe);
	}
	/* 6.12 has no such nap */
	{
		struct fakeenv fe;

		kswapd_fill(&fe, "modern-always", 1, 2);
		mm_background(fe.mm, NULL);
		EXPECT_EQ(fe.n_throttle_kind[MM_WAIT_RECLAIM_CONGESTED], 0);
		fakeenv_destroy(&fe);
	}
}

/* Below MIN (has_under_min_watermark_zone) kswapd does not nap: it counts
 * KSWAPD_SKIP_CONGESTION_WAIT and hurries on. All dirty and 20 frames under MIN: passes
 * write but free nothing while the run lasts (the writeback is not over), so it stays under. */
TEST(kswapd_skips_the_nap_below_min)
{
	struct fakeenv fe;
	struct mm_counts c;

	kswapd_fill(&fe, "linux-3.2", 1, -20);
	fe.writeout_latency_ns = 1000 * MS; /* past the run */
	mm_background(fe.mm, NULL);
	mm_get_counts(fe.mm, &c);
	EXPECT_LT(c.free, c.wmark_min);
	EXPECT_GT(stat(&fe, MM_STAT_KSWAPD_WRITE), 0);
	EXPECT_EQ(fe.n_throttle_kind[MM_WAIT_RECLAIM_CONGESTED], 0);
	fakeenv_destroy(&fe);
}

/* ext4 (delalloc): ->writepage from reclaim redirties the page; nothing is written, so 3.1's
 * batch keeps the dirty neighbour (the mode resets: no synchronous pass). */
TEST(ext4_refuses_writepage_from_reclaim)
{
	struct fakeenv fe;

	reclaim_pool(&fe, "linux-3.1:second-compaction=none,fs=ext4", DBG_FILE_DIRTY, false);
	thp_fault(&fe, MM_VMA_DEFAULT);
	EXPECT_EQ(fe.n_writeout, 0);
	EXPECT_EQ(stat(&fe, MM_STAT_NR_VMSCAN_WRITE), 0);
	EXPECT(cached(&fe, NB3)); /* still dirty */
	fakeenv_destroy(&fe);

	kswapd_pool(&fe, "linux-3.1:fs=ext4", 32);
	EXPECT_EQ(fe.n_writeout, 0);
	fakeenv_destroy(&fe);
}

/* tmpfs without swap: its pages are on the anon LRU, which reclaim does not scan without swap
 * (6.12 mm/vmscan.c get_scan_count, folio_is_file_lru): kswapd over a pool of them reclaims
 * and writes nothing, and none of them is dirty (noop_dirty_folio); the same pool on ext4
 * gives kswapd its clean pages. */
TEST(tmpfs_pages_are_never_reclaimed)
{
	struct fakeenv fe;
	struct mm_counts c;

	kswapd_pool(&fe, "modern-always:fs=tmpfs", 32);
	EXPECT_EQ(stat(&fe, MM_STAT_PGSTEAL_KSWAPD), 0);
	EXPECT_EQ(fe.n_writeout, 0);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.file_dirty, 0);
	EXPECT_GT(c.file, 3000);
	EXPECT(cached(&fe, 0));
	EXPECT(cached(&fe, 40));
	fakeenv_destroy(&fe);

	kswapd_pool(&fe, "modern-always:fs=ext4", 32);
	EXPECT_GT(stat(&fe, MM_STAT_PGSTEAL_KSWAPD), 0);
	fakeenv_destroy(&fe);
}

/* 3.1's pageout writes and the sync pass waits: each wait is reported once, with its kind,
 * frame, owner and length, and none is kswapd's. */
TEST(every_wait_is_reported)
{
	struct fakeenv fe;

	reclaim_pool(&fe, "linux-3.1:second-compaction=none", DBG_FILE_DIRTY, false);
	thp_fault(&fe, MM_VMA_DEFAULT);
	EXPECT_EQ(fe.n_waited_kind[MM_WAIT_RECLAIM_WRITEOUT], fe.n_writeout);
	EXPECT_EQ(fe.n_waited_kind[MM_WAIT_RECLAIM_WRITEBACK], fe.n_wait);
	EXPECT_EQ(fe.n_waited_kind[MM_WAIT_COMPACT_WRITEBACK], 0);
	for (uint64_t i = 0, k = 0; i < fe.n_waited && i < FE_MAX_WAITS; i++) {
		const struct mm_wait *w = &fe.waited[i];

		EXPECT(!w->background);
		if (w->kind != MM_WAIT_RECLAIM_WRITEBACK)
			continue;
		EXPECT_EQ(w->pfn, fe.wait_pfn[k]);
		EXPECT_EQ(w->owner, own(fe.wait_pfn[k]));
		EXPECT_EQ(w->ns, fe.wait_ns[k]);
		k++;
	}
	EXPECT(!strcmp(mm_wait_function(MM_WAIT_RECLAIM_WRITEBACK), "sleep_on_page"));
	EXPECT(!strcmp(mm_wait_name(MM_WAIT_RECLAIM_WRITEOUT), "reclaim-writeout"));
	EXPECT(!strcmp(mm_wait_name(MM_WAIT_NR), "?"));
	fakeenv_destroy(&fe);
}

/* An order-0 allocation (a page-cache page) of a pool full of unreferenced dirty page cache:
 * its direct reclaim is what the tests look at (it may end without a page). */
static void small_alloc(struct fakeenv *fe, uint32_t idx)
{
	uint32_t pfn;
	bool created;

	if (!mm_pagecache_get(fe->mm, MM_OWNER_FILE(9, idx), true, &pfn, &created, NULL))
		mm_pagecache_put(fe->mm, pfn, false);
}

static void dirty_pool(struct fakeenv *fe, const char *spec)
{
	char err[256];
	struct mm_counts c;
	uint32_t pfn = 0;

	ASSERT_EQ(fakeenv_init(fe, spec, 16 * MIB, false, err, sizeof(err)), 0);
	for (mm_get_counts(fe->mm, &c); c.free > c.wmark_min / 2; mm_get_counts(fe->mm, &c)) {
		ASSERT_EQ(mm_debug_place(fe->mm, pfn, DBG_FILE_DIRTY, own(pfn)), 0);
		pfn++;
	}
}

/* 3.1 may_write_to_queue: an order-0 direct reclaimer does not write to a congested device;
 * a batch whose every dirty page met congestion flags the zone (ZONE_CONGESTED), and then
 * do_try_to_free_pages' nap below priority 10 (wait_iff_congested) sleeps. Without congestion
 * the pages are written and nobody naps. */
TEST(congested_device_flags_the_zone_in_31)
{
	struct fakeenv fe;

	dirty_pool(&fe, "linux-3.1:kswapd=no");
	fe.congested = true;
	small_alloc(&fe, 0);
	EXPECT_EQ(fe.n_writeout, 0);
	EXPECT_EQ(stat(&fe, MM_STAT_ZONE_CONGESTED), 1);
	EXPECT(fe.mm->zone_congested);
	EXPECT_GT(fe.n_throttle_kind[MM_WAIT_RECLAIM_CONGESTED], 0);
	EXPECT_EQ(fe.n_waited_kind[MM_WAIT_RECLAIM_CONGESTED],
		  fe.n_throttle_kind[MM_WAIT_RECLAIM_CONGESTED]);
	EXPECT_EQ(fe.waited[0].ns, 100 * MS); /* HZ/10 */
	fakeenv_destroy(&fe);

	dirty_pool(&fe, "linux-3.1:kswapd=no");
	small_alloc(&fe, 0);
	EXPECT_GT(fe.n_writeout, 0);
	EXPECT(!fe.mm->zone_congested);
	EXPECT_EQ(fe.n_throttle, 0);
	fakeenv_destroy(&fe);

	dirty_pool(&fe, "linux-3.1:kswapd=no,throttle=no");
	fe.congested = true;
	small_alloc(&fe, 0);
	EXPECT_EQ(fe.n_throttle, 0);
	fakeenv_destroy(&fe);
}

/* too_many_isolated in shrink_inactive_list: a direct reclaimer naps in congestion_wait
 * (3.x, HZ/10) or reclaim_throttle (6.12, HZ/50) until the isolated count drops. */
static void release_isolated(struct fakeenv *fe, enum mm_wait_kind kind)
{
	if (kind == MM_WAIT_RECLAIM_ISOLATED && fe->n_throttle_kind[kind] == 3)
		fe->mm->nr_isolated -= 100000;
}

TEST(too_many_isolated_naps)
{
	static const struct {
		const char *spec;
		uint64_t nap;
	} cases[] = {{"linux-3.2:kswapd=no", 100 * MS}, {"modern-always:kswapd=no", 20 * MS}};

	for (unsigned i = 0; i < 2; i++) {
		struct fakeenv fe;
		char err[256];

		dirty_pool(&fe, cases[i].spec);
		fe.mm->nr_isolated += 100000; /* others' batches */
		fe.on_throttle = release_isolated;
		small_alloc(&fe, 0);
		EXPECT_EQ(fe.n_throttle_kind[MM_WAIT_RECLAIM_ISOLATED], 3);
		EXPECT_EQ(stat(&fe, MM_STAT_THROTTLE_ISOLATED), 3);
		EXPECT_EQ(fe.n_waited_kind[MM_WAIT_RECLAIM_ISOLATED], 3);
		EXPECT_EQ(fe.waited[0].ns, cases[i].nap);
		ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
		fakeenv_destroy(&fe);
	}
}

/* 3.2 shrink_inactive_list: a batch all under writeback at priority 12 naps in
 * wait_iff_congested, which sleeps only for a zone flagged congested and a congested device. */
TEST(writeback_batch_throttles_in_32)
{
	for (int flagged = 0; flagged < 2; flagged++) {
		struct fakeenv fe;
		char err[256];
		struct mm_counts c;
		uint32_t pfn = 0;

		ASSERT_EQ(
		    fakeenv_init(&fe, "linux-3.2:kswapd=no", 16 * MIB, false, err, sizeof(err)), 0);
		for (mm_get_counts(fe.mm, &c); c.free > c.wmark_min / 2; mm_get_counts(fe.mm, &c)) {
			ASSERT_EQ(mm_debug_place(fe.mm, pfn,
						 pfn % 64 ? DBG_FILE_WRITEBACK : DBG_FILE_CLEAN,
						 own(pfn)),
				  0);
			fe.wb_done_at[pfn] = 10000 * MS;
			pfn++;
		}
		fe.congested = true;
		fe.mm->zone_congested = flagged;
		small_alloc(&fe, 0);
		if (flagged)
			EXPECT_GT(fe.n_throttle_kind[MM_WAIT_RECLAIM_CONGESTED], 0);
		else
			EXPECT_EQ(fe.n_throttle, 0);
		fakeenv_destroy(&fe);
	}
}

/* PG_reclaim: 3.2 direct reclaim keeps a dirty page with PG_reclaim; when its writeback ends
 * it moves to the inactive tail (rotate_reclaimable_page), the next page reclaim takes. */
TEST(pg_reclaim_rotates_at_writeback_end)
{
	struct fakeenv fe;
	uint32_t tail;

	reclaim_pool(&fe, "linux-3.2:second-compaction=none", DBG_FILE_DIRTY, false);
	thp_fault(&fe, MM_VMA_DEFAULT);
	ASSERT(cached(&fe, NB3));
	EXPECT_GT(stat(&fe, MM_STAT_NR_VMSCAN_IMMEDIATE), 0);
	EXPECT(pfn_frame(fe.mm, NB3)->order & ORDER_RECLAIM);
	tail = pfn_frame(fe.mm, sentinel(fe.mm, SENT_LRU_INACTIVE))->prev;
	EXPECT_NE(tail, NB3);
	ASSERT_EQ(mm_writeback_begin_one(fe.mm, NB3), 0);
	mm_writeback_end(fe.mm, NB3, 0);
	EXPECT_EQ(stat(&fe, MM_STAT_PGROTATED), 1);
	EXPECT(!(pfn_frame(fe.mm, NB3)->order & ORDER_RECLAIM));
	EXPECT_EQ(pfn_frame(fe.mm, sentinel(fe.mm, SENT_LRU_INACTIVE))->prev, NB3);
	fakeenv_destroy(&fe);
}

/* Clean pages (every fourth pfn) among the n from pfn start. */
static uint32_t clean_in(uint32_t start, uint32_t n)
{
	uint32_t k = 0;

	for (uint32_t pfn = start; pfn < start + n; pfn++)
		k += pfn % 4 == 0;
	return k;
}

/* A 3.2 pool (kswapd off) of 640 MiB filled with page cache down to half the min watermark,
 * pfn 0 on; one page in four (pfn % 4 == 0) clean, the others dirty. */
static void quarter_clean_pool(struct fakeenv *fe)
{
	char err[256];
	struct mm_counts c;
	uint32_t pfn = 0;

	ASSERT_EQ(fakeenv_init(fe, "linux-3.2:kswapd=no", 640 * MIB, false, err, sizeof(err)), 0);
	for (mm_get_counts(fe->mm, &c); c.free > c.wmark_min / 2; mm_get_counts(fe->mm, &c)) {
		ASSERT_EQ(mm_debug_place(fe->mm, pfn, pfn % 4 ? DBG_FILE_DIRTY : DBG_FILE_CLEAN,
					 own(pfn)),
			  0);
		pfn++;
	}
}

/* nr_to_reclaim is counted per pass (3.1 shrink_zone's local nr_reclaimed, reset at restart:;
 * 3.3 shrink_mem_cgroup_zone; 6.12 shrink_lruvec), not over the call. 3.2 order-0 direct
 * reclaim on a 640 MiB pool of page cache where one page in four is clean (direct reclaim
 * keeps the dirty ones): priority 12 scans lru >> 12 and reclaims a quarter of it, priority 11
 * the same from lru >> 11, still under 32 in all; priority 10 then scans batch after batch
 * until that pass has itself reclaimed 32, so one call reclaims what 12 and 11 did plus 32. A
 * call-wide count would stop in priority 10's first batch, at 32 in all. */
TEST(nr_to_reclaim_counts_per_pass)
{
	struct alloc_ctx ac = {.order = 0, .mt = MM_MT_MOVABLE, .gfp = GFP_HIGHUSER_MOVABLE};
	struct fakeenv fe;
	char err[256];
	uint32_t lru, first, n12;

	quarter_clean_pool(&fe);
	/* the LRU's tail is pfn 0 on; kept pages go back to its head. Priority 12 scans the
	 * first lru >> 12, priority 11 the next (lru - what 12 freed) >> 11. */
	lru = fe.mm->nr_lru[0];
	n12 = lru >> 12;
	first = clean_in(0, n12);
	first += clean_in(n12, (lru - first) >> 11);
	ASSERT_LT(first, 32);
	ASSERT_GE((lru - first) >> 10, 4 * 32); /* priority 10 reaches 32 in its pass */
	/* one call: an allocation would call again, free being still under MIN (3.x
	 * should_alloc_retry, order0_allocation_retries_reclaim_while_it_progresses_in_3x) */
	mm_lock(fe.mm);
	try_to_free_pages(fe.mm, &ac);
	mm_unlock(fe.mm);
	EXPECT_EQ(stat(&fe, MM_STAT_PGSTEAL_DIRECT), first + 32);
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	fakeenv_destroy(&fe);
}

/* 3.1-3.3 get_scan_count force-scans for kswapd (and memcg reclaim) only, and 6.1's and 6.12's
 * have no force_scan at all (only a deleted memcg's list is scanned when lru >> priority is 0,
 * and the root memcg is online): a direct reclaim pass scans lru >> priority, none at all while
 * that is 0. A 16 MiB pool with 40 clean page-cache
 * pages, the rest unmovable, free just under MIN: an order-0 allocation's reclaim finds nothing
 * to scan at priorities 12 to 6, then reclaims 1, 2, 4, 8, 12 and the last 13 pages at
 * priorities 5 to 0 (still short of 32 until the end): all 40. Scanning SWAP_CLUSTER_MAX at
 * priority 12 instead would have stopped there with 32. */
TEST(direct_reclaim_does_not_force_scan_a_short_list)
{
	static const char *const specs[] = {"linux-3.1:kswapd=no", "linux-3.2:kswapd=no",
					    "linux-3.3:kswapd=no", "linux-6.1:kswapd=no",
					    "modern-always:kswapd=no"};

	for (unsigned i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		struct fakeenv fe;
		struct mm_counts c;
		char err[256];
		uint32_t pfn = 40;

		ASSERT_EQ(fakeenv_init(&fe, specs[i], 16 * MIB, false, err, sizeof(err)), 0);
		for (uint32_t p = 0; p < 40; p++)
			ASSERT_EQ(mm_debug_place(fe.mm, p, DBG_FILE_CLEAN, own(p)), 0);
		for (mm_get_counts(fe.mm, &c); c.free + 10 > c.wmark_min; mm_get_counts(fe.mm, &c))
			ASSERT_EQ(mm_debug_place(fe.mm, pfn++, DBG_UNMOVABLE, 0), 0);
		ASSERT_EQ(fe.mm->nr_lru[0], 40);
		small_alloc(&fe, 0);
		EXPECT_EQ(stat(&fe, MM_STAT_ALLOCSTALL), 1);
		EXPECT_EQ(stat(&fe, MM_STAT_PGSTEAL_DIRECT), 40);
		EXPECT_EQ(stat(&fe, MM_STAT_PGSCAN_DIRECT), 40);
		ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
		fakeenv_destroy(&fe);
	}
}

/* 3.x __alloc_pages_slowpath retries an order-0 allocation while direct reclaim makes progress
 * (should_alloc_retry: order <= PAGE_ALLOC_COSTLY_ORDER, no __GFP_NORETRY; `goto rebalance`
 * after wait_iff_congested). A 16 MiB pool 100 pages below MIN, 400 clean page-cache pages
 * behind it: one direct reclaim takes its 32-odd pages and leaves free below MIN, so a
 * page-cache allocation (no last resort) fails after one call in 6.1 and 6.12 (their
 * should_reclaim_retry loop is not modelled) and, in 3.x, calls reclaim again until a page is
 * free above MIN. With nothing left to reclaim (no progress: the kernel's OOM path) the 3.x
 * loop ends after one call. */
TEST(order0_allocation_retries_reclaim_while_it_progresses_in_3x)
{
	static const char *const specs[] = {"linux-3.1:kswapd=no", "linux-3.2:kswapd=no",
					    "linux-3.3:kswapd=no", "linux-6.1:kswapd=no",
					    "modern-always:kswapd=no"};

	for (unsigned i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		bool modern = i >= 3;

		for (int empty = 0; empty < 2; empty++) {
			struct fakeenv fe;
			struct mm_counts c;
			char err[256];
			uint32_t pfn = 0, got;
			bool created;
			int rc;

			ASSERT_EQ(fakeenv_init(&fe, specs[i], 16 * MIB, false, err, sizeof(err)),
				  0);
			for (; !empty && pfn < 400; pfn++)
				ASSERT_EQ(mm_debug_place(fe.mm, pfn, DBG_FILE_CLEAN, own(pfn)), 0);
			for (mm_get_counts(fe.mm, &c); c.free + 100 > c.wmark_min;
			     mm_get_counts(fe.mm, &c))
				ASSERT_EQ(mm_debug_place(fe.mm, pfn++, DBG_UNMOVABLE, 0), 0);
			rc = mm_pagecache_get(fe.mm, MM_OWNER_FILE(9, 0), true, &got, &created,
					      NULL);
			if (rc == 0)
				mm_pagecache_put(fe.mm, got, false);
			mm_get_counts(fe.mm, &c);
			if (empty || modern) {
				EXPECT_EQ(rc, -ENOMEM);
				EXPECT_EQ(stat(&fe, MM_STAT_ALLOCSTALL), 1);
				EXPECT_LT(c.free, c.wmark_min);
			} else {
				EXPECT_EQ(rc, 0);
				EXPECT_GE(stat(&fe, MM_STAT_ALLOCSTALL), 3);
				EXPECT_GT(stat(&fe, MM_STAT_PGSTEAL_DIRECT), 100);
				EXPECT_GE(c.free, c.wmark_min);
			}
			ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
			fakeenv_destroy(&fe);
		}
	}
}

/* Nor for kswapd: a 16 MiB pool of clean page cache (inactive list 3890 < 1 << 12) woken just
 * above MIN. 3.x kswapd's priority-12 passes scan the forced SWAP_CLUSTER_MAX, a multiple of 32
 * in all. 6.1 and 6.12 kswapd's priority-12 pass scans lru >> 12 = 0, then 1, 3, 7, 15, 30 and
 * 59 (lru >> 11 .. >> 6 of the shrinking list) until balanced: 115 (146 with the forced 32). */
TEST(kswapd_does_not_force_scan_a_short_list_in_6x)
{
	static const char *const specs[] = {"linux-3.2", "linux-6.1", "modern-always"};

	for (unsigned i = 0; i < 3; i++) {
		struct fakeenv fe;
		char err[256];

		kswapd_fill(&fe, specs[i], 0, 2);
		ASSERT_EQ(fe.mm->nr_lru[0], 3890);
		mm_background(fe.mm, NULL);
		if (i == 0)
			EXPECT_EQ(stat(&fe, MM_STAT_PGSCAN_KSWAPD) % 32, 0);
		else
			EXPECT_EQ(stat(&fe, MM_STAT_PGSCAN_KSWAPD), 1 + 3 + 7 + 15 + 30 + 59);
		EXPECT_EQ(stat(&fe, MM_STAT_PGSTEAL_KSWAPD), stat(&fe, MM_STAT_PGSCAN_KSWAPD));
		ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
		fakeenv_destroy(&fe);
	}
}

/* The inactive list, head first, into out (at most max entries). Returns its length. */
static uint32_t inactive_list(struct fakeenv *fe, uint32_t *out, uint32_t max)
{
	uint32_t head = sentinel(fe->mm, SENT_LRU_INACTIVE), n = 0;

	for (uint32_t p = pfn_frame(fe->mm, head)->next; p != head && n < max;
	     p = pfn_frame(fe->mm, p)->next)
		out[n++] = p;
	return n;
}

/* Each batch's kept pages go back to the head one by one (putback_lru_pages), so the scanned
 * run keeps its order: an order-0 direct reclaim (no neighbours) that scanned the S pages at the
 * tail leaves the new page (if any) first, then those S pages less the clean ones it freed, in
 * their old order, then the rest. Checks that a batch kept whole and spliced back as one chain
 * (putback_batch) leaves the list the page-by-page putback does, on a 3.2 pool of dirty page
 * cache where one page in four is clean (the allocation may still fail). */
TEST(kept_batches_go_back_in_their_order)
{
	enum { MAXL = 160 * 1024 };
	static uint32_t before[MAXL], after[MAXL], want[MAXL];
	struct fakeenv fe;
	char err[256];
	uint32_t pfn = 0, n, m, k = 0, scanned;
	bool created;
	int rc;

	quarter_clean_pool(&fe);
	n = inactive_list(&fe, before, MAXL);
	ASSERT_EQ(n, fe.mm->nr_lru[0]);
	rc = mm_pagecache_get(fe.mm, MM_OWNER_FILE(9, 0), true, &pfn, &created, NULL);
	if (!rc) {
		mm_pagecache_put(fe.mm, pfn, false);
		want[k++] = pfn;
	}
	ASSERT(!rc || rc == -ENOMEM); /* reclaim ran either way */
	scanned = (uint32_t)stat(&fe, MM_STAT_PGSCAN_DIRECT);
	ASSERT_GT(scanned, 4 * 32);
	ASSERT_LT(scanned, n);
	for (uint32_t i = n - scanned; i < n; i++)
		if (before[i] % 4)
			want[k++] = before[i];
	for (uint32_t i = 0; i < n - scanned; i++)
		want[k++] = before[i];
	m = inactive_list(&fe, after, MAXL);
	ASSERT_EQ(m, k);
	ASSERT_EQ(m, fe.mm->nr_lru[0]);
	for (uint32_t i = 0; i < m; i++)
		ASSERT_EQ(after[i], want[i]);
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	fakeenv_destroy(&fe);
}

TEST_MAIN()

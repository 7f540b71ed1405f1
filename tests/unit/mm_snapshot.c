/* core/mm's side of a snapshot: runs become the frames they say, free blocks land on their
 * pageblock's list with their order, watermarks are taken, bad runs are refused with the pool
 * left consistent, and the loaded pool works (compaction migrates the phantom anon). */
#include "harness.h"
#include "mm_fakeenv.h"
#include "mm/internal.h"

#define MIB (1ULL << 20)

static void init(struct fakeenv *fe, const char *spec, uint64_t bytes)
{
	char err[256];

	ASSERT_EQ(fakeenv_init(fe, spec, bytes, false, err, sizeof(err)), 0);
}

static struct mm_snapshot_run run(enum mm_snapshot_kind kind, uint32_t len, unsigned order)
{
	return (struct mm_snapshot_run){.kind = (uint8_t)kind, .len = len, .order = (uint8_t)order};
}

static void check(struct fakeenv *fe)
{
	char err[256] = "";

	EXPECT_EQ(mm_check(fe->mm, err, sizeof(err)), 0);
	if (err[0])
		fprintf(stderr, "  mm_check: %s\n", err);
}

/* Block 0: anon, free order 0, free order 1, clean file, dirty file, active file, unmovable,
 * then free order-2 blocks to the end of the block; block 1 UNMOVABLE with one free order-9
 * block; the rest free order 10. */
TEST(runs_become_frames)
{
	struct fakeenv fe;
	struct mm_snapshot s;
	struct mm_counts c;
	struct mm_snapshot_run r[16];
	uint32_t wm[3] = {100, 120, 140};
	unsigned n = 0;
	char err[256];

	init(&fe, "modern-always", 8 * MIB);
	ASSERT_EQ(mm_snapshot_begin(fe.mm, &s), 0);
	EXPECT_EQ(mm_snapshot_pageblock(&s, 1, MM_MT_UNMOVABLE), 0);
	r[n++] = run(MM_SNAP_ANON, 1, 0);
	r[n++] = run(MM_SNAP_FREE, 1, 0);
	r[n++] = run(MM_SNAP_FREE, 2, 1);
	r[n++] = run(MM_SNAP_FILE, 3, 0);
	r[n++] = run(MM_SNAP_FILE_DIRTY, 2, 0);
	r[n] = run(MM_SNAP_FILE, 1, 0);
	r[n++].active = true;
	r[n++] = run(MM_SNAP_UNMOVABLE, 2, 0);
	r[n++] = run(MM_SNAP_FREE, 512 - 12, 2);
	r[n++] = run(MM_SNAP_FREE, 512, 9);
	r[n++] = run(MM_SNAP_FREE, 2048 - 1024, 10);
	ASSERT_EQ(mm_snapshot_runs(&s, r, n, err, sizeof(err)), 0);
	ASSERT_EQ(mm_snapshot_end(&s, wm, err, sizeof(err)), 0);
	check(&fe);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.foreign, 1);
	EXPECT_EQ(c.file, 6);
	EXPECT_EQ(c.file_dirty, 2);
	EXPECT_EQ(c.unmovable, 2);
	EXPECT_EQ(c.free, 2048 - 9);
	/* [12, 512) in order-2 runs merges into 12 (2), 16 (4), 32 (5), ..., 256 (8) */
	for (unsigned o = 0; o <= MM_MAX_ORDER; o++)
		EXPECT_EQ(c.nr_free[o], o == 3 ? 0U : 1U);
	EXPECT_EQ(fe.mm->nr_free_mt[9][MM_MT_UNMOVABLE], 1);
	EXPECT_EQ(fe.mm->nr_lru[1], 1);
	EXPECT_EQ(c.wmark_min, 100);
	EXPECT_EQ(c.wmark_low, 120);
	EXPECT_EQ(c.wmark_high, 140);
	EXPECT_EQ(c.min_free_kbytes, 400);
	EXPECT_EQ(pfn_frame(fe.mm, 0)->state, FS_ANON);
	EXPECT(pfn_frame(fe.mm, 0)->owner & MM_OWNER_FOREIGN);
	EXPECT_EQ(MM_OWNER_FILE_ID(pfn_frame(fe.mm, 4)->owner), MM_SNAPSHOT_FILE_ID);
	fakeenv_destroy(&fe);
}

TEST(free_buddies_merge)
{
	struct fakeenv fe;
	struct mm_snapshot s;
	struct mm_snapshot_run r[3] = {run(MM_SNAP_FREE, 1, 0), run(MM_SNAP_FREE, 1, 0),
				       run(MM_SNAP_FREE, 2046, 1)};
	struct mm_counts c;
	char err[256];

	init(&fe, "modern-always", 8 * MIB);
	ASSERT_EQ(mm_snapshot_begin(fe.mm, &s), 0);
	ASSERT_EQ(mm_snapshot_runs(&s, r, 3, err, sizeof(err)), 0);
	ASSERT_EQ(mm_snapshot_end(&s, NULL, err, sizeof(err)), 0);
	check(&fe);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.nr_free[10], 2);
	EXPECT_EQ(c.free, 2048);
	fakeenv_destroy(&fe);
}

/* The free list at sentinel head, from its head: up to max pfns into out; returns how many. */
static unsigned list_from_head(struct fakeenv *fe, uint32_t head, uint32_t *out, unsigned max)
{
	unsigned n = 0;

	for (uint32_t p = pfn_frame(fe->mm, head)->next; p != head && n < max;
	     p = pfn_frame(fe->mm, p)->next)
		out[n++] = p;
	return n;
}

/* Free blocks queued as 6.1's and 6.12's __free_one_page would have queued them freed in
 * ascending pfn order: a page whose buddies stay allocated at the head (the highest first), a
 * page whose next-higher buddy is free at the tail (buddy_merge_likely), max-order blocks at the
 * tail in ascending order (boot's FPI_TO_TAIL). Pfns 0-1 free (order 1), 2 free, 3 unmovable,
 * then eight pairs of an unmovable and a free page (5, 7, ..., 19); the rest free. */
TEST(free_lists_in_the_kernels_order)
{
	struct fakeenv fe;
	struct mm_snapshot s;
	struct mm_snapshot_run lead[3] = {run(MM_SNAP_FREE, 2, 1), run(MM_SNAP_FREE, 1, 0),
					  run(MM_SNAP_UNMOVABLE, 1, 0)},
			       pair[2] = {run(MM_SNAP_UNMOVABLE, 1, 0), run(MM_SNAP_FREE, 1, 0)};
	uint32_t got[16];
	char err[256];
	unsigned n;

	init(&fe, "modern-always", 16 * MIB);
	ASSERT_EQ(mm_snapshot_begin(fe.mm, &s), 0);
	ASSERT_EQ(mm_snapshot_runs(&s, lead, 3, err, sizeof(err)), 0);
	for (unsigned i = 0; i < 8; i++)
		ASSERT_EQ(mm_snapshot_runs(&s, pair, 2, err, sizeof(err)), 0);
	ASSERT_EQ(mm_snapshot_end(&s, NULL, err, sizeof(err)), -EINVAL); /* the rest: free */
	check(&fe);
	n = list_from_head(&fe, sentinel(fe.mm, SENT_FREE(0, MM_MT_MOVABLE)), got, 16);
	ASSERT_EQ(n, 9);
	for (unsigned i = 0; i < 8; i++)
		EXPECT_EQ(got[i], 19 - 2 * i);
	EXPECT_EQ(got[8], 2); /* its order-1 buddy pair (0-1) was free */
	n = list_from_head(&fe, sentinel(fe.mm, SENT_FREE(10, MM_MT_MOVABLE)), got, 16);
	ASSERT_EQ(n, 3);
	for (unsigned i = 0; i < 3; i++)
		EXPECT_EQ(got[i], 1024 * (i + 1));
	fakeenv_destroy(&fe);
}

TEST(bad_runs_are_refused)
{
	struct fakeenv fe;
	struct mm_snapshot s;
	struct mm_snapshot_run bad[] = {run(MM_SNAP_FREE, 2, 1), run(MM_SNAP_FREE, 3, 1),
					run(MM_SNAP_ANON, 5000, 0), run(MM_SNAP_NR, 1, 0),
					run(MM_SNAP_FREE, 16, 11)};
	struct mm_snapshot_run one = run(MM_SNAP_ANON, 1, 0);
	struct mm_counts c;
	char err[256];

	init(&fe, "modern-always", 8 * MIB);
	ASSERT_EQ(mm_snapshot_begin(fe.mm, &s), 0);
	ASSERT_EQ(mm_snapshot_runs(&s, &one, 1, err, sizeof(err)), 0);
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		EXPECT_EQ(mm_snapshot_runs(&s, &bad[i], 1, err, sizeof(err)), -EINVAL);
		EXPECT(err[0]);
		EXPECT_EQ(s.next, 1);
	}
	EXPECT_EQ(mm_snapshot_pageblock(&s, 4, MM_MT_MOVABLE), -EINVAL);
	EXPECT_EQ(mm_snapshot_end(&s, NULL, err, sizeof(err)), -EINVAL);
	check(&fe);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.free, 2047);
	EXPECT_EQ(mm_snapshot_begin(fe.mm, &s), -EBUSY); /* no longer untouched */
	fakeenv_destroy(&fe);
}

/* Every pageblock but the last one holds one phantom anon frame: no free 2 MiB block but the
 * last, then a huge fault compacts (the phantom pages move) and gets its block. */
TEST(loaded_pool_compacts)
{
	struct fakeenv fe;
	struct mm_snapshot s;
	struct mm_snapshot_run r[2] = {run(MM_SNAP_ANON, 1, 0), run(MM_SNAP_FREE, 511, 0)};
	struct mm_fault_req req = {.owner = 1ULL << 20,
				   .extent_owner = 1ULL << 20,
				   .advice = MM_VMA_HUGEPAGE,
				   .huge_ok = true,
				   .write = true};
	struct mm_fault_res res;
	struct mm_counts c;
	uint64_t st[MM_STAT_NR];
	char err[256];

	init(&fe, "linux-3.3", 32 * MIB);
	ASSERT_EQ(mm_snapshot_begin(fe.mm, &s), 0);
	for (uint32_t b = 0; b < fe.mm->nr_blocks; b++)
		ASSERT_EQ(mm_snapshot_runs(&s, r, 2, err, sizeof(err)), 0);
	ASSERT_EQ(mm_snapshot_end(&s, NULL, err, sizeof(err)), 0);
	check(&fe);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.free_blocks_order9, 0);
	for (int i = 0; i < 3; i++) {
		req.owner = req.extent_owner = (1ULL << 20) + ((uint64_t)i << 9);
		ASSERT_EQ(mm_fault(fe.mm, &req, &res, NULL), 0);
		check(&fe);
	}
	mm_get_stats(fe.mm, st);
	EXPECT_GT(st[MM_STAT_PGMIGRATE_SUCCESS], 0);
	EXPECT_GT(st[MM_STAT_THP_FAULT_ALLOC], 0);
	fakeenv_destroy(&fe);
}

/* The same pool with the phantom pages mlocked (the snapshot's class U): 6.12's compaction
 * migrates them by default (vm.compact_unevictable_allowed=1) and never with it 0, where every
 * huge fault falls back after a compaction that isolated nothing. */
static void unevictable_pool(const char *policy, uint64_t st[MM_STAT_NR])
{
	struct fakeenv fe;
	struct mm_snapshot s;
	struct mm_snapshot_run r[2] = {run(MM_SNAP_UNEVICTABLE, 1, 0), run(MM_SNAP_FREE, 511, 0)};
	struct mm_fault_req req = {.advice = MM_VMA_HUGEPAGE, .huge_ok = true, .write = true};
	struct mm_fault_res res;
	char err[256];

	init(&fe, policy, 32 * MIB);
	ASSERT_EQ(mm_snapshot_begin(fe.mm, &s), 0);
	for (uint32_t b = 0; b < fe.mm->nr_blocks; b++)
		ASSERT_EQ(mm_snapshot_runs(&s, r, 2, err, sizeof(err)), 0);
	ASSERT_EQ(mm_snapshot_end(&s, NULL, err, sizeof(err)), 0);
	check(&fe);
	EXPECT(pfn_frame(fe.mm, 0)->owner & MM_OWNER_UNEVICTABLE);
	EXPECT(pfn_frame(fe.mm, 0)->owner & MM_OWNER_FOREIGN);
	for (int i = 0; i < 3; i++) {
		req.owner = req.extent_owner = (1ULL << 20) + ((uint64_t)i << 9);
		ASSERT_EQ(mm_fault(fe.mm, &req, &res, NULL), 0);
		check(&fe);
	}
	mm_get_stats(fe.mm, st);
	fakeenv_destroy(&fe);
}

TEST(unevictable_pages_compact_only_when_allowed)
{
	uint64_t st[MM_STAT_NR];

	unevictable_pool("thp-always/always:proactiveness=0,kcompactd=no", st);
	EXPECT_GT(st[MM_STAT_PGMIGRATE_SUCCESS], 0);
	EXPECT_EQ(st[MM_STAT_THP_FAULT_ALLOC], 3);
	unevictable_pool("thp-always/always:proactiveness=0,kcompactd=no,"
			 "compact-unevictable-allowed=no",
			 st);
	EXPECT_EQ(st[MM_STAT_PGMIGRATE_SUCCESS], 0);
	EXPECT_EQ(st[MM_STAT_THP_FAULT_ALLOC], 0);
	EXPECT_EQ(st[MM_STAT_THP_FAULT_FALLBACK], 3);
	EXPECT_GT(st[MM_STAT_COMPACT_FAIL], 0);
	EXPECT_EQ(st[MM_STAT_COMPACT_SUCCESS], 0);
}

/* A 16 MiB pool of two zones: "DMA" frames [0, 2048) (unmovable, then one free order-10 block
 * at 1024), "DMA32" [2048, 4096) (a free order-9 block at 2048, 128 free frames after it, the
 * rest unmovable). The DMA zone's lowmem_reserve is `reserve`. */
static void load_two_zones(struct fakeenv *fe, const char *policy, uint32_t reserve)
{
	struct mm_snapshot s;
	struct mm_snapshot_zone z[2] = {
	    {.name = "DMA",
	     .start = 0,
	     .end = 2048,
	     .wmark = {10, 12, 14},
	     .lowmem_reserve = reserve},
	    {.name = "DMA32", .start = 2048, .end = 4096, .wmark = {20, 25, 30}}};
	struct mm_snapshot_run r[] = {run(MM_SNAP_UNMOVABLE, 1024, 0), run(MM_SNAP_FREE, 1024, 10),
				      run(MM_SNAP_FREE, 512, 9), run(MM_SNAP_FREE, 128, 7),
				      run(MM_SNAP_UNMOVABLE, 1408, 0)};
	uint32_t wm[3] = {20, 25, 30};
	char err[256];

	init(fe, policy, 16 * MIB);
	ASSERT_EQ(mm_snapshot_begin(fe->mm, &s), 0);
	ASSERT_EQ(mm_snapshot_zones(&s, z, 2, err, sizeof(err)), 0);
	ASSERT_EQ(mm_snapshot_runs(&s, r, 5, err, sizeof(err)), 0);
	ASSERT_EQ(mm_snapshot_end(&s, wm, err, sizeof(err)), 0);
	check(fe);
}

/* Huge faults until one falls back; the heads of the huge ones into heads[] (at most 4). */
static unsigned huge_faults(struct fakeenv *fe, uint32_t heads[4])
{
	struct mm_fault_req req = {.advice = MM_VMA_HUGEPAGE, .huge_ok = true, .write = true};
	struct mm_fault_res res;
	unsigned n = 0;

	for (int i = 0; i < 4; i++) {
		req.owner = req.extent_owner = (1ULL << 20) + ((uint64_t)i << 9);
		ASSERT_EQ(mm_fault(fe->mm, &req, &res, NULL), 0);
		check(fe);
		if (res.order != MM_HPAGE_ORDER)
			break;
		heads[n++] = res.pfn;
	}
	return n;
}

/* compact_zone (6.12) restarts a cached free position outside the zone: one left below the main
 * zone's first pfn (a fast free search can leave it there) must not make the scanners meet at
 * once. Program pages in every other 16 frames of DMA32 are what to compact. */
TEST(zones_compaction_restarts_a_free_position_below_the_zone)
{
	struct fakeenv fe;
	struct fault_ctx fc = {0};
	struct alloc_ctx ac = {.order = 9,
			       .mt = MM_MT_MOVABLE,
			       .gfp = GFP_HIGHUSER_MOVABLE,
			       .alloc_flags = WMARK_MIN,
			       .fc = &fc};
	uint64_t st[MM_STAT_NR];
	uint32_t captured = MM_NO_PFN;

	struct mm_snapshot snap;
	struct mm_snapshot_zone z[2] = {
	    {.name = "DMA", .start = 0, .end = 2048, .wmark = {10, 12, 14}, .lowmem_reserve = 100},
	    {.name = "DMA32", .start = 2048, .end = 8192, .wmark = {20, 25, 30}}};
	struct mm_snapshot_run r[] = {run(MM_SNAP_UNMOVABLE, 1024, 0), run(MM_SNAP_FREE, 1024, 10),
				      run(MM_SNAP_FREE, 6144, 10)};
	uint32_t wm[3] = {20, 25, 30};
	char err[256];

	init(&fe, "thp-always/always", 32 * MIB);
	ASSERT_EQ(mm_snapshot_begin(fe.mm, &snap), 0);
	ASSERT_EQ(mm_snapshot_zones(&snap, z, 2, err, sizeof(err)), 0);
	ASSERT_EQ(mm_snapshot_runs(&snap, r, 3, err, sizeof(err)), 0);
	ASSERT_EQ(mm_snapshot_end(&snap, wm, err, sizeof(err)), 0);
	for (uint32_t p = 2048; p < 8192; p++)
		if ((p / 16) % 2 == 0)
			ASSERT_EQ(mm_debug_place(fe.mm, p, DBG_ANON, 0x1000 + p), 0);
	check(&fe);
	fe.mm->compact_cached_free_pfn = fe.mm->zone_start_pfn - MM_HPAGE_NR;
	(void)try_to_compact_pages(fe.mm, &ac, MM_MIGRATE_ASYNC, &captured);
	if (captured != MM_NO_PFN)
		free_one_block(fe.mm, captured, 9, NULL);
	check(&fe);
	mm_get_stats(fe.mm, st);
	EXPECT_GT(st[MM_STAT_COMPACT_MIGRATE_SCANNED], 0);
	EXPECT_GT(st[MM_STAT_COMPACT_FREE_SCANNED], 0);
	EXPECT(fe.mm->compact_cached_free_pfn >= fe.mm->zone_start_pfn);
	fakeenv_destroy(&fe);
}

/* Each zone's free blocks are counted and listed in that zone; the counts are the node's. */
TEST(zones_load_apart)
{
	struct fakeenv fe;
	struct mm_counts c;

	load_two_zones(&fe, "thp-always/never", 100);
	EXPECT_EQ(fe.mm->zone_start_pfn, 2048);
	EXPECT_EQ(fe.mm->nr_lower, 1);
	EXPECT_EQ(fe.mm->nr_free_pages, 512 + 128);
	EXPECT_EQ(fe.mm->nr_free[10], 0);
	EXPECT_EQ(fe.mm->lower[0].area.nr_free_pages, 1024);
	EXPECT_EQ(fe.mm->lower[0].area.nr_free[10], 1);
	EXPECT_EQ(fe.mm->lower[0].lowmem_reserve, 100);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.free, 1024 + 512 + 128);
	EXPECT_EQ(c.nr_free[10], 1);
	EXPECT_EQ(c.nr_free[9], 1);
	EXPECT_EQ(c.nr_free[7], 1);
	EXPECT_EQ(c.wmark_min, 20);
	fakeenv_destroy(&fe);
}

/* defrag=never: the first THP is DMA32's block, the second comes from DMA (1024 - 511 free
 * pages stay above its low mark 12 + reserve 100), the third would leave DMA 1 page: it falls
 * back to a base page. */
TEST(zones_fall_back_to_lower_zone)
{
	struct fakeenv fe;
	uint32_t heads[4];
	uint64_t st[MM_STAT_NR];

	load_two_zones(&fe, "thp-always/never", 100);
	ASSERT_EQ(huge_faults(&fe, heads), 2);
	EXPECT_EQ(heads[0], 2048);
	EXPECT_GE(heads[1], 1024);
	EXPECT_LT(heads[1], 2048);
	EXPECT_EQ(fe.mm->lower[0].area.nr_free_pages, 512);
	mm_get_stats(fe.mm, st);
	EXPECT_EQ(st[MM_STAT_THP_FAULT_ALLOC], 2);
	EXPECT_EQ(st[MM_STAT_THP_FAULT_FALLBACK], 1);
	fakeenv_destroy(&fe);
}

/* A lowmem_reserve of 600: 1024 - 511 free pages are not above 12 + 600, so DMA gives no THP. */
TEST(zones_lowmem_reserve_keeps_lower_zone)
{
	struct fakeenv fe;
	uint32_t heads[4];

	load_two_zones(&fe, "thp-always/never", 600);
	ASSERT_EQ(huge_faults(&fe, heads), 1);
	EXPECT_EQ(heads[0], 2048);
	EXPECT_EQ(fe.mm->lower[0].area.nr_free_pages, 1024);
	fakeenv_destroy(&fe);
}

/* A THP taken from DMA goes back to DMA's lists, merged whole again within DMA; DMA32's lists
 * are untouched by it. A zone boundary off the max-order grid is refused. */
TEST(zones_free_within_zone)
{
	struct fakeenv fe;
	struct mm_snapshot s;
	uint32_t heads[4];
	struct mm_snapshot_zone bad[2] = {{.name = "DMA", .start = 0, .end = 512},
					  {.name = "DMA32", .start = 512, .end = 4096}};
	char err[256];

	load_two_zones(&fe, "thp-always/never", 100);
	ASSERT_EQ(huge_faults(&fe, heads), 2);
	mm_anon_free(fe.mm, heads[1], MM_HPAGE_ORDER, NULL);
	check(&fe);
	EXPECT_EQ(fe.mm->lower[0].area.nr_free_pages, 1024);
	EXPECT_EQ(fe.mm->lower[0].area.nr_free[10], 1);
	EXPECT_EQ(fe.mm->nr_free[9], 0);
	EXPECT_EQ(fe.mm->nr_free[10], 0);
	fakeenv_destroy(&fe);

	init(&fe, "thp-always/never", 16 * MIB);
	ASSERT_EQ(mm_snapshot_begin(fe.mm, &s), 0);
	EXPECT_EQ(mm_snapshot_zones(&s, bad, 2, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "boundary") != NULL);
	fakeenv_destroy(&fe);
}

TEST_MAIN()

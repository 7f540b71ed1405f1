/* core/mm compaction: each era's and migrate mode's isolation / skip / wait / writeout rules on
 * crafted pageblocks, scanners meeting, skip bits, capture, and the deferral sequence. */
#include "harness.h"
#include "mm_fakeenv.h"
#include "mm/compaction.h"

#define MIB (1ULL << 20)
#define MS  1000000ULL

/* pfns of block 0's special frames */
enum { P_DIRTY = 10, P_WB = 11, P_CLEAN = 12, P_ANON = 13, P_FOREIGN = 14 };
#define ANON_OWNER 0x1000

/* A 16 MiB pool (8 pageblocks): block 0 free (for the caller to fill); blocks 1-3 full of
 * unmovable frames; blocks 4-7 free but for their last frame (unmovable), so no free 2 MiB
 * block exists and compaction for order 9 must migrate block 0's pages into blocks 4-7. */
static void pool_with_targets(struct fakeenv *fe, const char *spec)
{
	char err[256];

	ASSERT_EQ(fakeenv_init(fe, spec, 16 * MIB, false, err, sizeof(err)), 0);
	for (uint32_t pfn = 512; pfn < 2048; pfn++)
		ASSERT_EQ(mm_debug_place(fe->mm, pfn, DBG_UNMOVABLE, 0), 0);
	for (uint32_t b = 4; b < 8; b++)
		ASSERT_EQ(mm_debug_place(fe->mm, b * 512 + 511, DBG_UNMOVABLE, 0), 0);
}

/* pool_with_targets, block 0 free but for five frames of different kinds (2551 frames free).
 * The writeback of P_WB completes at 1 s, a writeout's 10 ms after it starts. */
static void craft(struct fakeenv *fe, const char *spec)
{
	char err[256];

	pool_with_targets(fe, spec);
	ASSERT_EQ(mm_debug_place(fe->mm, P_DIRTY, DBG_FILE_DIRTY, MM_OWNER_FILE(1, 10)), 0);
	ASSERT_EQ(mm_debug_place(fe->mm, P_WB, DBG_FILE_WRITEBACK, MM_OWNER_FILE(1, 11)), 0);
	ASSERT_EQ(mm_debug_place(fe->mm, P_CLEAN, DBG_FILE_CLEAN, MM_OWNER_FILE(1, 12)), 0);
	ASSERT_EQ(mm_debug_place(fe->mm, P_ANON, DBG_ANON, ANON_OWNER), 0);
	ASSERT_EQ(mm_debug_place(fe->mm, P_FOREIGN, DBG_FOREIGN, 0x2000), 0);
	ASSERT_EQ(mm_check(fe->mm, err, sizeof(err)), 0);
	fe->wb_done_at[P_WB] = 1000 * MS;
	fe->writeout_latency_ns = 10 * MS;
}

struct run {
	enum mm_compact_result result;
	uint32_t captured;
	struct mm_fault_rec rec;
	uint64_t st[MM_STAT_NR];
};

/* One direct compaction for an order-9 MOVABLE allocation in the given mode. */
static void compact(struct fakeenv *fe, enum mm_migrate_mode mode, struct run *r)
{
	struct fault_ctx fc = {.rec = &r->rec};
	struct alloc_ctx ac = {.order = 9,
			       .mt = MM_MT_MOVABLE,
			       .gfp = GFP_HIGHUSER_MOVABLE,
			       .alloc_flags = WMARK_MIN,
			       .fc = &fc};
	char err[256];

	memset(&r->rec, 0, sizeof(r->rec));
	r->result = try_to_compact_pages(fe->mm, &ac, mode, &r->captured);
	if (r->captured != MM_NO_PFN)
		free_one_block(fe->mm, r->captured, 9, NULL);
	mm_get_stats(fe->mm, r->st);
	ASSERT_EQ(mm_check(fe->mm, err, sizeof(err)), 0);
}

/* The frame of owner now lives where? (page cache index / reverse map) */
static uint32_t where_file(struct fakeenv *fe, uint64_t idx)
{
	return pc_lookup(fe->mm, MM_OWNER_FILE(1, idx));
}

static bool block0_free(struct fakeenv *fe)
{
	for (uint32_t p = 0; p < 512; p++)
		if (pfn_frame(fe->mm, p)->state != FS_FREE)
			return false;
	return true;
}

/* 3.1 async isolates everything, then fails dirty and writeback pages with -EBUSY. */
TEST(mode_31_async_isolates_all_fails_dirty_and_writeback)
{
	struct fakeenv fe;
	struct run r;

	craft(&fe, "linux-3.1");
	compact(&fe, MM_MIGRATE_ASYNC, &r);
	EXPECT_EQ(r.result, MM_COMPACT_COMPLETE);
	EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_SUCCESS], 3);
	EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_FAIL], 2);
	EXPECT_EQ(fe.n_wait, 0);
	EXPECT_EQ(fe.n_writeout, 0);
	EXPECT_EQ(fe.n_copy, 1);    /* the clean page-cache page */
	EXPECT_EQ(fe.n_migrate, 1); /* the program page; foreign frames need no hook */
	EXPECT_EQ(where_file(&fe, 10), P_DIRTY);
	EXPECT_EQ(where_file(&fe, 11), P_WB);
	EXPECT_NE(where_file(&fe, 12), P_CLEAN);
	EXPECT_EQ(pfn_frame(fe.mm, where_file(&fe, 12))->owner, MM_OWNER_FILE(1, 12));
	EXPECT_EQ(pfn_frame(fe.mm, P_ANON)->state, FS_FREE);
	for (uint32_t pfn = 512; pfn < 2048; pfn++)
		ASSERT_EQ(pfn_frame(fe.mm, pfn)->state, FS_UNMOVABLE);
	EXPECT(!block0_free(&fe));
	fakeenv_destroy(&fe);
}

/* 3.2 async (ISOLATE_CLEAN) leaves dirty and writeback pages on the LRU; 3.2 sync is 3.1's:
 * it writes the dirty page out and waits on both. */
TEST(mode_32_async_isolates_clean_only)
{
	struct fakeenv fe;
	struct run r;

	craft(&fe, "linux-3.2");
	compact(&fe, MM_MIGRATE_ASYNC, &r);
	EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_SUCCESS], 3);
	EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_FAIL], 0);
	EXPECT_EQ(where_file(&fe, 10), P_DIRTY);
	EXPECT_EQ(where_file(&fe, 11), P_WB);
	fakeenv_destroy(&fe);

	craft(&fe, "linux-3.2");
	compact(&fe, MM_MIGRATE_SYNC, &r);
	EXPECT_EQ(fe.n_writeout, 1);
	EXPECT_GE(fe.n_wait, 2);
	EXPECT(block0_free(&fe));
	fakeenv_destroy(&fe);
}

/* 3.3 async (ISOLATE_ASYNC_MIGRATE) does not even isolate them; 3.3 sync-light isolates and
 * fails them without waiting or writing out. */
TEST(mode_33_async_filters_sync_light_fails)
{
	struct fakeenv fe;
	struct run r;

	craft(&fe, "linux-3.3");
	compact(&fe, MM_MIGRATE_ASYNC, &r);
	EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_SUCCESS], 3);
	EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_FAIL], 0);
	fakeenv_destroy(&fe);

	craft(&fe, "linux-3.3");
	compact(&fe, MM_MIGRATE_SYNC_LIGHT, &r);
	EXPECT_EQ(r.result, MM_COMPACT_COMPLETE);
	EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_SUCCESS], 3);
	EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_FAIL], 2);
	EXPECT_EQ(fe.n_wait, 0);
	EXPECT_EQ(fe.n_writeout, 0);
	EXPECT(!block0_free(&fe));
	fakeenv_destroy(&fe);
}

/* 6.12 sync-light filters at isolation; 6.12 async direct compaction gives up a whole block on
 * the first frame it cannot isolate (skip_on_failure) and marks it skipped. Sync-light moves
 * the three others out of block 0; fast_isolate_freepages takes their targets in the top
 * quarter of the span (block 5), where the migrate scanner, reaching block 5 before it meets
 * the free scanner, moves them once more (3 more successes), as 6.12 would. */
TEST(mode_modern_sync_light_filters_async_skips_block)
{
	struct fakeenv fe;
	struct run r;

	craft(&fe, "modern-always");
	compact(&fe, MM_MIGRATE_SYNC_LIGHT, &r);
	EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_SUCCESS], 6);
	EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_FAIL], 0);
	EXPECT_EQ(fe.n_wait, 0);
	EXPECT_EQ(where_file(&fe, 10), P_DIRTY);
	EXPECT_EQ(where_file(&fe, 11), P_WB);
	EXPECT_GE(where_file(&fe, 12), 2560);
	fakeenv_destroy(&fe);

	craft(&fe, "modern-always");
	compact(&fe, MM_MIGRATE_ASYNC, &r);
	EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_SUCCESS], 0);
	EXPECT_EQ(r.st[MM_STAT_COMPACT_ISOLATED], 0);
	EXPECT(pageblock_skip(fe.mm, 0));
	EXPECT(pageblock_skip(fe.mm, 512));
	EXPECT(r.result == MM_COMPACT_COMPLETE || r.result == MM_COMPACT_PARTIAL_SKIPPED);
	fakeenv_destroy(&fe);
}

/* 6.12 async direct compaction of a block of 16-page runs of program pages between 16-page
 * holes: after each COMPACT_CLUSTER_MAX batch the scan resumes in a hole that the migrated
 * pages, freed, have merged into. The kernel frees them to the per-cpu lists and steps over the
 * hole's buddy pages; here the scan steps over the merged block, and does not take it for an
 * isolation failure (skip_on_failure would leave the block after its first 32 pages). */
TEST(modern_async_resumes_past_merged_holes)
{
	struct fakeenv fe;
	struct run r;

	pool_with_targets(&fe, "modern-always");
	for (uint32_t p = 0; p < 512; p++)
		if ((p / 16) % 2 == 0)
			ASSERT_EQ(mm_debug_place(fe.mm, p, DBG_ANON, ANON_OWNER + p), 0);
	compact(&fe, MM_MIGRATE_ASYNC, &r);
	EXPECT_EQ(r.result, MM_COMPACT_SUCCESS);
	EXPECT_EQ(r.captured, 0);
	/* and one batch more: 6.12 sees the capture after it
	 * (capture_is_seen_after_the_drain_and_in_6_12_after_one_more_batch) */
	EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_SUCCESS], 288);
	EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_FAIL], 0);
	fakeenv_destroy(&fe);
}

/* The drain after a scan that jumped: blocks 0-3 are UNMOVABLE blocks full of kernel pages (async
 * direct compaction's suitable_migration_source passes over them without scanning), block 4 holds
 * 32 program pages and is otherwise free (above fast_find_migrateblock's search limit), blocks 5-7
 * are free but for a kernel page each (the targets). One async order-9 compaction isolates the 32
 * in the same isolate_migratepages call that jumped there. 6.1 compact_zone sets
 * "last_migrated_pfn = iteration_start_pfn", in block 0, so check_drain drains after that batch:
 * block 4 is captured at once. 6.12 sets it to the batch's own block ("pageblock_start_pfn(
 * cc->migrate_pfn - 1)"), so it drains only once the scanner has left block 4. */
static uint64_t scanned_after_a_jump(const char *spec, uint64_t *migrated)
{
	struct fakeenv fe;
	struct run r;
	char err[256];
	uint64_t scanned;

	ASSERT_EQ(fakeenv_init(&fe, spec, 16 * MIB, false, err, sizeof(err)), 0);
	for (uint32_t pfn = 0; pfn < 2048; pfn++)
		ASSERT_EQ(mm_debug_place(fe.mm, pfn, DBG_UNMOVABLE, 0), 0);
	for (uint32_t b = 0; b < 4; b++)
		set_pageblock_mt(fe.mm, b * 512, MM_MT_UNMOVABLE);
	for (uint32_t p = 2048; p < 2080; p++)
		ASSERT_EQ(mm_debug_place(fe.mm, p, DBG_ANON, ANON_OWNER + p), 0);
	for (uint32_t b = 5; b < 8; b++)
		ASSERT_EQ(mm_debug_place(fe.mm, b * 512 + 511, DBG_UNMOVABLE, 0), 0);
	compact(&fe, MM_MIGRATE_ASYNC, &r);
	EXPECT_EQ(r.result, MM_COMPACT_SUCCESS);
	EXPECT_EQ(r.captured, 2048);
	*migrated = r.st[MM_STAT_PGMIGRATE_SUCCESS];
	scanned = r.st[MM_STAT_COMPACT_MIGRATE_SCANNED];
	fakeenv_destroy(&fe);
	return scanned;
}

TEST(a_batch_after_a_jump_drains_at_once_in_6_1_only)
{
	/* 6.1: the batch and the scan up to it, no second look at block 4 (with 6.12's
	 * last_migrated_pfn the 6.1 model steps over block 4's free run too: 55) */
	uint64_t migrated;

	EXPECT_EQ(scanned_after_a_jump("linux-6.1", &migrated), 54);
	EXPECT_EQ(migrated, 32);
	/* 6.12 also migrates a batch more before it sees the capture (above) */
	EXPECT_GT(scanned_after_a_jump("modern-always", &migrated), 55);
	EXPECT_EQ(migrated, 64);
}

/* A program page that will not move (its owner answers -EBUSY). */
static int refuse_pfn_5(struct fakeenv *fe, uint64_t owner, uint32_t from, uint32_t to)
{
	(void)fe, (void)to;
	return owner == ANON_OWNER + 5 && from == 5 ? -EBUSY : 0;
}

/* Block 0 is full of program pages (with free pages of order 3 or more in it, 6.1's
 * fast_find_migrateblock would pick the block and give it up); the page at 5 fails to
 * migrate. An async direct compaction isolates the first 32 (COMPACT_CLUSTER_MAX) and fails one of
 * them. 6.12 compact_zone rescans the rest of the pageblock (finish_pageblock, 6.4) and moves
 * 100..131 too; 6.1 compact_zone skips the rest of the order-aligned block (cc->migrate_pfn =
 * block_end_pfn( cc->migrate_pfn - 1, cc->order)), so 100..131 stay. SYNC_LIGHT has neither rule
 * in 6.1 and goes on through the block. Counted: the pages of 100..131 still where they were placed
 * (the number of migrations is not, since fast_isolate_freepages may put targets where the migrate
 * scanner later moves them again). */
static unsigned stayed_after_a_failure(const char *spec, enum mm_migrate_mode mode)
{
	unsigned stayed = 0;

	struct fakeenv fe;
	struct run r;

	pool_with_targets(&fe, spec);
	for (uint32_t p = 0; p < 512; p++)
		ASSERT_EQ(mm_debug_place(fe.mm, p, DBG_ANON, ANON_OWNER + p), 0);
	fe.on_migrate = refuse_pfn_5;
	compact(&fe, mode, &r);
	EXPECT_EQ(pfn_frame(fe.mm, 5)->state, FS_ANON);
	EXPECT(r.st[MM_STAT_PGMIGRATE_SUCCESS] >= 31u);
	for (uint32_t p = 0; p < 32; p++)
		stayed += pfn_frame(fe.mm, 100 + p)->owner == ANON_OWNER + 100 + p;
	fakeenv_destroy(&fe);
	return stayed;
}

TEST(async_migration_failure_6_1_skips_the_block_6_12_rescans_it)
{
	EXPECT_EQ(stayed_after_a_failure("linux-6.1", MM_MIGRATE_ASYNC), 32u);
	EXPECT_EQ(stayed_after_a_failure("thp-always/madvise", MM_MIGRATE_ASYNC), 0u);
	EXPECT_EQ(stayed_after_a_failure("linux-6.1", MM_MIGRATE_SYNC_LIGHT), 0u);
}

/* 3.1 sync: write the dirty page out at once, retry, and from pass 3 wait on writeback;
 * everything moves and block 0 becomes a free 2 MiB block. The list runs from the page
 * isolated last (list_add), so pass 3 meets the writeback page first and waits for it (1 s);
 * the page written out at the start (10 ms) is done by then. */
TEST(mode_31_sync_writes_out_and_waits_from_pass_3)
{
	struct fakeenv fe;
	struct run r;

	craft(&fe, "linux-3.1");
	compact(&fe, MM_MIGRATE_SYNC, &r);
	/* 3.x compact_finished wants LOW + 2^order with the per-order decay: one free 2 MiB
	 * block is not enough for it, so the scanners run on and meet; the allocation at MIN
	 * that follows succeeds */
	EXPECT_EQ(r.result, MM_COMPACT_COMPLETE);
	EXPECT(zone_watermark_ok(fe.mm, 9, wmark_pages(fe.mm, WMARK_MIN), 0));
	EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_SUCCESS], 5);
	EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_FAIL], 0);
	EXPECT_EQ(fe.n_writeout, 1);
	EXPECT_EQ(r.st[MM_STAT_COMPACT_WRITEOUT], 1);
	ASSERT_EQ(fe.n_wait, 2);
	EXPECT_EQ(fe.wait_pfn[0], P_WB);
	EXPECT_EQ(fe.wait_ns[0], 1000 * MS);
	EXPECT_EQ(fe.wait_timeout[0], 0);
	EXPECT_EQ(fe.wait_pfn[1], P_DIRTY);
	EXPECT_EQ(fe.wait_ns[1], 0);
	EXPECT_EQ(r.st[MM_STAT_COMPACT_WB_WAIT], 2);
	EXPECT_EQ(r.rec.wb_waits, 2);
	EXPECT_EQ(r.rec.wb_wait_ns, 1000 * MS);
	EXPECT_EQ(r.rec.wb_wait_max_us, 1000000);
	EXPECT_EQ(fe.n_copy, 3);
	EXPECT(block0_free(&fe));
	EXPECT_GE(mm_fragmentation_index(fe.mm, 9), -1000);
	EXPECT_EQ(mm_fragmentation_index(fe.mm, 9), -1000);
	fakeenv_destroy(&fe);
}

/* A bounded wait gives up on a slow frame: that page fails, the rest still migrate (the
 * writeback page is waited on first, 50 ms, then the page written out is done). */
TEST(mode_31_sync_bounded_wait)
{
	struct fakeenv fe;
	struct run r;

	craft(&fe, "linux-3.1:wb-wait-max=50ms");
	compact(&fe, MM_MIGRATE_SYNC, &r);
	EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_SUCCESS], 4);
	EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_FAIL], 1);
	EXPECT_EQ(fe.n_wait_timeout, 1);
	ASSERT_EQ(fe.n_wait, 2);
	EXPECT_EQ(fe.wait_pfn[0], P_WB);
	EXPECT_EQ(fe.wait_timeout[0], 50 * MS);
	EXPECT_EQ(fe.wait_ns[0], 50 * MS);
	EXPECT_EQ(fe.wait_ns[1], 0);
	EXPECT_EQ(where_file(&fe, 11), P_WB);
	EXPECT(mm_frame_under_writeback(fe.mm, P_WB));
	EXPECT(!block0_free(&fe));
	fakeenv_destroy(&fe);
}

/* Without a writeout hook dirty pages cannot migrate even in SYNC. */
TEST(mode_sync_without_writeout_hook)
{
	struct mm_env_ops ops = fe_ops_single;
	struct fakeenv fe;
	struct run r;

	craft(&fe, "linux-3.1");
	ops.writeout = NULL;
	fe.mm->env.ops = &ops;
	compact(&fe, MM_MIGRATE_SYNC, &r);
	EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_SUCCESS], 4);
	EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_FAIL], 1);
	EXPECT_EQ(where_file(&fe, 10), P_DIRTY);
	fakeenv_destroy(&fe);
}

/* 6.12 at SYNC priority waits from the first pass (no force gating). */
TEST(mode_modern_sync_waits_from_first_pass)
{
	struct fakeenv fe;
	struct run r;

	craft(&fe, "modern-always:second-compaction=sync");
	compact(&fe, MM_MIGRATE_SYNC, &r);
	EXPECT_EQ(r.result, MM_COMPACT_SUCCESS);
	/* and one batch more: 6.12 sees the capture after it
	 * (capture_is_seen_after_the_drain_and_in_6_12_after_one_more_batch) */
	EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_SUCCESS], 10);
	EXPECT_EQ(fe.n_wait, 2);
	EXPECT_EQ(fe.wait_pfn[0], P_WB); /* waited in pass 0, before the written-out page */
	fakeenv_destroy(&fe);
}

/* 6.12 captures the block the migration frees for the compacting caller. */
TEST(capture_hands_the_block_to_the_caller)
{
	struct fakeenv fe;
	struct run r;

	pool_with_targets(&fe, "modern-always");
	for (uint32_t p = 100; p < 110; p++)
		ASSERT_EQ(mm_debug_place(fe.mm, p, DBG_FOREIGN, p), 0);
	compact(&fe, MM_MIGRATE_SYNC_LIGHT, &r);
	EXPECT_EQ(r.result, MM_COMPACT_SUCCESS);
	EXPECT_EQ(r.captured, 0);
	/* and one batch more: 6.12 sees the capture after it
	 * (capture_is_seen_after_the_drain_and_in_6_12_after_one_more_batch) */
	EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_SUCCESS], 20);
	fakeenv_destroy(&fe);
}

/* pool_with_targets, with 64 program pages in block 0 and 64 in block 4, one every 8 pfns (free
 * pages of order 2 at most between them, so no fast_find_migrateblock picks either block). The
 * kernel frees migrated sources to the per-cpu lists and drains them (check_drain in 6.1 and
 * 6.12 compact_zone) once the migrate scanner has left the block of the last migration; the
 * drain frees block 0 whole, and that is where it is captured. 6.1 checks for a captured page
 * after check_drain and stops there, 64 pages moved; 6.12 checks before it, so it first
 * isolates and moves one more batch: past the unmovable blocks 1-3, block 4's first 32 pages.
 * Each block the scan finished moves the cached migrate position to the end of the block after
 * it (update_cached_migrate takes pageblock_end_pfn of the block's end): 6.1 finished block 0
 * (1024), 6.12 blocks 0-3 (2560). */
TEST(capture_is_seen_after_the_drain_and_in_6_12_after_one_more_batch)
{
	static const char *const specs[] = {"linux-6.1", "modern-always"};

	for (int i = 0; i < 2; i++) {
		struct fakeenv fe;
		struct run r;
		unsigned moved4 = 0;

		pool_with_targets(&fe, specs[i]);
		for (uint32_t p = 0; p < 512; p += 8) {
			ASSERT_EQ(mm_debug_place(fe.mm, p, DBG_ANON, ANON_OWNER + p), 0);
			ASSERT_EQ(mm_debug_place(fe.mm, 2048 + p, DBG_ANON, ANON_OWNER + 2048 + p),
				  0);
		}
		compact(&fe, MM_MIGRATE_SYNC_LIGHT, &r);
		EXPECT_EQ(r.result, MM_COMPACT_SUCCESS);
		EXPECT_EQ(r.captured, 0);
		for (uint32_t p = 2048; p < 2560; p += 8)
			moved4 += pfn_frame(fe.mm, p)->owner != ANON_OWNER + p;
		EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_SUCCESS], i ? 96 : 64);
		EXPECT_EQ(moved4, i ? 32u : 0u);
		EXPECT_EQ(fe.mm->compact_cached_migrate_pfn[0], i ? 2560 : 1024);
		EXPECT_EQ(fe.mm->compact_cached_migrate_pfn[1], i ? 2560 : 1024);
		fakeenv_destroy(&fe);
	}
}

/* With nothing movable the scanners meet: COMPLETE; 6.12 resets the cached positions, asks
 * kswapd to flush skip bits (which keep block 0's bit: no LRU page in it), and each pfn is
 * scanned at most once. */
TEST(scanners_meet)
{
	static const char *const specs[] = {"linux-3.1", "linux-3.2", "linux-3.3", "modern-always"};

	for (int i = 0; i < 4; i++) {
		struct fakeenv fe;
		struct run r;
		char err[256];

		ASSERT_EQ(fakeenv_init(&fe, specs[i], 16 * MIB, false, err, sizeof(err)), 0);
		for (uint32_t b = 0; b < 8; b++)
			ASSERT_EQ(mm_debug_place(fe.mm, b * 512 + 7, DBG_UNMOVABLE, 0), 0);
		compact(&fe, MM_MIGRATE_SYNC_LIGHT, &r);
		EXPECT_EQ(r.result, MM_COMPACT_COMPLETE);
		EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_SUCCESS] + r.st[MM_STAT_PGMIGRATE_FAIL], 0);
		EXPECT_GT(r.st[MM_STAT_COMPACT_MIGRATE_SCANNED], 0);
		EXPECT_LE(r.st[MM_STAT_COMPACT_MIGRATE_SCANNED], 4096);
		EXPECT_LE(r.st[MM_STAT_COMPACT_FREE_SCANNED], 4096);
		if (i == 3) {
			EXPECT(fe.mm->compact_blockskip_flush);
			EXPECT_EQ(fe.mm->compact_cached_migrate_pfn[1], 0);
			EXPECT_EQ(fe.mm->compact_cached_free_pfn, 3584);
			EXPECT(pageblock_skip(fe.mm, 0));
			reset_isolation_suitable(fe.mm); /* kswapd going to sleep */
			/* no LRU page in block 0: __reset_isolation_pfn's sample leaves it */
			EXPECT(pageblock_skip(fe.mm, 0));
			EXPECT(!fe.mm->compact_blockskip_flush);
		}
		fakeenv_destroy(&fe);
	}
}

/* The flush (6.12 and 6.1 __reset_isolation_suitable / __reset_isolation_pfn) clears a skip
 * bit only where a sample every 8 pages finds an LRU page (lower half) or a buddy page (upper
 * half; a MOVABLE block until the first is cleared, then either kind), and restarts the
 * scanners at the first blocks it cleared. Every bit set; block 0 free but for a program page at
 * pfn 16, blocks 1-3 unmovable, blocks 4-7 free but for their last frame, block 7 UNMOVABLE:
 * blocks 0 and 6 (the first cleared on each side), 5 and 4 come clear; the free scanner restarts
 * at block 6's last pfn, 3583. */
TEST(flush_samples_blocks_and_restarts_at_the_first_cleared)
{
	static const char *const specs[] = {"modern-always", "linux-6.1"};

	for (int i = 0; i < 2; i++) {
		struct fakeenv fe;

		pool_with_targets(&fe, specs[i]);
		ASSERT_EQ(mm_debug_place(fe.mm, 16, DBG_FOREIGN, 16), 0);
		set_pageblock_mt(fe.mm, 3584, MM_MT_UNMOVABLE);
		for (uint32_t b = 0; b < 8; b++)
			set_pageblock_skip(fe.mm, b * 512);
		fe.mm->compact_blockskip_flush = true;
		reset_isolation_suitable(fe.mm);
		for (uint32_t b = 0; b < 8; b++)
			EXPECT_EQ(pageblock_skip(fe.mm, b * 512), b >= 1 && (b <= 3 || b == 7));
		EXPECT_EQ(fe.mm->compact_init_migrate_pfn, 0);
		EXPECT_EQ(fe.mm->compact_cached_migrate_pfn[0], 0);
		EXPECT_EQ(fe.mm->compact_init_free_pfn, 3583);
		EXPECT_EQ(fe.mm->compact_cached_free_pfn, 3583);
		fakeenv_destroy(&fe);
	}
}

/* A compaction restarting after the longest deferral (compaction_restarting) flushes the skip
 * bits only when a direct compaction's scanners met since (compact_blockskip_flush): 6.1 and
 * 6.12 __reset_isolation_suitable return at once without the request. Every block is marked
 * skipped and block 0 is full of movable frames: without the request the migrate scanner
 * passes every block and nothing moves; with it the bits go, the frames move and block 0 comes
 * free (a full block: 6.1's fast_find_migrateblock finds no free page there to give it up). */
TEST(restart_flushes_skip_bits_only_when_asked)
{
	static const char *const specs[] = {"modern-always", "linux-6.1"};

	for (int i = 0; i < 4; i++) {
		bool flush = i & 1;
		struct fakeenv fe;
		struct run r;

		pool_with_targets(&fe, specs[i / 2]);
		for (uint32_t p = 0; p < 512; p++)
			ASSERT_EQ(mm_debug_place(fe.mm, p, DBG_FOREIGN, p), 0);
		for (uint32_t b = 0; b < 8; b++)
			set_pageblock_skip(fe.mm, b * 512);
		fe.mm->compact_defer_shift = MM_COMPACT_MAX_DEFER_SHIFT;
		fe.mm->compact_considered = 1U << MM_COMPACT_MAX_DEFER_SHIFT;
		fe.mm->compact_order_failed = 9;
		fe.mm->compact_blockskip_flush = flush;
		ASSERT(compaction_restarting(fe.mm, 9));
		compact(&fe, MM_MIGRATE_ASYNC, &r);
		EXPECT_EQ(r.result, (flush ? MM_COMPACT_SUCCESS : MM_COMPACT_COMPLETE));
		/* and one batch more: 6.12 sees the capture after it
		 * (capture_is_seen_after_the_drain_and_in_6_12_after_one_more_batch) */
		EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_SUCCESS], (flush ? (i < 2 ? 544U : 512U) : 0U));
		EXPECT_EQ(block0_free(&fe), flush);
		fakeenv_destroy(&fe);
	}
}

/* The targets a compaction still holds at its end go back, and the free scanner's cached
 * position rises to the block of the highest of them (6.12 release_free_list, 6.1
 * release_freepages return the highest pfn freed). Proactive compaction (no fast search):
 * the free scanner takes block 7's 16 free frames (an order-4 block) and, still short, block
 * 6's 8 (order 3); the 20 pages of block 0 move and the score is met. Block 6's go first in
 * both eras (6.12: the smaller order; 6.1: the block isolated last), then 12 of block 7's;
 * 4 of block 7 are left, so the next scan starts at block 7, not block 6. */
TEST(release_raises_cached_free_to_the_highest_target)
{
	static const char *const specs[] = {"modern-always:proactiveness=90",
					    "linux-6.1:proactiveness=90"};

	for (int i = 0; i < 2; i++) {
		struct fakeenv fe;
		unsigned left = 0;
		char err[256];

		ASSERT_EQ(fakeenv_init(&fe, specs[i], 16 * MIB, false, err, sizeof(err)), 0);
		for (uint32_t p = 0; p < 20; p++)
			ASSERT_EQ(mm_debug_place(fe.mm, p, DBG_FOREIGN, p), 0);
		for (uint32_t p = 512; p < 4096; p++)
			if (!(p >= 3584 && p < 3600) && !(p >= 3072 && p < 3080))
				ASSERT_EQ(mm_debug_place(fe.mm, p, DBG_UNMOVABLE, 0), 0);
		EXPECT_EQ(proactive_compact_node(fe.mm, NULL), 1);
		EXPECT(block0_free(&fe));
		for (uint32_t p = 3072; p < 3080; p++)
			EXPECT_NE(pfn_frame(fe.mm, p)->state, FS_FREE);
		for (uint32_t p = 3584; p < 3600; p++)
			left += pfn_frame(fe.mm, p)->state == FS_FREE;
		EXPECT_EQ(left, 4);
		EXPECT_EQ(fe.mm->compact_cached_free_pfn, 3584);
		ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
		fakeenv_destroy(&fe);
	}
}

/* The order migration targets are used in. Proactive compaction (no fast search): the free
 * scanner takes block 7's 16 free frames (an order-4 block at 3584), then block 6's 64 (order
 * 6 at 3072); the 40 pages of block 0 move. 6.12 (mm/compaction.c cc->freepages[order],
 * compaction_alloc) takes the smallest order first and a split block from its lowest pfn up:
 * all of block 7's, then 3072..3095. 6.1 (split_map_pages list_adds each page) takes the last
 * page isolated first: 3135 down to 3096, block 7 untouched. */
TEST(targets_are_used_in_each_eras_order)
{
	static const char *const specs[] = {"modern-always:proactiveness=90",
					    "linux-6.1:proactiveness=90"};

	for (int i = 0; i < 2; i++) {
		uint32_t lo = i ? 3096 : 3072, hi = i ? 3136 : 3096;
		struct fakeenv fe;
		char err[256];

		ASSERT_EQ(fakeenv_init(&fe, specs[i], 16 * MIB, false, err, sizeof(err)), 0);
		for (uint32_t p = 0; p < 40; p++)
			ASSERT_EQ(mm_debug_place(fe.mm, p, DBG_FOREIGN, p), 0);
		for (uint32_t p = 512; p < 4096; p++)
			if (!(p >= 3584 && p < 3600) && !(p >= 3072 && p < 3136))
				ASSERT_EQ(mm_debug_place(fe.mm, p, DBG_UNMOVABLE, 0), 0);
		EXPECT_EQ(proactive_compact_node(fe.mm, NULL), 1);
		EXPECT(block0_free(&fe));
		for (uint32_t p = 3072; p < 3136; p++)
			EXPECT_EQ(pfn_frame(fe.mm, p)->state == FS_FREE, p < lo || p >= hi);
		for (uint32_t p = 3584; p < 3600; p++)
			EXPECT_EQ(pfn_frame(fe.mm, p)->state == FS_FREE, i == 1);
		ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
		fakeenv_destroy(&fe);
	}
}

/* The owner of the page now at pfn (a foreign page keeps its owner through migration). */
static uint64_t owner_at(struct fakeenv *fe, uint32_t pfn)
{
	return pfn_frame(fe->mm, pfn)->owner & ~MM_OWNER_FOREIGN;
}

/* Which source gets which target. Every era's migrate scanner list_adds each page it isolates
 * and migrate_pages walks the list from its head, so the page isolated last is migrated first
 * and gets the first target (3.1 mm/compaction.c isolate_migratepages and mm/migrate.c
 * migrate_pages; 6.1 and 6.12 isolate_migratepages_block and migrate_pages_batch). 40 foreign
 * pages at pfns 0..39 (owner 100 + pfn) move as two lists, 0..31 and 32..39. Targets as in
 * targets_are_used_in_each_eras_order: 6.12 3584..3599 then 3072 up, 6.1 3135 down; 3.1 (the
 * pool_with_targets layout, direct compaction) 4094 down. */
TEST(sources_migrate_last_isolated_first)
{
	static const char *const specs[] = {"modern-always:proactiveness=90",
					    "linux-6.1:proactiveness=90", "linux-3.1"};
	/* the first target of the first list, that list's last, the second list's first */
	static const uint32_t first[] = {3584, 3135, 4094}, last[] = {3087, 3104},
			      second[] = {3088, 3103};

	for (int i = 0; i < 3; i++) {
		struct fakeenv fe;
		struct run r;
		char err[256];

		if (i < 2) {
			ASSERT_EQ(fakeenv_init(&fe, specs[i], 16 * MIB, false, err, sizeof(err)),
				  0);
			for (uint32_t p = 512; p < 4096; p++)
				if (!(p >= 3584 && p < 3600) && !(p >= 3072 && p < 3136))
					ASSERT_EQ(mm_debug_place(fe.mm, p, DBG_UNMOVABLE, 0), 0);
		} else {
			pool_with_targets(&fe, specs[i]);
		}
		for (uint32_t p = 0; p < 40; p++)
			ASSERT_EQ(mm_debug_place(fe.mm, p, DBG_FOREIGN, 100 + p), 0);
		if (i < 2)
			EXPECT_EQ(proactive_compact_node(fe.mm, NULL), 1);
		else
			compact(&fe, MM_MIGRATE_ASYNC, &r); /* runs on until the scanners meet */
		EXPECT(block0_free(&fe));
		EXPECT_EQ(owner_at(&fe, first[i]), 131);
		if (i < 2) { /* 3.1's order within its block: the next test */
			EXPECT_EQ(owner_at(&fe, last[i]), 100);
			EXPECT_EQ(owner_at(&fe, second[i]), 139);
		}
		ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
		fakeenv_destroy(&fe);
	}
}

/* 3.x targets are one list of order-0 pages: isolate_freepages_block splits each free block it
 * finds (split_free_page) and list_adds its pages in ascending order, and compaction_alloc
 * takes the head (3.1 and 3.5 mm/compaction.c), so a block is used from its last free page
 * down: block 7's 511 free pages (4094 down) take the 40 sources, the first list's 32 (31 down
 * to 0) on 4094..4063, the second's (39 down to 32) on 4062..4055. */
TEST(targets_3x_are_used_from_the_last_page_down)
{
	static const char *const specs[] = {"linux-3.1", "linux-3.2", "linux-3.3"};

	for (int i = 0; i < 3; i++) {
		struct fakeenv fe;
		struct run r;
		char err[256];

		pool_with_targets(&fe, specs[i]);
		for (uint32_t p = 0; p < 40; p++)
			ASSERT_EQ(mm_debug_place(fe.mm, p, DBG_FOREIGN, 100 + p), 0);
		compact(&fe, MM_MIGRATE_ASYNC, &r);
		EXPECT(block0_free(&fe));
		for (uint32_t p = 0; p < 32; p++)
			EXPECT_EQ(owner_at(&fe, 4063 + p), 100 + p);
		for (uint32_t p = 32; p < 40; p++)
			EXPECT_EQ(owner_at(&fe, 4055 + (p - 32)), 100 + p);
		for (uint32_t p = 3584; p < 4055; p++)
			EXPECT_EQ(pfn_frame(fe.mm, p)->state, FS_FREE);
		ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
		fakeenv_destroy(&fe);
	}
}

/* DMA [0, 2048) unmovable; DMA32 [2048, 4096): each block's first frame unmovable, the rest
 * free, nothing to move. */
static void two_zone_pool(struct fakeenv *fe, const char *spec)
{
	struct mm_snapshot_zone z[2] = {
	    {.name = "DMA", .start = 0, .end = 2048, .wmark = {10, 12, 14}},
	    {.name = "DMA32", .start = 2048, .end = 4096, .wmark = {20, 25, 30}}};
	struct mm_snapshot_run r[1 + 4 * 10];
	uint32_t wm[3] = {20, 25, 30};
	struct mm_snapshot snap;
	unsigned n = 0;
	char err[256];

	r[n++] = (struct mm_snapshot_run){.kind = MM_SNAP_UNMOVABLE, .len = 2048};
	for (int b = 0; b < 4; b++) {
		r[n++] = (struct mm_snapshot_run){.kind = MM_SNAP_UNMOVABLE, .len = 1};
		for (unsigned o = 0; o < 9; o++)
			r[n++] = (struct mm_snapshot_run){
			    .kind = MM_SNAP_FREE, .len = 1U << o, .order = (uint8_t)o};
	}
	ASSERT_EQ(fakeenv_init(fe, spec, 16 * MIB, false, err, sizeof(err)), 0);
	ASSERT_EQ(mm_snapshot_begin(fe->mm, &snap), 0);
	ASSERT_EQ(mm_snapshot_zones(&snap, z, 2, err, sizeof(err)), 0);
	ASSERT_EQ(mm_snapshot_runs(&snap, r, n, err, sizeof(err)), 0);
	ASSERT_EQ(mm_snapshot_end(&snap, wm, err, sizeof(err)), 0);
}

/* compact_init_migrate_pfn is 0 until the first skip-bit flush (the zone is zeroed; only 6.12
 * and 6.1 __reset_isolation_suitable set it), so in a zone that does not start at pfn 0 a
 * compaction is not whole_zone before then, and scanners that meet give PARTIAL_SKIPPED
 * (compact_finished), not COMPLETE. The pool of two_zone_pool. */
TEST(init_migrate_pfn_is_zero_until_a_flush)
{
	static const char *const specs[] = {"modern-always", "linux-6.1"};

	for (int i = 0; i < 2; i++) {
		struct fakeenv fe;
		struct run res;

		two_zone_pool(&fe, specs[i]);
		EXPECT_EQ(fe.mm->compact_init_migrate_pfn, 0);
		compact(&fe, MM_MIGRATE_SYNC_LIGHT, &res);
		EXPECT_EQ(res.result, MM_COMPACT_PARTIAL_SKIPPED);
		EXPECT_EQ(res.st[MM_STAT_PGMIGRATE_SUCCESS], 0);
		EXPECT(fe.mm->compact_blockskip_flush);
		fakeenv_destroy(&fe);
	}
}

/* 6.12 and 6.1 reset_isolation_suitable flush every populated zone of the node, each behind
 * its own compact_blockskip_flush. Compaction here visits the main zone only, so a lower zone
 * never gets a skip bit nor a request, and flushing the main zone is flushing them all;
 * mm_check says so (-34 for a lower zone's block marked skipped). */
TEST(skip_bits_live_in_the_main_zone_only)
{
	static const char *const specs[] = {"modern-always", "linux-6.1"};

	for (int i = 0; i < 2; i++) {
		struct fakeenv fe;
		struct run res;
		unsigned main_marked = 0;
		char err[256];

		two_zone_pool(&fe, specs[i]);
		compact(&fe, MM_MIGRATE_SYNC_LIGHT, &res);
		for (uint32_t b = 0; b < 8; b++)
			if (pageblock_skip(fe.mm, b * 512))
				EXPECT_GE(b * 512, fe.mm->zone_start_pfn);
		for (uint32_t b = 4; b < 8; b++)
			main_marked += pageblock_skip(fe.mm, b * 512);
		EXPECT_GT(main_marked, 0);
		ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
		reset_isolation_suitable(fe.mm); /* the request is the main zone's */
		EXPECT(!fe.mm->compact_blockskip_flush);
		ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
		set_pageblock_skip(fe.mm, 512);
		EXPECT_EQ(mm_check(fe.mm, err, sizeof(err)), -34);
		fakeenv_destroy(&fe);
	}
}

/* 6.12 remembers where the scanners stopped (per async / sync); 3.x restarts every time. */
TEST(cached_positions_modern_only)
{
	static const char *const specs[] = {"linux-3.3", "modern-always"};

	for (int i = 0; i < 2; i++) {
		struct fakeenv fe;
		struct run r;
		char err[256];

		ASSERT_EQ(fakeenv_init(&fe, specs[i], 16 * MIB, false, err, sizeof(err)), 0);
		/* one unmovable frame in every block but block 1, whose only users are
		 * movable: compacting it succeeds before the scanners meet */
		for (uint32_t b = 0; b < 8; b++)
			if (b != 1)
				ASSERT_EQ(mm_debug_place(fe.mm, b * 512 + 3, DBG_UNMOVABLE, 0), 0);
		for (uint32_t p = 600; p < 700; p++)
			ASSERT_EQ(mm_debug_place(fe.mm, p, DBG_FOREIGN, p), 0);
		compact(&fe, MM_MIGRATE_SYNC_LIGHT, &r);
		/* 3.x: see mode_31_sync_writes_out_and_waits_from_pass_3 */
		EXPECT_EQ(r.result, i ? MM_COMPACT_SUCCESS : MM_COMPACT_COMPLETE);
		/* and one batch more: 6.12 sees the capture after it
		 * (capture_is_seen_after_the_drain_and_in_6_12_after_one_more_batch) */
		EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_SUCCESS], i ? 132 : 100);
		if (i == 1) {
			EXPECT_EQ(r.captured, 512);
			EXPECT_GE(fe.mm->compact_cached_migrate_pfn[1], 512);
			EXPECT_GE(fe.mm->compact_cached_migrate_pfn[0], 512);
			/* fast_find_migrateblock started at block 1 (a free order-8 page
			 * there), which its first isolation marked skipped */
			EXPECT(pageblock_skip(fe.mm, 512));
		} else {
			EXPECT_EQ(fe.mm->compact_cached_migrate_pfn[1], 0);
			EXPECT(!pageblock_skip(fe.mm, 0));
		}
		fakeenv_destroy(&fe);
	}
}

/* 6.12 isolate_migratepages_block marks a block skipped when its scan first isolates from it
 * (test_and_set_skip), even though the block yielded pages and was freed; a compaction that
 * ignores skip hints (SYNC, MIN_COMPACT_PRIORITY) neither reads nor sets the bit there. */
TEST(modern_marks_block_skipped_on_first_isolation)
{
	static const enum mm_migrate_mode modes[] = {MM_MIGRATE_SYNC_LIGHT, MM_MIGRATE_SYNC};

	for (int i = 0; i < 2; i++) {
		struct fakeenv fe;
		struct run r;
		char err[256];

		ASSERT_EQ(fakeenv_init(&fe, "modern-always", 16 * MIB, false, err, sizeof(err)), 0);
		for (uint32_t b = 0; b < 8; b++)
			if (b != 1)
				ASSERT_EQ(mm_debug_place(fe.mm, b * 512 + 3, DBG_UNMOVABLE, 0), 0);
		for (uint32_t p = 600; p < 700; p++)
			ASSERT_EQ(mm_debug_place(fe.mm, p, DBG_FOREIGN, p), 0);
		compact(&fe, modes[i], &r);
		EXPECT_EQ(r.result, MM_COMPACT_SUCCESS);
		EXPECT_EQ(r.captured, 512);
		/* and one batch more: 6.12 sees the capture after it
		 * (capture_is_seen_after_the_drain_and_in_6_12_after_one_more_batch) */
		EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_SUCCESS], 132);
		EXPECT_EQ(pageblock_skip(fe.mm, 512), modes[i] != MM_MIGRATE_SYNC);
		fakeenv_destroy(&fe);
	}
}

/* 6.12 fast_isolate_freepages: the free scanner first looks on the MOVABLE free lists below
 * the order for a page in the top quarter of the span between the scanners, and takes it
 * whatever the block's skip bit says. Here the only free frames above block 3 are 16 in block
 * 6, which is marked skipped, so the linear scanner would never use them (it would find
 * blocks 1-3's free halves): the sources move to block 6 and block 0 comes free. */
TEST(modern_fast_isolate_freepages_takes_a_listed_page_high_up)
{
	struct fakeenv fe;
	struct run r;
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "modern-always", 16 * MIB, false, err, sizeof(err)), 0);
	/* free memory enough for compaction to be suitable, low in the zone: the first half of
	 * blocks 1-3 (the linear scanner would take targets there) */
	for (uint32_t pfn = 512; pfn < 4096; pfn++)
		if (pfn % 512 >= 256 && (pfn < 3072 || pfn >= 3088))
			ASSERT_EQ(mm_debug_place(fe.mm, pfn, DBG_UNMOVABLE, 0), 0);
		else if (pfn >= 2048 && (pfn < 3072 || pfn >= 3088))
			ASSERT_EQ(mm_debug_place(fe.mm, pfn, DBG_UNMOVABLE, 0), 0);
	for (uint32_t p = 0; p < 10; p++)
		ASSERT_EQ(mm_debug_place(fe.mm, p, DBG_FOREIGN, p), 0);
	set_pageblock_skip(fe.mm, 3072);
	compact(&fe, MM_MIGRATE_ASYNC, &r);
	EXPECT_EQ(r.result, MM_COMPACT_SUCCESS);
	EXPECT_EQ(r.captured, 0);
	EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_SUCCESS], 10);
	for (uint32_t p = 3072; p < 3082; p++)
		EXPECT_EQ(pfn_frame(fe.mm, p)->state, FS_ANON);
	/* the lists' entries looked at and the 16 frames taken, not a scan of blocks 1-7 */
	EXPECT_GE(r.st[MM_STAT_COMPACT_FREE_SCANNED], 16);
	EXPECT_LT(r.st[MM_STAT_COMPACT_FREE_SCANNED], 64);
	fakeenv_destroy(&fe);
}

/* The memory of the fast_find_migrateblock tests: block 0 one movable frame in four (no free
 * page of order 3), block 1 256 movable frames and then a free order-8 block, blocks 2-3
 * unmovable, blocks 4-7 free but for an unmovable last frame each. */
static void place_half_free_block(struct fakeenv *fe)
{
	for (uint32_t p = 0; p < 512; p += 4)
		ASSERT_EQ(mm_debug_place(fe->mm, p, DBG_FOREIGN, p + 1), 0);
	for (uint32_t p = 512; p < 768; p++)
		ASSERT_EQ(mm_debug_place(fe->mm, p, DBG_FOREIGN, p + 1), 0);
	for (uint32_t p = 1024; p < 2048; p++)
		ASSERT_EQ(mm_debug_place(fe->mm, p, DBG_UNMOVABLE, 0), 0);
	for (uint32_t b = 4; b < 8; b++)
		ASSERT_EQ(mm_debug_place(fe->mm, b * 512 + 511, DBG_UNMOVABLE, 0), 0);
}

/* 6.12 fast_find_migrateblock: for an order-9 MOVABLE request the migrate scanner starts at a
 * block in the first half of the span that already has free pages of order 3..8 (block 1:
 * 256 movable frames, then a free order-8 block), not at the zone's first block (block 0,
 * whose movable frames are one in four, so it has no free page of order 3). A compaction that
 * ignores skip hints (SYNC) scans linearly and clears block 0. */
TEST(modern_fast_find_migrateblock_starts_at_a_half_free_block)
{
	static const enum mm_migrate_mode modes[] = {MM_MIGRATE_ASYNC, MM_MIGRATE_SYNC};

	for (int i = 0; i < 2; i++) {
		bool fast = modes[i] != MM_MIGRATE_SYNC;
		struct fakeenv fe;
		struct run r;
		char err[256];

		ASSERT_EQ(fakeenv_init(&fe, "modern-always", 16 * MIB, false, err, sizeof(err)), 0);
		place_half_free_block(&fe);
		compact(&fe, modes[i], &r);
		EXPECT_EQ(r.result, MM_COMPACT_SUCCESS);
		EXPECT_EQ(r.captured, fast ? 512 : 0);
		/* and one batch more
		 * (capture_is_seen_after_the_drain_and_in_6_12_after_one_more_batch) */
		EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_SUCCESS], fast ? 288 : 160);
		/* the block the scanner did not start at keeps its frames (async: at SYNC 6.12
		 * takes one batch more before it sees the capture, and that batch is block 1's) */
		if (fast)
			EXPECT_EQ(pfn_frame(fe.mm, 0)->state, FS_ANON);
		fakeenv_destroy(&fe);
	}
}

/* 6.1 fast_find_migrateblock marks the block it picks skipped (set_pageblock_skip, 6.1.y), and
 * 6.1 isolate_migratepages_block, finding the bit at that block's first pfn, gives it up
 * unscanned: the same memory as above, where 6.12 compacts block 1, leaves 6.1's async
 * compaction with nothing migrated. The search started past block 0, and the one linear scan
 * it falls back to (reinit_migrate_pfn: the free page it found, mid-block 1) meets only free
 * pages; blocks 2-3 are unmovable, and the scanners meet. Without skip hints (SYNC) 6.1
 * scans linearly as 6.12 does. */
TEST(fast_find_migrateblock_6_1_gives_its_block_up)
{
	static const enum mm_migrate_mode modes[] = {MM_MIGRATE_ASYNC, MM_MIGRATE_SYNC};

	for (int i = 0; i < 2; i++) {
		bool fast = modes[i] != MM_MIGRATE_SYNC;
		struct fakeenv fe;
		struct run r;
		char err[256];

		ASSERT_EQ(fakeenv_init(&fe, "linux-6.1", 16 * MIB, false, err, sizeof(err)), 0);
		place_half_free_block(&fe);
		compact(&fe, modes[i], &r);
		if (fast) {
			EXPECT(r.result != MM_COMPACT_SUCCESS);
			EXPECT_EQ(r.captured, MM_NO_PFN);
			EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_SUCCESS], 0);
			EXPECT(pageblock_skip(fe.mm, 512));
			EXPECT_EQ(pfn_frame(fe.mm, 512)->state, FS_ANON);
			EXPECT_EQ(pfn_frame(fe.mm, 0)->state, FS_ANON);
		} else {
			EXPECT_EQ(r.result, MM_COMPACT_SUCCESS);
			EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_SUCCESS], 128);
			EXPECT_EQ(r.captured, 0);
			EXPECT_EQ(pfn_frame(fe.mm, 512)->state, FS_ANON);
		}
		fakeenv_destroy(&fe);
	}
}

/* compact_migrate_scanned over a free buddy block: 6.12 isolate_migratepages_block counts the
 * block's pages ("nr_scanned += (1UL << freepage_order) - 1"), 6.1's steps over them and counts
 * the one pfn it looked at. Block 0: a free order-8 block, then 256 movable pages; a SYNC
 * compaction (no fast searches) scans it whole and frees it. */
static uint64_t migrate_scanned_over_a_buddy(const char *spec)
{
	struct fakeenv fe;
	struct run r;
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, spec, 16 * MIB, false, err, sizeof(err)), 0);
	for (uint32_t p = 256; p < 512; p++)
		ASSERT_EQ(mm_debug_place(fe.mm, p, DBG_FOREIGN, p + 1), 0);
	for (uint32_t p = 512; p < 2048; p++)
		ASSERT_EQ(mm_debug_place(fe.mm, p, DBG_UNMOVABLE, 0), 0);
	for (uint32_t b = 4; b < 8; b++)
		ASSERT_EQ(mm_debug_place(fe.mm, b * 512 + 511, DBG_UNMOVABLE, 0), 0);
	compact(&fe, MM_MIGRATE_SYNC, &r);
	EXPECT_EQ(r.result, MM_COMPACT_SUCCESS);
	EXPECT_EQ(r.captured, 0);
	/* and one batch more in 6.12, which sees the capture after it
	 * (capture_is_seen_after_the_drain_and_in_6_12_after_one_more_batch) */
	EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_SUCCESS], era_6_1(fe.mm) ? 256 : 288);
	fakeenv_destroy(&fe);
	return r.st[MM_STAT_COMPACT_MIGRATE_SCANNED];
}

TEST(migrate_scanned_counts_a_free_block_in_6_12_not_in_6_1)
{
	uint64_t modern = migrate_scanned_over_a_buddy("modern-always");
	uint64_t v61 = migrate_scanned_over_a_buddy("linux-6.1");

	/* and one batch more: 6.12 sees the capture after it
	 * (capture_is_seen_after_the_drain_and_in_6_12_after_one_more_batch) */
	EXPECT_EQ(modern, 2592);
	EXPECT_EQ(v61, 257);
}

/* Targets running out: block 0 full of movable pages, eight free frames in the only other
 * MOVABLE block (7), the rest free in UNMOVABLE blocks (free memory for the watermarks, never a
 * target but at SYNC priority, ignore_block_suitable). A sync-light compaction isolates 32 pages,
 * moves 8, and the 9th finds no target. */
static void compact_out_of_targets(const char *spec, struct run *r)
{
	struct mm_snapshot_run blk0 = {.kind = MM_SNAP_ANON, .len = 512},
			       unmov[2] = {{.kind = MM_SNAP_UNMOVABLE, .len = 1},
					   {.kind = MM_SNAP_FREE, .len = 511}},
			       blk7[2] = {{.kind = MM_SNAP_FREE, .len = 8, .order = 3},
					  {.kind = MM_SNAP_UNMOVABLE, .len = 504}};
	struct mm_snapshot s;
	struct fakeenv fe;
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, spec, 16 * MIB, false, err, sizeof(err)), 0);
	ASSERT_EQ(mm_snapshot_begin(fe.mm, &s), 0);
	for (uint32_t b = 1; b < 7; b++)
		ASSERT_EQ(mm_snapshot_pageblock(&s, b, MM_MT_UNMOVABLE), 0);
	ASSERT_EQ(mm_snapshot_runs(&s, &blk0, 1, err, sizeof(err)), 0);
	for (uint32_t b = 1; b < 7; b++)
		ASSERT_EQ(mm_snapshot_runs(&s, unmov, 2, err, sizeof(err)), 0);
	ASSERT_EQ(mm_snapshot_runs(&s, blk7, 2, err, sizeof(err)), 0);
	ASSERT_EQ(mm_snapshot_end(&s, NULL, err, sizeof(err)), 0);
	compact(&fe, MM_MIGRATE_SYNC_LIGHT, r);
	fakeenv_destroy(&fe);
}

/* pgmigrate_fail when the free scanner meets the migrate scanner: 6.1 and 6.12
 * migrate_pages_batch count the page that found no target (and the pass's earlier retries),
 * not the untried rest of the list; 3.x's compact_pagemigrate_failed (compact_zone's
 * nr_remaining) every page left on the list, round after round until the scanners meet: 512 - 8. */
TEST(migrate_fail_counts_the_page_without_a_target_not_the_untried)
{
	static const char *const modern[] = {"linux-6.1", "modern-always"};
	struct run r;

	for (int i = 0; i < 2; i++) {
		compact_out_of_targets(modern[i], &r);
		EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_SUCCESS], 8);
		EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_FAIL], 1);
		EXPECT_EQ(r.rec.migrate_failed, 1);
		EXPECT(r.result != MM_COMPACT_SUCCESS);
	}
	compact_out_of_targets("linux-3.3", &r);
	EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_SUCCESS], 8);
	EXPECT_EQ(r.st[MM_STAT_PGMIGRATE_FAIL], 504);
}

/* After k consecutive failures the next 2^min(k,6) - 1 attempts are skipped. */
TEST(deferral_sequence)
{
	static const char *const specs[] = {"linux-3.1", "modern-always"};

	for (int s = 0; s < 2; s++) {
		for (unsigned k = 1; k <= 8; k++) {
			struct fakeenv fe;
			char err[256];
			unsigned skipped = 0, expect = (1U << (k < 6 ? k : 6)) - 1;

			ASSERT_EQ(fakeenv_init(&fe, specs[s], 8 * MIB, false, err, sizeof(err)), 0);
			EXPECT(!compaction_deferred(fe.mm, 9));
			for (unsigned i = 0; i < k; i++)
				defer_compaction(fe.mm, 9);
			while (compaction_deferred(fe.mm, 9))
				skipped++;
			EXPECT_EQ(skipped, expect);
			EXPECT_EQ(fe.mm->compact_defer_shift, k < 6 ? k : 6);
			/* the attempt that ran failed again: one more level */
			defer_compaction(fe.mm, 9);
			skipped = 0;
			while (compaction_deferred(fe.mm, 9))
				skipped++;
			EXPECT_EQ(skipped, (1U << (k + 1 < 6 ? k + 1 : 6)) - 1);
			EXPECT_EQ(fe.trace_count[MM_TRACE_DEFER_COMPACTION], k + 1);
			fakeenv_destroy(&fe);
		}
	}
}

/* 6.12 tracks the failed order: smaller orders are never deferred; success resets. */
TEST(deferral_per_order_modern)
{
	struct fakeenv fe;
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "modern-always", 8 * MIB, false, err, sizeof(err)), 0);
	/* compact_order_failed starts at 0: every order is subject until a success */
	defer_compaction(fe.mm, 9);
	EXPECT(compaction_deferred(fe.mm, 2));
	compaction_defer_reset(fe.mm, 9, true);
	EXPECT_EQ(fe.mm->compact_order_failed, 10);
	defer_compaction(fe.mm, 9);
	defer_compaction(fe.mm, 9);
	EXPECT_EQ(fe.mm->compact_order_failed, 9);
	EXPECT(!compaction_deferred(fe.mm, 8));
	EXPECT(compaction_deferred(fe.mm, 9));
	compaction_defer_reset(fe.mm, 9, true);
	EXPECT(!compaction_deferred(fe.mm, 9));
	EXPECT_EQ(fe.mm->compact_order_failed, 10);
	for (int i = 0; i < 6; i++)
		defer_compaction(fe.mm, 9);
	EXPECT(!compaction_restarting(fe.mm, 9));
	while (compaction_deferred(fe.mm, 9))
		;
	EXPECT(compaction_restarting(fe.mm, 9));
	fakeenv_destroy(&fe);

	/* 3.x: zone-wide, any order */
	ASSERT_EQ(fakeenv_init(&fe, "linux-3.3", 8 * MIB, false, err, sizeof(err)), 0);
	defer_compaction(fe.mm, 9);
	EXPECT(compaction_deferred(fe.mm, 2));
	fakeenv_destroy(&fe);
}

/* compaction_suitable per era: too little free memory is SKIPPED; a low fragmentation index
 * (lack of memory rather than fragmentation) is not suitable. */
TEST(suitability)
{
	struct fakeenv fe;
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "linux-3.1", 16 * MIB, false, err, sizeof(err)), 0);
	EXPECT_EQ(compaction_suitable(fe.mm, 9, WMARK_MIN), MM_COMPACT_SUCCESS);
	fakeenv_destroy(&fe);

	craft(&fe, "linux-3.1");
	EXPECT_EQ(compaction_suitable(fe.mm, 9, WMARK_MIN), MM_COMPACT_CONTINUE);
	/* eat free memory down to below LOW + 1024 */
	for (uint32_t p = 2048; p < 2048 + 1400; p++)
		mm_debug_place(fe.mm, p, DBG_UNMOVABLE, 0);
	EXPECT_EQ(compaction_suitable(fe.mm, 9, WMARK_MIN), MM_COMPACT_SKIPPED);
	fakeenv_destroy(&fe);

	craft(&fe, "modern-always");
	EXPECT_EQ(compaction_suitable(fe.mm, 9, WMARK_MIN), MM_COMPACT_CONTINUE);
	fe.mm->cfg.extfrag_threshold = 1000;
	EXPECT_EQ(compaction_suitable(fe.mm, 9, WMARK_MIN), MM_COMPACT_NOT_SUITABLE_ZONE);
	fakeenv_destroy(&fe);
}

/* ---- The device's file system, and the isolation throttle ------------------------------------ */

/* ext4's buffer_migrate_page moves a dirty page without writeout: 3.1 SYNC copies it (and only
 * waits on the page under writeback); vfat (fallback_migrate_page) writes it out first. Each
 * wait and writeout is reported to ops->waited with its kind. */
TEST(fs_decides_writeout_in_sync_migration)
{
	struct fakeenv fe;
	struct run r;

	craft(&fe, "linux-3.1:fs=ext4");
	compact(&fe, MM_MIGRATE_SYNC, &r);
	EXPECT_EQ(fe.n_writeout, 0);
	EXPECT_EQ(r.st[MM_STAT_COMPACT_WRITEOUT], 0);
	EXPECT_NE(where_file(&fe, 10), P_DIRTY); /* migrated, still dirty */
	EXPECT(pfn_frame(fe.mm, where_file(&fe, 10))->flags & FF_DIRTY);
	EXPECT_EQ(fe.n_waited_kind[MM_WAIT_COMPACT_WRITEOUT], 0);
	EXPECT_EQ(fe.n_waited_kind[MM_WAIT_COMPACT_WRITEBACK], fe.n_wait);
	EXPECT_GT(fe.n_wait, 0);
	fakeenv_destroy(&fe);

	craft(&fe, "linux-3.1");
	compact(&fe, MM_MIGRATE_SYNC, &r);
	EXPECT_EQ(fe.n_writeout, 1);
	EXPECT_EQ(fe.n_waited_kind[MM_WAIT_COMPACT_WRITEOUT], 1);
	EXPECT_EQ(fe.n_waited_kind[MM_WAIT_COMPACT_WRITEBACK], fe.n_wait);
	EXPECT_EQ(fe.waited[0].pfn, P_DIRTY);
	EXPECT_EQ(fe.waited[0].owner, MM_OWNER_FILE(1, 10));
	fakeenv_destroy(&fe);
}

/* Async isolation of a dirty page: 3.2's ISOLATE_CLEAN skips it on any file system; 3.3's
 * ISOLATE_ASYNC_MIGRATE only when the mapping has no ->migratepage (vfat), so ext4's is
 * isolated and migrated (trylock_buffer succeeds on a page not under I/O). */
TEST(fs_decides_async_isolation_of_dirty_pages)
{
	static const struct {
		const char *spec;
		bool moved;
	} cases[] = {
	    {"linux-3.2:fs=ext4", false}, {"linux-3.3", false}, {"linux-3.3:fs=ext4", true}};
	/* (6.12 has 3.3's filter, but its async direct compaction skips the rest of an
	 * order-aligned range at the first failure: P_WB's) */

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fakeenv fe;
		struct run r;

		craft(&fe, cases[i].spec);
		compact(&fe, MM_MIGRATE_ASYNC, &r);
		EXPECT_EQ(where_file(&fe, 10) != P_DIRTY, cases[i].moved);
		EXPECT_EQ(where_file(&fe, 11), P_WB); /* writeback: never in async */
		EXPECT_EQ(fe.n_writeout, 0);
		fakeenv_destroy(&fe);
	}
}

/* tmpfs without swap (fs=tmpfs, a guest's /tmp): a written page is never dirty
 * (shmem_aops.dirty_folio = noop_dirty_folio) and migrates in any mode (shmem_aops.migrate_folio
 * = migrate_folio, 6.12 mm/shmem.c); on vfat the same page is dirty and 6.12's async filter
 * skips it (isolate_migratepages_block: a dirty folio of a mapping without ->migrate_folio). */
TEST(tmpfs_pages_migrate_in_async_compaction)
{
	static const struct {
		const char *spec;
		bool moved, dirty;
	} cases[] = {{"modern-always:fs=tmpfs", true, false}, {"modern-always", false, true}};

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fakeenv fe;
		struct mm_counts c;
		struct run r;
		char err[256];

		pool_with_targets(&fe, cases[i].spec);
		ASSERT_EQ(mm_debug_place(fe.mm, P_DIRTY, DBG_FILE_DIRTY, MM_OWNER_FILE(1, 10)), 0);
		ASSERT_EQ(mm_debug_place(fe.mm, P_CLEAN, DBG_FILE_CLEAN, MM_OWNER_FILE(1, 12)), 0);
		ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
		mm_get_counts(fe.mm, &c);
		EXPECT_EQ(c.file, 2);
		EXPECT_EQ(c.file_dirty, cases[i].dirty ? 1 : 0);
		compact(&fe, MM_MIGRATE_ASYNC, &r);
		EXPECT_EQ(where_file(&fe, 10) != P_DIRTY, cases[i].moved);
		EXPECT_EQ(fe.n_writeout, 0);
		ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
		fakeenv_destroy(&fe);
	}
}

/* too_many_isolated at the start of a block: ASYNC gives up; SYNC naps (3.x congestion_wait,
 * HZ/10; 6.12 reclaim_throttle, HZ/50) until the count drops, each nap a reported wait. */
static void drop_isolated(struct fakeenv *fe, enum mm_wait_kind kind)
{
	if (kind == MM_WAIT_COMPACT_ISOLATED && fe->n_throttle_kind[kind] == 2)
		fe->mm->nr_isolated -= 100000;
}

TEST(too_many_isolated_throttles_sync_compaction)
{
	static const struct {
		const char *spec;
		enum mm_migrate_mode mode;
		uint64_t nap;
	} cases[] = {{"linux-3.1", MM_MIGRATE_SYNC, 100 * MS},
		     {"linux-3.3", MM_MIGRATE_SYNC_LIGHT, 100 * MS},
		     {"modern-always", MM_MIGRATE_SYNC_LIGHT, 20 * MS}};
	struct fakeenv fe;
	struct fault_ctx fc = {0};
	struct alloc_ctx ac = {.order = 9,
			       .mt = MM_MT_MOVABLE,
			       .gfp = GFP_HIGHUSER_MOVABLE,
			       .alloc_flags = WMARK_MIN,
			       .fc = &fc};
	uint32_t captured;
	struct run r;

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		craft(&fe, cases[i].spec);
		fe.mm->nr_isolated += 100000;
		fe.on_throttle = drop_isolated;
		compact(&fe, cases[i].mode, &r);
		EXPECT_EQ(fe.n_throttle_kind[MM_WAIT_COMPACT_ISOLATED], 2);
		EXPECT_EQ(r.st[MM_STAT_THROTTLE_ISOLATED], 2);
		EXPECT_EQ(fe.n_waited_kind[MM_WAIT_COMPACT_ISOLATED], 2);
		EXPECT_EQ(fe.waited[0].ns, cases[i].nap);
		EXPECT_GT(r.st[MM_STAT_PGMIGRATE_SUCCESS], 0); /* then it went on */
		fakeenv_destroy(&fe);
	}

	craft(&fe, "linux-3.1");
	fe.mm->nr_isolated += 100000;
	EXPECT_EQ(try_to_compact_pages(fe.mm, &ac, MM_MIGRATE_ASYNC, &captured),
		  MM_COMPACT_CONTENDED);
	EXPECT_EQ(fe.n_throttle, 0);
	fe.mm->nr_isolated -= 100000;
	fakeenv_destroy(&fe);
}

TEST_MAIN()

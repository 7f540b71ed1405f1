/* core/mm pool: creation, metadata budget, watermarks of each era against hand-computed values,
 * configuration errors, and the lazily written metadata (core/mm/README.md "Metadata is written
 * where the pool is used"): blocks come off the free lists in memblock_free_all's order and a
 * pool's descriptors are not touched until used. */
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "mm_fakeenv.h"
#include "mm/internal.h"

#define MIB (1ULL << 20)
#define GIB (1ULL << 30)

static void check_wmarks(const char *spec, uint64_t pool, uint32_t min, uint32_t low, uint32_t high)
{
	struct fakeenv fe;
	struct mm_counts c;
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, spec, pool, false, err, sizeof(err)), 0);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.wmark_min, min);
	EXPECT_EQ(c.wmark_low, low);
	EXPECT_EQ(c.wmark_high, high);
	fakeenv_destroy(&fe);
}

/* 3.x: min_free_kbytes = sqrt(16 * lowmem_kb); low = min + min/4, high = min + min/2. */
/* 3.x: sqrt(16 x memory in kB), raised while THP is enabled by set_recommended_min_free_kbytes
 * (3.1-3.3 mm/huge_memory.c): 512 x 1 zone x 2 + 512 x 1 x 3 x 3 = 5632 pages, at most 5 % of
 * memory; low/high = min x 5/4 and x 3/2. */
TEST(watermarks_3x)
{
	/* 1 GiB: sqrt gives 4096 kB (1024 pages), the raise 22528 kB */
	check_wmarks("linux-3.1", GIB, 5632, 5632 + 1408, 5632 + 2816);
	check_wmarks("linux-3.2+nostall", GIB, 5632, 5632 + 1408, 5632 + 2816);
	/* 64 MiB: sqrt gives 1024 kB (256 pages), the raise is capped at 5 %: 16384 / 20 = 819 */
	check_wmarks("linux-3.3", 64 * MIB, 819, 819 + 204, 819 + 409);
	/* enabled=never: set_recommended_min_free_kbytes returns at once */
	check_wmarks("linux-3.1:enabled=never", GIB, 1024, 1280, 1536);
	check_wmarks("linux-3.3:enabled=never", 64 * MIB, 256, 320, 384);
}

/* The scale at which 3.1's reclaim/compaction loop can end. A THP fault's direct reclaim goes on
 * (should_continue_reclaim, 3.2.7 mm/vmscan.c 1975-2029) until compaction_suitable stops saying
 * SKIPPED, which needs order-0 free memory of LOW + 2 << 9 (mm/compaction.c 515-517), while
 * kswapd, woken only by order-0 allocations (3.x THP carries __GFP_NO_KSWAPD), balances to
 * HIGH = LOW + min / 4. Below 320 MiB the 5 % cap of set_recommended_min_free_kbytes keeps min
 * under 4096 pages and HIGH under that threshold, so only the fault's own reclaim can open the
 * exit; above it kswapd's target is past it. */
static void wmarks_of(const char *spec, uint64_t pool, struct mm_counts *c)
{
	struct fakeenv fe;
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, spec, pool, false, err, sizeof(err)), 0);
	mm_get_counts(fe.mm, c);
	fakeenv_destroy(&fe);
}

TEST(kswapd_target_reaches_compaction_suitable_from_320M_in_3x)
{
	struct mm_counts c;

	wmarks_of("linux-3.1", 256 * MIB, &c); /* min 3276 (5 %), low 4095, high 4914 */
	EXPECT_LT(c.wmark_high, c.wmark_low + (2U << 9));
	wmarks_of("linux-3.1", 320 * MIB, &c); /* min 4096 (5 %), low 5120, high 6144 */
	EXPECT_GE(c.wmark_high, c.wmark_low + (2U << 9));
	wmarks_of("linux-3.1", 512 * MIB, &c); /* min 5632, low 7040, high 8448 */
	EXPECT_GE(c.wmark_high, c.wmark_low + (2U << 9));
	wmarks_of("linux-3.2", 2 * GIB, &c);
	EXPECT_GE(c.wmark_high, c.wmark_low + (2U << 9));
}

TEST(min_free_kbytes_is_reported)
{
	struct fakeenv fe;
	struct mm_counts c;
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "linux-3.2", GIB, false, err, sizeof(err)), 0);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.min_free_kbytes, 22528); /* 5.5 x the un-raised 4096 kB */
	fakeenv_destroy(&fe);
	ASSERT_EQ(fakeenv_init(&fe, "modern-never", GIB, false, err, sizeof(err)), 0);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.min_free_kbytes, 4096);
	fakeenv_destroy(&fe);
}

/* 6.12: khugepaged raises min_free_kbytes to 11 pageblocks (capped at 5 %); low/high step is
 * max(min/4, 0.1 % of the zone). enabled=never keeps the plain formula. */
TEST(watermarks_modern)
{
	check_wmarks("modern-always", GIB, 5632, 5632 + 1408, 5632 + 2 * 1408);
	check_wmarks("modern-madvise", 64 * MIB, 819, 819 + 204, 819 + 2 * 204);
	check_wmarks("modern-never", GIB, 1024, 1024 + 262, 1024 + 2 * 262);
}

TEST(fresh_pool_is_all_free_in_max_order_blocks)
{
	struct fakeenv fe;
	struct mm_counts c;
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "linux-3.1", 64 * MIB + 2 * MIB, false, err, sizeof(err)), 0);
	mm_get_counts(fe.mm, &c);
	/* 33 pageblocks: 16 order-10 blocks and one order-9 tail */
	EXPECT_EQ(c.nr_frames, 16896);
	EXPECT_EQ(c.free, 16896);
	EXPECT_EQ(c.nr_free[10], 16);
	EXPECT_EQ(c.nr_free[9], 1);
	EXPECT_EQ(c.free_blocks_order9, 33);
	EXPECT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	EXPECT_EQ(mm_fragmentation_index(fe.mm, 9), -1000);
	fakeenv_destroy(&fe);
}

static uint32_t alloc_foreign(struct mm *mm, unsigned order, uint64_t owner)
{
	uint32_t pfn = MM_NO_PFN;

	if (mm_alloc_pages(mm, order, MM_MT_MOVABLE, MM_OWNER_FOREIGN | owner, &pfn, NULL) < 0)
		return MM_NO_PFN;
	return pfn;
}

/* The max-order blocks are linked when first reached, yet come off the list exactly as eager
 * init queued them: ascending pfns, a freed block at the head, the odd order-9 tail block
 * (written at creation) first for small orders. */
TEST(lazy_pool_hands_out_blocks_in_eager_order)
{
	struct fakeenv fe;
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "linux-3.1", 64 * MIB + 2 * MIB, false, err, sizeof(err)), 0);
	EXPECT_EQ(alloc_foreign(fe.mm, 10, 1), 0);
	EXPECT_EQ(alloc_foreign(fe.mm, 10, 2), 1024);
	EXPECT_EQ(alloc_foreign(fe.mm, 10, 3), 2048);
	mm_free_pages(fe.mm, 1024, 10,
		      NULL); /* __free_one_page: a max-order block goes to the head */
	EXPECT_EQ(alloc_foreign(fe.mm, 10, 4), 1024);
	EXPECT_EQ(alloc_foreign(fe.mm, 10, 5), 3072);
	EXPECT_EQ(alloc_foreign(fe.mm, 0, 6), 16384); /* the order-9 tail block, smallest first */
	EXPECT_EQ(alloc_foreign(fe.mm, 9, 7), 4096);  /* then the next never-touched block, split */
	EXPECT_EQ(alloc_foreign(fe.mm, 9, 8), 4608);
	EXPECT_EQ(alloc_foreign(fe.mm, 10, 9), 5120);
	EXPECT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	fakeenv_destroy(&fe);
}

static unsigned pages_resident(const void *p, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (len + page - 1) / page;
	unsigned char *vec = calloc(n, 1);
	unsigned r = 0;

	if (!vec || mincore((void *)p, len, vec) < 0) {
		free(vec);
		return ~0U;
	}
	for (size_t i = 0; i < n; i++)
		r += vec[i] & 1;
	free(vec);
	return r;
}

static void *test_meta_alloc(void *priv, size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	(void)priv;
	if (p == MAP_FAILED)
		return NULL;
	madvise(p, len, MADV_NOHUGEPAGE); /* count 4 KiB pages, not host THPs */
	return p;
}

static void test_meta_free(void *priv, void *p, size_t len)
{
	(void)priv;
	munmap(p, len);
}

/* A 4 GiB pool's 25 MB of descriptors: creating it writes the sentinels only, and a first
 * allocation writes the one max-order block it splits (24 KiB), not the pool. */
TEST(lazy_pool_touches_metadata_where_used)
{
	struct mm_env_ops ops = fe_ops_single;
	struct fakeenv fe = {0};
	struct mm_config cfg = {.pool_bytes = 4 * GIB};
	struct mm_env env = {.ops = &ops, .priv = &fe};
	size_t frames_len;
	unsigned before, after;
	char err[256];

	ops.meta_alloc = test_meta_alloc;
	ops.meta_free = test_meta_free;
	ASSERT_EQ(mm_policy_parse("modern-always", &cfg.policy, err, sizeof(err)), 0);
	ASSERT_EQ(mm_create(&cfg, &env, &fe.mm, err, sizeof(err)), 0);
	frames_len = ((size_t)fe.mm->nr_frames + NR_SENTINELS) * sizeof(struct mm_frame);
	before = pages_resident(fe.mm->frames, frames_len);
	EXPECT_LE(before, 2); /* the sentinel list heads after the last frame */
	EXPECT_LE(pages_resident(fe.mm->pc_hash, (size_t)(fe.mm->pc_hash_mask + 1) * 4), 0);
	EXPECT_LE(pages_resident(fe.mm->dirty_ring, (size_t)fe.mm->nr_frames * 4), 0);
	EXPECT_EQ(alloc_foreign(fe.mm, 0, 1), 0);
	after = pages_resident(fe.mm->frames, frames_len);
	EXPECT_GE(after, before + 1);
	EXPECT_LE(after, before + 8); /* 1024 descriptors of 24 bytes: 6 or 7 pages */
	mm_destroy(fe.mm);
}

/* mm_check counts the never-touched blocks as the free blocks they are, without writing their
 * descriptors (the check at the end of every `thpemu run` wrote a 1 GiB pool's worth), and a
 * free count that disagrees with them still fails it. A page-cache index nothing was ever put in
 * and a writeback bitmap nothing was ever queued in are not read either (in a machine's segment
 * each page read is a shmem page allocated: 128 of them for a 1 GiB pool's buckets). */
TEST(check_leaves_untouched_metadata_untouched)
{
	struct mm_env_ops ops = fe_ops_single;
	struct fakeenv fe = {0};
	struct mm_config cfg = {.pool_bytes = 4 * GIB};
	struct mm_env env = {.ops = &ops, .priv = &fe};
	size_t frames_len, hash_len, bits_len;
	unsigned before;
	char err[256];

	ops.meta_alloc = test_meta_alloc;
	ops.meta_free = test_meta_free;
	ASSERT_EQ(mm_policy_parse("modern-always", &cfg.policy, err, sizeof(err)), 0);
	ASSERT_EQ(mm_create(&cfg, &env, &fe.mm, err, sizeof(err)), 0);
	frames_len = ((size_t)fe.mm->nr_frames + NR_SENTINELS) * sizeof(struct mm_frame);
	hash_len = (size_t)(fe.mm->pc_hash_mask + 1) * sizeof(*fe.mm->pc_hash);
	bits_len = (fe.mm->nr_frames + 63) / 64 * sizeof(uint64_t);
	EXPECT_EQ(alloc_foreign(fe.mm, 0, 1), 0);
	before = pages_resident(fe.mm->frames, frames_len);
	EXPECT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	EXPECT_EQ(pages_resident(fe.mm->frames, frames_len), before);
	EXPECT_EQ(pages_resident(fe.mm->pc_hash, hash_len), 0);
	EXPECT_EQ(pages_resident(fe.mm->dirty_queued, bits_len), 0);
	EXPECT_LT(fe.mm->fresh_pfn, fe.mm->fresh_end);	  /* nothing materialised */
	fe.mm->nr_free_mt[MM_MAX_ORDER][MM_MT_MOVABLE]++; /* one block more than there are */
	EXPECT_EQ(mm_check(fe.mm, err, sizeof(err)), -12);
	fe.mm->nr_free_mt[MM_MAX_ORDER][MM_MT_MOVABLE]--;
	fe.mm->fresh_end -= 1; /* a cursor off the block grid */
	EXPECT_EQ(mm_check(fe.mm, err, sizeof(err)), -30);
	fe.mm->fresh_end += 1;
	EXPECT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	mm_destroy(fe.mm);
}

TEST(metadata_at_most_32_bytes_per_frame)
{
	static const uint64_t sizes[] = {8 * MIB, 64 * MIB, GIB, 4 * GIB};

	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct fakeenv fe;
		char err[256];
		double b;

		ASSERT_EQ(fakeenv_init(&fe, "modern-always", sizes[i], false, err, sizeof(err)), 0);
		b = mm_metadata_bytes_per_frame(fe.mm);
		EXPECT_LE(b, 32.0);
		EXPECT_GT(b, 24.0);
		fakeenv_destroy(&fe);
	}
}

TEST(config_errors_say_why)
{
	struct mm_config cfg = {.pool_bytes = 4 * MIB};
	struct fakeenv fe = {0};
	struct mm_env env = {.ops = &fe_ops_single, .priv = &fe};
	struct mm *mm;
	char err[256];

	ASSERT_EQ(mm_policy_parse("linux-3.1", &cfg.policy, err, sizeof(err)), 0);
	EXPECT_EQ(mm_create(&cfg, &env, &mm, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "pool size") != NULL);
	cfg.pool_bytes = 64 * MIB;
	cfg.extfrag_threshold = 1001;
	EXPECT_EQ(mm_create(&cfg, &env, &mm, err, sizeof(err)), -EINVAL);
	EXPECT(strstr(err, "extfrag_threshold") != NULL);
	cfg.extfrag_threshold = 0;
	cfg.policy.migrate_passes = 0;
	EXPECT_EQ(mm_create(&cfg, &env, &mm, err, sizeof(err)), -EINVAL);
	EXPECT(mm == NULL);
}

TEST(names_are_kernel_names)
{
	ASSERT_STREQ(mm_stat_names[MM_STAT_THP_FAULT_ALLOC], "thp_fault_alloc");
	ASSERT_STREQ(mm_stat_names[MM_STAT_COMPACT_STALL], "compact_stall");
	ASSERT_STREQ(mm_stat_names[MM_STAT_PGMIGRATE_SUCCESS], "pgmigrate_success");
	for (int i = 0; i < MM_STAT_NR; i++)
		ASSERT(mm_stat_names[i] != NULL);
	ASSERT_STREQ(mm_cause_chain(MM_CAUSE_COMPACT_WB_WAIT),
		     "fault > sync compaction > migrate > wait on writeback");
	ASSERT_STREQ(mm_step_name(MM_STEP_COMPACT_SYNC_LIGHT), "compact_sync_light");
	ASSERT_STREQ(mm_compact_result_name(MM_COMPACT_PARTIAL_SKIPPED), "partial_skipped");
	ASSERT_STREQ(mm_cause_chain(MM_CAUSE_NR), "?");
}

/* What the reports read: min_free_kbytes after the THP raise (the watermarks' base) and the
 * PMD-mapped anon frames (the emulated AnonHugePages); the new counters' kernel names. */
TEST(counts_for_reports)
{
	struct fakeenv fe;
	struct mm_counts c;
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "modern-always", GIB, false, err, sizeof(err)), 0);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.min_free_kbytes, 22528); /* max(sqrt(16 GiB in kB), 11 pageblocks) */
	EXPECT_EQ(c.wmark_min, c.min_free_kbytes / 4);
	EXPECT_EQ(c.anon_pmd, 0);
	fakeenv_destroy(&fe);
	ASSERT_STREQ(mm_stat_names[MM_STAT_THP_SCAN_EXCEED_SHARED_PTE],
		     "thp_scan_exceed_share_pte");
	ASSERT_STREQ(mm_stat_names[MM_STAT_KHUGEPAGED_PAGES_COLLAPSED],
		     "khugepaged_pages_collapsed");
	ASSERT_STREQ(mm_stat_names[MM_STAT_MADV_COLLAPSE], "madv_collapse");
}

TEST_MAIN()

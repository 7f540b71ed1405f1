/* core/mm page cache: index, locking, dirty/writeback state and FIFO order, removal under
 * writeback, clean-page reclaim when the pool fills. */
#include "harness.h"
#include "mm_fakeenv.h"
#include "mm/internal.h"

#define MIB    (1ULL << 20)
#define OWN(i) MM_OWNER_FILE(1, (i))

TEST(get_put_remove)
{
	struct fakeenv fe;
	struct mm_counts c;
	uint32_t pfn, pfn2;
	bool created;
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "linux-3.1", 16 * MIB, false, err, sizeof(err)), 0);
	EXPECT_EQ(mm_pagecache_get(fe.mm, OWN(5), false, &pfn, &created, NULL), -ENOENT);
	EXPECT_EQ(mm_pagecache_get(fe.mm, 12345, true, &pfn, &created, NULL), -EINVAL);
	ASSERT_EQ(mm_pagecache_get(fe.mm, OWN(5), true, &pfn, &created, NULL), 0);
	EXPECT(created);
	EXPECT_EQ(mm_pagecache_get(fe.mm, OWN(5), true, &pfn2, &created, NULL),
		  -EAGAIN); /* locked */
	mm_pagecache_put(fe.mm, pfn, true);
	ASSERT_EQ(mm_pagecache_get(fe.mm, OWN(5), true, &pfn2, &created, NULL), 0);
	EXPECT(!created);
	EXPECT_EQ(pfn2, pfn);
	mm_pagecache_put(fe.mm, pfn, false);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.file, 1);
	EXPECT_EQ(c.file_dirty, 1);
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	mm_pagecache_remove(fe.mm, OWN(5));
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.file, 0);
	EXPECT_EQ(c.file_dirty, 0);
	EXPECT_EQ(c.free, c.nr_frames);
	EXPECT_EQ(mm_pagecache_get(fe.mm, OWN(5), false, &pfn, &created, NULL), -ENOENT);
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	fakeenv_destroy(&fe);
}

static uint32_t write_page(struct fakeenv *fe, uint64_t owner)
{
	uint32_t pfn;
	bool created;

	ASSERT_EQ(mm_pagecache_get(fe->mm, owner, true, &pfn, &created, NULL), 0);
	mm_pagecache_put(fe->mm, pfn, true);
	return pfn;
}

TEST(writeback_is_oldest_dirtied_first)
{
	struct fakeenv fe;
	struct mm_counts c;
	uint32_t p[4], pfns[8];
	uint64_t owners[8];
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "linux-3.1", 16 * MIB, false, err, sizeof(err)), 0);
	p[0] = write_page(&fe, OWN(30));
	p[1] = write_page(&fe, OWN(10));
	p[2] = write_page(&fe, OWN(20));
	p[3] = write_page(&fe, OWN(10)); /* re-dirtying keeps its place */
	EXPECT_EQ(p[3], p[1]);
	ASSERT_EQ(mm_writeback_begin(fe.mm, 2, pfns, owners), 2);
	EXPECT_EQ(owners[0], OWN(30));
	EXPECT_EQ(owners[1], OWN(10));
	EXPECT_EQ(pfns[0], p[0]);
	EXPECT(mm_frame_under_writeback(fe.mm, p[0]));
	EXPECT(!mm_frame_under_writeback(fe.mm, p[2]));
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.file_dirty, 1);
	EXPECT_EQ(c.file_writeback, 2);
	/* dirtied again while under writeback: dirty and writeback at once */
	write_page(&fe, OWN(30));
	ASSERT_EQ(mm_writeback_begin(fe.mm, 8, pfns, owners), 1);
	EXPECT_EQ(owners[0], OWN(20));
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	mm_writeback_end(fe.mm, p[0], 0);
	mm_writeback_end(fe.mm, p[1], -EIO);
	mm_writeback_end(fe.mm, p[1], 0); /* not under writeback any more: ignored */
	ASSERT_EQ(mm_writeback_begin(fe.mm, 8, pfns, owners), 1);
	EXPECT_EQ(owners[0], OWN(30));
	EXPECT_EQ(mm_writeback_begin_one(fe.mm, p[0]), -EBUSY);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.file_dirty, 0);
	EXPECT_EQ(c.file_writeback, 2);
	{
		uint64_t st[MM_STAT_NR];

		mm_get_stats(fe.mm, st);
		EXPECT_EQ(st[MM_STAT_PGWB_ERROR], 1);
	}
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	fakeenv_destroy(&fe);
}

TEST(removal_under_writeback_frees_at_end)
{
	struct fakeenv fe;
	struct mm_counts c;
	uint32_t p, pfns[2];
	uint64_t owners[2];
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "linux-3.3", 16 * MIB, false, err, sizeof(err)), 0);
	p = write_page(&fe, OWN(1));
	ASSERT_EQ(mm_writeback_begin_one(fe.mm, p), 0);
	EXPECT_EQ(mm_writeback_begin(fe.mm, 2, pfns, owners), 0); /* nothing else dirty */
	mm_pagecache_remove(fe.mm, OWN(1));
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.file, 1); /* still pinned by writeback */
	EXPECT_EQ(c.file_writeback, 1);
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	/* a new page for the same owner is a new frame */
	{
		uint32_t q;
		bool created;

		ASSERT_EQ(mm_pagecache_get(fe.mm, OWN(1), true, &q, &created, NULL), 0);
		EXPECT(created);
		EXPECT_NE(q, p);
		mm_pagecache_put(fe.mm, q, false);
	}
	mm_writeback_end(fe.mm, p, 0);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.file, 1);
	EXPECT_EQ(c.file_writeback, 0);
	EXPECT_EQ(c.free, c.nr_frames - 1);
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	fakeenv_destroy(&fe);
}

/* Writing far more clean data than the pool holds: direct reclaim frees clean pages, dirty
 * ones survive (3.2+ direct reclaim never writes them out), and nothing is lost from the
 * index. */
TEST(reclaim_frees_clean_pages_only)
{
	struct fakeenv fe;
	struct mm_counts c;
	uint64_t st[MM_STAT_NR];
	char err[256];
	uint32_t nr;

	ASSERT_EQ(fakeenv_init(&fe, "linux-3.3", 8 * MIB, false, err, sizeof(err)), 0);
	nr = mm_nr_frames(fe.mm);
	for (uint32_t i = 0; i < 100; i++)
		write_page(&fe, MM_OWNER_FILE(2, i)); /* dirty, never written back */
	for (uint32_t i = 0; i < 3 * nr; i++) {
		uint32_t pfn;
		bool created;

		ASSERT_EQ(mm_pagecache_get(fe.mm, OWN(i), true, &pfn, &created, NULL), 0);
		mm_pagecache_put(fe.mm, pfn, false);
	}
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.file_dirty, 100);
	EXPECT_LE(c.file, nr);
	EXPECT_GE(c.free, c.wmark_min);
	mm_get_stats(fe.mm, st);
	EXPECT_GT(st[MM_STAT_PGSTEAL_DIRECT], 2 * nr - 200);
	EXPECT_GT(st[MM_STAT_ALLOCSTALL], 0);
	for (uint32_t i = 0; i < 100; i++) {
		uint32_t pfn;
		bool created;

		ASSERT_EQ(mm_pagecache_get(fe.mm, MM_OWNER_FILE(2, i), false, &pfn, &created, NULL),
			  0);
		mm_pagecache_put(fe.mm, pfn, false);
	}
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	fakeenv_destroy(&fe);
}

/* 3.1's direct reclaim writes unreferenced dirty pages out itself (pageout). */
TEST(reclaim_31_writes_dirty_pages_out)
{
	struct fakeenv fe;
	struct mm_counts c;
	char err[256];
	uint32_t nr;

	ASSERT_EQ(fakeenv_init(&fe, "linux-3.1", 8 * MIB, false, err, sizeof(err)), 0);
	nr = mm_nr_frames(fe.mm);
	for (uint32_t i = 0; i < 100; i++)
		write_page(&fe, MM_OWNER_FILE(2, i));
	for (uint32_t i = 0; i < 3 * nr; i++) {
		uint32_t pfn;
		bool created;

		ASSERT_EQ(mm_pagecache_get(fe.mm, OWN(i), true, &pfn, &created, NULL), 0);
		mm_pagecache_put(fe.mm, pfn, false);
	}
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.file_dirty, 0);
	EXPECT_EQ(fe.n_writeout, 100);
	EXPECT_EQ(c.file_writeback, 100); /* nothing completes writeback in this test */
	{
		uint64_t st[MM_STAT_NR];

		mm_get_stats(fe.mm, st);
		EXPECT_EQ(st[MM_STAT_NR_VMSCAN_WRITE], 100);
		EXPECT_EQ(st[MM_STAT_COMPACT_WRITEOUT], 0);
	}
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	fakeenv_destroy(&fe);
}

/* A block device's page cache (its mapping is GFP_USER: 3.1 fs/block_dev.c bdget, 6.x
 * block/bdev.c bdev_alloc) is allocated unmovable: the first page steals a free pageblock for
 * MIGRATE_UNMOVABLE and the next ones fill it; a regular file's pages stay movable, in other
 * blocks. Both eras. */
TEST(block_device_page_cache_is_unmovable)
{
	static const char *const policies[] = {"linux-3.1", "modern-always"};

	for (unsigned k = 0; k < 2; k++) {
		struct fakeenv fe;
		uint32_t bd[64], reg, pfn;
		bool created;
		char err[256];

		ASSERT_EQ(fakeenv_init(&fe, policies[k], 16 * MIB, false, err, sizeof(err)), 0);
		for (unsigned i = 0; i < 64; i++) {
			ASSERT_EQ(mm_pagecache_get_bdev(fe.mm, MM_OWNER_FILE(2, i), true, &bd[i],
							&created, NULL),
				  0);
			EXPECT(created);
			mm_pagecache_put(fe.mm, bd[i], false);
			EXPECT_EQ(pageblock_mt(fe.mm, bd[i]), MM_MT_UNMOVABLE);
			EXPECT_EQ(bd[i] / MM_HPAGE_NR, bd[0] / MM_HPAGE_NR);
		}
		ASSERT_EQ(mm_pagecache_get(fe.mm, OWN(1), true, &reg, &created, NULL), 0);
		mm_pagecache_put(fe.mm, reg, false);
		EXPECT_EQ(pageblock_mt(fe.mm, reg), MM_MT_MOVABLE);
		EXPECT_NE(reg / MM_HPAGE_NR, bd[0] / MM_HPAGE_NR);
		/* found again through the same index, not created twice */
		ASSERT_EQ(
		    mm_pagecache_get_bdev(fe.mm, MM_OWNER_FILE(2, 3), true, &pfn, &created, NULL),
		    0);
		EXPECT(!created);
		EXPECT_EQ(pfn, bd[3]);
		mm_pagecache_put(fe.mm, pfn, false);
		ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
		fakeenv_destroy(&fe);
	}
}

/* mm_pagecache_remove_range(owner, n) leaves the pool as n calls of mm_pagecache_remove do:
 * pages of several files sharing hash chains, some absent, some dirty, some under writeback
 * (freed later), one file read in order (its frames consecutive: they go back as runs), removed
 * in ranges that start and end anywhere; under an old era's rules and a modern one's. */
static void remove_range_as_one_by_one(const char *spec)
{
	struct fakeenv one, ranged;
	struct fakeenv *fe[2] = {&one, &ranged};
	uint64_t x = 99;
	char err[256];

	ASSERT_EQ(fakeenv_init(&one, spec, 16 * MIB, false, err, sizeof(err)), 0);
	ASSERT_EQ(fakeenv_init(&ranged, spec, 16 * MIB, false, err, sizeof(err)), 0);
	for (int round = 0; round < 6; round++) {
		for (int k = 0; k < 1500; k++) {
			uint32_t pfn[2];

			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			for (int i = 0; i < 2; i++) {
				uint64_t o = MM_OWNER_FILE(1 + (x >> 60) % 3, (x >> 33) % 900);
				bool created;

				if (mm_pagecache_get(fe[i]->mm, o, true, &pfn[i], &created, NULL))
					pfn[i] = MM_NO_PFN;
				else
					mm_pagecache_put(fe[i]->mm, pfn[i], (x >> 20) % 2);
			}
			ASSERT_EQ(pfn[0], pfn[1]);
			if (pfn[0] != MM_NO_PFN && (x >> 24) % 16 == 0) {
				EXPECT_EQ(mm_writeback_begin_one(one.mm, pfn[0]),
					  mm_writeback_begin_one(ranged.mm, pfn[1]));
			}
		}
		for (uint32_t i = 0; i < 600; i++) { /* file 4 read in order: consecutive frames */
			uint32_t pfn[2];

			for (int j = 0; j < 2; j++) {
				bool created;

				if (mm_pagecache_get(fe[j]->mm, MM_OWNER_FILE(4, i), true, &pfn[j],
						     &created, NULL))
					pfn[j] = MM_NO_PFN;
				else
					mm_pagecache_put(fe[j]->mm, pfn[j], false);
			}
			ASSERT_EQ(pfn[0], pfn[1]);
		}
		for (int k = 0; k < 40; k++) {
			uint32_t id, a, n;

			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			id = 1 + (uint32_t)((x >> 60) % 4);
			a = (uint32_t)((x >> 33) % 900);
			n = (uint32_t)((x >> 13) % 300);
			for (uint32_t i = 0; i < n; i++)
				mm_pagecache_remove(one.mm, MM_OWNER_FILE(id, a + i));
			mm_pagecache_remove_range(ranged.mm, MM_OWNER_FILE(id, a), n);
		}
		for (uint32_t p = 0; p < one.mm->nr_frames; p++) { /* some writebacks end */
			if (mm_frame_under_writeback(one.mm, p) && p % 3 == (uint32_t)round % 3) {
				mm_writeback_end(one.mm, p, 0);
				mm_writeback_end(ranged.mm, p, 0);
			}
		}
		{
			struct mm_counts ca, cb;
			unsigned differ = 0;

			memset(&ca, 0, sizeof(ca));
			memset(&cb, 0, sizeof(cb));
			mm_get_counts(one.mm, &ca);
			mm_get_counts(ranged.mm, &cb);
			EXPECT_EQ(memcmp(&ca, &cb, sizeof(ca)), 0);
			for (uint32_t p = 0; p < one.mm->nr_frames; p++) {
				const struct mm_frame *fa = pfn_frame(one.mm, p),
						      *fb = pfn_frame(ranged.mm, p);

				differ += fa->owner != fb->owner || fa->state != fb->state ||
					  fa->flags != fb->flags || fa->hnext != fb->hnext ||
					  fa->next != fb->next || fa->prev != fb->prev;
			}
			EXPECT_EQ(differ, 0);
			EXPECT_EQ(memcmp(one.mm->pc_hash, ranged.mm->pc_hash,
					 (one.mm->pc_hash_mask + 1) * sizeof(*one.mm->pc_hash)),
				  0);
			ASSERT_EQ(mm_check(one.mm, err, sizeof(err)), 0);
			ASSERT_EQ(mm_check(ranged.mm, err, sizeof(err)), 0);
		}
	}
	fakeenv_destroy(&one);
	fakeenv_destroy(&ranged);
}

TEST(remove_range_is_the_removes_one_by_one) /* linux-3.3 */
{
	remove_range_as_one_by_one("linux-3.3");
}

TEST(remove_range_is_the_removes_one_by_one_modern)
{
	remove_range_as_one_by_one("modern-always");
}

TEST_MAIN()

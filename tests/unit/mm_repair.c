/* core/mm after a process died (repair.c, anon.c's mm_release_owners): a dead process's frames
 * go back to the pool, also while a compaction holds some of them isolated; a model left
 * half-updated by a lock holder that died is rebuilt from its frame descriptors; callers that
 * were inside an [unlocked] hook when it was rebuilt abandon cleanly. */
#include "harness.h"
#include "mm_fakeenv.h"
#include "mm/compaction.h"

#define MIB (1ULL << 20)

/* Owner cookies of "processes": a slot in bits 54..61, as core/machine gives them. */
#define SLOT_SHIFT 54
#define SLOT_MASK  (0xffULL << SLOT_SHIFT)
#define SLOT(s)	   ((uint64_t)(s) << SLOT_SHIFT)

static void check(struct fakeenv *fe)
{
	char err[256];
	int rc = mm_check(fe->mm, err, sizeof(err));

	if (rc)
		fprintf(stderr, "  mm_check: %s\n", err);
	ASSERT_EQ(rc, 0);
}

static uint32_t fault(struct fakeenv *fe, uint64_t owner, bool huge, enum mm_fault_outcome want)
{
	struct mm_fault_req req = {.owner = owner, .extent_owner = owner, .huge_ok = huge};
	struct mm_fault_res res;

	ASSERT_EQ(mm_fault(fe->mm, &req, &res, NULL), 0);
	ASSERT_EQ(res.outcome, want);
	return res.pfn;
}

/* ---- mm_release_owners ------------------------------------------------------------------------
 */

/* Two processes' huge and base pages, plus page cache and foreign frames whose cookies carry
 * process 1's slot bits: releasing process 1 frees exactly its program frames. */
TEST(release_owners_frees_one_process)
{
	struct fakeenv fe;
	struct mm_counts before, after;
	uint32_t p2[6], pfn;
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "linux-3.2", 32 * MIB, false, err, sizeof(err)), 0);
	for (unsigned s = 1; s <= 2; s++)
		for (unsigned i = 0; i < 3; i++) {
			uint64_t base = SLOT(s) | ((uint64_t)(i + 1) << 20);

			pfn = fault(&fe, base, true, MM_FAULT_HUGE);
			if (s == 2)
				p2[i] = pfn;
			pfn = fault(&fe, base | 0x10000, false, MM_FAULT_BASE);
			if (s == 2)
				p2[3 + i] = pfn;
		}
	ASSERT_EQ(
	    mm_alloc_pages(fe.mm, 0, MM_MT_MOVABLE, MM_OWNER_FOREIGN | SLOT(1) | 7, &pfn, NULL), 0);
	ASSERT_EQ(
	    mm_pagecache_get(fe.mm, MM_OWNER_FILE(1ULL << 18, 3), true, &pfn, &(bool){0}, NULL), 0);
	mm_pagecache_put(fe.mm, pfn, true);
	EXPECT_EQ(pfn_frame(fe.mm, pfn)->owner & SLOT_MASK, SLOT(1));
	mm_get_counts(fe.mm, &before);

	EXPECT_EQ(mm_release_owners(fe.mm, SLOT_MASK, SLOT(1)), 3 * 512 + 3);
	mm_get_counts(fe.mm, &after);
	EXPECT_EQ(after.anon, before.anon - (3 * 512 + 3));
	EXPECT_EQ(after.anon_huge, before.anon_huge - 3 * 512);
	EXPECT_EQ(after.free, before.free + 3 * 512 + 3);
	EXPECT_EQ(after.foreign, before.foreign);
	EXPECT_EQ(after.file, before.file);
	EXPECT_EQ(after.file_dirty, 1);
	for (unsigned i = 0; i < 6; i++) {
		const struct mm_frame *f = pfn_frame(fe.mm, p2[i]);

		EXPECT_EQ(f->state, i < 3 ? FS_HUGE : FS_ANON);
		EXPECT_EQ(f->owner & SLOT_MASK, SLOT(2));
	}
	EXPECT_EQ(after.free_blocks_order9, before.free_blocks_order9 + 3);
	check(&fe);
	EXPECT_EQ(mm_release_owners(fe.mm, SLOT_MASK, SLOT(1)), 0);
	EXPECT_EQ(mm_release_owners(fe.mm, SLOT_MASK, SLOT(2)), 3 * 512 + 3);
	mm_get_counts(fe.mm, &after);
	EXPECT_EQ(after.anon, 0);
	check(&fe);
	fakeenv_destroy(&fe);
}

/* A 16 MiB pool (8 pageblocks): block 0 free but for the given anon pages; blocks 1-3 full of
 * unmovable frames; blocks 4-7 free but for their last frame, so compaction for order 9 must
 * migrate block 0's pages into blocks 4-7. */
static void craft(struct fakeenv *fe, const char *spec, const uint32_t *pfns,
		  const uint64_t *owners, unsigned n)
{
	char err[256];

	ASSERT_EQ(fakeenv_init(fe, spec, 16 * MIB, false, err, sizeof(err)), 0);
	for (uint32_t pfn = 512; pfn < 2048; pfn++)
		ASSERT_EQ(mm_debug_place(fe->mm, pfn, DBG_UNMOVABLE, 0), 0);
	for (uint32_t b = 4; b < 8; b++)
		ASSERT_EQ(mm_debug_place(fe->mm, b * 512 + 511, DBG_UNMOVABLE, 0), 0);
	for (unsigned i = 0; i < n; i++)
		ASSERT_EQ(mm_debug_place(fe->mm, pfns[i], DBG_ANON, owners[i]), 0);
	check(fe);
}

static enum mm_compact_result compact(struct fakeenv *fe, enum mm_migrate_mode mode)
{
	struct mm_fault_rec rec = {0};
	struct fault_ctx fc = {.rec = &rec};
	struct alloc_ctx ac = {.order = 9,
			       .mt = MM_MT_MOVABLE,
			       .gfp = GFP_HIGHUSER_MOVABLE,
			       .alloc_flags = WMARK_MIN,
			       .fc = &fc};
	enum mm_compact_result r;
	uint32_t captured;

	r = try_to_compact_pages(fe->mm, &ac, mode, &captured);
	if (captured != MM_NO_PFN)
		free_one_block(fe->mm, captured, 9, NULL);
	return r;
}

struct dying {
	uint64_t slot;	   /* whose pages die during the first migration of one of them */
	int ret;	   /* what the hook then returns for the dead owner's page */
	uint32_t released; /* what mm_release_owners returned in the hook */
};

/* The migrate_anon hook: the owner of the page being moved dies meanwhile, and the host
 * releases its frames (the lock is free: this runs with it released). */
static int die_during_migration(struct fakeenv *fe, uint64_t owner, uint32_t from, uint32_t to)
{
	struct dying *d = fe->user;

	if ((owner & SLOT_MASK) != d->slot)
		return 0;
	if (!d->released)
		d->released = mm_release_owners(fe->mm, SLOT_MASK, d->slot);
	return d->ret;
}

static void release_during_migration(int hook_ret)
{
	static const uint32_t pfns[] = {13, 15, 17};
	static const uint64_t owners[] = {SLOT(1) | 0x100, SLOT(1) | 0x101, SLOT(2) | 0x100};
	struct dying d = {.slot = SLOT(1), .ret = hook_ret};
	struct fakeenv fe;
	struct mm_counts c;
	unsigned found = 0;

	craft(&fe, "linux-3.2", pfns, owners, 3);
	fe.on_migrate = die_during_migration;
	fe.user = &d;
	compact(&fe, MM_MIGRATE_ASYNC);
	/* in flight: the page's source and target, and the other page, isolated in the batch */
	EXPECT_EQ(d.released, 3);
	EXPECT_EQ(fe.n_migrate, 2); /* the other dead page is freed without asking its owner */
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.anon, 1);
	EXPECT_EQ(c.isolated, 0);
	for (uint32_t p = 0; p < fe.nr_frames; p++) {
		const struct mm_frame *f = pfn_frame(fe.mm, p);

		if (f->state != FS_ANON)
			continue;
		EXPECT_EQ(f->owner, owners[2]);
		EXPECT_GE(p, 2048); /* moved out of block 0 */
		found++;
	}
	EXPECT_EQ(found, 1);
	check(&fe);
	fakeenv_destroy(&fe);
}

TEST(release_owners_while_their_page_migrates_owner_gone)
{
	release_during_migration(-ENOENT);
}

TEST(release_owners_while_their_page_migrates_moved_anyway)
{
	release_during_migration(0);
}

TEST(release_owners_while_their_page_migrates_refused)
{
	release_during_migration(-EAGAIN);
}

TEST_MAIN()

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

/* ---- mm_release_owners ----------------------------------------------------------------------- */

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
static void craft_env(struct fakeenv *fe, const char *spec, const struct mm_env_ops *ops,
		      const uint32_t *pfns, const uint64_t *owners, unsigned n)
{
	char err[256];

	ASSERT_EQ(fakeenv_init_ops(fe, spec, 16 * MIB, ops, err, sizeof(err)), 0);
	for (uint32_t pfn = 512; pfn < 2048; pfn++)
		ASSERT_EQ(mm_debug_place(fe->mm, pfn, DBG_UNMOVABLE, 0), 0);
	for (uint32_t b = 4; b < 8; b++)
		ASSERT_EQ(mm_debug_place(fe->mm, b * 512 + 511, DBG_UNMOVABLE, 0), 0);
	for (unsigned i = 0; i < n; i++)
		ASSERT_EQ(mm_debug_place(fe->mm, pfns[i], DBG_ANON, owners[i]), 0);
	check(fe);
}

static void craft(struct fakeenv *fe, const char *spec, const uint32_t *pfns,
		  const uint64_t *owners, unsigned n)
{
	craft_env(fe, spec, &fe_ops_single, pfns, owners, n);
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

/* ---- mm_repair ------------------------------------------------------------------------------- */

static bool cached(struct fakeenv *fe, uint64_t owner)
{
	uint32_t got;
	bool created;

	if (mm_pagecache_get(fe->mm, owner, false, &got, &created, NULL))
		return false;
	mm_pagecache_put(fe->mm, got, false);
	return true;
}

/* A 64 MiB pool with a bit of everything: huge extents and base pages of two processes, clean,
 * dirty and writeback page cache (one removed while under writeback), foreign and unmovable
 * frames, free blocks of many orders, and never-touched blocks past the fresh cursor. */
static void populate(struct fakeenv *fe, uint32_t *base_pfns, uint64_t *removed_wb)
{
	uint32_t pfns[20], pfn;
	uint64_t owners[20];
	char err[256];

	ASSERT_EQ(fakeenv_init(fe, "linux-3.2", 64 * MIB, false, err, sizeof(err)), 0);
	for (unsigned i = 0; i < 4; i++)
		fault(fe, SLOT(1) | ((uint64_t)(i + 1) << 20), true, MM_FAULT_HUGE);
	for (unsigned i = 0; i < 200; i++)
		base_pfns[i] = fault(fe, SLOT(2) | (0x1000 + i), false, MM_FAULT_BASE);
	for (unsigned i = 0; i < 300; i++) {
		ASSERT_EQ(
		    mm_pagecache_get(fe->mm, MM_OWNER_FILE(1, i), true, &pfn, &(bool){0}, NULL), 0);
		mm_pagecache_put(fe->mm, pfn, i % 3 == 0);
	}
	ASSERT_EQ(mm_writeback_begin(fe->mm, 20, pfns, owners), 20);
	for (unsigned i = 0; i < 50; i++) {
		ASSERT_EQ(mm_alloc_pages(fe->mm, 0, MM_MT_UNMOVABLE, 0, &pfn, NULL), 0);
		ASSERT_EQ(
		    mm_alloc_pages(fe->mm, 0, MM_MT_MOVABLE, MM_OWNER_FOREIGN | i, &pfn, NULL), 0);
	}
	for (unsigned i = 0; i < 200; i += 2)
		mm_anon_free(fe->mm, base_pfns[i], 0, NULL);
	for (unsigned i = 1; i < 300; i += 7)
		mm_pagecache_remove(fe->mm, MM_OWNER_FILE(1, i));
	mm_pagecache_remove(fe->mm, owners[0]); /* under writeback: freed when it ends */
	*removed_wb = MM_OWNER_FILE_INDEX(owners[0]);
	ASSERT_LT(fe->mm->fresh_pfn, fe->mm->fresh_end); /* (mm_check would link them all) */
}

/* The first free buddy block of at least min_order on any list. */
static uint32_t some_free_block(struct mm *mm, unsigned min_order)
{
	for (unsigned o = min_order; o < MM_MAX_ORDER; o++)
		for (unsigned mt = 0; mt < MM_MT_NR; mt++)
			if (!flist_empty(mm, sentinel(mm, SENT_FREE(o, mt))))
				return pfn_frame(mm, sentinel(mm, SENT_FREE(o, mt)))->next;
	return MM_NO_PFN;
}

/* What a thread killed in the middle of several updates leaves: a free block unlinked but not
 * relinked (mid __free_one_page), a base page half freed (mid free_frames, counts not moved),
 * frames isolated by a compaction that will never put them back, a never-touched block taken
 * off the fresh cursor but not written (mid materialise_free), stale counters, a lost hash
 * chain, an emptied writeback ring and a broken LRU link. */
static void corrupt_like_a_death(struct fakeenv *fe, uint32_t anon_pfn, uint32_t file_pfn)
{
	struct mm *mm = fe->mm;
	uint32_t b = some_free_block(mm, 1), t;
	struct mm_frame *f;

	ASSERT_NE(b, MM_NO_PFN);
	flist_del(mm, b);
	f = pfn_frame(mm, anon_pfn);
	f->state = FS_FREE;
	f->owner = 0;
	f->order = ORDER_TAIL;
	lru_del(mm, file_pfn);
	pfn_frame(mm, file_pfn)->flags |= FF_ISOLATED | FF_MIGRATING;
	mm->nr_isolated++;
	t = some_free_block(mm, 2);
	ASSERT_NE(t, MM_NO_PFN);
	del_free_block(mm, t);
	pfn_frame(mm, t)->order = 2;
	pfn_frame(mm, t)->flags = FF_ISOLATED;
	mm->fresh_pfn += 1U << MM_MAX_ORDER;
	mm->nr_file += 5;
	mm->nr_lru[1] += 2;
	mm->nr_free_pages -= 3;
	for (uint32_t i = 0; i <= mm->pc_hash_mask; i++)
		if (mm->pc_hash[i]) {
			mm->pc_hash[i] = 0;
			break;
		}
	mm->ring_len = 0;
	pfn_frame(mm, sentinel(mm, SENT_LRU_INACTIVE))->prev = 12345;
}

static uint32_t first_clean_file(struct fakeenv *fe)
{
	for (uint32_t p = 0; p < fe->nr_frames; p++) {
		const struct mm_frame *f = pfn_frame(fe->mm, p);

		if (f->state == FS_FILE && !(f->flags & (FF_DIRTY | FF_GONE | FF_LOCKED)) &&
		    !frame_under_wb(f))
			return p;
	}
	return MM_NO_PFN;
}

/* Allocations of every order succeed after a repair, and freeing them balances the counts. */
static void alloc_every_order(struct fakeenv *fe)
{
	struct mm_counts before, after;
	uint32_t pfn[MM_NR_ORDERS];

	mm_get_counts(fe->mm, &before);
	for (unsigned o = 0; o <= MM_MAX_ORDER; o++)
		ASSERT_EQ(mm_alloc_pages(fe->mm, o, MM_MT_UNMOVABLE, 0, &pfn[o], NULL), 0);
	check(fe);
	for (unsigned o = 0; o <= MM_MAX_ORDER; o++)
		mm_free_pages(fe->mm, pfn[o], o, NULL);
	mm_get_counts(fe->mm, &after);
	EXPECT_EQ(after.free, before.free);
	EXPECT_EQ(after.unmovable, before.unmovable);
	check(fe);
}

TEST(repair_rebuilds_what_a_dead_lock_holder_left)
{
	struct fakeenv fe;
	struct mm_counts before, after;
	uint32_t base[200], file, pfns[512];
	uint64_t owners[512], file_owner, epoch, removed_wb;

	populate(&fe, base, &removed_wb);
	mm_get_counts(fe.mm, &before);
	file = first_clean_file(&fe);
	ASSERT_NE(file, MM_NO_PFN);
	file_owner = pfn_frame(fe.mm, file)->owner;
	epoch = fe.mm->epoch;
	corrupt_like_a_death(&fe, base[1], file);

	ASSERT_EQ(mm_repair(fe.mm), 0);
	EXPECT_EQ(fe.mm->epoch, epoch + 1);
	EXPECT_LT(fe.mm->fresh_pfn, fe.mm->fresh_end); /* still pending, and counted */
	mm_get_counts(fe.mm, &after);
	EXPECT_EQ(after.free, before.free + 1); /* the half-freed page is free */
	EXPECT_EQ(after.anon, before.anon - 1);
	EXPECT_EQ(after.anon_huge, before.anon_huge);
	EXPECT_EQ(after.file, before.file);
	EXPECT_EQ(after.file_dirty, before.file_dirty);
	EXPECT_EQ(after.file_writeback, before.file_writeback);
	EXPECT_EQ(after.foreign, before.foreign);
	EXPECT_EQ(after.unmovable, before.unmovable);
	EXPECT_EQ(after.isolated, 0);
	EXPECT(cached(&fe, file_owner));
	for (unsigned i = 0; i < 300; i++)
		EXPECT_EQ(cached(&fe, MM_OWNER_FILE(1, i)), i % 7 != 1 && i != removed_wb);
	/* the ring holds every dirty page again: the flusher finds them all */
	EXPECT_EQ(mm_writeback_begin(fe.mm, 512, pfns, owners), before.file_dirty);
	check(&fe);
	alloc_every_order(&fe);
	fakeenv_destroy(&fe);
}

/* Huge extents cut short: a split is finished, an allocation or a free is undone (its caller
 * died before anyone got the extent); a torn cookie of a whole extent is made consecutive. */
TEST(repair_finishes_or_undoes_a_huge_extent_cut_short)
{
	struct fakeenv fe;
	struct mm_counts c;
	uint32_t h[3];
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "modern-always", 32 * MIB, false, err, sizeof(err)), 0);
	for (unsigned i = 0; i < 3; i++)
		h[i] = fault(&fe, SLOT(1) | ((uint64_t)(i + 1) << 20), true, MM_FAULT_HUGE);
	for (uint32_t i = 0; i < 100; i++) /* mm_anon_split killed after 100 frames */
		pfn_frame(fe.mm, h[0] + i)->state = FS_ANON;
	fe.mm->nr_anon -= MM_HPAGE_NR; /* anon_free_huge moves the counts first ... */
	fe.mm->nr_anon_huge -= MM_HPAGE_NR;
	for (uint32_t i = 0; i < 200; i++) { /* ... then free_frames is killed */
		pfn_frame(fe.mm, h[1] + i)->state = FS_FREE;
		pfn_frame(fe.mm, h[1] + i)->owner = 0;
	}
	pfn_frame(fe.mm, h[2] + 511)->owner = 0; /* mark_allocated killed before the last cookie */
	ASSERT_EQ(mm_repair(fe.mm), 0);
	check(&fe);
	mm_get_counts(&fe.mm[0], &c);
	EXPECT_EQ(c.anon_huge, MM_HPAGE_NR);
	EXPECT_EQ(c.anon, 2 * MM_HPAGE_NR);
	EXPECT_EQ(pfn_frame(fe.mm, h[0] + 511)->state, FS_ANON);
	EXPECT_EQ(pfn_frame(fe.mm, h[0] + 511)->owner, (SLOT(1) | (1ULL << 20)) + 511);
	EXPECT_EQ(pfn_frame(fe.mm, h[1])->state, FS_FREE);
	EXPECT_EQ(pfn_frame(fe.mm, h[2] + 511)->owner, (SLOT(1) | (3ULL << 20)) + 511);
	mm_anon_free(fe.mm, h[2], MM_HPAGE_ORDER, NULL);
	EXPECT_EQ(mm_release_owners(fe.mm, SLOT_MASK, SLOT(1)), MM_HPAGE_NR);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.anon, 0);
	check(&fe);
	fakeenv_destroy(&fe);
}

/* Descriptors no update can leave: -EUCLEAN, and nothing is rebuilt. */
TEST(repair_refuses_inconsistent_descriptors)
{
	struct fakeenv fe;
	uint32_t h, u;
	uint8_t saved;
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "linux-3.3", 32 * MIB, false, err, sizeof(err)), 0);
	h = fault(&fe, SLOT(1) | (1ULL << 20), true, MM_FAULT_HUGE);
	ASSERT_EQ(mm_alloc_pages(fe.mm, 0, MM_MT_UNMOVABLE, 0, &u, NULL), 0);
	check(&fe);

	saved = pfn_frame(fe.mm, u)->state;
	pfn_frame(fe.mm, u)->state = 9; /* no such state */
	fe.mm->nr_lru[0] += 1;		/* a derived value a rebuild would fix */
	EXPECT_EQ(mm_repair(fe.mm), -EUCLEAN);
	EXPECT_EQ(fe.mm->nr_lru[0], 1); /* untouched */
	pfn_frame(fe.mm, u)->state = saved;
	fe.mm->nr_lru[0] -= 1;

	pfn_frame(fe.mm, h + 7)->state = FS_UNMOVABLE; /* an extent with a kernel page in it */
	EXPECT_EQ(mm_repair(fe.mm), -EUCLEAN);
	pfn_frame(fe.mm, h + 7)->state = FS_HUGE;

	pfn_frame(fe.mm, u)->state = FS_FILE; /* page cache without a file */
	EXPECT_EQ(mm_repair(fe.mm), -EUCLEAN);
	pfn_frame(fe.mm, u)->state = saved;

	EXPECT_EQ(mm_repair(fe.mm), 0); /* a consistent model repairs to itself */
	check(&fe);
	fakeenv_destroy(&fe);
}

/* ---- Callers inside an [unlocked] hook while the model is repaired --------------------------- */

struct repairing {
	int ret;	    /* what the hook returns */
	bool free_target;   /* the owner frees the page's new frame before the repair */
	unsigned repairs;   /* how many times it repaired */
	uint64_t only_slot; /* repair only during this owner's migration (0: the first) */
};

static void repair_locked(struct fakeenv *fe)
{
	if (fe->threaded)
		fe_lock(fe); /* as the next locker after EOWNERDEAD: it holds the lock */
	ASSERT_EQ(mm_repair(fe->mm), 0);
	if (fe->threaded)
		fe_unlock(fe);
}

static int repair_during_migration(struct fakeenv *fe, uint64_t owner, uint32_t from, uint32_t to)
{
	struct repairing *r = fe->user;

	if (!r->repairs) {
		if (r->free_target)
			mm_anon_free(fe->mm, to, 0, NULL);
		repair_locked(fe);
		r->repairs++;
		return r->ret;
	}
	return 0;
}

/* A compaction whose migrate_anon hook runs while the model is repaired: it abandons as
 * contended, touching nothing it held; the page is where the hook put it, exactly once; the
 * batch's other pages are back where they belong. The list runs from the page isolated last
 * (list_add), so pfns[0], the highest, migrates first, and the page-cache page below them last. */
static void repair_while_migrating(int hook_ret)
{
	static const uint32_t pfns[] = {17, 15, 13};
	static const uint64_t owners[] = {SLOT(1) | 0x100, SLOT(1) | 0x101, SLOT(2) | 0x100};
	struct repairing r = {.ret = hook_ret};
	struct fakeenv fe;
	struct mm_counts c;
	uint64_t st[MM_STAT_NR];
	unsigned found[3] = {0};

	craft(&fe, "linux-3.2", pfns, owners, 3);
	ASSERT_EQ(mm_debug_place(fe.mm, 10, DBG_FILE_CLEAN, MM_OWNER_FILE(1, 20)), 0);
	fe.on_migrate = repair_during_migration;
	fe.user = &r;
	EXPECT_EQ(compact(&fe, MM_MIGRATE_ASYNC), MM_COMPACT_CONTENDED);
	EXPECT_EQ(r.repairs, 1);
	EXPECT_EQ(fe.n_migrate, 1);
	EXPECT_EQ(fe.n_copy, 0);
	mm_get_counts(fe.mm, &c);
	mm_get_stats(fe.mm, st);
	EXPECT_EQ(c.anon, 3);
	EXPECT_EQ(c.isolated, 0);
	EXPECT_EQ(st[MM_STAT_PGMIGRATE_FAIL], 4);
	for (uint32_t p = 0; p < fe.nr_frames; p++) {
		const struct mm_frame *f = pfn_frame(fe.mm, p);

		for (unsigned i = 0; i < 3; i++)
			if (f->state == FS_ANON && f->owner == owners[i]) {
				found[i]++;
				if (i == 0)
					EXPECT_EQ(p >= 2048, hook_ret == 0);
				else
					EXPECT_EQ(p, pfns[i]);
			}
	}
	for (unsigned i = 0; i < 3; i++)
		EXPECT_EQ(found[i], 1);
	EXPECT(cached(&fe, MM_OWNER_FILE(1, 20)));
	check(&fe);
	fakeenv_destroy(&fe);
}

TEST(repair_during_migrate_anon_that_moved_the_page)
{
	repair_while_migrating(0);
}

/* The owner, its page moved, frees the new frame before the repair: the repair frees it, and
 * the compaction, back, frees the stale source: nothing of the page is left. */
TEST(repair_during_migrate_anon_after_the_owner_freed_the_page)
{
	static const uint32_t pfns[] = {13};
	static const uint64_t owners[] = {SLOT(1) | 0x100};
	struct repairing r = {.ret = 0, .free_target = true};
	struct fakeenv fe;
	struct mm_counts c;

	craft(&fe, "linux-3.2", pfns, owners, 1);
	fe.on_migrate = repair_during_migration;
	fe.user = &r;
	EXPECT_EQ(compact(&fe, MM_MIGRATE_ASYNC), MM_COMPACT_CONTENDED);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.anon, 0);
	EXPECT_EQ(c.isolated, 0);
	check(&fe);
	fakeenv_destroy(&fe);
}

TEST(repair_during_migrate_anon_that_refused)
{
	repair_while_migrating(-EAGAIN);
}

/* The same in the modern era's batch (migrate_anon_batch): the repair comes during the first
 * page's move, the others move after it, inside the same call. Every page is the owner's
 * exactly once, where the hook left it. */
static void repair_while_batch_migrating(int hook_ret)
{
	static const uint32_t pfns[] = {17, 15, 13};
	static const uint64_t owners[] = {SLOT(1) | 0x100, SLOT(1) | 0x101, SLOT(2) | 0x100};
	struct repairing r = {.ret = hook_ret};
	struct fakeenv fe;
	struct mm_counts c;
	unsigned found[3] = {0};

	craft_env(&fe, "modern-always", &fe_ops_batch, pfns, owners, 3);
	ASSERT_EQ(mm_debug_place(fe.mm, 10, DBG_FILE_CLEAN, MM_OWNER_FILE(1, 20)), 0);
	check(&fe);
	fe.on_migrate = repair_during_migration;
	fe.user = &r;
	EXPECT_EQ(compact(&fe, MM_MIGRATE_ASYNC), MM_COMPACT_CONTENDED);
	EXPECT_EQ(r.repairs, 1);
	EXPECT_EQ(fe.n_batches, 1);
	EXPECT_EQ(fe.n_migrate, 3); /* the whole batch, in one call */
	EXPECT_EQ(fe.n_copy, 0);    /* the page-cache page would have gone after it */
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.anon, 3);
	EXPECT_EQ(c.isolated, 0);
	for (uint32_t p = 0; p < fe.nr_frames; p++) {
		const struct mm_frame *f = pfn_frame(fe.mm, p);

		for (unsigned i = 0; i < 3; i++)
			if (f->state == FS_ANON && f->owner == owners[i]) {
				found[i]++;
				/* the first page where its hook answer put it, the others moved */
				EXPECT_EQ(p != pfns[i], i > 0 || hook_ret == 0);
			}
	}
	for (unsigned i = 0; i < 3; i++)
		EXPECT_EQ(found[i], 1);
	EXPECT(cached(&fe, MM_OWNER_FILE(1, 20)));
	check(&fe);
	fakeenv_destroy(&fe);
}

TEST(repair_during_a_migrate_anon_batch_that_moved_the_pages)
{
	repair_while_batch_migrating(0);
}

TEST(repair_during_a_migrate_anon_batch_that_refused_one)
{
	repair_while_batch_migrating(-EAGAIN);
}

static void repair_during_wait(struct fakeenv *fe, uint32_t pfn)
{
	struct repairing *r = fe->user;

	if (!r->repairs++)
		repair_locked(fe);
}

/* Sync compaction waiting on a page under writeback while the model is repaired. */
TEST(repair_during_compaction_writeback_wait)
{
	struct repairing r = {0};
	struct fakeenv fe;
	struct mm_counts c;

	craft(&fe, "linux-3.1:sync-wait-from-pass=0", NULL, NULL, 0);
	ASSERT_EQ(mm_debug_place(fe.mm, 11, DBG_FILE_WRITEBACK, MM_OWNER_FILE(1, 11)), 0);
	ASSERT_EQ(mm_debug_place(fe.mm, 12, DBG_FILE_CLEAN, MM_OWNER_FILE(1, 12)), 0);
	fe.on_wait = repair_during_wait;
	fe.user = &r;
	EXPECT_EQ(compact(&fe, MM_MIGRATE_SYNC), MM_COMPACT_CONTENDED);
	EXPECT_EQ(r.repairs, 1);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.isolated, 0);
	EXPECT_EQ(c.file, 2);
	EXPECT(cached(&fe, MM_OWNER_FILE(1, 11)));
	EXPECT(cached(&fe, MM_OWNER_FILE(1, 12)));
	check(&fe);
	fakeenv_destroy(&fe);
}

/* 3.2 direct reclaim's synchronous pass waiting on writeback while the model is repaired: the
 * pass stops, its batch is back on the LRU, the fault falls back. The pool is mm_vmscan's: a
 * THP fault whose order-9 reclaim batch takes the page under writeback at pfn 2 along with the
 * tail page at pfn 100 and waits on it. */
TEST(repair_during_reclaim_writeback_wait)
{
	struct repairing r = {0};
	struct fakeenv fe;
	struct mm_counts before, after;
	struct mm_fault_req req = {.owner = 1ULL << 9, .extent_owner = 1ULL << 9, .huge_ok = true};
	struct mm_fault_res res;
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "linux-3.2:second-compaction=none", 16 * MIB, false, err,
			       sizeof(err)),
		  0);
	ASSERT_EQ(mm_debug_place(fe.mm, 100, DBG_FILE_CLEAN, MM_OWNER_FILE(3, 100)), 0);
	for (uint32_t pfn = 512; pfn < 3584; pfn++)
		ASSERT_EQ(mm_debug_place(fe.mm, pfn, pfn % 512 ? DBG_FILE_CLEAN : DBG_FOREIGN,
					 pfn % 512 ? MM_OWNER_FILE(3, pfn) : pfn),
			  0);
	for (uint32_t pfn = 3584; pfn < 4096; pfn++)
		if (pfn % 4)
			ASSERT_EQ(mm_debug_place(fe.mm, pfn, DBG_UNMOVABLE, 0), 0);
	for (uint32_t pfn = 3; pfn < 512; pfn++)
		if (pfn != 100)
			ASSERT_EQ(mm_debug_place(fe.mm, pfn, DBG_UNMOVABLE, 0), 0);
	ASSERT_EQ(mm_debug_place(fe.mm, 0, DBG_FILE_CLEAN, MM_OWNER_FILE(3, 0)), 0);
	ASSERT_EQ(mm_debug_place(fe.mm, 2, DBG_FILE_WRITEBACK, MM_OWNER_FILE(3, 2)), 0);
	fe.wb_done_at[2] = 400000000ULL;
	mm_get_counts(fe.mm, &before);
	fe.on_wait = repair_during_wait;
	fe.user = &r;
	ASSERT_EQ(mm_fault(fe.mm, &req, &res, NULL), 0);
	EXPECT_EQ(res.outcome, MM_FAULT_BASE);
	mm_get_counts(fe.mm, &after);
	EXPECT_EQ(r.repairs, 1);
	EXPECT_EQ(after.isolated, 0);
	EXPECT_EQ(after.file + after.free + after.anon, before.file + before.free);
	/* back on the LRU after the repair; the base fault's own reclaim (below the 3.x watermarks
	 * that THP raises) may then take it, its writeback over: cached, or reclaimed */
	{
		uint64_t st[MM_STAT_NR];

		mm_get_stats(fe.mm, st);
		EXPECT(cached(&fe, MM_OWNER_FILE(3, 2)) || st[MM_STAT_PGSTEAL_DIRECT] > 0);
	}
	check(&fe);
	fakeenv_destroy(&fe);
}

/* The same with a real lock: a THP fault's compaction (public entry point, lock taken) meets
 * a repair made by another locker while its migrate_anon hook runs. */
TEST(repair_during_migration_under_a_real_lock)
{
	static const uint32_t pfns[] = {13, 15, 17};
	static const uint64_t owners[] = {SLOT(1) | 0x100, SLOT(1) | 0x101, SLOT(2) | 0x100};
	struct mm_fault_req req = {.owner = SLOT(3), .extent_owner = SLOT(3), .huge_ok = true};
	struct repairing r = {.ret = 0};
	struct mm_fault_res res;
	struct fakeenv fe;
	unsigned found[3] = {0};

	craft_env(&fe, "linux-3.2", &fe_ops_threaded, pfns, owners, 3);
	fe.on_migrate = repair_during_migration;
	fe.user = &r;
	ASSERT_EQ(mm_fault(fe.mm, &req, &res, NULL), 0);
	EXPECT_EQ(r.repairs, 1);
	EXPECT_EQ(fe.n_lock_violations, 0);
	EXPECT_EQ(res.rec.steps[2].step, MM_STEP_COMPACT_ASYNC);
	EXPECT_EQ(res.rec.steps[2].result, MM_COMPACT_CONTENDED);
	for (uint32_t p = 0; p < fe.nr_frames; p++)
		for (unsigned i = 0; i < 3; i++)
			found[i] += pfn_frame(fe.mm, p)->state == FS_ANON &&
				    pfn_frame(fe.mm, p)->owner == owners[i];
	for (unsigned i = 0; i < 3; i++)
		EXPECT_EQ(found[i], 1);
	check(&fe);
	fakeenv_destroy(&fe);
}

static void repair_during_clear(struct fakeenv *fe, uint32_t head)
{
	repair_locked(fe);
}

static void owner_released_during_clear(struct fakeenv *fe, uint32_t head)
{
	mm_release_owners(fe->mm, SLOT_MASK, SLOT(1));
}

/* A huge fault clearing its extent (lock released) while the model is repaired keeps the
 * extent (a whole extent is kept); one whose extent was taken back meanwhile falls back. */
TEST(repair_or_release_during_clear_huge)
{
	struct fakeenv fe;
	struct mm_counts c;
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "modern-always", 32 * MIB, true, err, sizeof(err)), 0);
	fe.on_clear = repair_during_clear;
	fault(&fe, SLOT(1) | (1ULL << 20), true, MM_FAULT_HUGE);
	EXPECT_EQ(fe.mm->epoch, 1);
	fe.on_clear = owner_released_during_clear;
	fault(&fe, SLOT(1) | (2ULL << 20), true, MM_FAULT_BASE);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.anon_huge, 0);
	EXPECT_EQ(c.anon, 1);
	EXPECT_EQ(fe.n_lock_violations, 0);
	check(&fe);
	fakeenv_destroy(&fe);
}

TEST_MAIN()

/* core/mm migration: compaction never loses or duplicates a frame. A random workload of faults,
 * frees, splits, page-cache writes and removals, writeback and background work runs against
 * every profile; after each step mm_check() verifies the pool and a test-side reverse map
 * (updated only through the migrate_anon hook) must agree with mm's owners. Frees also arrive
 * while compaction has the lock released (from the wait hook), migrate_anon sometimes reports
 * the owner gone, and sometimes the program frees the page right after it moved, before mm has
 * retaken its lock: every path of mm.h's rule for racing frees (mm_anon_free). */
#include "harness.h"
#include "mm_fakeenv.h"
#include "mm/internal.h"
#include "util/rng.h"

#define MIB   (1ULL << 20)
#define MS    1000000ULL
#define NEXT  64   /* extents the test program may use */
#define NFILE 3000 /* page-cache indices of the test file */

struct tracker {
	struct rng rng;
	/* per extent: 0 empty, 1 huge (head in pfn[e*512]), 2 base pages */
	uint8_t kind[NEXT];
	uint32_t pfn[NEXT * 512]; /* per page of a base extent: its frame, or MM_NO_PFN */
	bool file_live[NFILE];
	uint64_t migrations;
	uint64_t gone_in_hook, freed_during_wait, freed_after_move;
};

static struct tracker *T;

static uint64_t owner_of(uint32_t e, uint32_t i)
{
	return ((uint64_t)e << 9) + i + 1; /* never 0 */
}

static int on_migrate(struct fakeenv *fe, uint64_t owner, uint32_t from, uint32_t to)
{
	uint64_t page = owner - 1;

	if (T->pfn[page] != from)
		return -EINVAL; /* mm asked to move a frame the program does not have there */
	if (rng_below(&T->rng, 50) == 0) {
		/* the program unmapped it meanwhile: the owner reports it gone, mm frees both */
		T->pfn[page] = MM_NO_PFN;
		T->gone_in_hook++;
		return -ENOENT;
	}
	T->pfn[page] = to;
	T->migrations++;
	if (rng_below(&T->rng, 50) == 0) {
		/* moved, then unmapped before mm commits: mm must honour the free of `to` */
		mm_anon_free(fe->mm, to, 0, NULL);
		T->pfn[page] = MM_NO_PFN;
		T->freed_after_move++;
	}
	return 0;
}

/* While compaction waits (lock released), the program frees one of its base pages. */
static void on_wait(struct fakeenv *fe, uint32_t pfn)
{
	uint32_t e = (uint32_t)rng_below(&T->rng, NEXT);

	if (T->kind[e] != 2)
		return;
	for (uint32_t i = 0; i < 512; i++) {
		if (T->pfn[e * 512 + i] == MM_NO_PFN)
			continue;
		mm_anon_free(fe->mm, T->pfn[e * 512 + i], 0, NULL);
		T->pfn[e * 512 + i] = MM_NO_PFN;
		T->freed_during_wait++;
		return;
	}
}

static void do_fault(struct fakeenv *fe, uint32_t e)
{
	struct mm_fault_req req = {.owner = owner_of(e, 0),
				   .extent_owner = owner_of(e, 0),
				   .advice = (enum mm_vma_advice)rng_below(&T->rng, 2),
				   .huge_ok = T->kind[e] == 0,
				   .write = true};
	struct mm_fault_res res;
	uint32_t i = 0;

	if (T->kind[e] == 1)
		return;
	if (T->kind[e] == 2) {
		while (i < 512 && T->pfn[e * 512 + i] != MM_NO_PFN)
			i++;
		if (i == 512)
			return;
		req.owner = owner_of(e, i);
	}
	ASSERT_EQ(mm_fault(fe->mm, &req, &res, NULL), 0);
	if (res.outcome == MM_FAULT_HUGE) {
		T->kind[e] = 1;
		T->pfn[e * 512] = res.pfn;
	} else if (res.outcome == MM_FAULT_BASE) {
		T->kind[e] = 2;
		T->pfn[e * 512 + i] = res.pfn;
	}
}

static void do_free(struct fakeenv *fe, uint32_t e)
{
	if (T->kind[e] == 1) {
		if (rng_below(&T->rng, 2)) {
			mm_anon_free(fe->mm, T->pfn[e * 512], MM_HPAGE_ORDER, NULL);
			T->kind[e] = 0;
			return;
		}
		ASSERT_EQ(mm_anon_split(fe->mm, T->pfn[e * 512]), 0); /* partial munmap */
		for (uint32_t i = 1; i < 512; i++)
			T->pfn[e * 512 + i] = T->pfn[e * 512] + i;
		T->kind[e] = 2;
		for (uint32_t i = 0; i < 512; i += 2) {
			mm_anon_free(fe->mm, T->pfn[e * 512 + i], 0, NULL);
			T->pfn[e * 512 + i] = MM_NO_PFN;
		}
		return;
	}
	if (T->kind[e] != 2)
		return;
	for (uint32_t i = 0; i < 512; i++) {
		if (T->pfn[e * 512 + i] != MM_NO_PFN && rng_below(&T->rng, 3) == 0) {
			mm_anon_free(fe->mm, T->pfn[e * 512 + i], 0, NULL);
			T->pfn[e * 512 + i] = MM_NO_PFN;
		}
	}
}

static void do_file(struct fakeenv *fe)
{
	uint32_t i = (uint32_t)rng_below(&T->rng, NFILE), pfn;
	bool created;
	int ret;

	if (rng_below(&T->rng, 5) == 0) {
		mm_pagecache_remove(fe->mm, MM_OWNER_FILE(3, i));
		T->file_live[i] = false;
		return;
	}
	ret = mm_pagecache_get(fe->mm, MM_OWNER_FILE(3, i), true, &pfn, &created, NULL);
	if (ret == -ENOMEM)
		return;
	ASSERT_EQ(ret, 0);
	mm_pagecache_put(fe->mm, pfn, rng_below(&T->rng, 3) == 0);
	T->file_live[i] = true;
}

static void do_writeback(struct fakeenv *fe)
{
	uint32_t pfns[16];
	uint64_t owners[16];
	unsigned n = mm_writeback_begin(fe->mm, 16, pfns, owners);

	for (unsigned i = 0; i < n; i++) {
		fe->wb_done_at[pfns[i]] = fe->now + rng_below(&T->rng, 200) * MS;
		if (rng_below(&T->rng, 4) == 0)
			mm_writeback_end(fe->mm, pfns[i], rng_below(&T->rng, 20) ? 0 : -EIO);
	}
	/* complete what is due */
	for (uint32_t p = 0; p < fe->nr_frames; p += 1 + (uint32_t)rng_below(&T->rng, 64))
		if (mm_frame_under_writeback(fe->mm, p) && fe->wb_done_at[p] <= fe->now)
			mm_writeback_end(fe->mm, p, 0);
}

static void verify(struct fakeenv *fe)
{
	char err[256];
	int rc = mm_check(fe->mm, err, sizeof(err));

	if (rc)
		fprintf(stderr, "  mm_check: %s\n", err);
	ASSERT_EQ(rc, 0);
	for (uint32_t e = 0; e < NEXT; e++) {
		if (T->kind[e] == 1) {
			const struct mm_frame *f = pfn_frame(fe->mm, T->pfn[e * 512]);

			ASSERT_EQ(f->state, FS_HUGE);
			ASSERT_EQ(f->owner, owner_of(e, 0));
		} else if (T->kind[e] == 2) {
			for (uint32_t i = 0; i < 512; i++) {
				uint32_t p = T->pfn[e * 512 + i];

				if (p == MM_NO_PFN)
					continue;
				/* base, or a subpage of a THP whose split 6.12 deferred */
				if (pfn_frame(fe->mm, p)->state != FS_HUGE)
					ASSERT_EQ(pfn_frame(fe->mm, p)->state, FS_ANON);
				ASSERT_EQ(pfn_frame(fe->mm, p)->owner, owner_of(e, i));
			}
		}
	}
	for (uint32_t i = 0; i < NFILE; i++) {
		uint32_t p = pc_lookup(fe->mm, MM_OWNER_FILE(3, i));

		if (p != MM_NO_PFN)
			ASSERT_EQ(pfn_frame(fe->mm, p)->owner, MM_OWNER_FILE(3, i));
	}
}

/* batch: the env has migrate_anon_batch (as the live emulator's) */
static void stress_env(const char *spec, uint64_t seed, bool batch)
{
	struct fakeenv fe;
	struct mm_counts c;
	uint64_t st[MM_STAT_NR];
	char err[256];

	T = calloc(1, sizeof(*T));
	rng_seed(&T->rng, seed);
	memset(T->pfn, 0xff, sizeof(T->pfn));
	ASSERT_EQ(fakeenv_init_ops(&fe, spec, 32 * MIB, batch ? &fe_ops_batch : &fe_ops_single, err,
				   sizeof(err)),
		  0);
	fe.on_migrate = on_migrate;
	fe.on_wait = on_wait;
	ASSERT_EQ(mm_fragment(fe.mm, "pagecache:20%,dirty:5%,anon:15%,unmovable:0.3%", seed, err,
			      sizeof(err), NULL),
		  0);
	for (int step = 0; step < 2500; step++) {
		uint32_t e = (uint32_t)rng_below(&T->rng, NEXT);

		switch (rng_below(&T->rng, 10)) {
		case 0 ... 2:
			do_fault(&fe, e);
			break;
		case 3 ... 5:
			do_free(&fe, e);
			break;
		case 6 ... 7:
			do_file(&fe);
			break;
		case 8:
			do_writeback(&fe);
			break;
		default:
			mm_background(fe.mm, NULL);
			break;
		}
		fe.now += rng_below(&T->rng, 5) * MS;
		if (step % 25 == 0)
			verify(&fe);
	}
	verify(&fe);
	mm_get_stats(fe.mm, st);
	printf("  %s: migrated %llu (program %llu), gone in hook %llu, freed while waiting %llu, "
	       "freed after the move %llu, waits %llu, writeouts %llu, huge %llu fallback %llu\n",
	       spec, (unsigned long long)st[MM_STAT_PGMIGRATE_SUCCESS],
	       (unsigned long long)T->migrations, (unsigned long long)T->gone_in_hook,
	       (unsigned long long)T->freed_during_wait, (unsigned long long)T->freed_after_move,
	       (unsigned long long)fe.n_wait, (unsigned long long)fe.n_writeout,
	       (unsigned long long)st[MM_STAT_THP_FAULT_ALLOC],
	       (unsigned long long)st[MM_STAT_THP_FAULT_FALLBACK]);
	EXPECT_GT(st[MM_STAT_PGMIGRATE_SUCCESS], 0);
	EXPECT_GT(st[MM_STAT_THP_FAULT_ALLOC], 0);
	if (batch) { /* 6.12 batches a pass's program pages (migrate_pages_batch), 3.x and 6.1
		      * never */
		printf("  %llu batches, the largest %u pages\n", (unsigned long long)fe.n_batches,
		       fe.batch_max);
		if (strncmp(spec, "linux-", 6) == 0) {
			EXPECT_EQ(fe.n_batches, 0);
		} else {
			EXPECT_GT(fe.n_batches, 0);
			EXPECT_GT(fe.batch_max, 1);
			EXPECT_EQ(fe.n_migrate, T->migrations + T->gone_in_hook);
		}
	}
	/* release everything the test owns: what is left is the recipe's memory */
	for (uint32_t e = 0; e < NEXT; e++) {
		if (T->kind[e] == 1)
			mm_anon_free(fe.mm, T->pfn[e * 512], MM_HPAGE_ORDER, NULL);
		else if (T->kind[e] == 2)
			for (uint32_t i = 0; i < 512; i++)
				if (T->pfn[e * 512 + i] != MM_NO_PFN)
					mm_anon_free(fe.mm, T->pfn[e * 512 + i], 0, NULL);
	}
	for (uint32_t p = 0; p < fe.nr_frames; p++)
		if (mm_frame_under_writeback(fe.mm, p))
			mm_writeback_end(fe.mm, p, 0);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.anon, 0);
	EXPECT_EQ(c.isolated, 0);
	EXPECT_EQ(c.file_writeback, 0);
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	fakeenv_destroy(&fe);
	free(T);
}

static void stress(const char *spec, uint64_t seed)
{
	stress_env(spec, seed, false);
}

TEST(stress_linux_31)
{
	stress("linux-3.1", 11);
}

TEST(stress_linux_31_async_no_defer)
{
	stress("linux-3.1:async-failure-defers=no,wb-wait-max=20ms", 12);
}

TEST(stress_linux_32)
{
	stress("linux-3.2", 17);
	stress("linux-3.2+nostall", 18);
}

TEST(stress_linux_33)
{
	stress("linux-3.3", 13);
}

TEST(stress_linux_61)
{
	stress("linux-6.1", 19);
	stress("linux-6.1:defrag=always", 20);
}

TEST(stress_modern)
{
	stress("modern-always", 14);
	stress("modern-defer:proactiveness=60", 15);
	stress("modern-madvise:second-compaction=sync", 16);
}

/* The live emulator's env has migrate_anon_batch: 6.12 moves a pass's program pages in one call
 * (whatever each page's fate in it), 3.x and 6.1 (migrate_pages_batch came in 6.3) one at a
 * time. */
TEST(stress_batched)
{
	stress_env("modern-always", 21, true);
	stress_env("modern-madvise:second-compaction=sync", 22, true);
	stress_env("linux-3.1", 23, true);
	stress_env("linux-6.1:defrag=always", 24, true);
}

TEST_MAIN()

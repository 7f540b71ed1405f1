/* core/mm buddy allocator: split/merge invariants under random sequences (mm_check after every
 * operation), migratetype fallback and block stealing, watermark gating. */
#include <string.h>

#include "harness.h"
#include "mm_fakeenv.h"
#include "mm/internal.h"
#include "util/rng.h"

#define MIB (1ULL << 20)

struct held {
	uint32_t pfn;
	unsigned order;
};

static void random_sequence(const char *spec, uint64_t seed)
{
	static struct held held[20000];
	struct fakeenv fe;
	struct mm_counts c;
	struct rng r;
	char err[256];
	unsigned n = 0;

	ASSERT_EQ(fakeenv_init(&fe, spec, 32 * MIB, false, err, sizeof(err)), 0);
	rng_seed(&r, seed);
	for (int step = 0; step < 6000; step++) {
		bool alloc = n == 0 || (n < 20000 && rng_below(&r, 100) < 60);

		if (alloc) {
			unsigned order =
			    (unsigned)rng_below(&r, 4) == 0 ? (unsigned)rng_below(&r, 11) : 0;
			enum mm_migratetype mt = (enum mm_migratetype)rng_below(&r, MM_MT_NR);
			uint64_t owner =
			    mt == MM_MT_MOVABLE ? MM_OWNER_FOREIGN | (uint64_t)step << 12 : 0;
			uint32_t pfn;

			if (mm_alloc_pages(fe.mm, order, mt, owner, &pfn, NULL) == 0) {
				ASSERT_EQ(pfn % (1U << order), 0);
				held[n++] = (struct held){pfn, order};
			}
		} else {
			unsigned i = (unsigned)rng_below(&r, n);

			mm_free_pages(fe.mm, held[i].pfn, held[i].order, NULL);
			held[i] = held[--n];
		}
		if (step % 50 == 0 || step > 5950) {
			int rc = mm_check(fe.mm, err, sizeof(err));

			if (rc)
				fprintf(stderr, "  step %d: %s\n", step, err);
			ASSERT_EQ(rc, 0);
		}
	}
	while (n) {
		n--;
		mm_free_pages(fe.mm, held[n].pfn, held[n].order, NULL);
	}
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	mm_get_counts(fe.mm, &c);
	/* everything merged back into max-order blocks */
	EXPECT_EQ(c.free, c.nr_frames);
	EXPECT_EQ(c.nr_free[MM_MAX_ORDER], c.nr_frames >> MM_MAX_ORDER);
	EXPECT_EQ(c.unmovable, 0);
	EXPECT_EQ(c.foreign, 0);
	fakeenv_destroy(&fe);
}

TEST(random_alloc_free_keeps_buddy_invariants_3x)
{
	random_sequence("linux-3.1", 1);
	random_sequence("linux-3.3", 2);
}

TEST(random_alloc_free_keeps_buddy_invariants_6_1)
{
	for (uint64_t seed = 1; seed <= 3; seed++)
		random_sequence("linux-6.1", seed);
}

TEST(random_alloc_free_keeps_buddy_invariants_modern)
{
	random_sequence("modern-always", 3);
	random_sequence("modern-never", 4);
}

TEST(split_takes_lowest_block_and_merge_restores)
{
	struct fakeenv fe;
	struct mm_counts c;
	uint32_t a, b;
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "linux-3.1", 8 * MIB, false, err, sizeof(err)), 0);
	ASSERT_EQ(mm_alloc_pages(fe.mm, 0, MM_MT_MOVABLE, MM_OWNER_FOREIGN | 1, &a, NULL), 0);
	mm_get_counts(fe.mm, &c);
	/* an order-10 block split down to 0: one free block of each order 0..9 */
	for (unsigned o = 0; o < MM_MAX_ORDER; o++)
		EXPECT_EQ(c.nr_free[o], 1);
	EXPECT_EQ(c.nr_free[MM_MAX_ORDER], 1);
	ASSERT_EQ(mm_alloc_pages(fe.mm, 0, MM_MT_MOVABLE, MM_OWNER_FOREIGN | 2, &b, NULL), 0);
	EXPECT_EQ(b, a ^ 1); /* its buddy */
	mm_free_pages(fe.mm, a, 0, NULL);
	mm_free_pages(fe.mm, b, 0, NULL);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.nr_free[MM_MAX_ORDER], 2);
	EXPECT_EQ(c.nr_free[0], 0);
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	fakeenv_destroy(&fe);
}

/* An unmovable request on an all-MOVABLE pool steals a max-order block and relabels both of its
 * pageblocks (order >= pageblock_order takes ownership); later unmovable requests use it. */
TEST(fallback_steals_and_relabels)
{
	static const char *const specs[] = {"linux-3.1", "modern-always"};

	for (int s = 0; s < 2; s++) {
		struct fakeenv fe;
		uint64_t st[MM_STAT_NR];
		uint32_t a, b;
		char err[256];

		ASSERT_EQ(fakeenv_init(&fe, specs[s], 16 * MIB, false, err, sizeof(err)), 0);
		ASSERT_EQ(mm_alloc_pages(fe.mm, 0, MM_MT_UNMOVABLE, 0, &a, NULL), 0);
		EXPECT_EQ(pageblock_mt(fe.mm, a), MM_MT_UNMOVABLE);
		EXPECT_EQ(pageblock_mt(fe.mm, a ^ MM_HPAGE_NR), MM_MT_UNMOVABLE);
		ASSERT_EQ(mm_alloc_pages(fe.mm, 0, MM_MT_UNMOVABLE, 0, &b, NULL), 0);
		EXPECT_EQ(b >> MM_MAX_ORDER, a >> MM_MAX_ORDER); /* same stolen block */
		mm_get_stats(fe.mm, st);
		EXPECT_EQ(st[MM_STAT_EXTFRAG_STEAL], 1);
		EXPECT_EQ(fe.trace_count[MM_TRACE_EXTFRAG], 1);
		ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
		fakeenv_destroy(&fe);
	}
}

/* Free frames of an mt's lists. */
static uint32_t free_on(struct mm *mm, enum mm_migratetype mt)
{
	uint32_t n = 0;

	for (unsigned o = 0; o <= MM_MAX_ORDER; o++)
		n += mm->nr_free_mt[o][mt] << o;
	return n;
}

/* An UNMOVABLE order-0 request falls back to a MOVABLE pageblock it cannot claim (192 free, 320
 * movable: free + alike < 256). 6.12 steal_suitable_fallback takes the largest block (order 7)
 * and leaves what the split leaves on the block's own MOVABLE lists (page_del_and_expand); 6.1
 * moves every free page of the block to the UNMOVABLE lists anyway (move_freepages_block before
 * the claim test) and __rmqueue's retry takes the smallest UNMOVABLE block, the order-6 one.
 * Neither relabels the pageblock. */
TEST(fallback_that_cannot_claim_6_1_against_6_12)
{
	static const char *const specs[] = {"linux-6.1", "thp-always/madvise"};

	for (int s = 0; s < 2; s++) {
		struct fakeenv fe;
		uint32_t pfn, block, before;
		char err[256];

		ASSERT_EQ(fakeenv_init(&fe, specs[s], 64 * MIB, false, err, sizeof(err)), 0);
		for (uint32_t b = 0; b < fe.nr_frames; b += MM_HPAGE_NR)
			for (uint32_t i = 0; i < 320; i++)
				ASSERT_EQ(mm_debug_place(fe.mm, b + i, DBG_FOREIGN, b + i), 0);
		before = free_on(fe.mm, MM_MT_MOVABLE);
		EXPECT_EQ(before, fe.nr_frames / MM_HPAGE_NR * 192);
		EXPECT_EQ(free_on(fe.mm, MM_MT_UNMOVABLE), 0u);
		ASSERT_EQ(mm_alloc_pages(fe.mm, 0, MM_MT_UNMOVABLE, 0, &pfn, NULL), 0);
		block = pageblock_start(pfn);
		EXPECT_EQ(pageblock_mt(fe.mm, pfn), MM_MT_MOVABLE);
		if (s == 0) {
			EXPECT_EQ(pfn - block, 320u); /* the smallest block, now UNMOVABLE's */
			EXPECT_EQ(free_on(fe.mm, MM_MT_UNMOVABLE), 191u);
			EXPECT_EQ(free_on(fe.mm, MM_MT_MOVABLE), before - 192);
		} else {
			EXPECT_EQ(pfn - block, 384u); /* the order-7 block it found */
			EXPECT_EQ(free_on(fe.mm, MM_MT_UNMOVABLE), 0u);
			EXPECT_EQ(free_on(fe.mm, MM_MT_MOVABLE), before - 1);
		}
		ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
		fakeenv_destroy(&fe);
	}
}

/* 3.x __rmqueue_fallback (3.1 and 3.3 mm/page_alloc.c, unchanged between them): the largest
 * fallback block first; only a block of at least pageblock_order / 2 (here 4), or a RECLAIMABLE
 * request, moves the pageblock's free pages to the request's lists (move_freepages_block), and
 * only when at least half the pageblock moved is the pageblock relabelled; otherwise the request
 * takes one page and the split leaves the rest on the block's own lists, so an unmovable page
 * sits in a MOVABLE pageblock. Every pageblock of the pool holds allocated movable pages: its
 * first `used` pages, or (used == 0) the first 8 of every 16, leaving order-3 free blocks. */
static void fallback_3x_case(const char *spec, uint32_t used, enum mm_migratetype mt,
			     uint32_t want_off, uint32_t want_on_mt, bool relabel)
{
	uint32_t nfree = used ? MM_HPAGE_NR - used : MM_HPAGE_NR / 2;
	uint32_t pfn, block, before, nblocks;
	struct fakeenv fe;
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, spec, 64 * MIB, false, err, sizeof(err)), 0);
	nblocks = fe.nr_frames / MM_HPAGE_NR;
	for (uint32_t b = 0; b < fe.nr_frames; b += MM_HPAGE_NR)
		for (uint32_t i = 0; i < MM_HPAGE_NR; i++)
			if (used ? i < used : !(i & 8))
				ASSERT_EQ(mm_debug_place(fe.mm, b + i, DBG_FOREIGN, b + i), 0);
	before = free_on(fe.mm, MM_MT_MOVABLE);
	EXPECT_EQ(before, nblocks * nfree);
	ASSERT_EQ(mm_alloc_pages(fe.mm, 0, mt, 0, &pfn, NULL), 0);
	block = pageblock_start(pfn);
	if (used)
		EXPECT_EQ(pfn - block, want_off);
	else
		EXPECT_EQ(pfn % 16, 8u); /* the first page of an order-3 free block */
	EXPECT_EQ(pageblock_mt(fe.mm, pfn), relabel ? mt : MM_MT_MOVABLE);
	EXPECT_EQ(free_on(fe.mm, mt), want_on_mt);
	EXPECT_EQ(free_on(fe.mm, MM_MT_MOVABLE), before - 1 - want_on_mt);
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	fakeenv_destroy(&fe);
}

TEST(fallback_3x_steals_a_block_only_from_half_pageblock_order)
{
	static const char *const specs[] = {"linux-3.1", "linux-3.3"};

	for (int s = 0; s < 2; s++) {
		/* order-3 free blocks only (256 free per pageblock): 3 < 4, one page taken,
		 * nothing moved, the pageblock stays MOVABLE with an unmovable page in it */
		fallback_3x_case(specs[s], 0, MM_MT_UNMOVABLE, 0, 0, false);
		/* the same for a RECLAIMABLE request: every free page of the pageblock moves
		 * (256, half of it: relabelled) */
		fallback_3x_case(specs[s], 0, MM_MT_RECLAIMABLE, 0, 255, true);
		/* 192 free (order 6 at 320, order 7 at 384): the order-7 block is split, all 192
		 * free pages move to the UNMOVABLE lists, 192 < 256: the pageblock stays MOVABLE */
		fallback_3x_case(specs[s], 320, MM_MT_UNMOVABLE, 384, 191, false);
		/* 256 free (order 8 at 256): half of the pageblock moved, it becomes UNMOVABLE */
		fallback_3x_case(specs[s], 256, MM_MT_UNMOVABLE, 256, 255, true);
	}
}

/* Allocations other than program faults never take the pool below MIN. */
TEST(allocations_stop_at_min_watermark)
{
	struct fakeenv fe;
	struct mm_counts c;
	uint32_t pfn;
	char err[256];
	unsigned n = 0;

	ASSERT_EQ(fakeenv_init(&fe, "linux-3.1", 16 * MIB, false, err, sizeof(err)), 0);
	while (mm_alloc_pages(fe.mm, 0, MM_MT_MOVABLE, MM_OWNER_FOREIGN | n, &pfn, NULL) == 0)
		n++;
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.free, c.wmark_min); /* __zone_watermark_ok needs free > min before the alloc */
	EXPECT_EQ(n, c.nr_frames - c.wmark_min);
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	fakeenv_destroy(&fe);
}

/* 3.x __zone_watermark_ok decays the mark per order; modern only needs a big enough block. */
TEST(watermark_ok_per_era)
{
	struct fakeenv fe;
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "linux-3.1", 8 * MIB, false, err, sizeof(err)), 0);
	/* fresh 8 MiB pool: 2048 free in order-10 blocks, min = 90 */
	EXPECT(zone_watermark_ok(fe.mm, 9, 90, 0));
	EXPECT(zone_watermark_ok(fe.mm, 10, 90, 0));
	EXPECT(!zone_watermark_ok(fe.mm, 0, 2048, 0));
	EXPECT(zone_watermark_ok(fe.mm, 0, 2047, 0));
	/* order 9 needs free - 511 > mark, then per lower order: free -= nr_free[o] << o, mark >>=
	 * 1 */
	EXPECT(!zone_watermark_ok(fe.mm, 9, 2048 - 511, 0));
	EXPECT(zone_watermark_ok(fe.mm, 9, 2048 - 512, 0));
	fakeenv_destroy(&fe);

	ASSERT_EQ(fakeenv_init(&fe, "linux-3.1", 8 * MIB, false, err, sizeof(err)), 0);
	{
		uint32_t pfn;

		/* split one order-10 block down: nr_free[0..9] = 1 each, 2047 free */
		ASSERT_EQ(mm_alloc_pages(fe.mm, 0, MM_MT_MOVABLE, MM_OWNER_FOREIGN, &pfn, NULL), 0);
	}
	/* order 2: free 2047-3 = 2044 > m; o=0: 2043 > m/2; o=1: 2041 > m/4 */
	EXPECT(zone_watermark_ok(fe.mm, 2, 2043, 0));
	EXPECT(!zone_watermark_ok(fe.mm, 2, 2044, 0));
	fakeenv_destroy(&fe);

	ASSERT_EQ(fakeenv_init(&fe, "modern-always", 8 * MIB, false, err, sizeof(err)), 0);
	/* 6.12: free - (2^order - 1) > mark and any free block of >= order */
	EXPECT(zone_watermark_ok(fe.mm, 10, 2048 - 1024, 0));
	EXPECT(!zone_watermark_ok(fe.mm, 10, 2048 - 1023, 0));
	fakeenv_destroy(&fe);
}

/* Two pools that went through the same steps: the same frames (descriptors but for the links of
 * frames on no list), the same free lists in the same order, the same counts. */
static void expect_same_pools(struct mm *a, struct mm *b)
{
	struct mm_counts ca, cb;
	unsigned differ = 0;

	memset(&ca, 0, sizeof(ca));
	memset(&cb, 0, sizeof(cb));
	mm_get_counts(a, &ca);
	mm_get_counts(b, &cb);
	EXPECT_EQ(memcmp(&ca, &cb, sizeof(ca)), 0);
	ASSERT_EQ(a->nr_frames, b->nr_frames);
	for (uint32_t p = 0; p < a->nr_frames; p++) {
		const struct mm_frame *fa = pfn_frame(a, p), *fb = pfn_frame(b, p);

		differ += fa->owner != fb->owner || fa->state != fb->state ||
			  fa->order != fb->order || fa->flags != fb->flags ||
			  fa->hnext != fb->hnext;
	}
	for (unsigned o = 0; o <= MM_MAX_ORDER; o++) {
		for (unsigned mt = 0; mt < MM_MT_NR; mt++) {
			uint32_t ha = sentinel(a, SENT_FREE(o, mt)),
				 hb = sentinel(b, SENT_FREE(o, mt));
			uint32_t pa = pfn_frame(a, ha)->next, pb = pfn_frame(b, hb)->next;

			for (; pa != ha && pb != hb;
			     pa = pfn_frame(a, pa)->next, pb = pfn_frame(b, pb)->next)
				differ += pa != pb;
			differ += (pa == ha) != (pb == hb);
		}
	}
	EXPECT_EQ(differ, 0);
}

/* mm_anon_free_run(pfn, n) leaves the pool as n calls of mm_anon_free(pfn + i, 0) do, over runs
 * that start and end anywhere, cross pageblocks of other migratetypes and hold frames that are
 * not program anon (unmovable, already free): the munmap batching keeps the buddy's order. */
static void free_run_as_one_by_one(const char *spec)
{
	struct fakeenv one, run;
	struct rng r;
	char err[256];
	uint32_t nr, pa, pb;

	ASSERT_EQ(fakeenv_init(&one, spec, 16 * MIB, false, err, sizeof(err)), 0);
	ASSERT_EQ(fakeenv_init(&run, spec, 16 * MIB, false, err, sizeof(err)), 0);
	nr = mm_nr_frames(one.mm);
	rng_seed(&r, 7);
	for (int round = 0; round < 4; round++) {
		/* fill: program-like order-0 movable frames, now and then an unmovable block */
		for (uint64_t i = 1;; i++) {
			unsigned order = rng_below(&r, 128) == 0 ? (unsigned)rng_below(&r, 4) : 0;
			enum mm_migratetype mt = order ? MM_MT_UNMOVABLE : MM_MT_MOVABLE;
			uint64_t owner = order ? 0 : MM_OWNER_FOREIGN | (uint64_t)round << 24 | i;
			int ra = mm_alloc_pages(one.mm, order, mt, owner, &pa, NULL);
			int rb = mm_alloc_pages(run.mm, order, mt, owner, &pb, NULL);

			ASSERT_EQ(ra, rb);
			if (ra)
				break;
			ASSERT_EQ(pa, pb);
		}
		/* neighbouring pageblocks of other types: a merge across them is queued on the
		 * type of the page freed last */
		for (uint32_t blk = round % 3; blk < nr / MM_HPAGE_NR; blk += 3) {
			if (one.mm->pb_nbuddy[blk])
				continue;
			set_pageblock_mt(one.mm, blk * MM_HPAGE_NR, MM_MT_RECLAIMABLE);
			set_pageblock_mt(run.mm, blk * MM_HPAGE_NR, MM_MT_RECLAIMABLE);
		}
		for (int k = 0; k < 60; k++) {
			uint32_t a = (uint32_t)rng_below(&r, nr),
				 n = 1 + (uint32_t)rng_below(&r, 1200);

			if (k % 4 == 0) { /* whole max-order blocks, two pageblocks each */
				a &= ~((1U << MM_MAX_ORDER) - 1);
				n = (1U << MM_MAX_ORDER) * (1 + (uint32_t)rng_below(&r, 2));
			}

			if (n > nr - a + 3)
				n = nr - a +
				    3; /* past the pool's end too: ignored, as single frees are */
			for (uint32_t i = 0; i < n; i++)
				mm_anon_free(one.mm, a + i, 0, NULL);
			mm_anon_free_run(run.mm, a, n, NULL);
		}
		expect_same_pools(one.mm, run.mm);
		ASSERT_EQ(mm_check(one.mm, err, sizeof(err)), 0);
		ASSERT_EQ(mm_check(run.mm, err, sizeof(err)), 0);
	}
	fakeenv_destroy(&one);
	fakeenv_destroy(&run);
}

TEST(free_run_is_the_frees_one_by_one_3_1)
{
	free_run_as_one_by_one("linux-3.1");
}

TEST(free_run_is_the_frees_one_by_one_3_3)
{
	free_run_as_one_by_one("linux-3.3");
}

TEST(free_run_is_the_frees_one_by_one_modern)
{
	free_run_as_one_by_one("modern-always");
}

/* The same for runs over the subpages of THPs (6.12: a partial munmap splits the PMD only, the
 * folio stays whole and PTE-mapped; deferred split): mm_anon_free_run unmaps the subpages of one
 * THP in a row together, flagging them, queueing the folio once as partially mapped, or freeing
 * it whole with its last subpage, as the frees one by one do. Runs cross from one THP into the
 * next, over PMD-mapped ones (nothing to do), base frames of a split one and free frames. */
TEST(free_run_unmaps_thp_subpages_as_one_by_one)
{
	struct fakeenv one, run;
	uint64_t sa[MM_STAT_NR], sb[MM_STAT_NR];
	struct rng r;
	char err[256];
	uint32_t nthp = 0, heads[64];

	ASSERT_EQ(fakeenv_init(&one, "modern-always", 64 * MIB, false, err, sizeof(err)), 0);
	ASSERT_EQ(fakeenv_init(&run, "modern-always", 64 * MIB, false, err, sizeof(err)), 0);
	rng_seed(&r, 11);
	for (uint64_t e = 1; e <= 24; e++) {
		struct mm_fault_req req = {
		    .owner = e << 9, .extent_owner = e << 9, .huge_ok = true, .write = true};
		struct mm_fault_res ra, rb;

		ASSERT_EQ(mm_fault(one.mm, &req, &ra, NULL), 0);
		ASSERT_EQ(mm_fault(run.mm, &req, &rb, NULL), 0);
		ASSERT_EQ(ra.outcome, MM_FAULT_HUGE);
		ASSERT_EQ(ra.pfn, rb.pfn);
		heads[nthp++] = ra.pfn;
		if (e % 4 == 0)
			continue; /* PMD-mapped: a subpage free is a caller's bug, ignored */
		ASSERT_EQ(mm_anon_split(one.mm, ra.pfn), 0); /* __split_huge_pmd */
		ASSERT_EQ(mm_anon_split(run.mm, rb.pfn), 0);
		if (e % 4 == 3) { /* split whole: base frames */
			ASSERT_EQ(mm_anon_split_folio(one.mm, ra.pfn), 0);
			ASSERT_EQ(mm_anon_split_folio(run.mm, rb.pfn), 0);
		}
	}
	for (int k = 0; k < 120; k++) {
		uint32_t a = heads[rng_below(&r, nthp)] + (uint32_t)rng_below(&r, MM_HPAGE_NR);
		uint32_t n = 1 + (uint32_t)rng_below(&r, k % 3 ? 200 : 1100);

		for (uint32_t i = 0; i < n; i++)
			mm_anon_free(one.mm, a + i, 0, NULL);
		mm_anon_free_run(run.mm, a, n, NULL);
		if (k % 10 == 9 || k == 119) {
			uint32_t qa = sentinel(one.mm, SENT_SPLIT_QUEUE),
				 qb = sentinel(run.mm, SENT_SPLIT_QUEUE);
			uint32_t pa = pfn_frame(one.mm, qa)->next, pb = pfn_frame(run.mm, qb)->next;

			expect_same_pools(one.mm, run.mm);
			for (; pa != qa && pb != qb;
			     pa = pfn_frame(one.mm, pa)->next, pb = pfn_frame(run.mm, pb)->next)
				EXPECT_EQ(pa, pb); /* the deferred split queue, in order */
			EXPECT_EQ(pa == qa, pb == qb);
			mm_get_stats(one.mm, sa);
			mm_get_stats(run.mm, sb);
			EXPECT_EQ(memcmp(sa, sb, sizeof(sa)), 0);
			ASSERT_EQ(mm_check(one.mm, err, sizeof(err)), 0);
			ASSERT_EQ(mm_check(run.mm, err, sizeof(err)), 0);
		}
	}
	mm_get_stats(run.mm, sb);
	EXPECT(sb[MM_STAT_THP_DEFERRED_SPLIT_PAGE] > 0);
	fakeenv_destroy(&one);
	fakeenv_destroy(&run);
}

TEST_MAIN()

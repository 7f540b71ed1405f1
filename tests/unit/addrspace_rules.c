/* core/addrspace: every address-space rule once, on a region in calloc'd memory with a recording
 * environment (frames freed, huge blocks split). */
#include <errno.h>
#include <stdlib.h>

#include "addrspace/as.h"
#include "harness.h"

#define BASE 0x40000000UL /* 2 MiB aligned */
#define PG   MM_PAGE_SIZE
#define HP   MM_HPAGE_SIZE

struct rec {
	unsigned frees, frees_huge, splits;
	uint32_t last_free, last_split;
	bool refuse_split; /* mm_anon_split's -EINVAL: the block is not a huge one */
};

static void rec_free(void *arg, uint32_t pfn, unsigned order)
{
	struct rec *r = arg;

	if (order == MM_HPAGE_ORDER)
		r->frees_huge++;
	else
		r->frees++;
	r->last_free = pfn;
}

static int rec_split(void *arg, uint32_t head)
{
	struct rec *r = arg;

	r->splits++;
	r->last_split = head;
	return r->refuse_split ? -EINVAL : 0;
}

/* A split the release asks for, allowed, for an env whose arg is not a struct rec. */
static int split_allowed(void *arg, uint32_t head)
{
	(void)arg, (void)head;
	return 0;
}

static struct rec R;
static const struct as_env ENV = {&R, rec_free, rec_split, NULL, NULL, NULL};

static struct as_region *region(uintptr_t base, uintptr_t lo, uintptr_t hi)
{
	struct as_region *r = calloc(1, sizeof(*r));

	if (!r || as_region_geometry(r, base, lo, hi))
		abort();
	as_region_attach(r, calloc(1, as_region_meta_size(r)));
	memset(&R, 0, sizeof(R));
	return r;
}

/* Extent e huge with frames head.. */
static void make_huge(struct as_region *r, uint32_t e, uint32_t head)
{
	uint32_t p0 = as_page_of(r, as_ext_addr(r, e));

	for (uint32_t i = 0; i < MM_HPAGE_NR; i++) {
		as_pfn_set(r, p0 + i, head + i);
		as_pstate_set(r, p0 + i, AS_P_PRESENT);
	}
	as_xstate_set(r, e, AS_X_HUGE);
}

static void make_base(struct as_region *r, uint32_t p, uint32_t pfn)
{
	as_pfn_set(r, p, pfn);
	as_pstate_set(r, p, AS_P_PRESENT);
	as_xstate_set(r, as_ext_of(r, as_page_addr(r, p)), AS_X_SMALL);
}

TEST(attach_extents_empty_only_when_whole)
{
	struct as_region *r = region(BASE + 16 * PG, BASE + 16 * PG, BASE + 3 * HP);

	ASSERT_EQ(r->nexts, 3u);
	EXPECT_EQ(as_xstate(r, 0), AS_X_SMALL); /* starts inside the extent */
	EXPECT_EQ(as_xstate(r, 1), AS_X_EMPTY);
	EXPECT_EQ(as_xstate(r, 2), AS_X_EMPTY);
	EXPECT_EQ(as_pfn(r, 0), MM_NO_PFN);
	EXPECT_EQ(as_pstate(r, 0), AS_P_EMPTY);
	EXPECT_EQ(as_region_geometry(r, BASE, BASE, BASE), -ERANGE);
}

TEST(release_whole_huge_dontneed_frees_block_extent_empty_again)
{
	struct as_region *r = region(BASE, BASE, BASE + 2 * HP);
	struct as_counts c = {0};

	make_huge(r, 0, 1024);
	as_release(&ENV, r, 0, MM_HPAGE_NR, false, &c);
	EXPECT_EQ(R.frees_huge, 1u);
	EXPECT_EQ(R.last_free, 1024u);
	EXPECT_EQ(R.frees, 0u);
	EXPECT_EQ(c.pages_freed, MM_HPAGE_NR);
	EXPECT_EQ(as_xstate(r, 0), AS_X_EMPTY);
	EXPECT_EQ(as_pstate(r, 5), AS_P_EMPTY);
	EXPECT_EQ(as_pfn(r, 5), MM_NO_PFN);
}

TEST(release_whole_huge_unmap_gone_extent_small)
{
	struct as_region *r = region(BASE, BASE, BASE + 2 * HP);
	struct as_counts c = {0};

	make_huge(r, 1, 2048);
	as_release(&ENV, r, MM_HPAGE_NR, 2 * MM_HPAGE_NR, true, &c);
	EXPECT_EQ(R.frees_huge, 1u);
	EXPECT_EQ(as_xstate(r, 1), AS_X_SMALL);
	EXPECT_EQ(as_pstate(r, MM_HPAGE_NR), AS_P_GONE);
	EXPECT_EQ(as_xstate(r, 0), AS_X_EMPTY); /* untouched */
}

TEST(release_part_of_huge_splits_and_frees_pages)
{
	struct as_region *r = region(BASE, BASE, BASE + HP);
	struct as_counts c = {0};

	make_huge(r, 0, 4096);
	as_release(&ENV, r, 10, 20, false, &c);
	EXPECT_EQ(R.splits, 1u);
	EXPECT_EQ(R.last_split, 4096u);
	EXPECT_EQ(c.huge_splits, 1u);
	EXPECT_EQ(R.frees, 10u);
	EXPECT_EQ(R.frees_huge, 0u);
	EXPECT_EQ(c.pages_freed, 10u);
	EXPECT_EQ(as_xstate(r, 0), AS_X_SMALL);
	EXPECT_EQ(as_pstate(r, 10), AS_P_EMPTY);
	EXPECT_EQ(as_pstate(r, 20), AS_P_PRESENT);
	EXPECT_EQ(as_pfn(r, 20), 4096u + 20);
}

/* a refused split (a broken invariant) gives the whole block back once; the pages keep their
 * state with no frame behind them, and none is freed again one by one */
TEST(release_part_of_huge_split_refused_drops_the_block)
{
	struct as_region *r = region(BASE, BASE, BASE + HP);
	struct as_counts c = {0};

	make_huge(r, 0, 4096);
	R.refuse_split = true;
	as_release(&ENV, r, 10, 20, false, &c);
	EXPECT_EQ(R.splits, 1u);
	EXPECT_EQ(R.frees_huge, 1u);
	EXPECT_EQ(R.last_free, 4096u);
	EXPECT_EQ(R.frees, 0u);
	EXPECT_EQ(as_xstate(r, 0), AS_X_SMALL);
	EXPECT_EQ(as_pstate(r, 10), AS_P_EMPTY);
	EXPECT_EQ(as_pstate(r, 20), AS_P_PRESENT);
	EXPECT_EQ(as_pfn(r, 20), MM_NO_PFN);
	EXPECT_EQ(as_pfn(r, 0), MM_NO_PFN);
}

TEST(release_base_pages_and_empty_extent_unmapped_in_part)
{
	struct as_region *r = region(BASE, BASE, BASE + 2 * HP);
	struct as_counts c = {0};

	make_base(r, 3, 77);
	as_release(&ENV, r, 0, 8, true, &c);
	EXPECT_EQ(R.frees, 1u);
	EXPECT_EQ(R.last_free, 77u);
	EXPECT_EQ(as_pstate(r, 3), AS_P_GONE);
	EXPECT_EQ(as_pstate(r, 7), AS_P_GONE); /* EMPTY page unmapped */
	EXPECT_EQ(as_pstate(r, 8), AS_P_EMPTY);
	/* extent 1 untouched and still a candidate; DONTNEED of an EMPTY extent keeps it EMPTY */
	EXPECT_EQ(as_xstate(r, 1), AS_X_EMPTY);
	as_release(&ENV, r, MM_HPAGE_NR, MM_HPAGE_NR + 4, false, &c);
	EXPECT_EQ(as_xstate(r, 1), AS_X_EMPTY);
	as_release(&ENV, r, MM_HPAGE_NR, MM_HPAGE_NR + 4, true, &c);
	EXPECT_EQ(as_xstate(r, 1), AS_X_SMALL); /* two VMAs now: never huge */
}

TEST(release_owned_pages_and_extents_are_only_flagged)
{
	struct as_region *r = region(BASE, BASE, BASE + HP);
	struct as_counts c = {0};

	as_pstate_set(r, 1, AS_P_FILLING);
	as_pstate_set(r, 2, AS_P_MIGRATING);
	as_pfn_set(r, 2, 9);
	as_xstate_set(r, 0, AS_X_FILLING);
	as_release(&ENV, r, 0, 4, true, &c);
	EXPECT_EQ(R.frees, 0u);
	EXPECT_EQ(as_pstate(r, 1), AS_P_FILLING | AS_P_FREED | AS_P_UNMAPPED);
	EXPECT_EQ(as_pstate(r, 2), AS_P_MIGRATING | AS_P_FREED | AS_P_UNMAPPED);
	EXPECT_EQ(as_pfn(r, 2), 9u);
	EXPECT_EQ(as_xstate(r, 0), AS_X_FILLING | AS_X_DISTURBED);
}

TEST(live_pages_and_trim)
{
	struct as_region *r = region(BASE, BASE, BASE + HP);
	struct as_counts c = {0};
	uintptr_t lo, hi;

	as_release(&ENV, r, 0, 4, true, &c);
	as_release(&ENV, r, 500, 512, true, &c);
	EXPECT_EQ(as_live_pages(r, 0, 512), 512u - 16);
	ASSERT(as_trim_span(r, &lo, &hi));
	EXPECT_EQ(lo, BASE + 4 * PG);
	EXPECT_EQ(hi, BASE + 500 * PG);
	as_release(&ENV, r, 0, 512, true, &c);
	EXPECT(!as_trim_span(r, &lo, &hi));
}

TEST(recompute_extents_from_pages)
{
	struct as_region *r = region(BASE, BASE, BASE + 3 * HP);

	as_xstate_set(r, 0, AS_X_SMALL);
	as_xstate_set(r, 1, AS_X_SMALL);
	make_huge(r, 2, 0);
	make_base(r, MM_HPAGE_NR + 1, 5);
	as_recompute_extents(r, 0, 2);
	EXPECT_EQ(as_xstate(r, 0), AS_X_EMPTY);
	EXPECT_EQ(as_xstate(r, 1), AS_X_SMALL);
	EXPECT_EQ(as_xstate(r, 2), AS_X_HUGE);
}

TEST(revive_a_hole_resets_whole_extents_and_advice)
{
	struct as_region *r = region(BASE, BASE, BASE + 3 * HP);
	struct as_counts c = {0};

	as_advise(r, BASE, BASE + 3 * HP, MM_VMA_HUGEPAGE);
	as_release(&ENV, r, 10, 2 * MM_HPAGE_NR, true, &c);
	EXPECT(as_range_gone(r, 10, 2 * MM_HPAGE_NR));
	EXPECT(!as_range_gone(r, 9, 2 * MM_HPAGE_NR));
	as_revive(r, 10, 2 * MM_HPAGE_NR);
	EXPECT_EQ(as_pstate(r, 10), AS_P_EMPTY);
	EXPECT_EQ(as_xstate(r, 0), AS_X_SMALL); /* only partly revived */
	EXPECT_EQ(as_xstate(r, 1), AS_X_EMPTY);
	EXPECT_EQ(as_xadv(r, 1), MM_VMA_DEFAULT);
	EXPECT_EQ(as_xadv(r, 0), MM_VMA_HUGEPAGE);
}

TEST(resident_pages_present_without_frame)
{
	struct as_region *r = region(BASE, BASE, BASE + 2 * HP);

	as_resident(r, 3, 4);
	EXPECT_EQ(as_pstate(r, 3), AS_P_PRESENT);
	EXPECT_EQ(as_pfn(r, 3), MM_NO_PFN);
	EXPECT_EQ(as_xstate(r, 0), AS_X_SMALL);
	EXPECT_EQ(as_xstate(r, 1), AS_X_EMPTY);
}

TEST(advise_whole_and_partial_extents)
{
	struct as_region *r = region(BASE, BASE, BASE + 3 * HP);
	int first = -1;

	as_advise(r, BASE + HP, BASE + 2 * HP, MM_VMA_HUGEPAGE);
	EXPECT_EQ(as_xadv(r, 1), MM_VMA_HUGEPAGE);
	EXPECT_EQ(as_xadv(r, 0), MM_VMA_DEFAULT);
	as_advise(r, BASE + 2 * HP + PG, BASE + 3 * HP, MM_VMA_NOHUGEPAGE);
	EXPECT_EQ(as_xadv(r, 2), MM_VMA_NOHUGEPAGE | AS_ADV_SPLIT);
	/* a later whole advice keeps the split mark */
	as_advise(r, BASE + 2 * HP, BASE + 3 * HP, MM_VMA_HUGEPAGE);
	EXPECT_EQ(as_xadv(r, 2), MM_VMA_HUGEPAGE | AS_ADV_SPLIT);
	/* a change of advice inside a range is a VMA boundary; a split extent at an end is not */
	EXPECT(as_advice_splits(r, BASE, BASE + 2 * HP, &first));
	first = -1;
	EXPECT(!as_advice_splits(r, BASE + HP, BASE + 2 * HP + PG, &first));
	first = -1;
	EXPECT(as_advice_splits(r, BASE + HP, BASE + 3 * HP, &first));
}

TEST(transfer_same_phase_keeps_huge_and_advice)
{
	struct as_region *r = region(BASE, BASE, BASE + 2 * HP), *s;
	struct as_counts c = {0};

	make_huge(r, 0, 512);
	make_base(r, MM_HPAGE_NR + 3, 7);
	as_advise(r, BASE, BASE + HP, MM_VMA_HUGEPAGE);
	as_pstate_set(r, MM_HPAGE_NR + 4, AS_P_FILLING);
	as_pfn_set(r, MM_HPAGE_NR + 4, 8);
	as_pstate_set(r, MM_HPAGE_NR + 5, AS_P_MIGRATING);
	as_pfn_set(r, MM_HPAGE_NR + 5, 9);
	as_pstate_set(r, MM_HPAGE_NR + 6, AS_P_MIGRATING | AS_P_FREED | AS_P_UNMAPPED);
	as_pfn_set(r, MM_HPAGE_NR + 6, 10);
	s = calloc(1, sizeof(*s));
	ASSERT_EQ(as_region_geometry(s, BASE + 8 * HP, BASE + 8 * HP, BASE + 11 * HP), 0);
	as_region_attach(s, calloc(1, as_region_meta_size(s)));
	as_transfer(&ENV, r, s, &c);
	EXPECT_EQ(c.huge_splits, 0u);
	EXPECT_EQ(as_xstate(s, 0), AS_X_HUGE);
	EXPECT_EQ(as_xadv(s, 0), MM_VMA_HUGEPAGE);
	EXPECT_EQ(as_pfn(s, 1), 513u);
	EXPECT_EQ(as_xstate(s, 1), AS_X_SMALL);
	EXPECT_EQ(as_pfn(s, MM_HPAGE_NR + 3), 7u);
	EXPECT_EQ(as_pstate(s, MM_HPAGE_NR + 4), AS_P_EMPTY); /* FILLING: its owner frees */
	EXPECT_EQ(as_pfn(s, MM_HPAGE_NR + 4), MM_NO_PFN);
	EXPECT_EQ(as_pstate(s, MM_HPAGE_NR + 5), AS_P_PRESENT); /* the migration fails */
	EXPECT_EQ(as_pfn(s, MM_HPAGE_NR + 5), 9u);
	EXPECT_EQ(as_pstate(s, MM_HPAGE_NR + 6), AS_P_GONE);
	EXPECT_EQ(as_pfn(s, MM_HPAGE_NR + 6), MM_NO_PFN);
	EXPECT_EQ(as_xstate(s, 2), AS_X_EMPTY); /* grown: a new candidate */
}

TEST(transfer_other_phase_splits_huge)
{
	struct as_region *r = region(BASE, BASE, BASE + HP), *s;
	struct as_counts c = {0};

	make_huge(r, 0, 1536);
	s = calloc(1, sizeof(*s));
	ASSERT_EQ(as_region_geometry(s, BASE + 4 * HP + PG, BASE + 4 * HP + PG, BASE + 5 * HP + PG),
		  0);
	as_region_attach(s, calloc(1, as_region_meta_size(s)));
	as_transfer(&ENV, r, s, &c);
	EXPECT_EQ(c.huge_splits, 1u);
	EXPECT_EQ(R.last_split, 1536u);
	EXPECT_EQ(as_xstate(s, 0), AS_X_SMALL);
	EXPECT_EQ(as_pstate(s, 0), AS_P_PRESENT);
	EXPECT_EQ(as_pfn(s, 511), 1536u + 511);
}

TEST(fault_commits_huge_and_base)
{
	struct as_region *r = region(BASE, BASE, BASE + 2 * HP);

	as_fault_huge(r, 1, 2048);
	EXPECT_EQ(as_xstate(r, 1), AS_X_HUGE);
	EXPECT_EQ(as_pstate(r, MM_HPAGE_NR + 7), AS_P_PRESENT);
	EXPECT_EQ(as_pfn(r, MM_HPAGE_NR + 7), 2048u + 7);
	as_xstate_set(r, 0, AS_X_FILLING);
	as_fault_base(r, 4, 33, true); /* the fault owned the extent: a page table now */
	EXPECT_EQ(as_xstate(r, 0), AS_X_SMALL);
	EXPECT_EQ(as_pfn(r, 4), 33u);
	as_fault_base(r, 5, MM_NO_PFN, false); /* outside the pool */
	EXPECT_EQ(as_pstate(r, 5), AS_P_PRESENT);
	EXPECT_EQ(as_pfn(r, 5), MM_NO_PFN);
}

/* the host refused the huge mapping: what got mapped keeps its frame, the rest goes back */
TEST(fault_huge_fallback_keeps_the_mapped_pages)
{
	struct as_region *r = region(BASE, BASE, BASE + HP);
	bool mapped[MM_HPAGE_NR] = {false};

	as_xstate_set(r, 0, AS_X_FILLING);
	mapped[3] = mapped[4] = true;
	as_fault_huge_fallback(&ENV, r, 0, 1024, mapped);
	EXPECT_EQ(R.splits, 1u);
	EXPECT_EQ(R.last_split, 1024u);
	EXPECT_EQ(R.frees, MM_HPAGE_NR - 2);
	EXPECT_EQ(R.frees_huge, 0u);
	EXPECT_EQ(as_xstate(r, 0), AS_X_SMALL);
	EXPECT_EQ(as_pstate(r, 3), AS_P_PRESENT);
	EXPECT_EQ(as_pfn(r, 4), 1024u + 4);
	EXPECT_EQ(as_pstate(r, 5), AS_P_EMPTY);
	EXPECT_EQ(as_pfn(r, 5), MM_NO_PFN);

	/* after a huge commit (the replay's order), with the split refused: the block goes back */
	r = region(BASE, BASE, BASE + HP);
	as_fault_huge(r, 0, 2048);
	R.refuse_split = true;
	as_fault_huge_fallback(&ENV, r, 0, 2048, mapped);
	EXPECT_EQ(R.frees_huge, 1u);
	EXPECT_EQ(R.frees, 0u);
	EXPECT_EQ(as_pstate(r, 3), AS_P_PRESENT);
	EXPECT_EQ(as_pfn(r, 3), MM_NO_PFN);
	EXPECT_EQ(as_pstate(r, 0), AS_P_EMPTY);
	EXPECT_EQ(as_xstate(r, 0), AS_X_SMALL);
}

TEST(migrate_claim_rules)
{
	struct as_region *r = region(BASE, BASE, BASE + 2 * HP);

	make_huge(r, 0, 0);
	make_base(r, MM_HPAGE_NR, 40);
	EXPECT_EQ(as_migrate_claim(r, 3, 3), -EBUSY);		      /* THP */
	EXPECT_EQ(as_migrate_claim(r, MM_HPAGE_NR + 1, 41), -ENOENT); /* empty */
	EXPECT_EQ(as_migrate_claim(r, MM_HPAGE_NR, 41), -ENOENT);     /* refilled */
	EXPECT_EQ(as_migrate_claim(r, 5 * MM_HPAGE_NR, 41), -ENOENT); /* outside */
	ASSERT_EQ(as_migrate_claim(r, MM_HPAGE_NR, 40), 0);
	EXPECT_EQ(as_pstate(r, MM_HPAGE_NR), AS_P_MIGRATING);
	EXPECT_EQ(as_migrate_claim(r, MM_HPAGE_NR, 40), -EAGAIN); /* owned */
	EXPECT_EQ(as_migrate_freed(r, MM_HPAGE_NR), 0);
	as_migrate_commit(r, MM_HPAGE_NR, 99);
	EXPECT_EQ(as_pstate(r, MM_HPAGE_NR), AS_P_PRESENT);
	EXPECT_EQ(as_pfn(r, MM_HPAGE_NR), 99u);
}

TEST(migrate_freed_meanwhile_and_cancel)
{
	struct as_region *r = region(BASE, BASE, BASE + HP);
	struct as_counts c = {0};

	make_base(r, 1, 11);
	make_base(r, 2, 12);
	make_base(r, 3, 13);
	ASSERT_EQ(as_migrate_claim(r, 1, 11), 0);
	as_release(&ENV, r, 1, 2, true, &c);
	EXPECT_EQ(R.frees, 0u); /* the migrator's */
	EXPECT_EQ(as_migrate_freed(r, 1), -ENOENT);
	EXPECT_EQ(as_pstate(r, 1), AS_P_GONE);
	EXPECT_EQ(as_pfn(r, 1), MM_NO_PFN);
	ASSERT_EQ(as_migrate_claim(r, 2, 12), 0);
	as_migrate_cancel(r, 2, false);
	EXPECT_EQ(as_pstate(r, 2), AS_P_PRESENT);
	EXPECT_EQ(as_pfn(r, 2), 12u);
	ASSERT_EQ(as_migrate_claim(r, 3, 13), 0);
	as_migrate_cancel(r, 3, true);
	EXPECT_EQ(as_pstate(r, 3), AS_P_EMPTY);
	EXPECT_EQ(as_pfn(r, 3), MM_NO_PFN);
}

static int rec_split_folio(void *arg, uint32_t head)
{
	struct rec *r = arg;

	r->splits++;
	r->last_split = head;
	return 0;
}

/* khugepaged's view of a range: holes, pages with and without a frame, busy pages, huge and
 * never-touched extents, a range cut by the advice. */
TEST(collapse_scan_counts_what_a_range_holds)
{
	struct as_region *r = region(BASE, BASE, BASE + 3 * HP);
	struct mm_collapse_scan s;
	uint32_t p1 = as_page_of(r, BASE + HP);

	make_base(r, p1, 10);
	make_base(r, p1 + 1, 11);
	as_pstate_set(r, p1 + 2, AS_P_PRESENT); /* resident before the emulator: no frame */
	as_collapse_scan(r, 1, 77, &s);
	EXPECT_EQ(s.extent_owner, 77);
	EXPECT(s.vma_ok && !s.huge && !s.pmd_none && !s.busy);
	EXPECT_EQ(s.present, 2);
	EXPECT_EQ(s.shared, 1);
	EXPECT_EQ(s.none, 509);
	as_collapse_scan(r, 0, 0, &s);
	EXPECT(s.pmd_none);
	make_huge(r, 2, 1024);
	as_collapse_scan(r, 2, 0, &s);
	EXPECT(s.huge);
	as_pstate_set(r, p1 + 3, AS_P_FILLING);
	as_collapse_scan(r, 1, 0, &s);
	EXPECT(s.busy);
	as_pstate_set(r, p1 + 3, AS_P_EMPTY);
	as_advise(r, BASE + HP, BASE + HP + PG, MM_VMA_HUGEPAGE); /* part of the extent: 2 VMAs */
	as_collapse_scan(r, 1, 0, &s);
	EXPECT(!s.vma_ok);
}

/* A collapse: every page MIGRATING (holes flagged), then HUGE with head + i and the old
 * frames given back; a cancel restores the pages; a release during it makes commit fail. */
TEST(collapse_claim_commit_cancel)
{
	struct as_region *r = region(BASE, BASE, BASE + 2 * HP);
	struct as_env env = ENV;
	struct as_counts c = {0};
	uint32_t p0 = as_page_of(r, BASE);

	env.split_folio = rec_split_folio;
	make_base(r, p0, 10);
	make_base(r, p0 + 5, 15);
	EXPECT_EQ(as_collapse_claim(r, 1), -ENOENT); /* never touched: not SMALL */
	ASSERT_EQ(as_collapse_claim(r, 0), 0);
	EXPECT_EQ(AS_X_STATE(as_xstate(r, 0)), AS_X_COLLAPSING);
	EXPECT_EQ(AS_P_STATE(as_pstate(r, p0)), AS_P_MIGRATING);
	EXPECT(as_pstate(r, p0 + 1) & AS_P_HOLE);
	EXPECT_EQ(as_collapse_claim(r, 0), -ENOENT); /* owned already */
	as_collapse_cancel(&env, r, 0, &c);
	EXPECT_EQ(as_pstate(r, p0), AS_P_PRESENT);
	EXPECT_EQ(as_pstate(r, p0 + 1), AS_P_EMPTY);
	EXPECT_EQ(AS_X_STATE(as_xstate(r, 0)), AS_X_SMALL);
	ASSERT_EQ(as_collapse_claim(r, 0), 0);
	ASSERT_EQ(as_collapse_commit(&env, r, 0, 2048, &c), 0);
	EXPECT_EQ(R.frees, 2); /* frames 10 and 15 */
	EXPECT_EQ(AS_X_STATE(as_xstate(r, 0)), AS_X_HUGE);
	EXPECT_EQ(as_pfn(r, p0 + 1), 2049);
	EXPECT_EQ(as_pstate(r, p0 + 1), AS_P_PRESENT);
	EXPECT_EQ(c.collapsed, 1);
	/* a page released while the collapse owned it: the collapse fails, the page is gone */
	r = region(BASE, BASE, BASE + 2 * HP);
	p0 = as_page_of(r, BASE);
	make_base(r, p0, 10);
	make_base(r, p0 + 1, 11);
	ASSERT_EQ(as_collapse_claim(r, 0), 0);
	as_release(&env, r, p0 + 1, p0 + 2, true, &c);
	EXPECT_EQ(as_collapse_commit(&env, r, 0, 2048, &c), -EAGAIN);
	EXPECT_EQ(as_pstate(r, p0 + 1), AS_P_GONE);
	EXPECT_EQ(as_pstate(r, p0), AS_P_PRESENT);
	EXPECT_EQ(R.frees, 1); /* frame 11 */
	EXPECT_EQ(AS_X_STATE(as_xstate(r, 0)), AS_X_SMALL);
}

/* The underused split: the THP split whole, the zero-filled subpages freed and EMPTY. */
TEST(split_underused_frees_the_zero_subpages)
{
	struct as_region *r = region(BASE, BASE, BASE + HP);
	struct as_env env = ENV;
	struct as_counts c = {0};
	bool zero[MM_HPAGE_NR];

	env.split_folio = rec_split_folio;
	for (unsigned i = 0; i < MM_HPAGE_NR; i++)
		zero[i] = i % 12 != 0;				      /* 43 data pages */
	EXPECT_EQ(as_split_underused(&env, r, 0, zero, &c), -EINVAL); /* not huge */
	make_huge(r, 0, 512);
	EXPECT_EQ(as_split_underused(&env, r, 0, zero, &c), 512 - 43);
	EXPECT_EQ(R.splits, 1);
	EXPECT_EQ(R.frees, 512 - 43);
	EXPECT_EQ(AS_X_STATE(as_xstate(r, 0)), AS_X_SMALL);
	EXPECT_EQ(as_pstate(r, 1), AS_P_EMPTY);
	EXPECT_EQ(as_pfn(r, 1), MM_NO_PFN);
	EXPECT_EQ(as_pstate(r, 12), AS_P_PRESENT);
	EXPECT_EQ(as_pfn(r, 12), 524);
}

/* Zero pages: a read first touch holds no frame; the huge zero PMD's extent is ZERO. */
TEST(zero_pages_commit_and_release_without_frames)
{
	struct as_region *r = region(BASE, BASE, BASE + 3 * HP);
	struct as_counts c = {0};

	as_fault_zero(r, 3, true);
	EXPECT_EQ(as_pstate(r, 3), AS_P_ZERO);
	EXPECT_EQ(as_pfn(r, 3), MM_NO_PFN);
	EXPECT_EQ(as_xstate(r, 0), AS_X_SMALL); /* a page table now */
	EXPECT_EQ(as_mthp_orders(r, 0), 0);	/* a zero PTE is not none */
	as_fault_huge_zero(r, 1, MM_HPAGE_NR + 7);
	EXPECT_EQ(as_xstate(r, 1), AS_X_ZERO);
	EXPECT_EQ(as_pstate(r, MM_HPAGE_NR + 7), AS_P_ZERO);
	as_zero_read(r, MM_HPAGE_NR + 8);
	EXPECT_EQ(as_pstate(r, MM_HPAGE_NR + 8), AS_P_ZERO);
	as_recompute_extents(r, 0, 2); /* the huge zero PMD stays */
	EXPECT_EQ(as_xstate(r, 1), AS_X_ZERO);
	EXPECT_EQ(as_xstate(r, 0), AS_X_SMALL);
	/* a zero page is nobody's migration source */
	EXPECT_EQ(as_migrate_claim(r, 3, MM_NO_PFN), -ENOENT);
	/* released: nothing given back; the whole huge zero extent is a candidate again after
	 * DONTNEED (zap_huge_pmd leaves pmd_none), its pages EMPTY */
	as_release(&ENV, r, 0, 2 * MM_HPAGE_NR, false, &c);
	EXPECT_EQ(R.frees + R.frees_huge + R.splits, 0u);
	EXPECT_EQ(c.pages_freed, 0u);
	EXPECT_EQ(as_pstate(r, 3), AS_P_EMPTY);
	EXPECT_EQ(as_pstate(r, MM_HPAGE_NR + 7), AS_P_EMPTY);
	EXPECT_EQ(as_xstate(r, 1), AS_X_EMPTY);
	/* unmapped whole: GONE, the extent never huge again */
	as_fault_huge_zero(r, 2, 2 * MM_HPAGE_NR);
	as_release(&ENV, r, 2 * MM_HPAGE_NR, 3 * MM_HPAGE_NR, true, &c);
	EXPECT_EQ(as_xstate(r, 2), AS_X_SMALL);
	EXPECT_EQ(as_pstate(r, 2 * MM_HPAGE_NR), AS_P_GONE);
	EXPECT_EQ(R.frees + R.frees_huge, 0u);
}

/* The huge zero PMD split (a write, a partial release, a misaligned move): every other page
 * maps the 4 KiB zero page (__split_huge_zero_page_pmd). */
TEST(zero_extent_splits_into_zero_pages)
{
	struct as_region *r = region(BASE, BASE, BASE + 2 * HP);
	struct as_region *s;
	struct as_counts c = {0};

	as_fault_huge_zero(r, 0, 0);
	as_fault_base(r, 5, 99, false); /* the write's frame, then the split */
	as_zero_split(r, 0);
	EXPECT_EQ(as_xstate(r, 0), AS_X_SMALL);
	EXPECT_EQ(as_pstate(r, 5), AS_P_PRESENT);
	EXPECT_EQ(as_pfn(r, 5), 99u);
	EXPECT_EQ(as_pstate(r, 0), AS_P_ZERO);
	EXPECT_EQ(as_pstate(r, 511), AS_P_ZERO);
	/* a partial DONTNEED of a huge zero extent */
	as_fault_huge_zero(r, 1, MM_HPAGE_NR);
	as_release(&ENV, r, MM_HPAGE_NR + 10, MM_HPAGE_NR + 20, false, &c);
	EXPECT_EQ(c.huge_splits, 1u);
	EXPECT_EQ(R.frees + R.frees_huge + R.splits, 0u);
	EXPECT_EQ(as_xstate(r, 1), AS_X_SMALL);
	EXPECT_EQ(as_pstate(r, MM_HPAGE_NR + 10), AS_P_EMPTY);
	EXPECT_EQ(as_pstate(r, MM_HPAGE_NR + 20), AS_P_ZERO);
	EXPECT_EQ(as_pstate(r, MM_HPAGE_NR), AS_P_ZERO);
	/* mremap: same phase keeps a huge zero extent, another phase splits it */
	as_fault_huge_zero(r, 1, MM_HPAGE_NR + 1);
	s = calloc(1, sizeof(*s));
	ASSERT(s && as_region_geometry(s, BASE + 4 * HP, BASE + 4 * HP, BASE + 6 * HP) == 0);
	as_region_attach(s, calloc(1, as_region_meta_size(s)));
	as_transfer(&ENV, r, s, &c);
	EXPECT_EQ(as_xstate(s, 1), AS_X_ZERO);
	EXPECT_EQ(as_pstate(s, 5), AS_P_PRESENT);
	EXPECT_EQ(as_pstate(s, 6), AS_P_ZERO);
	s = calloc(1, sizeof(*s));
	ASSERT(s && as_region_geometry(s, BASE + 4 * HP + 16 * PG, BASE + 4 * HP + 16 * PG,
				       BASE + 6 * HP + 16 * PG) == 0);
	as_region_attach(s, calloc(1, as_region_meta_size(s)));
	memset(&c, 0, sizeof(c));
	as_transfer(&ENV, r, s, &c);
	EXPECT_EQ(c.huge_splits, 1u);
	EXPECT_NE(as_xstate(s, 1), AS_X_ZERO);
	EXPECT_NE(as_xstate(s, 2), AS_X_ZERO);
	EXPECT_EQ(as_pstate(s, MM_HPAGE_NR + 300), AS_P_ZERO);
	EXPECT_EQ(R.frees + R.frees_huge + R.splits, 0u);
}

/* khugepaged sees zero pages apart (mm's era decides: none_or_zero in 6.12, a failure in 3.x)
 * and the huge zero PMD as PMD-mapped; a collapse takes a zero page as a hole and an abandoned
 * one gives it back as a zero page. */
TEST(zero_pages_in_a_collapse)
{
	struct as_region *r = region(BASE, BASE, BASE + 2 * HP);
	struct mm_collapse_scan sc;
	struct as_counts c = {0};

	make_base(r, 0, 100);
	as_fault_zero(r, 1, false);
	as_fault_zero(r, 2, false);
	as_collapse_scan(r, 0, 0, &sc);
	EXPECT_EQ(sc.present, 1);
	EXPECT_EQ(sc.zero, 2);
	EXPECT_EQ(sc.none, 509);
	EXPECT(!sc.huge);
	ASSERT_EQ(as_collapse_claim(r, 0), 0);
	EXPECT_EQ(as_pstate(r, 1), AS_P_MIGRATING | AS_P_HOLE | AS_P_WASZERO);
	as_collapse_cancel(&ENV, r, 0, &c);
	EXPECT_EQ(as_pstate(r, 1), AS_P_ZERO);
	EXPECT_EQ(as_pstate(r, 3), AS_P_EMPTY);
	EXPECT_EQ(as_pstate(r, 0), AS_P_PRESENT);
	ASSERT_EQ(as_collapse_claim(r, 0), 0);
	ASSERT_EQ(as_collapse_commit(&ENV, r, 0, 1024, &c), 0);
	EXPECT_EQ(R.frees, 1u); /* the one frame; the zero pages had none */
	EXPECT_EQ(as_pstate(r, 2), AS_P_PRESENT);
	EXPECT_EQ(as_pfn(r, 2), 1026u);
	as_fault_huge_zero(r, 1, MM_HPAGE_NR);
	as_collapse_scan(r, 1, 0, &sc);
	EXPECT(sc.huge);
	EXPECT_EQ(as_collapse_claim(r, 1), -ENOENT);
}

/* With free_run, base pages whose frames follow one another go back as one run, every free in
 * page order (a run ends at a frame out of sequence or at the range's end). */
struct seq {
	unsigned n;
	uint32_t pfn[16], len[16];
};

static void seq_free(void *arg, uint32_t pfn, unsigned order)
{
	struct seq *q = arg;

	(void)order;
	q->pfn[q->n] = pfn;
	q->len[q->n++] = 1;
}

static void seq_run(void *arg, uint32_t pfn, uint32_t n)
{
	struct seq *q = arg;

	q->pfn[q->n] = pfn;
	q->len[q->n++] = n;
}

TEST(release_consecutive_frames_as_runs_in_page_order)
{
	struct as_region *r = region(BASE, BASE, BASE + HP);
	struct as_counts c = {0};
	struct seq q = {0};
	const struct as_env env = {&q, seq_free, split_allowed, NULL, NULL, seq_run};
	static const uint32_t want_pfn[] = {100, 300, 110, 200, 7};
	static const uint32_t want_len[] = {10, 5, 1, 10, 1};

	for (uint32_t i = 0; i < 10; i++)
		make_base(r, i, 100 + i);
	for (uint32_t i = 10; i < 15; i++)
		make_base(r, i, 300 + i - 10);
	make_base(r, 15, 110);
	for (uint32_t i = 20; i < 30; i++)
		make_base(r, i, 200 + i - 20);
	make_base(r, 30, 7);
	make_base(r, 40, 8); /* outside the range */
	as_release(&env, r, 0, 31, true, &c);
	ASSERT_EQ(q.n, 5u);
	for (unsigned i = 0; i < q.n; i++) {
		EXPECT_EQ(q.pfn[i], want_pfn[i]);
		EXPECT_EQ(q.len[i], want_len[i]);
	}
	EXPECT_EQ(c.pages_freed, 27u);
	EXPECT_EQ(as_pstate(r, 40), AS_P_PRESENT);
}

/* THPs unmapped whole go back first (extents before pages) and their pages are not walked again;
 * a base page between them goes back after them. */
TEST(release_unmapped_thps_then_pages)
{
	struct as_region *r = region(BASE, BASE, BASE + 3 * HP);
	struct as_counts c = {0};
	struct seq q = {0};
	const struct as_env env = {&q, seq_free, split_allowed, NULL, NULL, seq_run};

	make_huge(r, 0, 4096);
	make_base(r, MM_HPAGE_NR + 3, 77);
	make_huge(r, 2, 8192);
	as_release(&env, r, 0, 3 * MM_HPAGE_NR, true, &c);
	ASSERT_EQ(q.n, 3u);
	EXPECT_EQ(q.pfn[0], 4096u);
	EXPECT_EQ(q.pfn[1], 8192u);
	EXPECT_EQ(q.pfn[2], 77u);
	EXPECT_EQ(c.pages_freed, 2 * MM_HPAGE_NR + 1);
	for (uint32_t p = 0; p < 3 * MM_HPAGE_NR; p++)
		EXPECT_EQ(as_pstate(r, p), AS_P_GONE);
}

/* as_mthp_orders as it read the pages before the nested walk: every block from scratch. */
static uint16_t mthp_orders_ref(const struct as_region *r, uint32_t p)
{
	uintptr_t a = as_page_addr(r, p);
	uint16_t orders = 0;

	if (p >= r->npages || (as_xadv(r, as_ext_of(r, a)) & AS_ADV_SPLIT))
		return 0;
	for (unsigned k = MM_MTHP_MIN_ORDER; k < MM_HPAGE_ORDER; k++) {
		uintptr_t len = MM_PAGE_SIZE << k, start = a & ~(len - 1);
		uint32_t p0 = as_page_of(r, start);
		bool none = true;

		if (start < r->lo || start + len > r->hi)
			break;
		for (uint32_t i = 0; i < (1U << k) && none; i++)
			none = p0 + i == p || AS_P_STATE(as_pstate(r, p0 + i)) == AS_P_EMPTY;
		if (!none)
			break;
		orders |= (uint16_t)(1U << k);
	}
	return orders;
}

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* A region one thread owns (single: memset runs, plain compare-and-set) ends every step in the
 * state bytes and frames of a shared one given the same faults, releases and mTHP queries; the
 * orders agree with the walk that reads every block whole. */
TEST(single_region_steps_as_a_shared_one)
{
	uintptr_t lo = BASE + 3 * PG, hi = BASE + 6 * HP - 5 * PG; /* partial extents at the ends */
	struct as_region *sh = region(BASE, lo, hi), *one = region(BASE, lo, hi);
	uint64_t x = 88172645463325252ULL;

	one->single = true;
	for (unsigned step = 0; step < 4000; step++) {
		uint32_t p = (uint32_t)(xorshift(&x) % sh->npages);
		uint32_t e = as_ext_of(sh, as_page_addr(sh, p));
		unsigned op = (unsigned)(xorshift(&x) % 8);
		uint32_t n = (uint32_t)(xorshift(&x) % (op == 7 ? 3 * MM_HPAGE_NR : 40));
		uint32_t p1 = p + n > sh->npages ? sh->npages : p + n;
		struct as_region *rs[2] = {sh, one};
		struct as_counts c[2] = {{0}, {0}};
		uint16_t o[2];

		for (int i = 0; i < 2; i++) {
			struct as_region *r = rs[i];

			o[i] = as_mthp_orders(r, p);
			EXPECT_EQ(o[i], mthp_orders_ref(r, p));
			if (op <= 1 && AS_X_STATE(as_xstate(r, e)) == AS_X_EMPTY &&
			    as_ext_inside(r, e)) {
				as_fault_huge(r, e, 4096 + e * MM_HPAGE_NR);
			} else if (op == 2 && AS_P_STATE(as_pstate(r, p)) == AS_P_EMPTY && o[i]) {
				unsigned k = 31 - (unsigned)__builtin_clz(o[i]);

				as_fault_mthp(r, p, k, 100000 + (p & ~((1U << k) - 1)), true);
			} else if (op == 3 && AS_P_STATE(as_pstate(r, p)) == AS_P_EMPTY &&
				   AS_X_STATE(as_xstate(r, e)) != AS_X_HUGE) {
				as_fault_base(r, p, 200000 + p, true);
			} else if (op >= 4) {
				as_release(&ENV, r, p, p1, op == 5, &c[i]);
			}
		}
		EXPECT_EQ(o[0], o[1]);
		EXPECT_EQ(c[0].pages_freed, c[1].pages_freed);
		EXPECT_EQ(c[0].huge_splits, c[1].huge_splits);
		ASSERT_EQ(memcmp(sh->pstate, one->pstate, sh->npages), 0);
		ASSERT_EQ(memcmp(sh->pfn, one->pfn, sh->npages * sizeof(uint32_t)), 0);
		ASSERT_EQ(memcmp(sh->xstate, one->xstate, sh->nexts), 0);
	}
}

/* What a release gave back, call by call (frame, order or run length, kind), and the folio
 * orders of the frames the test mapped as mTHP folios (mm_anon_folio_order's answer). */
struct frees {
	unsigned n;
	uint32_t pfn[8192], len[8192];
	uint8_t kind[8192]; /* 0 free_frame, 1 free_run */
	uint8_t folio[1 << 18];
};

static void frees_free(void *arg, uint32_t pfn, unsigned order)
{
	struct frees *f = arg;

	if (f->n < 8192) {
		f->pfn[f->n] = pfn;
		f->len[f->n] = order;
		f->kind[f->n++] = 0;
	}
}

static void frees_run(void *arg, uint32_t pfn, uint32_t n)
{
	struct frees *f = arg;

	if (f->n < 8192) {
		f->pfn[f->n] = pfn;
		f->len[f->n] = n;
		f->kind[f->n++] = 1;
	}
}

static unsigned frees_folio(void *arg, uint32_t pfn)
{
	const struct frees *f = arg;

	return pfn < (1U << 18) ? f->folio[pfn] : 0;
}

/* A region one thread owns releases its pages with the same calls, in the same order, as a
 * shared one: the inlined PRESENT case, the skipped runs of GONE pages, and no folio question
 * until the region has mapped an mTHP folio (with_mthp: some steps map them, and from then on
 * the single region asks as the shared one always does). */
static void single_release_run(bool with_mthp)
{
	uintptr_t lo = BASE + 3 * PG, hi = BASE + 6 * HP - 5 * PG;
	struct as_region *sh = region(BASE, lo, hi), *one = region(BASE, lo, hi);
	static struct frees fr[2];
	uint64_t x = with_mthp ? 1234567ULL : 7654321ULL;
	uint32_t next_pfn = 1;
	unsigned folios = 0;

	memset(fr, 0, sizeof(fr));
	one->single = true;
	for (unsigned step = 0; step < 3000; step++) {
		uint32_t p = (uint32_t)(xorshift(&x) % sh->npages);
		uint32_t e = as_ext_of(sh, as_page_addr(sh, p));
		unsigned op = (unsigned)(xorshift(&x) % 8);
		uint32_t n = (uint32_t)(xorshift(&x) % (op == 6 ? 3 * MM_HPAGE_NR : 300));
		uint32_t p1 = p + n > sh->npages ? sh->npages : p + n;
		struct as_region *rs[2] = {sh, one};
		struct as_counts c[2] = {{0}, {0}};
		uint16_t o = as_mthp_orders(sh, p);
		uint32_t g = p;

		while (g < sh->npages && AS_P_STATE(as_pstate(sh, g)) == AS_P_GONE)
			g++; /* op 7 maps the hole at p again */
		/* frames handed out in ascending order, so neighbouring faults make runs */
		uint32_t huge = (next_pfn + MM_HPAGE_NR - 1) & ~(MM_HPAGE_NR - 1);

		if (huge + 2 * MM_HPAGE_NR >= (1U << 18))
			next_pfn = huge = MM_HPAGE_NR;
		for (int i = 0; i < 2; i++) {
			struct as_region *r = rs[i];
			const struct as_env env = {&fr[i], frees_free,	split_allowed,
						   NULL,   frees_folio, frees_run};

			fr[i].n = 0;
			if (op <= 1 && AS_X_STATE(as_xstate(r, e)) == AS_X_EMPTY &&
			    as_ext_inside(r, e)) {
				as_fault_huge(r, e, huge);
			} else if (op == 2 && with_mthp &&
				   AS_P_STATE(as_pstate(r, p)) == AS_P_EMPTY && o) {
				unsigned k = 31 - (unsigned)__builtin_clz(o);
				uint32_t head = (next_pfn + (1U << k) - 1) & ~((1U << k) - 1);

				for (uint32_t j = 0; j < (1U << k); j++)
					fr[i].folio[head + j] = (uint8_t)k;
				as_fault_mthp(r, p, k, head, true);
				folios += i;
			} else if ((op == 2 || op == 3) &&
				   AS_P_STATE(as_pstate(r, p)) == AS_P_EMPTY &&
				   AS_X_STATE(as_xstate(r, e)) != AS_X_HUGE) {
				as_fault_base(r, p, next_pfn, true);
			} else if (op >= 4 && op <= 6) {
				as_release(&env, r, p, p1, op == 6, &c[i]);
			} else if (op == 7 && g > p) {
				as_revive(r, p, g);
			}
		}
		if (op <= 1)
			next_pfn = huge + MM_HPAGE_NR;
		else if (op == 2 && with_mthp && o)
			next_pfn = ((next_pfn + (1U << (31 - __builtin_clz(o))) - 1) &
				    ~((1U << (31 - __builtin_clz(o))) - 1)) +
				   (1U << (31 - __builtin_clz(o)));
		else if (op <= 3)
			next_pfn++;
		EXPECT_EQ(c[0].pages_freed, c[1].pages_freed);
		EXPECT_EQ(c[0].huge_splits, c[1].huge_splits);
		ASSERT_EQ(fr[0].n, fr[1].n);
		ASSERT_EQ(memcmp(fr[0].pfn, fr[1].pfn, fr[0].n * sizeof(uint32_t)), 0);
		ASSERT_EQ(memcmp(fr[0].len, fr[1].len, fr[0].n * sizeof(uint32_t)), 0);
		ASSERT_EQ(memcmp(fr[0].kind, fr[1].kind, fr[0].n), 0);
		ASSERT_EQ(memcmp(sh->pstate, one->pstate, sh->npages), 0);
		ASSERT_EQ(memcmp(sh->pfn, one->pfn, sh->npages * sizeof(uint32_t)), 0);
		ASSERT_EQ(memcmp(sh->xstate, one->xstate, sh->nexts), 0);
	}
	EXPECT_EQ(one->mthp_seen, with_mthp);
	EXPECT_EQ(folios > 50, with_mthp);

	/* a remap moves the pages (as_transfer) into a new region of the same phase: the single
	 * region's successor holds its mTHP folios too (mthp_seen moves with them) and releases
	 * them all as the shared one's successor does, whole folios at their order */
	struct as_region *sh2 = region(BASE + 8 * HP, lo + 8 * HP, hi + 8 * HP);
	struct as_region *one2 = region(BASE + 8 * HP, lo + 8 * HP, hi + 8 * HP);
	struct as_region *from[2] = {sh, one}, *to[2] = {sh2, one2};
	struct as_counts c[2] = {{0}, {0}};
	unsigned folio_frees = 0;

	one2->single = true;
	for (int i = 0; i < 2; i++) {
		const struct as_env env = {&fr[i], frees_free,	split_allowed,
					   NULL,   frees_folio, frees_run};

		fr[i].n = 0;
		as_transfer(&env, from[i], to[i], &c[i]);
		as_release(&env, to[i], 0, to[i]->npages, true, &c[i]);
	}
	EXPECT_EQ(one2->mthp_seen, with_mthp);
	EXPECT_EQ(c[0].pages_freed, c[1].pages_freed);
	EXPECT_EQ(c[0].huge_splits, c[1].huge_splits);
	ASSERT_EQ(fr[0].n, fr[1].n);
	ASSERT_EQ(memcmp(fr[0].pfn, fr[1].pfn, fr[0].n * sizeof(uint32_t)), 0);
	ASSERT_EQ(memcmp(fr[0].len, fr[1].len, fr[0].n * sizeof(uint32_t)), 0);
	ASSERT_EQ(memcmp(fr[0].kind, fr[1].kind, fr[0].n), 0);
	ASSERT_EQ(memcmp(sh2->pstate, one2->pstate, sh2->npages), 0);
	for (unsigned j = 0; j < fr[0].n; j++)
		folio_frees +=
		    fr[0].kind[j] == 0 && fr[0].len[j] > 0 && fr[0].len[j] < MM_HPAGE_ORDER;
	EXPECT_EQ(folio_frees > 0, with_mthp); /* whole mTHP folios went over and back */
}

TEST(single_region_releases_as_a_shared_one)
{
	single_release_run(false);
}

TEST(single_region_with_mthp_releases_as_a_shared_one)
{
	single_release_run(true);
}

TEST_MAIN()

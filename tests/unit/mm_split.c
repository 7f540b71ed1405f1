/* core/mm after a THP's fault: the deferred split queue and the THP shrinker (6.12
 * deferred_split_scan, do_shrink_slab's volume, thp_underused at the max_ptes_none boundary),
 * and the split of 3.x (at once). */
#include "harness.h"
#include "mm_fakeenv.h"
#include "mm/internal.h"

#define MIB (1ULL << 20)

static uint32_t huge_fault(struct fakeenv *fe, uint64_t extent)
{
	struct mm_fault_req req = {
	    .owner = extent << 9, .extent_owner = extent << 9, .huge_ok = true, .write = true};
	struct mm_fault_res res;

	ASSERT_EQ(mm_fault(fe->mm, &req, &res, NULL), 0);
	ASSERT_EQ(res.outcome, MM_FAULT_HUGE);
	return res.pfn;
}

static uint64_t stat(struct fakeenv *fe, enum mm_stat s)
{
	uint64_t st[MM_STAT_NR];

	mm_get_stats(fe->mm, st);
	return st[s];
}

static void check(struct fakeenv *fe)
{
	char err[256];
	int rc = mm_check(fe->mm, err, sizeof(err));

	if (rc)
		fprintf(stderr, "  mm_check: %s\n", err);
	ASSERT_EQ(rc, 0);
}

/* A partially unmapped THP keeps its frames until the shrinker splits it: then its unmapped
 * subpages go back (thp_split_page) and the mapped ones stay as base pages. */
TEST(shrinker_splits_partially_mapped_thps)
{
	struct fakeenv fe;
	struct mm_counts c;
	uint32_t head;
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "modern-always", 64 * MIB, false, err, sizeof(err)), 0);
	head = huge_fault(&fe, 1);
	ASSERT_EQ(mm_anon_split(fe.mm, head), 0);
	for (uint32_t i = 256; i < 512; i++)
		mm_anon_free(fe.mm, head + i, 0, NULL);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.anon, 512);
	EXPECT_EQ(c.anon_partially_mapped, 1);
	check(&fe);
	/* priority 12 with one entry: (1 >> 12) * 4 / 2 = 0, nothing carried: no scan */
	EXPECT_EQ(mm_shrink_thp(fe.mm, 12, NULL), 0);
	EXPECT_EQ(mm_shrink_thp(fe.mm, 0, NULL), 1);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.anon, 256);
	EXPECT_EQ(c.anon_huge, 0);
	EXPECT_EQ(c.split_queue, 0);
	EXPECT_EQ(c.anon_partially_mapped, 0);
	EXPECT_EQ(stat(&fe, MM_STAT_THP_SPLIT_PAGE), 1);
	check(&fe);
	for (uint32_t i = 0; i < 256; i++)
		mm_anon_free(fe.mm, head + i, 0, NULL);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.free, c.nr_frames);
	check(&fe);
	fakeenv_destroy(&fe);
}

/* do_shrink_slab: a short queue is scanned only as the priority drops; entries not scanned
 * are carried to the next call (nr_deferred). */
TEST(shrinker_volume_follows_priority)
{
	struct fakeenv fe;
	uint32_t heads[20];
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "modern-always", 128 * MIB, false, err, sizeof(err)), 0);
	for (unsigned k = 0; k < 20; k++) {
		heads[k] = huge_fault(&fe, k + 1);
		ASSERT_EQ(mm_anon_split(fe.mm, heads[k]), 0);
		mm_anon_free(fe.mm, heads[k] + 3, 0, NULL);
	}
	EXPECT_EQ(mm_shrink_thp(fe.mm, 12, NULL), 0);
	EXPECT_EQ(mm_shrink_thp(fe.mm, 4, NULL), 0);  /* 20 >> 4 = 1, x 2 = 2 < 20 */
	EXPECT_EQ(mm_shrink_thp(fe.mm, 1, NULL), 20); /* 20, carried 2: >= the queue */
	check(&fe);
	fakeenv_destroy(&fe);
}

/* Direct reclaim runs the shrinker (shrink_node -> shrink_slab): under pressure enough to drop
 * the priority to 0 (every other frame under writeback), a one-entry queue is scanned and the
 * split gives the fault its frame. */
TEST(reclaim_runs_the_shrinker)
{
	struct fakeenv fe;
	struct mm_counts c;
	struct mm_fault_req req = {.owner = 9 << 9, .extent_owner = 9 << 9, .write = true};
	struct mm_fault_res res;
	uint32_t head;
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "modern-always", 16 * MIB, false, err, sizeof(err)), 0);
	head = huge_fault(&fe, 1);
	ASSERT_EQ(mm_anon_split(fe.mm, head), 0);
	for (uint32_t i = 1; i < 512; i++)
		mm_anon_free(fe.mm, head + i, 0, NULL);
	for (uint32_t pfn = 0; pfn < fe.nr_frames; pfn++) {
		fe.wb_done_at[pfn] = UINT64_MAX;
		(void)mm_debug_place(fe.mm, pfn, DBG_FILE_WRITEBACK, MM_OWNER_FILE(3, pfn));
	}
	ASSERT_EQ(mm_fault(fe.mm, &req, &res, NULL), 0);
	EXPECT_EQ(res.outcome, MM_FAULT_BASE);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.split_queue, 0);
	EXPECT_EQ(stat(&fe, MM_STAT_THP_SPLIT_PAGE), 1);
	check(&fe);
	fakeenv_destroy(&fe);
}

/* thp_underused: 40 data pages (472 zero-filled). The owner's hook decides with
 * mm_thp_underused and splits with mm_anon_split_folio, freeing the zero subpages. */
static int underused_hook(struct fakeenv *fe, uint64_t extent_owner, uint32_t head)
{
	unsigned zero = 472;

	(void)extent_owner;
	(*(unsigned *)fe->user)++;
	if (!mm_thp_underused(fe->mm, zero))
		return 0;
	ASSERT_EQ(mm_anon_split_folio(fe->mm, head), 0);
	for (uint32_t i = 40; i < 512; i++)
		mm_anon_free(fe->mm, head + i, 0, NULL);
	return 1;
}

static unsigned underused_run(const char *spec, unsigned *asked)
{
	struct fakeenv fe;
	struct mm_counts c;
	uint64_t split;
	char err[256];

	*asked = 0;
	ASSERT_EQ(fakeenv_init(&fe, spec, 64 * MIB, false, err, sizeof(err)), 0);
	fe.on_split_underused = underused_hook;
	fe.user = asked;
	huge_fault(&fe, 1);
	mm_shrink_thp(fe.mm, 0, NULL);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.split_queue, 0); /* judged once: split, or off the queue for good */
	split = stat(&fe, MM_STAT_THP_UNDERUSED_SPLIT_PAGE);
	EXPECT_EQ(c.anon, split ? 40 : 512);
	check(&fe);
	fakeenv_destroy(&fe);
	return (unsigned)split;
}

TEST(underused_at_the_max_ptes_none_boundary)
{
	unsigned asked;

	/* 511 (the default): thp_underused returns false at once, the owner is never asked */
	EXPECT_EQ(underused_run("modern-always", &asked), 0);
	EXPECT_EQ(asked, 0);
	EXPECT_EQ(underused_run("modern-always:max-ptes-none=450", &asked), 1);
	EXPECT_EQ(asked, 1);
	EXPECT_EQ(underused_run("modern-always:max-ptes-none=471", &asked), 1); /* 472 > 471 */
	EXPECT_EQ(underused_run("modern-always:max-ptes-none=472", &asked), 0);
	EXPECT_EQ(asked, 1);
	/* shrink_underused=0: new THPs are not even queued */
	EXPECT_EQ(underused_run("modern-always:max-ptes-none=450,shrink-underused=no", &asked), 0);
	EXPECT_EQ(asked, 0);
}

/* 3.x: no queue, no deferral. */
TEST(no_queue_in_3x)
{
	struct fakeenv fe;
	struct mm_counts c;
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "linux-3.1", 64 * MIB, false, err, sizeof(err)), 0);
	huge_fault(&fe, 1);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.split_queue, 0);
	EXPECT_EQ(mm_shrink_thp(fe.mm, 0, NULL), 0);
	fakeenv_destroy(&fe);
}

TEST_MAIN()

/* core/mm fault path: huge/base decisions per policy and VMA advice, the fault record, frees,
 * splits. (Slow-path step sequences on fragmented pools: mm_slowpath.c.) */
#include "harness.h"
#include "mm_fakeenv.h"
#include "mm/internal.h"

#define MIB (1ULL << 20)

static struct mm_fault_req req_at(uint64_t extent, enum mm_vma_advice advice)
{
	return (struct mm_fault_req){
	    .owner = extent << 9,
	    .extent_owner = extent << 9,
	    .advice = advice,
	    .huge_ok = true,
	    .write = true,
	};
}

static enum mm_fault_outcome fault_once(const char *spec, enum mm_vma_advice advice, bool huge_ok)
{
	struct fakeenv fe;
	struct mm_fault_req req = req_at(1, advice);
	struct mm_fault_res res;
	char err[256];

	req.huge_ok = huge_ok;
	ASSERT_EQ(fakeenv_init(&fe, spec, 32 * MIB, false, err, sizeof(err)), 0);
	ASSERT_EQ(mm_fault(fe.mm, &req, &res, NULL), 0);
	fakeenv_destroy(&fe);
	return res.outcome;
}

TEST(decision_follows_enabled_and_advice)
{
	EXPECT_EQ(fault_once("linux-3.1", MM_VMA_DEFAULT, true), MM_FAULT_HUGE);
	EXPECT_EQ(fault_once("linux-3.1", MM_VMA_NOHUGEPAGE, true), MM_FAULT_BASE);
	EXPECT_EQ(fault_once("linux-3.1", MM_VMA_DEFAULT, false), MM_FAULT_BASE);
	EXPECT_EQ(fault_once("modern-madvise", MM_VMA_DEFAULT, true), MM_FAULT_HUGE);
	EXPECT_EQ(fault_once("modern-never", MM_VMA_HUGEPAGE, true), MM_FAULT_BASE);
	EXPECT_EQ(fault_once("modern-always:enabled=madvise", MM_VMA_DEFAULT, true), MM_FAULT_BASE);
	EXPECT_EQ(fault_once("modern-always:enabled=madvise", MM_VMA_HUGEPAGE, true),
		  MM_FAULT_HUGE);
	EXPECT_EQ(fault_once("linux-3.3:enabled=never", MM_VMA_HUGEPAGE, true), MM_FAULT_BASE);
	/* the sysfs-pair names: enabled=madvise gives a huge page only to a MADV_HUGEPAGE range
	 * (6.12 __thp_vma_allowable_orders), whatever defrag says */
	EXPECT_EQ(fault_once("thp-madvise/madvise", MM_VMA_DEFAULT, true), MM_FAULT_BASE);
	EXPECT_EQ(fault_once("thp-madvise/always", MM_VMA_DEFAULT, true), MM_FAULT_BASE);
	EXPECT_EQ(fault_once("thp-madvise/madvise", MM_VMA_HUGEPAGE, true), MM_FAULT_HUGE);
	EXPECT_EQ(fault_once("thp-always/madvise", MM_VMA_DEFAULT, true), MM_FAULT_HUGE);
	EXPECT_EQ(fault_once("thp-never/always", MM_VMA_HUGEPAGE, true), MM_FAULT_BASE);
}

static enum mm_fault_outcome fault_off(const char *spec, enum mm_vma_advice advice,
				       enum mm_thp_disable off)
{
	struct fakeenv fe;
	struct mm_fault_req req = req_at(1, advice);
	struct mm_fault_res res;
	char err[256];

	req.thp_disable = off;
	ASSERT_EQ(fakeenv_init(&fe, spec, 32 * MIB, false, err, sizeof(err)), 0);
	ASSERT_EQ(mm_fault(fe.mm, &req, &res, NULL), 0);
	fakeenv_destroy(&fe);
	return res.outcome;
}

/* PR_THP_DISABLE_EXCEPT_ADVISED under enabled=always behaves as enabled=madvise: only
 * MADV_HUGEPAGE ranges get a THP (6.18 vma_thp_disabled); PR_SET_THP_DISABLE alone: none. */
TEST(prctl_thp_disable_decides_per_advice)
{
	EXPECT_EQ(fault_off("thp-always/madvise", MM_VMA_DEFAULT, MM_THP_DISABLE_NONE),
		  MM_FAULT_HUGE);
	EXPECT_EQ(fault_off("thp-always/madvise", MM_VMA_DEFAULT, MM_THP_DISABLE_EXCEPT_ADVISED),
		  MM_FAULT_BASE);
	EXPECT_EQ(fault_off("thp-always/madvise", MM_VMA_HUGEPAGE, MM_THP_DISABLE_EXCEPT_ADVISED),
		  MM_FAULT_HUGE);
	EXPECT_EQ(fault_off("thp-always/always", MM_VMA_HUGEPAGE, MM_THP_DISABLE_COMPLETELY),
		  MM_FAULT_BASE);
	EXPECT_EQ(fault_off("thp-always/madvise", MM_VMA_DEFAULT, MM_THP_DISABLE_COMPLETELY),
		  MM_FAULT_BASE);
	/* the flag does not make a madvise-mode system give more than it would */
	EXPECT_EQ(fault_off("thp-madvise/madvise", MM_VMA_DEFAULT, MM_THP_DISABLE_EXCEPT_ADVISED),
		  MM_FAULT_BASE);
	/* and mTHP sizes are off too in a non-advised VMA, on in an advised one */
	{
		struct fakeenv fe;
		struct mm_fault_req req = req_at(1, MM_VMA_DEFAULT);
		struct mm_fault_res res;
		char err[256];

		ASSERT_EQ(fakeenv_init(&fe, "thp-always/madvise:hugepages-64kB=always", 32 * MIB,
				       false, err, sizeof(err)),
			  0);
		req.huge_ok = false;
		req.orders_ok = 1U << 4;
		req.thp_disable = MM_THP_DISABLE_EXCEPT_ADVISED;
		ASSERT_EQ(mm_fault(fe.mm, &req, &res, NULL), 0);
		EXPECT_EQ(res.outcome, MM_FAULT_BASE);
		req = req_at(2, MM_VMA_HUGEPAGE);
		req.huge_ok = false;
		req.orders_ok = 1U << 4;
		req.thp_disable = MM_THP_DISABLE_EXCEPT_ADVISED;
		ASSERT_EQ(mm_fault(fe.mm, &req, &res, NULL), 0);
		EXPECT_EQ(res.outcome, MM_FAULT_MTHP);
		EXPECT_EQ(res.order, 4);
		fakeenv_destroy(&fe);
	}
}

static struct mm_fault_res read_fault(struct fakeenv *fe, uint64_t extent,
				      enum mm_vma_advice advice)
{
	struct mm_fault_req req = req_at(extent, advice);
	struct mm_fault_res res;

	req.write = false;
	req.zero_ok = true;
	ASSERT_EQ(mm_fault(fe->mm, &req, &res, NULL), 0);
	return res;
}

/* A read first touch maps a zero page and takes no frame: the huge zero folio (6.12
 * do_huge_pmd_anonymous_page, allocated once: thp_zero_page_alloc) where a THP could go, the
 * 4 KiB zero page otherwise (do_anonymous_page). 3.1-3.7 had no huge zero page and allocated a
 * THP for a read as for a write; their 4 KiB path mapped the zero page. */
TEST(read_faults_map_the_zero_page_per_era)
{
	struct fakeenv fe;
	struct mm_fault_res res;
	struct mm_counts c;
	uint64_t st[MM_STAT_NR];
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "thp-always/madvise", 32 * MIB, false, err, sizeof(err)), 0);
	res = read_fault(&fe, 1, MM_VMA_DEFAULT);
	EXPECT_EQ(res.outcome, MM_FAULT_HUGE_ZERO);
	EXPECT_EQ(res.pfn, MM_NO_PFN);
	res = read_fault(&fe, 2, MM_VMA_DEFAULT);
	EXPECT_EQ(res.outcome, MM_FAULT_HUGE_ZERO);
	res = read_fault(&fe, 3, MM_VMA_NOHUGEPAGE);
	EXPECT_EQ(res.outcome, MM_FAULT_ZERO);
	EXPECT_EQ(res.pfn, MM_NO_PFN);
	mm_get_stats(fe.mm, st);
	EXPECT_EQ(st[MM_STAT_THP_ZERO_PAGE_ALLOC], 1); /* one folio for every mapping */
	EXPECT_EQ(st[MM_STAT_THP_FAULT_ALLOC], 0);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.anon, 0);			      /* no frame of the process */
	EXPECT_EQ(c.free, c.nr_frames - MM_HPAGE_NR); /* the folio: 2 MiB of the kernel's */
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	fakeenv_destroy(&fe);

	ASSERT_EQ(fakeenv_init(&fe, "linux-3.2", 32 * MIB, false, err, sizeof(err)), 0);
	EXPECT_EQ(read_fault(&fe, 1, MM_VMA_DEFAULT).outcome, MM_FAULT_HUGE);
	EXPECT_EQ(read_fault(&fe, 2, MM_VMA_NOHUGEPAGE).outcome, MM_FAULT_ZERO);
	mm_get_stats(fe.mm, st);
	EXPECT_EQ(st[MM_STAT_THP_ZERO_PAGE_ALLOC], 0);
	EXPECT_EQ(st[MM_STAT_THP_FAULT_ALLOC], 1);
	fakeenv_destroy(&fe);

	/* without zero_ok (the live emulator) a read is decided as a write, as before */
	ASSERT_EQ(fakeenv_init(&fe, "thp-always/madvise", 32 * MIB, false, err, sizeof(err)), 0);
	{
		struct mm_fault_req req = req_at(1, MM_VMA_DEFAULT);

		req.write = false;
		ASSERT_EQ(mm_fault(fe.mm, &req, &res, NULL), 0);
		EXPECT_EQ(res.outcome, MM_FAULT_HUGE);
	}
	fakeenv_destroy(&fe);
}

/* A write to a zero-page mapping is a fault of its own: do_wp_page copies the 4 KiB zero page
 * into a new frame; on the huge zero PMD 6.12's do_huge_pmd_wp_page splits the PMD
 * (thp_split_pmd) and the write takes a 4 KiB frame. Neither is a THP or an mTHP. */
TEST(writes_to_zero_pages_take_4k)
{
	struct fakeenv fe;
	struct mm_fault_req req;
	struct mm_fault_res res;
	uint64_t st[MM_STAT_NR];
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "thp-always/madvise:hugepages-64kB=always", 32 * MIB, false,
			       err, sizeof(err)),
		  0);
	EXPECT_EQ(read_fault(&fe, 1, MM_VMA_DEFAULT).outcome, MM_FAULT_HUGE_ZERO);
	req = req_at(1, MM_VMA_DEFAULT);
	req.wp_zero = MM_WP_HUGE_ZERO;
	req.orders_ok = 1U << 4;
	ASSERT_EQ(mm_fault(fe.mm, &req, &res, NULL), 0);
	EXPECT_EQ(res.outcome, MM_FAULT_BASE);
	EXPECT(res.zero_split);
	req = req_at(1, MM_VMA_DEFAULT);
	req.owner += 5;
	req.wp_zero = MM_WP_ZERO;
	req.orders_ok = 1U << 4;
	ASSERT_EQ(mm_fault(fe.mm, &req, &res, NULL), 0);
	EXPECT_EQ(res.outcome, MM_FAULT_BASE);
	EXPECT(!res.zero_split);
	mm_get_stats(fe.mm, st);
	EXPECT_EQ(st[MM_STAT_THP_SPLIT_PMD], 1);
	EXPECT_EQ(st[MM_STAT_THP_FAULT_ALLOC], 0);
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	fakeenv_destroy(&fe);
}

/* A clear done ahead of time (live: a staging THP the host zeroed when it was prepared) is
 * charged to the fault: its zeroing and total, and the cause, as if cleared on the fault. */
TEST(huge_fault_charges_clear_done_ahead)
{
	struct fakeenv fe;
	struct mm_fault_req req = req_at(7, MM_VMA_DEFAULT);
	struct mm_fault_res res;
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "linux-3.1", 32 * MIB, false, err, sizeof(err)), 0);
	fe.clear_ns = 2000;
	fe.clear_ahead_ns = 90000;
	fe.cost_ns[MM_COST_FAULT] = 1000;
	ASSERT_EQ(mm_fault(fe.mm, &req, &res, NULL), 0);
	ASSERT_EQ(res.outcome, MM_FAULT_HUGE);
	EXPECT_EQ(res.rec.zero_ns, 92000);
	EXPECT_EQ(res.rec.total_ns, 93000);
	EXPECT_EQ(res.rec.cause, MM_CAUSE_ZEROING);
	EXPECT_EQ(fe.n_clear, 1);
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	fakeenv_destroy(&fe);
}

TEST(huge_fault_record_and_counters)
{
	struct fakeenv fe;
	struct mm_fault_req req = req_at(7, MM_VMA_DEFAULT);
	struct mm_fault_res res;
	struct mm_counts c;
	uint64_t st[MM_STAT_NR];
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "linux-3.1", 32 * MIB, false, err, sizeof(err)), 0);
	fe.clear_ns = 100000;
	fe.cost_ns[MM_COST_FAULT] = 1000;
	fe.now = 5000;
	ASSERT_EQ(mm_fault(fe.mm, &req, &res, NULL), 0);
	ASSERT_EQ(res.outcome, MM_FAULT_HUGE);
	EXPECT_EQ(res.pfn % MM_HPAGE_NR, 0);
	EXPECT_EQ(res.rec.t_start, 5000);
	EXPECT_EQ(res.rec.zero_ns, 100000);
	EXPECT_EQ(res.rec.total_ns, 101000);
	EXPECT_EQ(res.rec.cause, MM_CAUSE_ZEROING);
	EXPECT_EQ(res.rec.nsteps, 1);
	EXPECT_EQ(res.rec.steps[0].step, MM_STEP_FREELIST_LOW);
	EXPECT_EQ(res.rec.steps[0].result, 1);
	EXPECT_EQ(fe.n_clear, 1);
	mm_get_stats(fe.mm, st);
	EXPECT_EQ(st[MM_STAT_THP_FAULT_ALLOC], 1);
	EXPECT_EQ(st[MM_STAT_THP_FAULT_FALLBACK], 0);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.anon, 512);
	EXPECT_EQ(c.anon_huge, 512);
	EXPECT_EQ(pfn_frame(fe.mm, res.pfn + 3)->owner, (7ULL << 9) + 3);
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	mm_anon_free(fe.mm, res.pfn, MM_HPAGE_ORDER, NULL);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.anon, 0);
	EXPECT_EQ(c.free, c.nr_frames);
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	fakeenv_destroy(&fe);
}

/* Fill the pool with pages of mt, then keep one in every pageblock: no order-9 block is left
 * though most memory is free. */
static void fragment_one_per_block(struct fakeenv *fe, enum mm_migratetype mt)
{
	uint32_t n = 0, pfn, *all = malloc(sizeof(uint32_t) * fe->nr_frames);
	uint64_t owner = mt == MM_MT_MOVABLE ? MM_OWNER_FOREIGN : 0;

	ASSERT(all != NULL);
	while (mm_alloc_pages(fe->mm, 0, mt, owner | n, &pfn, NULL) == 0)
		all[n++] = pfn;
	for (uint32_t i = 0; i < n; i++)
		if (all[i] % MM_HPAGE_NR != 0)
			mm_free_pages(fe->mm, all[i], 0, NULL);
	free(all);
}

/* No free 2 MiB block: the huge zero folio cannot be had (thp_zero_page_alloc_failed,
 * thp_fault_fallback) and the read maps the 4 KiB zero page. */
TEST(huge_zero_folio_allocation_failure_falls_back)
{
	struct fakeenv fe;
	uint64_t st[MM_STAT_NR];
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "thp-always/never", 32 * MIB, false, err, sizeof(err)), 0);
	fragment_one_per_block(&fe, MM_MT_UNMOVABLE);
	EXPECT_EQ(read_fault(&fe, 1, MM_VMA_DEFAULT).outcome, MM_FAULT_ZERO);
	mm_get_stats(fe.mm, st);
	EXPECT_EQ(st[MM_STAT_THP_ZERO_PAGE_ALLOC_FAILED], 1);
	EXPECT_EQ(st[MM_STAT_THP_ZERO_PAGE_ALLOC], 0);
	EXPECT_EQ(st[MM_STAT_THP_FAULT_FALLBACK], 1);
	fakeenv_destroy(&fe);
}

TEST(unmovable_fragmentation_falls_back_to_base)
{
	struct fakeenv fe;
	struct mm_fault_req req = req_at(3, MM_VMA_DEFAULT);
	struct mm_fault_res res;
	struct mm_counts c;
	uint64_t st[MM_STAT_NR];
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "linux-3.1", 16 * MIB, false, err, sizeof(err)), 0);
	fragment_one_per_block(&fe, MM_MT_UNMOVABLE);
	mm_get_counts(fe.mm, &c);
	ASSERT_EQ(c.free_blocks_order9, 0);
	ASSERT_GT(c.free, c.nr_frames / 2);
	ASSERT_EQ(mm_fault(fe.mm, &req, &res, NULL), 0);
	EXPECT_EQ(res.outcome, MM_FAULT_BASE);
	EXPECT_EQ(pfn_frame(fe.mm, res.pfn)->owner, req.owner);
	EXPECT_EQ(res.rec.steps[0].step, MM_STEP_FREELIST_LOW);
	EXPECT_EQ(res.rec.steps[res.rec.nsteps - 1].step, MM_STEP_FALLBACK);
	mm_get_stats(fe.mm, st);
	EXPECT_EQ(st[MM_STAT_THP_FAULT_FALLBACK], 1);
	EXPECT_EQ(st[MM_STAT_PGMIGRATE_SUCCESS], 0);
	mm_anon_free(fe.mm, res.pfn, 0, NULL);
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	fakeenv_destroy(&fe);
}

/* Scattered movable frames: async compaction moves them and the fault gets its huge page. */
TEST(movable_fragmentation_is_compacted)
{
	struct fakeenv fe;
	struct mm_fault_req req = req_at(3, MM_VMA_DEFAULT);
	struct mm_fault_res res;
	uint64_t st[MM_STAT_NR];
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "linux-3.1", 16 * MIB, false, err, sizeof(err)), 0);
	fragment_one_per_block(&fe, MM_MT_MOVABLE);
	ASSERT_EQ(mm_fault(fe.mm, &req, &res, NULL), 0);
	EXPECT_EQ(res.outcome, MM_FAULT_HUGE);
	EXPECT_EQ(res.rec.nsteps, 3);
	EXPECT_EQ(res.rec.steps[2].step, MM_STEP_COMPACT_ASYNC);
	EXPECT_EQ(res.rec.steps[2].result, MM_COMPACT_SUCCESS);
	EXPECT_GT(res.rec.migrated, 0);
	EXPECT_EQ(fe.n_migrate, 0); /* foreign frames move as metadata only */
	mm_get_stats(fe.mm, st);
	EXPECT_EQ(st[MM_STAT_COMPACT_STALL], 1);
	EXPECT_EQ(st[MM_STAT_COMPACT_SUCCESS], 1);
	EXPECT_EQ(st[MM_STAT_PGMIGRATE_SUCCESS], res.rec.migrated);
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	fakeenv_destroy(&fe);
}

/* 3.x: a partial unmap splits the THP at once (split_huge_page from zap_pmd_range). */
TEST(split_then_free_base_pages_merges_back)
{
	struct fakeenv fe;
	struct mm_fault_req req = req_at(1, MM_VMA_DEFAULT);
	struct mm_fault_res res;
	struct mm_counts c;
	uint64_t st[MM_STAT_NR];
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "linux-3.2", 16 * MIB, false, err, sizeof(err)), 0);
	ASSERT_EQ(mm_fault(fe.mm, &req, &res, NULL), 0);
	ASSERT_EQ(res.outcome, MM_FAULT_HUGE);
	EXPECT_EQ(mm_anon_split(fe.mm, res.pfn + 1), -EINVAL);
	ASSERT_EQ(mm_anon_split(fe.mm, res.pfn), 0);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.anon, 512);
	EXPECT_EQ(c.anon_huge, 0);
	EXPECT_EQ(c.split_queue, 0);
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	for (uint32_t i = 0; i < 512; i += 2)
		mm_anon_free(fe.mm, res.pfn + i, 0, NULL);
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	for (uint32_t i = 1; i < 512; i += 2)
		mm_anon_free(fe.mm, res.pfn + i, 0, NULL);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.free, c.nr_frames);
	EXPECT_EQ(c.nr_free[MM_MAX_ORDER], c.nr_frames >> MM_MAX_ORDER);
	mm_get_stats(fe.mm, st);
	EXPECT_EQ(st[MM_STAT_THP_SPLIT_PAGE], 1);
	EXPECT_EQ(st[MM_STAT_THP_DEFERRED_SPLIT_PAGE], 0);
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	fakeenv_destroy(&fe);
}

/* 6.12: a partial unmap splits the PMD only (thp_split_pmd); the folio stays whole, on the
 * deferred split queue once partially mapped (thp_deferred_split_page, nr_anon_partially_mapped)
 * with every frame allocated, and goes back whole when its last subpage is unmapped. */
TEST(partial_unmap_defers_the_split)
{
	struct fakeenv fe;
	struct mm_fault_req req = req_at(1, MM_VMA_DEFAULT);
	struct mm_fault_res res;
	struct mm_counts c;
	uint64_t st[MM_STAT_NR];
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "modern-always", 16 * MIB, false, err, sizeof(err)), 0);
	ASSERT_EQ(mm_fault(fe.mm, &req, &res, NULL), 0);
	ASSERT_EQ(res.outcome, MM_FAULT_HUGE);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.split_queue, 1); /* every new THP is queued (shrink_underused) */
	EXPECT_EQ(c.anon_partially_mapped, 0);
	EXPECT_EQ(c.anon_pmd, 512);
	ASSERT_EQ(mm_anon_split(fe.mm, res.pfn), 0);
	mm_anon_free(fe.mm, res.pfn + 7, 0, NULL);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.anon, 512); /* all 512 frames stay until the shrinker runs */
	EXPECT_EQ(c.anon_huge, 512);
	EXPECT_EQ(c.anon_pmd, 0);
	EXPECT_EQ(c.split_queue, 1);
	EXPECT_EQ(c.anon_partially_mapped, 1);
	mm_get_stats(fe.mm, st);
	EXPECT_EQ(st[MM_STAT_THP_SPLIT_PMD], 1);
	EXPECT_EQ(st[MM_STAT_THP_DEFERRED_SPLIT_PAGE], 1);
	EXPECT_EQ(st[MM_STAT_THP_SPLIT_PAGE], 0);
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	mm_anon_free(fe.mm, res.pfn + 8, 0, NULL); /* already partially mapped: counted once */
	mm_get_stats(fe.mm, st);
	EXPECT_EQ(st[MM_STAT_THP_DEFERRED_SPLIT_PAGE], 1);
	for (uint32_t i = 0; i < 512; i++)
		mm_anon_free(fe.mm, res.pfn + i, 0, NULL);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.free, c.nr_frames);
	EXPECT_EQ(c.split_queue, 0);
	EXPECT_EQ(c.anon_partially_mapped, 0);
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	fakeenv_destroy(&fe);
}

/* A program fault is served below MIN (the kernel would reclaim/OOM rather than fail it); only
 * an empty pool yields NOMEM. */
TEST(base_faults_dip_below_min_then_nomem)
{
	struct fakeenv fe;
	struct mm_fault_req req = req_at(0, MM_VMA_NOHUGEPAGE);
	struct mm_fault_res res;
	struct mm_counts c;
	uint64_t st[MM_STAT_NR];
	char err[256];
	uint32_t served = 0;

	ASSERT_EQ(fakeenv_init(&fe, "linux-3.1", 8 * MIB, false, err, sizeof(err)), 0);
	for (;;) {
		req.owner++;
		ASSERT_EQ(mm_fault(fe.mm, &req, &res, NULL), 0);
		if (res.outcome == MM_FAULT_NOMEM)
			break;
		served++;
	}
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(served, c.nr_frames);
	EXPECT_EQ(c.free, 0);
	EXPECT_EQ(res.pfn, MM_NO_PFN);
	mm_get_stats(fe.mm, st);
	EXPECT_EQ(st[MM_STAT_NOMEM_FALLBACK], 1);
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	fakeenv_destroy(&fe);
}

TEST(bad_arguments)
{
	struct fakeenv fe;
	struct mm_fault_res res;
	char err[256];

	ASSERT_EQ(fakeenv_init(&fe, "linux-3.1", 8 * MIB, false, err, sizeof(err)), 0);
	EXPECT_EQ(mm_fault(fe.mm, NULL, &res, NULL), -EINVAL);
	mm_anon_free(fe.mm, 123456789, 0, NULL); /* out of range: ignored */
	mm_anon_free(fe.mm, 0, 0, NULL);	 /* a free frame: ignored */
	mm_anon_free(fe.mm, 0, 9, NULL);
	EXPECT_EQ(mm_anon_split(fe.mm, 0), -EINVAL);
	ASSERT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	fakeenv_destroy(&fe);
}

TEST_MAIN()

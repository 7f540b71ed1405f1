/* core/mm khugepaged: registration, the scan's pacing (pages_to_scan, scan_sleep, alloc_sleep,
 * full_scans), the per-range rules at the max_ptes_* boundaries, each era's collapse gfp and
 * compaction mode (and that +nostall changes khugepaged's), MADV_COLLAPSE's results. The
 * address space is a fake one of this file: ranges of 512 base pages faulted through mm. */
#include <string.h>

#include "harness.h"
#include "mm_fakeenv.h"
#include "mm/internal.h"

#define MIB (1ULL << 20)
#define NR  64 /* ranges of the fake address space */

/* One address space: range r at address r * 2 MiB, its pages' frames (MM_NO_PFN: a hole). */
struct fake_as {
	struct fakeenv *fe;
	uint32_t pfn[NR][MM_HPAGE_NR];
	bool huge[NR], touched[NR];
	enum mm_vma_advice advice;
	unsigned collapses, shared_pages;
	int collapse_ret;
};

static uint64_t owner_of(unsigned r, unsigned i)
{
	return ((uint64_t)(r + 1) << 9) | i; /* 0 is no owner */
}

/* Fault `present` base pages of range r (the first ones). */
static void populate(struct fake_as *as, unsigned r, unsigned present)
{
	for (unsigned i = 0; i < MM_HPAGE_NR; i++)
		as->pfn[r][i] = MM_NO_PFN;
	for (unsigned i = 0; i < present; i++) {
		struct mm_fault_req req = {.owner = owner_of(r, i), .extent_owner = owner_of(r, 0)};
		struct mm_fault_res res;

		ASSERT_EQ(mm_fault(as->fe->mm, &req, &res, NULL), 0);
		ASSERT_EQ(res.outcome, MM_FAULT_BASE);
		as->pfn[r][i] = res.pfn;
	}
	as->touched[r] = true;
}

static void scan_of(struct fake_as *as, unsigned r, struct mm_collapse_scan *s)
{
	*s = (struct mm_collapse_scan){.extent_owner = owner_of(r, 0), .vma_ok = true};
	s->advice = as->advice;
	s->huge = as->huge[r];
	s->pmd_none = !as->touched[r];
	if (s->huge || s->pmd_none)
		return;
	for (unsigned i = 0; i < MM_HPAGE_NR; i++)
		s->none += as->pfn[r][i] == MM_NO_PFN;
	s->present = (uint16_t)(MM_HPAGE_NR - s->none);
	s->shared = (uint16_t)as->shared_pages;
}

static int walk_next(void *arg, uint64_t *addr, struct mm_collapse_scan *s)
{
	struct fake_as *as = arg;
	uint64_t r = (*addr + MM_HPAGE_SIZE - 1) / MM_HPAGE_SIZE;

	if (r >= NR)
		return -ENOENT;
	*addr = r * MM_HPAGE_SIZE;
	scan_of(as, (unsigned)r, s);
	return 0;
}

static int walk_collapse(void *arg, uint64_t addr, const struct mm_collapse_scan *s, uint32_t head,
			 void *call)
{
	struct fake_as *as = arg;
	unsigned r = (unsigned)(addr / MM_HPAGE_SIZE);

	(void)s;
	(void)call;
	if (as->collapse_ret)
		return as->collapse_ret;
	for (unsigned i = 0; i < MM_HPAGE_NR; i++) {
		if (as->pfn[r][i] != MM_NO_PFN)
			mm_anon_free(as->fe->mm, as->pfn[r][i], 0, NULL);
		as->pfn[r][i] = head + i;
	}
	as->huge[r] = true;
	as->collapses++;
	return 0;
}

static struct fake_as AS;

static int scan_hook(struct fakeenv *fe, uint32_t as_id, uint64_t *addr, unsigned budget,
		     bool *done)
{
	struct mm_khugepaged_walker w = {&AS, walk_next, walk_collapse};

	if (as_id != 7)
		return -ENOENT;
	return mm_khugepaged_scan_mm(fe->mm, &w, addr, budget, done, NULL);
}

static void setup(struct fakeenv *fe, const char *spec, uint64_t pool)
{
	char err[256];

	ASSERT_EQ(fakeenv_init(fe, spec, pool, false, err, sizeof(err)), 0);
	memset(&AS, 0, sizeof(AS));
	AS.fe = fe;
	fe->on_khugepaged_scan = scan_hook;
}

static uint64_t stat(struct fakeenv *fe, enum mm_stat s)
{
	uint64_t st[MM_STAT_NR];

	mm_get_stats(fe->mm, st);
	return st[s];
}

/* A THP-eligible fault registers its address space; a base-only one does not. */
TEST(registration_at_the_first_eligible_fault)
{
	struct fakeenv fe;
	struct mm_fault_req req = {.owner = 1 << 9, .extent_owner = 1 << 9, .as_id = 7};
	struct mm_fault_res res;
	struct mm_counts c;

	setup(&fe, "modern-always", 64 * MIB);
	ASSERT_EQ(mm_fault(fe.mm, &req, &res, NULL), 0);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.khugepaged_mms, 0);
	req.huge_ok = true;
	ASSERT_EQ(mm_fault(fe.mm, &req, &res, NULL), 0);
	ASSERT_EQ(mm_fault(fe.mm, &req, &res, NULL), 0);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.khugepaged_mms, 1);
	EXPECT_EQ(mm_khugepaged_enter(fe.mm, 9), 0);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.khugepaged_mms, 2);
	mm_khugepaged_exit(fe.mm, 7);
	mm_khugepaged_exit(fe.mm, 9);
	mm_get_counts(fe.mm, &c);
	EXPECT_EQ(c.khugepaged_mms, 0);
	EXPECT_EQ(mm_khugepaged(fe.mm, NULL), UINT64_MAX); /* nothing registered: sleeps */
	fakeenv_destroy(&fe);
}

/* 8 ranges per wake at pages_to_scan 4096 (a collapse ends a visit, the wake goes on with
 * what is left of its budget), a wake every scan_sleep, full_scans after the last range. */
TEST(scan_pacing_eight_ranges_per_wake)
{
	struct fakeenv fe;
	char err[256];

	setup(&fe, "linux-3.2+nostall", 256 * MIB);
	for (unsigned r = 0; r < NR; r++)
		populate(&AS, r, MM_HPAGE_NR);
	ASSERT_EQ(mm_khugepaged_enter(fe.mm, 7), 0);
	EXPECT_EQ(mm_khugepaged(fe.mm, NULL), 10000000000ULL);
	EXPECT_EQ(AS.collapses, 8);
	EXPECT_EQ(stat(&fe, MM_STAT_KHUGEPAGED_PAGES_COLLAPSED), 8);
	EXPECT_EQ(stat(&fe, MM_STAT_THP_COLLAPSE_ALLOC), 8);
	/* not due yet: nothing happens, the time left comes back */
	fe.now += 4000000000ULL;
	EXPECT_EQ(mm_khugepaged(fe.mm, NULL), 6000000000ULL);
	EXPECT_EQ(AS.collapses, 8);
	for (unsigned w = 1; w < 8; w++) {
		fe.now += 10000000000ULL;
		mm_khugepaged(fe.mm, NULL);
	}
	EXPECT_EQ(AS.collapses, NR);
	EXPECT_EQ(stat(&fe, MM_STAT_KHUGEPAGED_FULL_SCANS), 0);
	fe.now += 10000000000ULL;
	mm_khugepaged(fe.mm, NULL); /* huge ranges cost 512 each too: 8 per wake to the end */
	fe.now += 10000000000ULL;
	mm_khugepaged(fe.mm, NULL);
	EXPECT_EQ(stat(&fe, MM_STAT_KHUGEPAGED_FULL_SCANS), 1);
	EXPECT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	fakeenv_destroy(&fe);
}

/* Doubling pages_to_scan doubles the ranges per wake. */
TEST(pages_to_scan_sets_the_rate)
{
	struct fakeenv fe;

	setup(&fe, "modern-always:pages-to-scan=8192", 256 * MIB);
	for (unsigned r = 0; r < 32; r++)
		populate(&AS, r, MM_HPAGE_NR);
	ASSERT_EQ(mm_khugepaged_enter(fe.mm, 7), 0);
	mm_khugepaged(fe.mm, NULL);
	EXPECT_EQ(AS.collapses, 16);
	fakeenv_destroy(&fe);
}

/* A range collapses iff 512 - present <= max_ptes_none; RSS grows by the holes. */
TEST(max_ptes_none_boundary)
{
	struct fakeenv fe;
	struct mm_counts before, after;

	setup(&fe, "modern-always:max-ptes-none=500", 64 * MIB);
	populate(&AS, 0, 12); /* 500 holes: collapses */
	populate(&AS, 1, 11); /* 501 holes: refused */
	ASSERT_EQ(mm_khugepaged_enter(fe.mm, 7), 0);
	mm_get_counts(fe.mm, &before);
	mm_khugepaged(fe.mm, NULL);
	mm_get_counts(fe.mm, &after);
	EXPECT(AS.huge[0]);
	EXPECT(!AS.huge[1]);
	EXPECT_EQ(after.anon - before.anon, 500);
	EXPECT_EQ(after.anon_pmd, 512);
	EXPECT_EQ(stat(&fe, MM_STAT_THP_SCAN_EXCEED_NONE_PTE), 1);
	fakeenv_destroy(&fe);
}

/* Zero-page PTEs (read first touches): 6.12 hpage_collapse_scan_pmd counts them with the none
 * PTEs (none_or_zero) against max_ptes_none; 3.2 khugepaged_scan_pmd gives up on them (present,
 * not writable). */
TEST(zero_page_ptes_per_era)
{
	struct fakeenv fe;
	struct mm_collapse_scan s = {.vma_ok = true, .present = 1, .none = 300, .zero = 211};

	setup(&fe, "modern-always", 64 * MIB);
	EXPECT_EQ(mm_collapse_check(fe.mm, &s, true), MM_SCAN_SUCCEED); /* 300 + 211 <= 511 */
	s.zero = 212, s.present = 0;
	EXPECT_EQ(mm_collapse_check(fe.mm, &s, true), MM_SCAN_EXCEED_NONE_PTE);
	s = (struct mm_collapse_scan){.vma_ok = true, .present = 1, .zero = 511};
	EXPECT_EQ(mm_collapse_check(fe.mm, &s, true), MM_SCAN_SUCCEED);
	EXPECT_EQ(mm_collapse_check(fe.mm, &s, false), MM_SCAN_SUCCEED); /* MADV_COLLAPSE */
	fakeenv_destroy(&fe);
	setup(&fe, "linux-3.2", 64 * MIB);
	EXPECT_EQ(mm_collapse_check(fe.mm, &s, true), MM_SCAN_PAGE_RO);
	s.zero = 1, s.present = 511;
	EXPECT_EQ(mm_collapse_check(fe.mm, &s, true), MM_SCAN_PAGE_RO);
	s.zero = 0, s.none = 1;
	EXPECT_EQ(mm_collapse_check(fe.mm, &s, true), MM_SCAN_SUCCEED);
	EXPECT_EQ(strcmp(mm_scan_result_name(MM_SCAN_PAGE_RO), "page_ro"), 0);
	fakeenv_destroy(&fe);
}

TEST(rules_per_era_and_for_madv_collapse)
{
	struct fakeenv fe;
	struct mm_collapse_scan s = {.vma_ok = true, .present = 1, .none = 511};
	struct mm_policy p612, p61;
	char err[256];

	setup(&fe, "modern-always", 64 * MIB);
	EXPECT_EQ(mm_collapse_check(fe.mm, &s, true), MM_SCAN_SUCCEED); /* 511 <= 511 */
	s.present = 0, s.none = 512;
	EXPECT_EQ(mm_collapse_check(fe.mm, &s, true), MM_SCAN_EXCEED_NONE_PTE);
	s.present = 256, s.none = 0, s.shared = 256;
	EXPECT_EQ(mm_collapse_check(fe.mm, &s, true), MM_SCAN_SUCCEED);
	s.present = 255, s.shared = 257;
	EXPECT_EQ(mm_collapse_check(fe.mm, &s, true), MM_SCAN_EXCEED_SHARED_PTE);
	EXPECT_EQ(mm_collapse_check(fe.mm, &s, false), MM_SCAN_SUCCEED); /* MADV_COLLAPSE */
	s.shared = 0, s.present = 512, s.swap = 65;
	EXPECT_EQ(mm_collapse_check(fe.mm, &s, true), MM_SCAN_EXCEED_SWAP_PTE);
	s.swap = 0, s.advice = MM_VMA_NOHUGEPAGE;
	EXPECT_EQ(mm_collapse_check(fe.mm, &s, true), MM_SCAN_VMA_CHECK);
	EXPECT_EQ(mm_collapse_check(fe.mm, &s, false), MM_SCAN_VMA_CHECK);
	s.advice = MM_VMA_DEFAULT, s.huge = true;
	EXPECT_EQ(mm_collapse_check(fe.mm, &s, true), MM_SCAN_PMD_MAPPED);
	s.huge = false, s.pmd_none = true;
	EXPECT_EQ(mm_collapse_check(fe.mm, &s, false), MM_SCAN_PMD_NULL);
	fakeenv_destroy(&fe);
	/* 3.x: no shared page at all (page_count must be 1), any swap entry aborts */
	setup(&fe, "linux-3.2", 64 * MIB);
	s = (struct mm_collapse_scan){.vma_ok = true, .present = 511, .shared = 1};
	EXPECT_EQ(mm_collapse_check(fe.mm, &s, true), MM_SCAN_EXCEED_SHARED_PTE);
	fakeenv_destroy(&fe);
	/* enabled=madvise: khugepaged only scans MADV_HUGEPAGE ranges; MADV_COLLAPSE any */
	setup(&fe, "modern-madvise:enabled=madvise", 64 * MIB);
	s = (struct mm_collapse_scan){.vma_ok = true, .present = 512};
	EXPECT_EQ(mm_collapse_check(fe.mm, &s, true), MM_SCAN_VMA_CHECK);
	EXPECT_EQ(mm_collapse_check(fe.mm, &s, false), MM_SCAN_SUCCEED);
	s.advice = MM_VMA_HUGEPAGE;
	EXPECT_EQ(mm_collapse_check(fe.mm, &s, true), MM_SCAN_SUCCEED);
	fakeenv_destroy(&fe);
	/* the process's prctl (6.18 vma_thp_disabled): EXCEPT_ADVISED keeps khugepaged to
	 * MADV_HUGEPAGE ranges and lets MADV_COLLAPSE through (a forced collapse); COMPLETELY
	 * refuses both */
	setup(&fe, "modern-always", 64 * MIB);
	s = (struct mm_collapse_scan){.vma_ok = true, .present = 512};
	s.thp_disable = MM_THP_DISABLE_EXCEPT_ADVISED;
	EXPECT_EQ(mm_collapse_check(fe.mm, &s, true), MM_SCAN_VMA_CHECK);
	EXPECT_EQ(mm_collapse_check(fe.mm, &s, false), MM_SCAN_SUCCEED);
	s.advice = MM_VMA_HUGEPAGE;
	EXPECT_EQ(mm_collapse_check(fe.mm, &s, true), MM_SCAN_SUCCEED);
	s.thp_disable = MM_THP_DISABLE_COMPLETELY;
	EXPECT_EQ(mm_collapse_check(fe.mm, &s, true), MM_SCAN_VMA_CHECK);
	EXPECT_EQ(mm_collapse_check(fe.mm, &s, false), MM_SCAN_VMA_CHECK);
	fakeenv_destroy(&fe);
	/* madvise_collapse_errno: 6.12's, and 6.1's, which has no SCAN_EXCEED_NONE_PTE case */
	ASSERT_EQ(mm_policy_parse("thp-always/madvise", &p612, err, sizeof(err)), 0);
	ASSERT_EQ(mm_policy_parse("linux-6.1", &p61, err, sizeof(err)), 0);
	EXPECT_EQ(mm_scan_result_errno(&p612, MM_SCAN_SUCCEED), 0);
	EXPECT_EQ(mm_scan_result_errno(&p612, MM_SCAN_PMD_MAPPED), 0);
	EXPECT_EQ(mm_scan_result_errno(&p612, MM_SCAN_ALLOC_HUGE_PAGE_FAIL), -ENOMEM);
	EXPECT_EQ(mm_scan_result_errno(&p612, MM_SCAN_EXCEED_NONE_PTE), -EBUSY);
	EXPECT_EQ(mm_scan_result_errno(&p612, MM_SCAN_PAGE_LOCK), -EAGAIN);
	EXPECT_EQ(mm_scan_result_errno(&p612, MM_SCAN_PMD_NULL), -EINVAL);
	EXPECT_EQ(mm_scan_result_errno(&p612, MM_SCAN_VMA_CHECK), -EINVAL);
	EXPECT_EQ(mm_scan_result_errno(&p61, MM_SCAN_EXCEED_NONE_PTE), -EINVAL);
	EXPECT_EQ(mm_scan_result_errno(&p61, MM_SCAN_ALLOC_HUGE_PAGE_FAIL), -ENOMEM);
	EXPECT_EQ(mm_scan_result_errno(&p61, MM_SCAN_PAGE_LOCK), -EAGAIN);
}

static void gfp_of(const char *spec, bool khugepaged, unsigned *gfp, int *mode)
{
	struct mm_policy p;
	struct alloc_ctx ac = {0};
	char err[256];

	ASSERT_EQ(mm_policy_parse(spec, &p, err, sizeof(err)), 0);
	collapse_alloc_ctx(&p, khugepaged, &ac);
	*gfp = ac.gfp;
	*mode = ac.mode_set ? ac.mode : p.second_mode;
}

/* khugepaged's gfp per era: 3.x GFP_TRANSHUGE (NO_KSWAPD: no kswapd bit; __GFP_WAIT only with
 * khugepaged/defrag), the second compaction of the era (+nostall: async, as for faults), 3.3
 * sync-light; 6.12 GFP_TRANSHUGE (direct reclaim, no NORETRY) or _LIGHT, up to SYNC_LIGHT. */
TEST(khugepaged_gfp_per_era)
{
	unsigned gfp;
	int mode;

	gfp_of("linux-3.1", true, &gfp, &mode);
	EXPECT(gfp & GFP_DIRECT_RECLAIM);
	EXPECT(!(gfp & GFP_KSWAPD_RECLAIM));
	EXPECT_EQ(mode, MM_MIGRATE_SYNC);
	gfp_of("linux-3.2", true, &gfp, &mode);
	EXPECT_EQ(mode, MM_MIGRATE_SYNC);
	gfp_of("linux-3.2+nostall", true, &gfp, &mode);
	EXPECT_EQ(mode, MM_MIGRATE_ASYNC); /* the patch took khugepaged's sync compaction too */
	gfp_of("linux-3.1+nostall", true, &gfp, &mode);
	EXPECT_EQ(mode, MM_MIGRATE_ASYNC);
	gfp_of("linux-3.3", true, &gfp, &mode);
	EXPECT_EQ(mode, MM_MIGRATE_SYNC_LIGHT);
	gfp_of("linux-3.2:khugepaged-defrag=no", true, &gfp, &mode);
	EXPECT(!(gfp & GFP_DIRECT_RECLAIM));
	/* 3.16 (75f30861a12a): faults async, kernel threads keep SYNC_LIGHT */
	gfp_of("linux-3.3:second-compaction=async,khugepaged-compaction=sync-light", true, &gfp,
	       &mode);
	EXPECT_EQ(mode, MM_MIGRATE_SYNC_LIGHT);
	gfp_of("modern-always", true, &gfp, &mode);
	EXPECT(gfp & GFP_DIRECT_RECLAIM);
	EXPECT(!(gfp & (GFP_NORETRY | GFP_KSWAPD_RECLAIM)));
	EXPECT_EQ(mode, MM_MIGRATE_SYNC_LIGHT);
	/* 6.1 alloc_charge_hpage: the same masks as 6.12 (alloc_hugepage_khugepaged_gfpmask) */
	gfp_of("linux-6.1", true, &gfp, &mode);
	EXPECT(gfp & GFP_DIRECT_RECLAIM);
	EXPECT(!(gfp & (GFP_NORETRY | GFP_KSWAPD_RECLAIM)));
	EXPECT_EQ(mode, MM_MIGRATE_SYNC_LIGHT);
	gfp_of("linux-6.1:khugepaged-defrag=no", true, &gfp, &mode);
	EXPECT(!(gfp & (GFP_DIRECT_RECLAIM | GFP_KSWAPD_RECLAIM)));
	gfp_of("modern-defer:khugepaged-defrag=no", true, &gfp, &mode);
	EXPECT(!(gfp & (GFP_DIRECT_RECLAIM | GFP_KSWAPD_RECLAIM)));
	/* MADV_COLLAPSE: GFP_TRANSHUGE whatever khugepaged/defrag says */
	gfp_of("modern-never:khugepaged-defrag=no", false, &gfp, &mode);
	EXPECT(gfp & GFP_DIRECT_RECLAIM);
}

/* On a pool where no 2 MiB block can be made (an unmovable frame in every pageblock), the
 * collapse allocation runs the era's whole slow path: 3.3's khugepaged compacts at
 * SYNC_LIGHT after reclaim, and so does the 3.16-like spec whose faults stay async. */
static bool collapse_steps_have(const char *spec, enum mm_step want, bool khugepaged)
{
	struct fakeenv fe;
	struct mm_fault_rec rec;
	uint32_t head;
	char err[256];
	bool found = false;

	ASSERT_EQ(fakeenv_init(&fe, spec, 32 * MIB, false, err, sizeof(err)), 0);
	for (uint32_t b = 0; b < fe.nr_frames; b += MM_HPAGE_NR)
		ASSERT_EQ(mm_debug_place(fe.mm, b + 100, DBG_UNMOVABLE, 0), 0);
	EXPECT_EQ(mm_collapse_alloc(fe.mm, 1 << 9, khugepaged, &head, &rec, NULL), -ENOMEM);
	for (unsigned i = 0; i < rec.nsteps; i++)
		found |= rec.steps[i].step == want;
	EXPECT_EQ(stat(&fe, MM_STAT_THP_COLLAPSE_ALLOC_FAILED), 1);
	fakeenv_destroy(&fe);
	return found;
}

TEST(collapse_allocation_runs_the_era_slow_path)
{
	EXPECT(collapse_steps_have("linux-3.3", MM_STEP_COMPACT_SYNC_LIGHT, true));
	EXPECT(collapse_steps_have("linux-3.3:second-compaction=async,khugepaged-compaction=sync-"
				   "light",
				   MM_STEP_COMPACT_SYNC_LIGHT, true));
	EXPECT(!collapse_steps_have("linux-3.2+nostall:async-failure-defers=no",
				    MM_STEP_COMPACT_SYNC, true));
	EXPECT(
	    collapse_steps_have("linux-3.2:async-failure-defers=no", MM_STEP_COMPACT_SYNC, true));
	EXPECT(collapse_steps_have("modern-always", MM_STEP_COMPACT_SYNC_LIGHT, true));
	EXPECT(!collapse_steps_have("modern-always:khugepaged-defrag=no", MM_STEP_RECLAIM, true));
}

/* A failed allocation: 3.x (CONFIG_NUMA) ends the wake and sleeps scan_sleep + alloc_sleep;
 * 6.12 sleeps alloc_sleep inside the wake, then goes on, and a second failure ends it. */
TEST(alloc_failure_backs_off_per_era)
{
	struct fakeenv fe;

	/* khugepaged/defrag=0: the free lists only, and the pool has no free 2 MiB block */
	setup(&fe, "linux-3.2:khugepaged-defrag=no", 64 * MIB);
	populate(&AS, 0, MM_HPAGE_NR);
	populate(&AS, 1, MM_HPAGE_NR);
	for (uint32_t b = 0; b < fe.nr_frames; b += MM_HPAGE_NR)
		(void)mm_debug_place(fe.mm, b + 300, DBG_UNMOVABLE, 0);
	ASSERT_EQ(mm_khugepaged_enter(fe.mm, 7), 0);
	EXPECT_EQ(mm_khugepaged(fe.mm, NULL), 70000000000ULL);
	EXPECT_EQ(stat(&fe, MM_STAT_THP_COLLAPSE_ALLOC_FAILED), 1);
	fakeenv_destroy(&fe);

	/* 6.1 khugepaged_do_scan is 6.12's (the same "if (!wait) break; wait = false;") */
	for (int i = 0; i < 2; i++) {
		setup(&fe,
		      i ? "linux-6.1:khugepaged-defrag=no" : "modern-always:khugepaged-defrag=no",
		      64 * MIB);
		populate(&AS, 0, MM_HPAGE_NR);
		populate(&AS, 1, MM_HPAGE_NR);
		for (uint32_t b = 0; b < fe.nr_frames; b += MM_HPAGE_NR)
			(void)mm_debug_place(fe.mm, b + 300, DBG_UNMOVABLE, 0);
		ASSERT_EQ(mm_khugepaged_enter(fe.mm, 7), 0);
		/* alloc_sleep inside the wake */
		EXPECT_EQ(mm_khugepaged(fe.mm, NULL), 60000000000ULL);
		EXPECT_EQ(stat(&fe, MM_STAT_THP_COLLAPSE_ALLOC_FAILED), 1);
		fe.now += 60000000000ULL;
		/* second failure: wake over */
		EXPECT_EQ(mm_khugepaged(fe.mm, NULL), 10000000000ULL);
		EXPECT_EQ(stat(&fe, MM_STAT_THP_COLLAPSE_ALLOC_FAILED), 2);
		fakeenv_destroy(&fe);
	}
}

/* MADV_COLLAPSE: synchronous, ignores max_ptes_none and enabled, bumps thp_collapse_alloc but
 * not pages_collapsed; an untouched range is -EINVAL. */
TEST(madv_collapse_semantics)
{
	struct fakeenv fe;
	struct mm_khugepaged_walker w = {&AS, walk_next, walk_collapse};

	setup(&fe, "modern-never:max-ptes-none=0", 64 * MIB);
	populate(&AS, 0, 3);
	EXPECT_EQ(mm_madv_collapse(fe.mm, &w, 0, NULL, NULL), MM_SCAN_SUCCEED);
	EXPECT(AS.huge[0]);
	EXPECT_EQ(mm_madv_collapse(fe.mm, &w, 0, NULL, NULL), MM_SCAN_PMD_MAPPED);
	EXPECT_EQ(mm_madv_collapse(fe.mm, &w, MM_HPAGE_SIZE, NULL, NULL), MM_SCAN_PMD_NULL);
	EXPECT_EQ(stat(&fe, MM_STAT_THP_COLLAPSE_ALLOC), 1);
	EXPECT_EQ(stat(&fe, MM_STAT_KHUGEPAGED_PAGES_COLLAPSED), 0);
	/* the owner could not do it: the block goes back */
	populate(&AS, 2, MM_HPAGE_NR);
	AS.collapse_ret = -EAGAIN;
	EXPECT_EQ(mm_madv_collapse(fe.mm, &w, 2 * MM_HPAGE_SIZE, NULL, NULL), MM_SCAN_COPY_FAIL);
	{
		struct mm_counts c;
		char err[256];

		mm_get_counts(fe.mm, &c);
		EXPECT_EQ(c.anon, 512 + 512);
		EXPECT_EQ(mm_check(fe.mm, err, sizeof(err)), 0);
	}
	fakeenv_destroy(&fe);
}

TEST_MAIN()

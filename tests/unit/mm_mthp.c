/* core/mm multi-size THP (mthp.c) with core/addrspace's candidate orders: the per-size settings and
 * their spec keys, the fault-time order choice of 6.12 alloc_anon_folio (VMA edges, populated
 * PTEs, the allowed-orders table, fallback order by order), the per-size statistics, and the
 * folio's partial unmap, deferred split and free; mm_check after every step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addrspace/as.h"
#include "harness.h"
#include "mm_fakeenv.h"
#include "mm/internal.h"

#define MIB  (1ULL << 20)
#define BASE 0x40000000UL /* 2 MiB aligned */
#define PG   MM_PAGE_SIZE
#define HP   MM_HPAGE_SIZE

static void check(struct fakeenv *fe)
{
	char err[256];
	int rc = mm_check(fe->mm, err, sizeof(err));

	if (rc)
		fprintf(stderr, "  mm_check: %s\n", err);
	ASSERT_EQ(rc, 0);
}

static struct mm_mthp_stats mstats(struct fakeenv *fe, unsigned order)
{
	struct mm_mthp_stats s;

	ASSERT_EQ(mm_get_mthp_stats(fe->mm, order, &s), 0);
	return s;
}

static uint64_t stat(struct fakeenv *fe, enum mm_stat s)
{
	uint64_t st[MM_STAT_NR];

	mm_get_stats(fe->mm, st);
	return st[s];
}

/* A write fault at page `page` of extent 1 (cookies extent << 9 + page). */
static struct mm_fault_res fault(struct fakeenv *fe, uint32_t page, uint16_t orders_ok,
				 enum mm_vma_advice adv, bool huge_ok)
{
	struct mm_fault_req req = {
	    .owner = (1ULL << 9) + page,
	    .extent_owner = 1ULL << 9,
	    .advice = adv,
	    .huge_ok = huge_ok,
	    .write = true,
	    .orders_ok = orders_ok,
	};
	struct mm_fault_res res;

	ASSERT_EQ(mm_fault(fe->mm, &req, &res, NULL), 0);
	return res;
}

static struct fakeenv *env(const char *spec, uint64_t pool)
{
	static struct fakeenv fe;
	char err[256];
	int rc = fakeenv_init(&fe, spec, pool, false, err, sizeof(err));

	if (rc)
		fprintf(stderr, "  %s: %s\n", spec, err);
	ASSERT_EQ(rc, 0);
	return &fe;
}

#define ALL_MTHP ((uint16_t)0x1fc) /* orders 2..8 */

/* ---- policy ----------------------------------------------------------------------------- */

TEST(sizes_default_as_the_kernel_and_round_trip)
{
	struct mm_policy p, q;
	char err[256], buf[1024];

	ASSERT_EQ(mm_policy_parse("modern-always", &p, err, sizeof(err)), 0);
	for (unsigned o = 2; o < 9; o++)
		EXPECT_EQ(p.hugepages[o], MM_THP_SIZE_NEVER);
	EXPECT_EQ(p.hugepages[9], MM_THP_SIZE_INHERIT);
	EXPECT_EQ(p.defrag_mode, 0u);
	mm_policy_format(&p, buf, sizeof(buf));
	EXPECT_EQ(strcmp(buf, "thp-always/always"), 0); /* the alias's canonical name */

	ASSERT_EQ(mm_policy_parse("modern-madvise:hugepages-16kB=always,hugepages-64kB=inherit,"
				  "hugepages-1024kB=madvise,hugepages-2048kB=never,defrag-mode=1",
				  &p, err, sizeof(err)),
		  0);
	EXPECT_EQ(p.hugepages[2], MM_THP_SIZE_ALWAYS);
	EXPECT_EQ(p.hugepages[4], MM_THP_SIZE_INHERIT);
	EXPECT_EQ(p.hugepages[8], MM_THP_SIZE_MADVISE);
	EXPECT_EQ(p.hugepages[9], MM_THP_SIZE_NEVER);
	EXPECT_EQ(p.defrag_mode, 1u);
	mm_policy_format(&p, buf, sizeof(buf));
	EXPECT_EQ(strcmp(buf, "thp-always/madvise:hugepages-16kB=always,hugepages-64kB=inherit,"
			      "hugepages-1024kB=madvise,hugepages-2048kB=never,defrag-mode=1"),
		  0);
	ASSERT_EQ(mm_policy_parse(buf, &q, err, sizeof(err)), 0);
	EXPECT_EQ(memcmp(&p, &q, sizeof(p)), 0);
}

TEST(three_x_rejects_the_modern_keys)
{
	struct mm_policy p;
	char err[256];

	EXPECT_EQ(mm_policy_parse("linux-3.1:hugepages-64kB=always", &p, err, sizeof(err)),
		  -EINVAL);
	EXPECT_NE(strstr(err, "hugepages-64kB"), NULL);
	EXPECT_NE(strstr(err, "era=modern"), NULL);
	EXPECT_NE(strstr(err, "6.8"), NULL);
	/* even the default value: the key does not exist there */
	EXPECT_EQ(mm_policy_parse("linux-3.3:hugepages-2048kB=inherit", &p, err, sizeof(err)),
		  -EINVAL);
	EXPECT_EQ(mm_policy_parse("linux-3.2:defrag-mode=1", &p, err, sizeof(err)), -EINVAL);
	EXPECT_NE(strstr(err, "6.15"), NULL);
	/* a modern profile turned 3.x by era= */
	EXPECT_EQ(
	    mm_policy_parse("modern-always:hugepages-16kB=always,era=3.1", &p, err, sizeof(err)),
	    -EINVAL);
	/* values and sizes that do not exist */
	EXPECT_EQ(mm_policy_parse("modern-always:hugepages-64kB=sometimes", &p, err, sizeof(err)),
		  -EINVAL);
	EXPECT_NE(strstr(err, "never|always|madvise|inherit"), NULL);
	EXPECT_EQ(mm_policy_parse("modern-always:hugepages-8kB=always", &p, err, sizeof(err)),
		  -EINVAL);
	EXPECT_EQ(mm_policy_parse("modern-always:defrag-mode=2", &p, err, sizeof(err)), -EINVAL);
	/* 3.x without the keys is as before */
	EXPECT_EQ(mm_policy_parse("linux-3.1", &p, err, sizeof(err)), 0);
}

TEST(every_size_is_documented)
{
	static const char *const keys[] = {
	    "hugepages-16kB",	"hugepages-32kB",   "hugepages-64kB",
	    "hugepages-128kB",	"hugepages-256kB",  "hugepages-512kB",
	    "hugepages-1024kB", "hugepages-2048kB", "defrag-mode",
	};
	char accepted[160];
	const char *name;

	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		bool found = false;

		for (size_t i = 0; (name = mm_policy_key_doc(i, accepted, sizeof(accepted), NULL));
		     i++)
			found |= !strcmp(name, keys[k]);
		EXPECT(found);
	}
}

/* thp_vma_allowable_orders: every per-size setting against enabled and the VMA's advice. */
TEST(allowed_orders_per_setting_enabled_and_advice)
{
	static const struct {
		const char *enabled, *size;
		enum mm_vma_advice adv;
		bool allowed;
	} rows[] = {
	    {"always", "always", MM_VMA_DEFAULT, true},
	    {"always", "always", MM_VMA_HUGEPAGE, true},
	    {"always", "always", MM_VMA_NOHUGEPAGE, false},
	    {"never", "always", MM_VMA_DEFAULT, true}, /* a size's always needs no top level */
	    {"always", "madvise", MM_VMA_DEFAULT, false},
	    {"never", "madvise", MM_VMA_HUGEPAGE, true},
	    {"always", "inherit", MM_VMA_DEFAULT, true},
	    {"madvise", "inherit", MM_VMA_DEFAULT, false},
	    {"madvise", "inherit", MM_VMA_HUGEPAGE, true},
	    {"never", "inherit", MM_VMA_HUGEPAGE, false},
	    {"always", "never", MM_VMA_HUGEPAGE, false},
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char spec[128], err[256];
		struct mm_policy p;
		uint16_t o;

		snprintf(spec, sizeof(spec), "modern-always:enabled=%s,hugepages-64kB=%s",
			 rows[i].enabled, rows[i].size);
		ASSERT_EQ(mm_policy_parse(spec, &p, err, sizeof(err)), 0);
		o = mm_thp_allowable_orders(&p, rows[i].adv);
		if (!!(o & (1U << 4)) != rows[i].allowed)
			fprintf(stderr, "  row %zu: %s adv %d -> %#x\n", i, spec, rows[i].adv, o);
		EXPECT_EQ(!!(o & (1U << 4)), rows[i].allowed);
		EXPECT_EQ(o & 0x1ec, 0); /* the other mTHP sizes stay never */
	}
}

/* ---- the fault ----------------------------------------------------------------------------- */

/* Modern defaults (every mTHP size never): a candidate request is served as today. */
TEST(defaults_fault_as_today)
{
	struct fakeenv *fe = env("modern-always", 64 * MIB);
	struct mm_fault_res r = fault(fe, 5, ALL_MTHP, MM_VMA_DEFAULT, false);

	EXPECT_EQ(r.outcome, MM_FAULT_BASE);
	EXPECT_EQ(r.order, 0);
	r = fault(fe, 0, 0, MM_VMA_DEFAULT, true);
	EXPECT_EQ(r.outcome, MM_FAULT_HUGE);
	EXPECT_EQ(r.order, MM_HPAGE_ORDER);
	EXPECT_EQ(mstats(fe, 9).anon_fault_alloc, 1);
	EXPECT_EQ(mstats(fe, 9).nr_anon, 1);
	EXPECT_EQ(mstats(fe, 4).anon_fault_alloc, 0);
	check(fe);
	fakeenv_destroy(fe);
}

/* The highest allowed order of orders_ok; the block is the naturally aligned one around the
 * fault, its cookies the extent's; read faults and 3.x take none. */
TEST(highest_allowed_order_is_taken)
{
	struct fakeenv *fe =
	    env("modern-always:hugepages-16kB=always,hugepages-64kB=always", 64 * MIB);
	struct mm_fault_res r = fault(fe, 37, ALL_MTHP, MM_VMA_DEFAULT, false);
	struct mm_counts c;

	ASSERT_EQ(r.outcome, MM_FAULT_MTHP);
	EXPECT_EQ(r.order, 4);
	EXPECT_EQ(r.pfn % 16, 0);
	for (uint32_t i = 0; i < 16; i++) {
		EXPECT_EQ(pfn_frame(fe->mm, r.pfn + i)->owner, (1ULL << 9) + 32 + i);
		EXPECT_EQ(pfn_frame(fe->mm, r.pfn + i)->state, FS_MTHP);
	}
	mm_get_counts(fe->mm, &c);
	EXPECT_EQ(c.anon, 16);
	EXPECT_EQ(c.anon_mthp, 16);
	EXPECT_EQ(c.split_queue, 0); /* fully mapped mTHPs are not queued */
	EXPECT_EQ(mstats(fe, 4).anon_fault_alloc, 1);
	EXPECT_EQ(mstats(fe, 4).nr_anon, 1);
	EXPECT_EQ(stat(fe, MM_STAT_THP_FAULT_ALLOC), 0);
	/* only order 2 possible here (the 64kB block is not empty): order 2 */
	r = fault(fe, 101, (1U << 2) | (1U << 3), MM_VMA_DEFAULT, false);
	EXPECT_EQ(r.outcome, MM_FAULT_MTHP);
	EXPECT_EQ(r.order, 2);
	EXPECT_EQ(pfn_frame(fe->mm, r.pfn)->owner, (1ULL << 9) + 100);
	/* 32kB is never here, so orders_ok of 8 only: base */
	r = fault(fe, 200, 1U << 3, MM_VMA_DEFAULT, false);
	EXPECT_EQ(r.outcome, MM_FAULT_BASE);
	check(fe);
	fakeenv_destroy(fe);

	fe = env("modern-always:hugepages-16kB=always", 64 * MIB);
	{
		struct mm_fault_req req = {
		    .owner = 515, .extent_owner = 512, .write = false, .orders_ok = ALL_MTHP};
		struct mm_fault_res res;

		ASSERT_EQ(mm_fault(fe->mm, &req, &res, NULL), 0);
		EXPECT_EQ(res.outcome, MM_FAULT_BASE); /* a read fault maps the zero page */
	}
	fakeenv_destroy(fe);
	fe = env("linux-3.1", 64 * MIB);
	EXPECT_EQ(fault(fe, 3, ALL_MTHP, MM_VMA_DEFAULT, false).outcome, MM_FAULT_BASE);
	fakeenv_destroy(fe);
}

/* PMD first: an allowed PMD fault wins; when it falls back it counts thp_fault_fallback and
 * the 2048kB anon_fault_fallback, and the mTHP sizes come next. */
TEST(pmd_first_then_mthp)
{
	struct fakeenv *fe = env("modern-always:hugepages-128kB=always", 64 * MIB);
	struct mm_fault_res r = fault(fe, 0, ALL_MTHP, MM_VMA_DEFAULT, true);

	EXPECT_EQ(r.outcome, MM_FAULT_HUGE);
	fakeenv_destroy(fe);
	/* PMD size never: straight to the mTHP sizes, no PMD fallback counted */
	fe = env("modern-always:hugepages-128kB=always,hugepages-2048kB=never", 64 * MIB);
	r = fault(fe, 0, ALL_MTHP, MM_VMA_DEFAULT, true);
	EXPECT_EQ(r.outcome, MM_FAULT_MTHP);
	EXPECT_EQ(r.order, 5);
	EXPECT_EQ(stat(fe, MM_STAT_THP_FAULT_FALLBACK), 0);
	EXPECT_EQ(mstats(fe, 9).anon_fault_fallback, 0);
	check(fe);
	fakeenv_destroy(fe);
}

/* Fallback order by order: one unmovable frame in every aligned 8-frame block leaves only
 * order-2 blocks free (compaction cannot move unmovable frames), so a fault allowed orders
 * 9, 4, 3 and 2 fails 9 (thp_fault_fallback), 4 and 3 (their anon_fault_fallback) and gets 2. */
TEST(fallback_order_by_order)
{
	struct fakeenv *fe =
	    env("modern-always:hugepages-16kB=always,hugepages-32kB=always,hugepages-64kB=always",
		16 * MIB);
	struct mm_fault_res r;

	for (uint32_t pfn = 0; pfn < fe->nr_frames; pfn += 8)
		ASSERT_EQ(mm_debug_place(fe->mm, pfn, DBG_UNMOVABLE, 0), 0);
	r = fault(fe, 0, ALL_MTHP, MM_VMA_DEFAULT, true);
	ASSERT_EQ(r.outcome, MM_FAULT_MTHP);
	EXPECT_EQ(r.order, 2);
	EXPECT_EQ(stat(fe, MM_STAT_THP_FAULT_FALLBACK), 1);
	EXPECT_EQ(mstats(fe, 9).anon_fault_fallback, 1);
	EXPECT_EQ(mstats(fe, 4).anon_fault_fallback, 1);
	EXPECT_EQ(mstats(fe, 3).anon_fault_fallback, 1);
	EXPECT_EQ(mstats(fe, 2).anon_fault_fallback, 0);
	EXPECT_EQ(mstats(fe, 2).anon_fault_alloc, 1);
	EXPECT_EQ(mstats(fe, 4).anon_fault_fallback_charge, 0); /* no memcg */
	check(fe);
	/* order 2 exhausted too: every allowed order falls back, then 4 KiB */
	for (uint32_t pfn = 4; pfn < fe->nr_frames; pfn += 8)
		mm_debug_place(fe->mm, pfn, DBG_UNMOVABLE, 0);
	r = fault(fe, 64, ALL_MTHP, MM_VMA_DEFAULT, false);
	EXPECT_EQ(r.outcome, MM_FAULT_BASE);
	EXPECT_EQ(mstats(fe, 2).anon_fault_fallback, 1);
	check(fe);
	fakeenv_destroy(fe);
}

/* inherit follows enabled and the advice; madvise wants MADV_HUGEPAGE; NOHUGEPAGE none. */
TEST(settings_enabled_and_advice_pick_the_fault)
{
	struct fakeenv *fe = env("modern-madvise:enabled=madvise,hugepages-64kB=inherit,"
				 "hugepages-16kB=madvise",
				 64 * MIB);

	EXPECT_EQ(fault(fe, 0, ALL_MTHP, MM_VMA_DEFAULT, false).outcome, MM_FAULT_BASE);
	EXPECT_EQ(fault(fe, 16, ALL_MTHP, MM_VMA_HUGEPAGE, false).order, 4);
	EXPECT_EQ(fault(fe, 36, 1U << 2, MM_VMA_HUGEPAGE, false).order, 2);
	EXPECT_EQ(fault(fe, 64, ALL_MTHP, MM_VMA_NOHUGEPAGE, false).outcome, MM_FAULT_BASE);
	check(fe);
	fakeenv_destroy(fe);
}

/* ---- the folio after its fault ------------------------------------------------------------- */

/* A page unmapped: the folio is partially mapped and queued (split_deferred); the shrinker
 * splits it (split), the unmapped page goes back, the rest stay as 4 KiB pages. */
TEST(partial_unmap_queues_and_the_shrinker_splits)
{
	struct fakeenv *fe = env("modern-always:hugepages-64kB=always", 64 * MIB);
	struct mm_fault_res r = fault(fe, 0, ALL_MTHP, MM_VMA_DEFAULT, false);
	struct mm_counts c;

	ASSERT_EQ(r.order, 4);
	mm_anon_free(fe->mm, r.pfn + 3, 0, NULL);
	mm_anon_free(fe->mm, r.pfn + 3, 0, NULL); /* twice: ignored */
	mm_get_counts(fe->mm, &c);
	EXPECT_EQ(c.anon, 16); /* the folio keeps its frames until split */
	EXPECT_EQ(c.split_queue, 1);
	EXPECT_EQ(c.anon_partially_mapped, 0); /* that gauge is the PMD size's */
	EXPECT_EQ(mstats(fe, 4).split_deferred, 1);
	EXPECT_EQ(mstats(fe, 4).nr_anon_partially_mapped, 1);
	EXPECT_EQ(stat(fe, MM_STAT_THP_DEFERRED_SPLIT_PAGE), 0);
	check(fe);
	mm_anon_free(fe->mm, r.pfn + 4, 0, NULL);
	EXPECT_EQ(mstats(fe, 4).split_deferred, 1); /* counted once per folio */
	EXPECT_EQ(mm_shrink_thp(fe->mm, 0, NULL), 1);
	mm_get_counts(fe->mm, &c);
	EXPECT_EQ(c.anon, 14);
	EXPECT_EQ(c.anon_mthp, 0);
	EXPECT_EQ(c.split_queue, 0);
	EXPECT_EQ(mstats(fe, 4).split, 1);
	EXPECT_EQ(mstats(fe, 4).nr_anon, 0);
	EXPECT_EQ(mstats(fe, 4).nr_anon_partially_mapped, 0);
	EXPECT_EQ(stat(fe, MM_STAT_THP_SPLIT_PAGE), 0); /* thp_split_page is the PMD size's */
	check(fe);
	for (uint32_t i = 0; i < 16; i++)
		mm_anon_free(fe->mm, r.pfn + i, 0, NULL);
	mm_get_counts(fe->mm, &c);
	EXPECT_EQ(c.free, c.nr_frames);
	check(fe);
	fakeenv_destroy(fe);
}

/* The last page unmapped frees the folio whole: one order-4 block back, never split. */
TEST(last_unmap_frees_the_folio_whole)
{
	struct fakeenv *fe = env("modern-always:hugepages-64kB=always", 64 * MIB);
	struct mm_fault_res r = fault(fe, 0, ALL_MTHP, MM_VMA_DEFAULT, false);
	struct mm_fault_res r2 = fault(fe, 16, ALL_MTHP, MM_VMA_DEFAULT, false);
	struct mm_counts c;

	for (uint32_t i = 0; i < 16; i++)
		mm_anon_free(fe->mm, r.pfn + (i * 7) % 16, 0, NULL);
	mm_get_counts(fe->mm, &c);
	EXPECT_EQ(c.anon, 16);
	EXPECT_EQ(c.split_queue, 0);
	EXPECT_EQ(mstats(fe, 4).split, 0);
	EXPECT_EQ(mstats(fe, 4).nr_anon, 1);
	check(fe);
	/* the owner unmapping a whole folio at once */
	mm_anon_free(fe->mm, r2.pfn + 1, 4, NULL); /* not the head: ignored */
	mm_anon_free(fe->mm, r2.pfn, 3, NULL);	   /* not its order: ignored */
	mm_get_counts(fe->mm, &c);
	EXPECT_EQ(c.anon, 16);
	mm_anon_free(fe->mm, r2.pfn, 4, NULL);
	mm_get_counts(fe->mm, &c);
	EXPECT_EQ(c.free, c.nr_frames);
	EXPECT_EQ(mstats(fe, 4).nr_anon, 0);
	check(fe);
	fakeenv_destroy(fe);
}

/* Without the deferred split queue a partial unmap splits at once; mm_anon_split_folio splits
 * an mTHP on request; mm_release_owners takes folios back whole. */
TEST(split_at_once_on_request_and_release)
{
	struct fakeenv *fe = env("modern-always:hugepages-32kB=always,deferred-split=no", 64 * MIB);
	struct mm_fault_res r = fault(fe, 0, ALL_MTHP, MM_VMA_DEFAULT, false), r2;
	struct mm_counts c;

	ASSERT_EQ(r.order, 3);
	mm_anon_free(fe->mm, r.pfn + 2, 0, NULL);
	mm_get_counts(fe->mm, &c);
	EXPECT_EQ(c.anon, 7);
	EXPECT_EQ(c.anon_mthp, 0);
	EXPECT_EQ(mstats(fe, 3).split, 1);
	check(fe);
	r2 = fault(fe, 8, ALL_MTHP, MM_VMA_DEFAULT, false);
	EXPECT_EQ(mm_anon_split_folio(fe->mm, r2.pfn + 1), -EINVAL);
	EXPECT_EQ(mm_anon_split_folio(fe->mm, r2.pfn), 0);
	EXPECT_EQ(mstats(fe, 3).split, 2);
	check(fe);
	r2 = fault(fe, 16, ALL_MTHP, MM_VMA_DEFAULT, false);
	EXPECT_EQ(r2.outcome, MM_FAULT_MTHP);
	EXPECT_EQ(mm_release_owners(fe->mm, 0, 0), 7 + 8 + 8);
	mm_get_counts(fe->mm, &c);
	EXPECT_EQ(c.free, c.nr_frames);
	check(fe);
	fakeenv_destroy(fe);
}

/* ---- with core/addrspace ------------------------------------------------------------------------
 */

static struct as_region *region(uintptr_t lo, uintptr_t hi)
{
	struct as_region *r = calloc(1, sizeof(*r));

	if (!r || as_region_geometry(r, BASE, lo, hi))
		abort();
	as_region_attach(r, calloc(1, as_region_meta_size(r)));
	return r;
}

static void region_free(struct as_region *r)
{
	free(r->pstate);
	free(r);
}

/* thp_vma_suitable_orders at the VMA's edges, pte_range_none around populated pages. */
TEST(as_orders_at_edges_and_around_populated_pages)
{
	/* span [BASE + 8 pages, BASE + 40 pages) */
	struct as_region *r = region(BASE + 8 * PG, BASE + 40 * PG);

	/* page 9: the 16kB block [8, 12) fits, the 32kB block [8, 16) fits, 64kB [0, 16) not */
	EXPECT_EQ(as_mthp_orders(r, 9), (1U << 2) | (1U << 3));
	/* page 20: [20,24), [16,24), [16,32) fit; [0,32) not */
	EXPECT_EQ(as_mthp_orders(r, 20), (1U << 2) | (1U << 3) | (1U << 4));
	/* page 38: [36,40) fits, [32,40) fits, [32,48) not */
	EXPECT_EQ(as_mthp_orders(r, 38), (1U << 2) | (1U << 3));
	/* a populated page 22 takes out every block holding it, but not page 22's own state */
	as_fault_base(r, 22, 1234, true);
	EXPECT_EQ(as_mthp_orders(r, 20), 0);
	EXPECT_EQ(as_mthp_orders(r, 17), 1U << 2);
	EXPECT_EQ(as_mthp_orders(r, 26), (1U << 2) | (1U << 3)); /* [24, 32) */
	/* the faulting page itself may be owned (FILLING) already */
	as_pstate_set(r, 29, AS_P_FILLING);
	EXPECT_EQ(as_mthp_orders(r, 29), (1U << 2) | (1U << 3));
	/* advice split inside the extent: unknown VMA, no candidate */
	as_xadv_set(r, 0, MM_VMA_HUGEPAGE | AS_ADV_SPLIT);
	EXPECT_EQ(as_mthp_orders(r, 9), 0);
	region_free(r);
}

/* The whole loop: as computes orders_ok, mm serves the mTHP, as maps it; khugepaged's scan
 * counts its pages present; a release gives them back page by page and mm frees the folio. */
TEST(as_and_mm_together)
{
	struct fakeenv *fe =
	    env("modern-always:hugepages-64kB=always,hugepages-2048kB=never", 64 * MIB);
	struct as_region *r = region(BASE, BASE + HP);
	struct as_mm_ctx ctx = {fe->mm, NULL};
	struct as_env aenv = as_mm_env(&ctx);
	struct mm_collapse_scan s;
	struct as_counts cnt = {0};
	struct mm_counts c;
	struct mm_fault_res res;
	struct mm_fault_req req = {
	    .owner = 512 + 50, .extent_owner = 512, .write = true, .huge_ok = false};

	req.orders_ok = as_mthp_orders(r, 50);
	EXPECT_EQ(req.orders_ok, ALL_MTHP);
	ASSERT_EQ(mm_fault(fe->mm, &req, &res, NULL), 0);
	ASSERT_EQ(res.outcome, MM_FAULT_MTHP);
	ASSERT_EQ(res.order, 4);
	as_fault_mthp(r, 50, res.order, res.pfn, true);
	for (uint32_t p = 48; p < 64; p++) {
		EXPECT_EQ(AS_P_STATE(as_pstate(r, p)), AS_P_PRESENT);
		EXPECT_EQ(as_pfn(r, p), res.pfn + p - 48);
	}
	EXPECT_EQ(AS_X_STATE(as_xstate(r, 0)), AS_X_SMALL);
	/* the neighbour block's orders stop where the folio begins */
	EXPECT_EQ(as_mthp_orders(r, 66), 0x7c); /* [64, 128) is empty, [0, 128) not */
	EXPECT_EQ(as_mthp_orders(r, 40), 0x1c); /* [32, 48) is empty, [32, 64) not */
	as_collapse_scan(r, 0, 512, &s);
	EXPECT_EQ(s.present, 16);
	EXPECT_EQ(s.none, MM_HPAGE_NR - 16);
	/* MADV_DONTNEED of half the folio: partially mapped, queued */
	as_release(&aenv, r, 48, 56, false, &cnt);
	EXPECT_EQ(mstats(fe, 4).nr_anon_partially_mapped, 1);
	check(fe);
	as_release(&aenv, r, 56, 64, true, &cnt);
	mm_get_counts(fe->mm, &c);
	EXPECT_EQ(c.free, c.nr_frames);
	EXPECT_EQ(mstats(fe, 4).split, 0);
	EXPECT_EQ(mstats(fe, 4).nr_anon, 0);
	check(fe);
	region_free(r);
	fakeenv_destroy(fe);
}

/* An unmap or MADV_DONTNEED covering whole folios gives each back at its order (6.12
 * zap_pte_range: folio_remove_rmap_ptes of the whole batch): never partially mapped, no
 * deferred split; one covering a part of a folio (or straddling two) queues each part. */
TEST(as_release_of_whole_folios_skips_the_split_queue)
{
	struct fakeenv *fe =
	    env("modern-always:hugepages-64kB=always,hugepages-2048kB=never", 64 * MIB);
	struct as_region *r = region(BASE, BASE + HP);
	struct as_mm_ctx ctx = {fe->mm, NULL};
	struct as_env aenv = as_mm_env(&ctx);
	struct as_counts cnt = {0};
	struct mm_counts c;

	for (uint32_t b = 0; b < 4; b++) {
		struct mm_fault_req req = {
		    .owner = 512 + b * 16, .extent_owner = 512, .write = true};
		struct mm_fault_res res;

		req.orders_ok = as_mthp_orders(r, b * 16);
		ASSERT_EQ(mm_fault(fe->mm, &req, &res, NULL), 0);
		ASSERT_EQ(res.outcome, MM_FAULT_MTHP);
		ASSERT_EQ(res.order, 4);
		as_fault_mthp(r, b * 16, res.order, res.pfn, true);
		EXPECT_EQ(mm_anon_folio_order(fe->mm, res.pfn + 5), 4);
	}
	EXPECT_EQ(mstats(fe, 4).nr_anon, 4);
	/* folios 0 and 1 whole */
	as_release(&aenv, r, 0, 32, true, &cnt);
	EXPECT_EQ(mstats(fe, 4).nr_anon, 2);
	EXPECT_EQ(mstats(fe, 4).split_deferred, 0);
	EXPECT_EQ(mstats(fe, 4).nr_anon_partially_mapped, 0);
	check(fe);
	/* the tail of folio 2 and the head of folio 3: both partially mapped */
	as_release(&aenv, r, 40, 52, false, &cnt);
	EXPECT_EQ(mstats(fe, 4).split_deferred, 2);
	EXPECT_EQ(mstats(fe, 4).nr_anon_partially_mapped, 2);
	for (uint32_t p = 32; p < 64; p++)
		EXPECT_EQ(AS_P_STATE(as_pstate(r, p)),
			  p >= 40 && p < 52 ? AS_P_EMPTY : AS_P_PRESENT);
	check(fe);
	as_release(&aenv, r, 0, 512, true, &cnt);
	mm_get_counts(fe->mm, &c);
	EXPECT_EQ(c.free, c.nr_frames);
	EXPECT_EQ(mstats(fe, 4).nr_anon, 0);
	EXPECT_EQ(mm_anon_folio_order(fe->mm, 0), 0);
	check(fe);
	region_free(r);
	fakeenv_destroy(fe);
}

/* ---- vm.defrag_mode ------------------------------------------------------------------------ */

/* One foreign frame at the start of every pageblock: no free pageblock is left whole. */
static void pollute_every_block(struct fakeenv *fe)
{
	for (uint32_t pfn = 0; pfn < fe->nr_frames; pfn += MM_HPAGE_NR)
		ASSERT_EQ(mm_debug_place(fe->mm, pfn, DBG_FOREIGN, 1), 0);
}

/* wake_all_kswapds (6.15): kswapd is asked for a whole pageblock whatever the order. */
TEST(defrag_mode_wakes_kswapd_at_pageblock_order)
{
	for (unsigned dm = 0; dm < 2; dm++) {
		struct fakeenv *fe =
		    env(dm ? "modern-always:defrag-mode=1" : "modern-always", 16 * MIB);
		struct fault_ctx fc = {0};
		struct alloc_ctx ac = {.order = 0, .mt = MM_MT_MOVABLE, .fc = &fc};

		wake_all_kswapds(fe->mm, &ac);
		EXPECT_EQ(fe->mm->kswapd_order, dm ? MM_PAGEBLOCK_ORDER : 0);
		ac.order = 4;
		wake_all_kswapds(fe->mm, &ac);
		EXPECT_EQ(fe->mm->kswapd_order, dm ? MM_PAGEBLOCK_ORDER : 4);
		fakeenv_destroy(fe);
	}
}

/* ALLOC_NOFRAGMENT in the fast and the slow path: an unmovable page that can only come from a
 * partly used movable block is stolen on the fast path without defrag_mode; with it, only
 * after direct reclaim ran and failed (NOFRAGMENT dropped once, before OOM). */
TEST(defrag_mode_steals_only_after_reclaim)
{
	for (unsigned dm = 0; dm < 2; dm++) {
		struct fakeenv *fe =
		    env(dm ? "modern-always:defrag-mode=1" : "modern-always", 16 * MIB);
		uint32_t pfn;

		pollute_every_block(fe);
		EXPECT_EQ(free_pages_blocks(fe->mm), 0);
		ASSERT_EQ(mm_alloc_pages(fe->mm, 0, MM_MT_UNMOVABLE, 0, &pfn, NULL), 0);
		EXPECT_GE(stat(fe, MM_STAT_EXTFRAG_STEAL), 1);
		EXPECT_EQ(stat(fe, MM_STAT_ALLOCSTALL), dm ? 1 : 0);
		check(fe);
		fakeenv_destroy(fe);
	}
}

/* kcompactd's target (6.15 compaction_suit_allocation_order with kcompactd): HIGH in whole
 * free pageblocks. Plenty of free order-2 blocks satisfy it at MIN without defrag_mode; with
 * it, kcompactd is woken. */
TEST(defrag_mode_kcompactd_wants_whole_blocks)
{
	for (unsigned dm = 0; dm < 2; dm++) {
		struct fakeenv *fe =
		    env(dm ? "modern-always:defrag-mode=1" : "modern-always", 16 * MIB);

		pollute_every_block(fe);
		EXPECT_EQ(zone_watermark_ok_blocks(fe->mm, 2, 0), false);
		wakeup_kcompactd(fe->mm, 2);
		EXPECT_EQ(fe->mm->kcompactd_awake, dm == 1);
		fakeenv_destroy(fe);
	}
	{
		struct fakeenv *fe = env("modern-always:defrag-mode=1", 16 * MIB);

		EXPECT_EQ(free_pages_blocks(fe->mm), fe->nr_frames);
		EXPECT(zone_watermark_ok_blocks(fe->mm, 9, wmark_pages(fe->mm, WMARK_HIGH)));
		fakeenv_destroy(fe);
	}
}

/* kswapd's balance check (6.15 pgdat_balanced): an order > 0 check counts whole free
 * pageblocks under defrag_mode. With one foreign frame in every block, free order-2 blocks
 * keep the zone "balanced" at HIGH without it (kswapd stays asleep); with it the zone is not
 * (no whole free block), and kswapd is woken. An order-0 check is the plain count either way. */
TEST(defrag_mode_kswapd_balances_in_whole_blocks)
{
	for (unsigned dm = 0; dm < 2; dm++) {
		struct fakeenv *fe =
		    env(dm ? "modern-always:defrag-mode=1" : "modern-always", 16 * MIB);

		pollute_every_block(fe);
		wakeup_kswapd(fe->mm, 0, 0);
		EXPECT_EQ(fe->mm->kswapd_awake, false);
		wakeup_kswapd(fe->mm, 2, 0);
		EXPECT_EQ(fe->mm->kswapd_awake, dm == 1);
		fakeenv_destroy(fe);
	}
}

/* mm_repair keeps whole folios (partially mapped ones queued again), finishes a split cut
 * short and frees what a cut-short allocation left. */
TEST(repair_rebuilds_mthp_folios)
{
	struct fakeenv *fe = env("modern-always:hugepages-64kB=always", 64 * MIB);
	struct mm_fault_res a = fault(fe, 0, ALL_MTHP, MM_VMA_DEFAULT, false);
	struct mm_fault_res b = fault(fe, 16, ALL_MTHP, MM_VMA_DEFAULT, false);
	struct mm_fault_res c = fault(fe, 32, ALL_MTHP, MM_VMA_DEFAULT, false);
	struct mm_fault_res d = fault(fe, 48, ALL_MTHP, MM_VMA_DEFAULT, false);
	struct mm_counts cnt;

	mm_anon_free(fe->mm, a.pfn + 5, 0, NULL); /* a: partially mapped, queued */
	/* b: a split cut short after its first 6 frames */
	for (uint32_t i = 0; i < 6; i++) {
		pfn_frame(fe->mm, b.pfn + i)->state = FS_ANON;
		pfn_frame(fe->mm, b.pfn + i)->order = ORDER_TAIL;
	}
	/* c: an allocation cut short: half its frames still free */
	for (uint32_t i = 8; i < 16; i++) {
		pfn_frame(fe->mm, c.pfn + i)->state = FS_FREE;
		pfn_frame(fe->mm, c.pfn + i)->owner = 0;
	}
	ASSERT_EQ(mm_repair(fe->mm), 0);
	check(fe);
	mm_get_counts(fe->mm, &cnt);
	EXPECT_EQ(cnt.anon_mthp, 32); /* a and d */
	EXPECT_EQ(cnt.anon, 16 + 16 + 16);
	EXPECT_EQ(cnt.split_queue, 1);
	EXPECT_EQ(mstats(fe, 4).nr_anon, 2);
	EXPECT_EQ(mstats(fe, 4).nr_anon_partially_mapped, 1);
	EXPECT_EQ(pfn_frame(fe->mm, d.pfn)->state, FS_MTHP);
	fakeenv_destroy(fe);
}

TEST(stats_reject_orders_without_a_size)
{
	struct fakeenv *fe = env("modern-always", 16 * MIB);
	struct mm_mthp_stats s;

	EXPECT_EQ(mm_get_mthp_stats(fe->mm, 1, &s), -EINVAL);
	EXPECT_EQ(mm_get_mthp_stats(fe->mm, 10, &s), -EINVAL);
	EXPECT_EQ(mm_get_mthp_stats(fe->mm, 2, &s), 0);
	fakeenv_destroy(fe);
}

TEST_MAIN()

/* core/mm shared memory (shmem.c): the shmem THP keys per era, the decision of each era (6.12
 * shmem_allowable_huge_orders / __shmem_huge_global_enabled, 6.1 shmem_is_huge, 3.x none)
 * rule by rule, the fault (orders, suitability, fallback, counters), one frame set per object
 * whoever faults, the release of an object, compaction leaving shmem in place, and repair;
 * mm_check after every step. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "mm_fakeenv.h"
#include "mm/internal.h"

#define PMD  (1U << 9)
#define ALL  ((uint16_t)0x3fc) /* orders 2..9 suitable */
#define MTHP ((uint16_t)0x1fc) /* orders 2..8 */

static struct mm_policy pol(const char *spec)
{
	struct mm_policy p;
	char err[256];
	int rc = mm_policy_parse(spec, &p, err, sizeof(err));

	if (rc)
		fprintf(stderr, "  %s: %s\n", spec, err);
	ASSERT_EQ(rc, 0);
	return p;
}

static uint16_t orders(const char *spec, enum mm_shmem_kind kind, enum mm_vma_advice adv,
		       uint64_t i_size, uint64_t index)
{
	struct mm_policy p = pol(spec);
	struct mm_shmem_vma v = {.kind = kind, .advice = adv, .i_size_pages = i_size};

	return mm_shmem_allowable_orders(&p, &v, index);
}

static void check(struct fakeenv *fe)
{
	char err[256];
	int rc = mm_check(fe->mm, err, sizeof(err));

	if (rc)
		fprintf(stderr, "  mm_check: %s\n", err);
	ASSERT_EQ(rc, 0);
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

static uint64_t stat(struct fakeenv *fe, enum mm_stat s)
{
	uint64_t st[MM_STAT_NR];

	mm_get_stats(fe->mm, st);
	return st[s];
}

static struct mm_mthp_stats mstats(struct fakeenv *fe, unsigned order)
{
	struct mm_mthp_stats s;

	ASSERT_EQ(mm_get_mthp_stats(fe->mm, order, &s), 0);
	return s;
}

static int sfault(struct fakeenv *fe, uint32_t obj, uint64_t index, enum mm_shmem_kind kind,
		  uint16_t ok, struct mm_fault_res *res)
{
	struct mm_shmem_req req = {
	    .object = obj,
	    .index = index,
	    .vma = {.kind = kind, .advice = MM_VMA_DEFAULT, .i_size_pages = 4096},
	    .orders_ok = ok,
	};

	return mm_shmem_fault(fe->mm, &req, res, NULL);
}

static struct mm_counts counts(struct fakeenv *fe)
{
	struct mm_counts c;

	mm_get_counts(fe->mm, &c);
	return c;
}

/* ---- policy keys -------------------------------------------------------------------------- */

TEST(keys_default_as_the_kernels_boot_and_round_trip)
{
	struct mm_policy p, q;
	char err[256], buf[1024];

	p = pol("thp-always/always");
	EXPECT_EQ(p.shmem_enabled, (unsigned)MM_SHMEM_HUGE_NEVER);
	EXPECT_EQ(p.tmpfs_huge, (unsigned)MM_SHMEM_HUGE_NEVER);
	for (unsigned o = 2; o < 9; o++)
		EXPECT_EQ(p.shmem_hugepages[o], (unsigned)MM_SHMEM_SIZE_NEVER);
	EXPECT_EQ(p.shmem_hugepages[9], (unsigned)MM_SHMEM_SIZE_INHERIT);
	mm_policy_format(&p, buf, sizeof(buf));
	EXPECT_EQ(strcmp(buf, "thp-always/always"), 0); /* defaults print nothing */
	p = pol("linux-3.2");
	EXPECT_EQ(p.shmem_enabled, (unsigned)MM_SHMEM_HUGE_NEVER);
	mm_policy_format(&p, buf, sizeof(buf));
	EXPECT_EQ(strcmp(buf, "linux-3.2"), 0);

	p = pol("thp-madvise/madvise:shmem-enabled=within_size,shmem-hugepages-64kB=always,"
		"shmem-hugepages-2048kB=advise,tmpfs-huge=advise");
	EXPECT_EQ(p.shmem_enabled, (unsigned)MM_SHMEM_HUGE_WITHIN_SIZE);
	EXPECT_EQ(p.shmem_hugepages[4], (unsigned)MM_SHMEM_SIZE_ALWAYS);
	EXPECT_EQ(p.shmem_hugepages[9], (unsigned)MM_SHMEM_SIZE_ADVISE);
	EXPECT_EQ(p.tmpfs_huge, (unsigned)MM_SHMEM_HUGE_ADVISE);
	mm_policy_format(&p, buf, sizeof(buf));
	EXPECT_EQ(strcmp(buf, "thp-madvise/madvise:shmem-enabled=within_size,"
			      "shmem-hugepages-64kB=always,shmem-hugepages-2048kB=advise,"
			      "tmpfs-huge=advise"),
		  0);
	ASSERT_EQ(mm_policy_parse(buf, &q, err, sizeof(err)), 0);
	EXPECT_EQ(memcmp(&p, &q, sizeof(p)), 0);
	/* every value of shmem_enabled, as the sysfs file spells it */
	EXPECT_EQ(pol("thp-always/always:shmem-enabled=deny").shmem_enabled,
		  (unsigned)MM_SHMEM_HUGE_DENY);
	EXPECT_EQ(pol("thp-always/always:shmem-enabled=force").shmem_enabled,
		  (unsigned)MM_SHMEM_HUGE_FORCE);
	EXPECT_EQ(pol("linux-6.1:shmem-enabled=advise").shmem_enabled,
		  (unsigned)MM_SHMEM_HUGE_ADVISE);
}

TEST(keys_per_era_as_the_kernels_had_them)
{
	struct mm_policy p;
	char err[256];

	/* 3.x: no shmem THP (4.8) */
	EXPECT_EQ(mm_policy_parse("linux-3.3:shmem-enabled=always", &p, err, sizeof(err)), -EINVAL);
	EXPECT_NE(strstr(err, "shmem-enabled"), NULL);
	EXPECT_NE(strstr(err, "4.8"), NULL);
	EXPECT_EQ(mm_policy_parse("linux-3.1:tmpfs-huge=always", &p, err, sizeof(err)), -EINVAL);
	EXPECT_NE(strstr(err, "tmpfs-huge"), NULL);
	EXPECT_EQ(mm_policy_parse("linux-3.2:shmem-hugepages-2048kB=always", &p, err, sizeof(err)),
		  -EINVAL);
	/* 6.1: shmem_enabled and huge=, no per-size files */
	EXPECT_EQ(mm_policy_parse("linux-6.1:shmem-enabled=always,tmpfs-huge=within_size", &p, err,
				  sizeof(err)),
		  0);
	EXPECT_EQ(mm_policy_parse("linux-6.1:shmem-hugepages-64kB=always", &p, err, sizeof(err)),
		  -EINVAL);
	EXPECT_NE(strstr(err, "shmem-hugepages-64kB"), NULL);
	/* bad values: deny and force are shmem_enabled's only; no "madvise" here */
	EXPECT_EQ(mm_policy_parse("thp-always/always:tmpfs-huge=force", &p, err, sizeof(err)),
		  -EINVAL);
	EXPECT_NE(strstr(err, "never|always|within_size|advise"), NULL);
	EXPECT_EQ(mm_policy_parse("thp-always/always:shmem-enabled=madvise", &p, err, sizeof(err)),
		  -EINVAL);
	/* 6.12 shmem_enabled_store: force with a smaller inherit size is refused */
	EXPECT_EQ(mm_policy_parse("thp-always/always:shmem-hugepages-64kB=inherit,"
				  "shmem-enabled=force",
				  &p, err, sizeof(err)),
		  -EINVAL);
	EXPECT_NE(strstr(err, "force"), NULL);
	EXPECT_EQ(mm_policy_parse("thp-always/always:shmem-enabled=force,"
				  "shmem-hugepages-64kB=always",
				  &p, err, sizeof(err)),
		  0);
}

/* ---- the decision, rule by rule ----------------------------------------------------------- */

TEST(decision_6_12_internal_mount_follows_shmem_enabled)
{
	const char *always = "thp-never/never:shmem-enabled=always";
	const char *within = "thp-never/never:shmem-enabled=within_size";
	const char *advise = "thp-never/never:shmem-enabled=advise";

	/* independent of transparent_hugepage/enabled (never here) */
	EXPECT_EQ(orders("thp-always/always", MM_SHMEM_INTERNAL, MM_VMA_HUGEPAGE, 4096, 0), 0);
	EXPECT_EQ(orders(always, MM_SHMEM_INTERNAL, MM_VMA_DEFAULT, 1, 0), PMD);
	/* within_size: the PMD range round_up(index + 1, 512) must lie within i_size */
	EXPECT_EQ(orders(within, MM_SHMEM_INTERNAL, MM_VMA_DEFAULT, 1024, 0), PMD);
	EXPECT_EQ(orders(within, MM_SHMEM_INTERNAL, MM_VMA_DEFAULT, 1024, 1023), PMD);
	EXPECT_EQ(orders(within, MM_SHMEM_INTERNAL, MM_VMA_DEFAULT, 1000, 600), 0);
	/* ... and falls through to advise */
	EXPECT_EQ(orders(within, MM_SHMEM_INTERNAL, MM_VMA_HUGEPAGE, 1000, 600), PMD);
	EXPECT_EQ(orders(advise, MM_SHMEM_INTERNAL, MM_VMA_DEFAULT, 4096, 0), 0);
	EXPECT_EQ(orders(advise, MM_SHMEM_INTERNAL, MM_VMA_HUGEPAGE, 4096, 0), PMD);
	/* VM_NOHUGEPAGE first, even under force */
	EXPECT_EQ(orders("thp-never/never:shmem-enabled=force", MM_SHMEM_INTERNAL,
			 MM_VMA_NOHUGEPAGE, 4096, 0),
		  0);
	EXPECT_EQ(orders("thp-never/never:shmem-enabled=force", MM_SHMEM_INTERNAL, MM_VMA_DEFAULT,
			 4096, 0),
		  PMD);
	EXPECT_EQ(orders("thp-never/never:shmem-enabled=deny", MM_SHMEM_INTERNAL, MM_VMA_HUGEPAGE,
			 4096, 0),
		  0);
	/* a memfd or SysV segment takes the PMD size only, whatever the per-size settings */
	EXPECT_EQ(orders("thp-never/never:shmem-enabled=always,shmem-hugepages-64kB=always",
			 MM_SHMEM_INTERNAL, MM_VMA_DEFAULT, 4096, 0),
		  PMD);
	/* the prctl: a process with THP disabled gets none */
	{
		struct mm_policy p = pol(always);
		struct mm_shmem_vma v = {.kind = MM_SHMEM_INTERNAL,
					 .thp_disable = MM_THP_DISABLE_COMPLETELY,
					 .i_size_pages = 4096};

		EXPECT_EQ(mm_shmem_allowable_orders(&p, &v, 0), 0);
	}
}

TEST(decision_6_12_tmpfs_follows_its_mount_under_deny_and_force)
{
	EXPECT_EQ(orders("thp-always/always:shmem-enabled=always", MM_SHMEM_TMPFS, MM_VMA_DEFAULT,
			 4096, 0),
		  0); /* /dev/shm mounted without huge= */
	EXPECT_EQ(
	    orders("thp-always/always:tmpfs-huge=always", MM_SHMEM_TMPFS, MM_VMA_DEFAULT, 4096, 0),
	    PMD);
	EXPECT_EQ(orders("thp-always/always:tmpfs-huge=always,shmem-enabled=deny", MM_SHMEM_TMPFS,
			 MM_VMA_DEFAULT, 4096, 0),
		  0);
	EXPECT_EQ(orders("thp-always/always:shmem-enabled=force", MM_SHMEM_TMPFS, MM_VMA_DEFAULT,
			 4096, 0),
		  PMD);
	EXPECT_EQ(orders("thp-always/always:tmpfs-huge=within_size", MM_SHMEM_TMPFS, MM_VMA_DEFAULT,
			 511, 0),
		  0);
	EXPECT_EQ(orders("thp-always/always:tmpfs-huge=within_size", MM_SHMEM_TMPFS, MM_VMA_DEFAULT,
			 512, 0),
		  PMD);
}

TEST(decision_6_12_anonymous_shmem_per_size)
{
	/* sizes of their own need no top-level setting */
	EXPECT_EQ(orders("thp-always/always:shmem-hugepages-64kB=always", MM_SHMEM_ANON,
			 MM_VMA_DEFAULT, 4096, 0),
		  1U << 4);
	/* inherit (the PMD size's default) follows shmem_enabled */
	EXPECT_EQ(orders("thp-always/always:shmem-hugepages-64kB=always,shmem-enabled=always",
			 MM_SHMEM_ANON, MM_VMA_DEFAULT, 4096, 0),
		  (1U << 4) | PMD);
	EXPECT_EQ(orders("thp-always/always:shmem-hugepages-16kB=advise,shmem-enabled=advise",
			 MM_SHMEM_ANON, MM_VMA_DEFAULT, 4096, 0),
		  0);
	EXPECT_EQ(orders("thp-always/always:shmem-hugepages-16kB=advise,shmem-enabled=advise",
			 MM_SHMEM_ANON, MM_VMA_HUGEPAGE, 4096, 0),
		  (1U << 2) | PMD);
	/* within_size sizes: all of them once the highest fitting one fits */
	EXPECT_EQ(orders("thp-always/always:shmem-hugepages-64kB=within_size,"
			 "shmem-hugepages-1024kB=within_size",
			 MM_SHMEM_ANON, MM_VMA_DEFAULT, 20, 3),
		  (1U << 4) | (1U << 8));
	EXPECT_EQ(orders("thp-always/always:shmem-hugepages-64kB=within_size,"
			 "shmem-hugepages-1024kB=within_size",
			 MM_SHMEM_ANON, MM_VMA_DEFAULT, 20, 17),
		  0); /* round_up(18, 16) = 32 > 20 pages */
	/* deny: nothing for anonymous shmem either; force: the inherit sizes */
	EXPECT_EQ(orders("thp-always/always:shmem-hugepages-64kB=always,shmem-enabled=deny",
			 MM_SHMEM_ANON, MM_VMA_DEFAULT, 4096, 0),
		  0);
	EXPECT_EQ(orders("thp-always/always:shmem-hugepages-64kB=always,shmem-enabled=force",
			 MM_SHMEM_ANON, MM_VMA_DEFAULT, 4096, 0),
		  PMD);
}

TEST(decision_6_1_is_shmem_is_huge_and_3_x_has_none)
{
	EXPECT_EQ(orders("linux-6.1:shmem-enabled=always", MM_SHMEM_ANON, MM_VMA_DEFAULT, 1, 0),
		  PMD);
	EXPECT_EQ(
	    orders("linux-6.1:shmem-enabled=within_size", MM_SHMEM_ANON, MM_VMA_DEFAULT, 1000, 600),
	    0);
	EXPECT_EQ(orders("linux-6.1:shmem-enabled=within_size", MM_SHMEM_ANON, MM_VMA_HUGEPAGE,
			 1000, 600),
		  PMD);
	EXPECT_EQ(orders("linux-6.1:tmpfs-huge=advise", MM_SHMEM_TMPFS, MM_VMA_HUGEPAGE, 4096, 0),
		  PMD);
	EXPECT_EQ(
	    orders("linux-6.1:shmem-enabled=force", MM_SHMEM_TMPFS, MM_VMA_NOHUGEPAGE, 4096, 0), 0);
	EXPECT_EQ(orders("linux-6.1", MM_SHMEM_ANON, MM_VMA_HUGEPAGE, 4096, 0), 0);
	/* 3.x: even a hand-built policy gets none */
	{
		struct mm_policy p = pol("linux-3.2");
		struct mm_shmem_vma v = {
		    .kind = MM_SHMEM_ANON, .advice = MM_VMA_HUGEPAGE, .i_size_pages = 4096};

		p.shmem_enabled = MM_SHMEM_HUGE_FORCE;
		EXPECT_EQ(mm_shmem_allowable_orders(&p, &v, 0), 0);
	}
}

/* ---- the gauges --------------------------------------------------------------------------- */

/* The kernel counts a shmem folio entering the page cache in NR_FILE_PAGES and in NR_SHMEM (6.12
 * and 6.1 mm/shmem.c shmem_add_to_page_cache; 3.1 the same, per page): an object's frames are
 * in both gauges; with fs=tmpfs the machine's files are tmpfs files, so their page cache is in
 * nr_shmem too, and with ext4 it is not. Each frame is counted once per gauge. */
static void file_and_object(struct fakeenv *fe, unsigned nfile)
{
	struct mm_fault_res res;
	uint32_t pfn;
	bool created;

	for (unsigned i = 0; i < nfile; i++) {
		ASSERT_EQ(mm_pagecache_get(fe->mm, MM_OWNER_FILE(1, i), true, &pfn, &created, NULL),
			  0);
		mm_pagecache_put(fe->mm, pfn, false);
	}
	ASSERT_EQ(sfault(fe, 3, 0, MM_SHMEM_INTERNAL, 0, &res), 0);
	EXPECT_EQ(res.outcome, MM_FAULT_BASE);
}

TEST(gauges_count_tmpfs_page_cache_as_shmem)
{
	struct fakeenv *fe = env("thp-always/always:fs=tmpfs", 64ULL << 20);
	struct mm_counts c;

	file_and_object(fe, 10);
	c = counts(fe);
	EXPECT_EQ(c.file, 10u);
	EXPECT_EQ(c.shmem, 11u);      /* the object's page and the tmpfs file's ten */
	EXPECT_EQ(c.file_pages, 11u); /* page cache and shmem, each page once */
	EXPECT_EQ(c.shmem_huge, 0u);
	check(fe);
	mm_pagecache_remove(fe->mm, MM_OWNER_FILE(1, 0));
	EXPECT_EQ(counts(fe).shmem, 10u);
	EXPECT_EQ(counts(fe).file_pages, 10u);
	fakeenv_destroy(fe);

	fe = env("thp-always/always:fs=ext4", 64ULL << 20);
	file_and_object(fe, 10);
	c = counts(fe);
	EXPECT_EQ(c.file, 10u);
	EXPECT_EQ(c.shmem, 1u); /* ext4's page cache is not shmem */
	EXPECT_EQ(c.file_pages, 11u);
	check(fe);
	fakeenv_destroy(fe);
}

/* ---- the fault ---------------------------------------------------------------------------- */

TEST(fault_6_12_huge_once_per_object_then_released)
{
	struct fakeenv *fe = env("thp-never/never:shmem-enabled=always", 64ULL << 20);
	struct mm_fault_res res, again;
	struct mm_counts c;

	ASSERT_EQ(sfault(fe, 7, 5, MM_SHMEM_INTERNAL, PMD, &res), 0);
	EXPECT_EQ(res.outcome, MM_FAULT_HUGE);
	EXPECT_EQ(res.order, 9);
	EXPECT_EQ(res.pfn % 512, 0u);
	EXPECT_EQ(stat(fe, MM_STAT_THP_FILE_ALLOC), 1u);
	EXPECT_EQ(stat(fe, MM_STAT_THP_FILE_MAPPED), 1u);
	EXPECT_EQ(stat(fe, MM_STAT_THP_FAULT_ALLOC), 0u); /* not an anon THP */
	EXPECT_EQ(mstats(fe, 9).shmem_alloc, 1u);
	EXPECT_EQ(mstats(fe, 9).anon_fault_alloc, 0u);
	c = counts(fe);
	EXPECT_EQ(c.shmem, 512u);
	EXPECT_EQ(c.shmem_huge, 512u);
	EXPECT_EQ(c.anon, 0u);
	check(fe);
	/* another process's fault of a page in the folio: cached, nothing allocated */
	EXPECT_EQ(sfault(fe, 7, 300, MM_SHMEM_INTERNAL, PMD, &again), -EEXIST);
	EXPECT_EQ(again.pfn, res.pfn + 300);
	EXPECT_EQ(again.order, 9);
	/* another object's page 5 is its own */
	ASSERT_EQ(sfault(fe, 8, 5, MM_SHMEM_INTERNAL, 0, &again), 0);
	EXPECT_EQ(again.outcome, MM_FAULT_BASE);
	EXPECT_EQ(counts(fe).shmem, 513u);
	check(fe);
	EXPECT_EQ(mm_shmem_release(fe->mm, 7), 512u);
	EXPECT_EQ(counts(fe).shmem, 1u);
	EXPECT_EQ(counts(fe).shmem_huge, 0u);
	check(fe);
	/* page 5 of object 7 is a first touch again */
	ASSERT_EQ(sfault(fe, 7, 5, MM_SHMEM_INTERNAL, 0, &res), 0);
	EXPECT_EQ(res.outcome, MM_FAULT_BASE);
	EXPECT_EQ(mm_shmem_release(fe->mm, 8), 1u);
	EXPECT_EQ(mm_shmem_release(fe->mm, 7), 1u);
	EXPECT_EQ(mm_shmem_release(fe->mm, 7), 0u);
	EXPECT_EQ(counts(fe).shmem, 0u);
	check(fe);
	fakeenv_destroy(fe);
}

TEST(fault_suitability_6_12_asks_the_vma_6_1_does_not)
{
	struct fakeenv *fe = env("thp-never/never:shmem-enabled=always", 64ULL << 20);
	struct mm_fault_res res;

	/* a VMA that cannot hold the PMD range (thp_vma_suitable_order): 4 KiB */
	ASSERT_EQ(sfault(fe, 1, 0, MM_SHMEM_INTERNAL, 0, &res), 0);
	EXPECT_EQ(res.outcome, MM_FAULT_BASE);
	EXPECT_EQ(stat(fe, MM_STAT_THP_FILE_FALLBACK), 0u);
	/* a page of the range already cached: shmem_suitable_orders drops the order, no
	 * fallback is counted */
	ASSERT_EQ(sfault(fe, 1, 1, MM_SHMEM_INTERNAL, PMD, &res), 0);
	EXPECT_EQ(res.outcome, MM_FAULT_BASE);
	EXPECT_EQ(stat(fe, MM_STAT_THP_FILE_FALLBACK), 0u);
	EXPECT_EQ(stat(fe, MM_STAT_THP_FILE_ALLOC), 0u);
	check(fe);
	fakeenv_destroy(fe);

	fe = env("linux-6.1:shmem-enabled=always", 64ULL << 20);
	ASSERT_EQ(sfault(fe, 1, 0, MM_SHMEM_INTERNAL, 0, &res), 0);
	EXPECT_EQ(res.outcome, MM_FAULT_HUGE); /* 6.1 allocates it anyway ... */
	EXPECT_EQ(stat(fe, MM_STAT_THP_FILE_ALLOC), 1u);
	EXPECT_EQ(stat(fe, MM_STAT_THP_FILE_MAPPED), 0u); /* ... and maps it by PTEs */
	check(fe);
	fakeenv_destroy(fe);

	fe = env("linux-3.3", 64ULL << 20);
	ASSERT_EQ(sfault(fe, 1, 0, MM_SHMEM_ANON, ALL, &res), 0);
	EXPECT_EQ(res.outcome, MM_FAULT_BASE);
	EXPECT_EQ(counts(fe).shmem, 1u);
	check(fe);
	fakeenv_destroy(fe);
}

TEST(fault_6_12_anonymous_shmem_mthp)
{
	struct fakeenv *fe = env("thp-always/always:shmem-hugepages-64kB=always", 64ULL << 20);
	struct mm_fault_res res, again;

	ASSERT_EQ(sfault(fe, 3, 17, MM_SHMEM_ANON, ALL, &res), 0);
	EXPECT_EQ(res.outcome, MM_FAULT_MTHP);
	EXPECT_EQ(res.order, 4);
	EXPECT_EQ(res.pfn % 16, 0u);
	EXPECT_EQ(mstats(fe, 4).shmem_alloc, 1u);
	EXPECT_EQ(stat(fe, MM_STAT_THP_FILE_ALLOC), 0u); /* not PMD-mappable */
	EXPECT_EQ(counts(fe).shmem, 16u);
	EXPECT_EQ(sfault(fe, 3, 16, MM_SHMEM_ANON, ALL, &again), -EEXIST);
	EXPECT_EQ(again.pfn, res.pfn);
	/* a memfd under the same policy: PMD size only, none here */
	ASSERT_EQ(sfault(fe, 4, 17, MM_SHMEM_INTERNAL, ALL, &res), 0);
	EXPECT_EQ(res.outcome, MM_FAULT_BASE);
	check(fe);
	fakeenv_destroy(fe);
}

TEST(fault_fallback_counts_and_defrag_applies)
{
	/* every pageblock holds an unmovable frame: no order-9 block, and defrag=never gives
	 * the allocation no compaction (vma_thp_gfp_mask: GFP_TRANSHUGE_LIGHT) */
	struct fakeenv *fe = env("thp-always/never:shmem-enabled=always,"
				 "shmem-hugepages-64kB=always",
				 64ULL << 20);
	struct mm_fault_res res;
	char err[256];

	ASSERT_EQ(mm_fragment(fe->mm, "unmovable:5%,anon:90%", 1, err, sizeof(err), NULL), 0);
	ASSERT_EQ(counts(fe).free_blocks_order9, 0u);
	ASSERT_EQ(sfault(fe, 2, 100, MM_SHMEM_ANON, ALL, &res), 0);
	EXPECT_EQ(stat(fe, MM_STAT_THP_FILE_FALLBACK), 1u);
	EXPECT_EQ(mstats(fe, 9).shmem_fallback, 1u);
	EXPECT_EQ(stat(fe, MM_STAT_THP_FILE_FALLBACK_CHARGE), 0u);
	EXPECT_EQ(stat(fe, MM_STAT_COMPACT_STALL), 0u);
	/* then 64kB, found or counted as a fallback in its turn */
	if (res.outcome == MM_FAULT_MTHP)
		EXPECT_EQ(mstats(fe, 4).shmem_alloc, 1u);
	else
		EXPECT_EQ(mstats(fe, 4).shmem_fallback, 1u);
	EXPECT_NE(res.outcome, MM_FAULT_HUGE);
	check(fe);
	fakeenv_destroy(fe);
}

/* ---- holes and truncation ----------------------------------------------------------------- */

#define PG 4096ULL

TEST(punch_6_12_frees_whole_folios_and_splits_partial_ones)
{
	struct fakeenv *fe = env("thp-never/never:shmem-enabled=always", 64ULL << 20);
	struct mm_fault_res res, again;
	struct mm_counts c;

	for (uint64_t i = 0; i < 3; i++) {
		ASSERT_EQ(sfault(fe, 7, i * 512, MM_SHMEM_INTERNAL, PMD, &res), 0);
		ASSERT_EQ(res.outcome, MM_FAULT_HUGE);
	}
	/* a hole over the second folio, whole: freed whole, no split */
	EXPECT_EQ(mm_shmem_punch(fe->mm, 7, 512 * PG, 1024 * PG - 1), 512u);
	c = counts(fe);
	EXPECT_EQ(c.shmem, 1024u);
	EXPECT_EQ(c.shmem_huge, 1024u);
	EXPECT_EQ(stat(fe, MM_STAT_THP_SPLIT_PAGE), 0u);
	check(fe);
	/* its pages left the page cache: a later touch is a first touch, a THP again */
	ASSERT_EQ(sfault(fe, 7, 600, MM_SHMEM_INTERNAL, PMD, &res), 0);
	EXPECT_EQ(res.outcome, MM_FAULT_HUGE);
	EXPECT_EQ(stat(fe, MM_STAT_THP_FILE_ALLOC), 4u);
	/* another object's range is not this one's */
	EXPECT_EQ(mm_shmem_punch(fe->mm, 8, 0, 1024 * PG - 1), 0u);
	/* a few bytes of the first folio: no whole page goes, but the THP is split (6.12
	 * truncate_inode_partial_folio -> split_folio) */
	EXPECT_EQ(mm_shmem_punch(fe->mm, 7, 100, 199), 0u);
	c = counts(fe);
	EXPECT_EQ(c.shmem, 1536u);
	EXPECT_EQ(c.shmem_huge, 1024u);
	EXPECT_EQ(stat(fe, MM_STAT_THP_SPLIT_PAGE), 1u);
	EXPECT_EQ(mstats(fe, 9).split, 1u);
	EXPECT_EQ(sfault(fe, 7, 0, MM_SHMEM_INTERNAL, PMD, &again), -EEXIST);
	EXPECT_EQ(again.order, 0);
	check(fe);
	/* pages 16..31 of it, 4 KiB folios now: 16 frames; a touch there takes 4 KiB (the
	 * aligned range still holds pages: shmem_suitable_orders) */
	EXPECT_EQ(mm_shmem_punch(fe->mm, 7, 16 * PG, 32 * PG - 1), 16u);
	ASSERT_EQ(sfault(fe, 7, 20, MM_SHMEM_INTERNAL, PMD, &res), 0);
	EXPECT_EQ(res.outcome, MM_FAULT_BASE);
	EXPECT_EQ(counts(fe).shmem, 1521u);
	check(fe);
	/* truncation to 1100 pages and a half (ftruncate: lend -1): the third folio is split,
	 * the page holding the new size stays, the 435 after it go */
	EXPECT_EQ(mm_shmem_punch(fe->mm, 7, 1100 * PG + 10, UINT64_MAX), 435u);
	EXPECT_EQ(stat(fe, MM_STAT_THP_SPLIT_PAGE), 2u);
	c = counts(fe);
	EXPECT_EQ(c.shmem, 1086u);
	EXPECT_EQ(c.shmem_huge, 512u); /* the re-faulted second folio */
	EXPECT_EQ(sfault(fe, 7, 1100, MM_SHMEM_INTERNAL, PMD, &again), -EEXIST);
	ASSERT_EQ(sfault(fe, 7, 1101, MM_SHMEM_INTERNAL, PMD, &res), 0);
	check(fe);
	/* the rest goes with the object */
	EXPECT_EQ(mm_shmem_release(fe->mm, 7), 1087u);
	EXPECT_EQ(counts(fe).shmem, 0u);
	check(fe);
	fakeenv_destroy(fe);
}

TEST(punch_3_x_frees_4k_pages_and_bad_ranges_free_nothing)
{
	struct fakeenv *fe = env("linux-3.3", 64ULL << 20);
	struct mm_fault_res res;

	for (uint64_t i = 0; i < 4; i++)
		ASSERT_EQ(sfault(fe, 1, i, MM_SHMEM_ANON, ALL, &res), 0);
	EXPECT_EQ(mm_shmem_punch(fe->mm, 1, PG, 3 * PG - 1), 2u);
	EXPECT_EQ(mm_shmem_punch(fe->mm, 1, 3 * PG, PG), 0u); /* lend before lstart */
	EXPECT_EQ(mm_shmem_punch(fe->mm, 0, 0, UINT64_MAX), 0u);
	EXPECT_EQ(mm_shmem_punch(NULL, 1, 0, UINT64_MAX), 0u);
	EXPECT_EQ(counts(fe).shmem, 2u);
	EXPECT_EQ(mm_shmem_punch(fe->mm, 1, 0, UINT64_MAX), 2u);
	EXPECT_EQ(counts(fe).shmem, 0u);
	check(fe);
	fakeenv_destroy(fe);
}

TEST(repair_keeps_whole_folios_and_their_index)
{
	struct fakeenv *fe = env("thp-never/never:shmem-enabled=always", 64ULL << 20);
	struct mm_fault_res res, again;

	ASSERT_EQ(sfault(fe, 9, 0, MM_SHMEM_INTERNAL, PMD, &res), 0);
	ASSERT_EQ(sfault(fe, 10, 0, MM_SHMEM_INTERNAL, 0, &again), 0);
	/* a fault that died half-way through add_folio: one stray frame */
	{
		struct mm_frame *f = pfn_frame(fe->mm, again.pfn);

		f->order = 4; /* claims a 16-page folio it is not */
	}
	ASSERT_EQ(mm_repair(fe->mm), 0);
	check(fe);
	EXPECT_EQ(counts(fe).shmem, 512u);
	EXPECT_EQ(sfault(fe, 9, 511, MM_SHMEM_INTERNAL, PMD, &again), -EEXIST);
	EXPECT_EQ(again.pfn, res.pfn + 511);
	fakeenv_destroy(fe);
}

/* ---- khugepaged and MADV_COLLAPSE: collapse_file --------------------------------------------
 * A fake mapping of one object: range r at address r * 2 MiB is the object's pages
 * [r * 512, r * 512 + 512), its VMA's pgoff 0, advice SM.adv. */

#define SM_NR 4
static struct {
	uint32_t obj;
	enum mm_shmem_kind kind;
	enum mm_vma_advice adv;
	bool misaligned; /* the mapping's address and pgoff disagree modulo 2 MiB */
} SM;

static int sm_next(void *arg, uint64_t *addr, struct mm_collapse_scan *s)
{
	uint64_t r = (*addr + MM_HPAGE_SIZE - 1) / MM_HPAGE_SIZE;

	(void)arg;
	if (r >= SM_NR)
		return -ENOENT;
	*addr = r * MM_HPAGE_SIZE;
	*s = (struct mm_collapse_scan){
	    .vma_ok = !SM.misaligned,
	    .shmem_object = SM.obj,
	    .shmem_index = r * MM_HPAGE_NR,
	    .shmem_vma = {.kind = SM.kind, .advice = SM.adv, .i_size_pages = SM_NR * MM_HPAGE_NR},
	};
	return 0;
}

static int sm_collapse(void *arg, uint64_t addr, const struct mm_collapse_scan *s, uint32_t head,
		       void *call)
{
	(void)arg, (void)addr, (void)s, (void)head, (void)call;
	ASSERT_EQ(0, 1); /* a shmem range is collapsed by mm itself */
	return -EAGAIN;
}

static const struct mm_khugepaged_walker SM_WALKER = {NULL, sm_next, sm_collapse};

static int sm_scan_hook(struct fakeenv *fe, uint32_t as_id, uint64_t *addr, unsigned budget,
			bool *done)
{
	if (as_id != 7)
		return -ENOENT;
	return mm_khugepaged_scan_mm(fe->mm, &SM_WALKER, addr, budget, done, NULL);
}

static struct fakeenv *sm_env(const char *spec, enum mm_shmem_kind kind, enum mm_vma_advice adv)
{
	struct fakeenv *fe = env(spec, 64ULL << 20);

	memset(&SM, 0, sizeof(SM));
	SM.obj = 5;
	SM.kind = kind;
	SM.adv = adv;
	fe->on_khugepaged_scan = sm_scan_hook;
	return fe;
}

/* Fault pages [first, first + n) of the object, as a mapping without MADV_HUGEPAGE would. */
static void sm_fill(struct fakeenv *fe, uint64_t first, uint64_t n, unsigned want_order)
{
	for (uint64_t i = first; i < first + n; i++) {
		struct mm_shmem_req req = {
		    .object = SM.obj,
		    .index = i,
		    .vma = {.kind = SM.kind, .i_size_pages = SM_NR * MM_HPAGE_NR},
		    .orders_ok = ALL,
		};
		struct mm_fault_res res;
		int rc = mm_shmem_fault(fe->mm, &req, &res, NULL);

		ASSERT_EQ(rc == 0 || rc == -EEXIST, 1);
		ASSERT_EQ(res.order, want_order);
	}
}

/* The folio order the object's page index is cached in (-1: not cached). */
static int sm_order(struct fakeenv *fe, uint64_t index)
{
	uint32_t pfn = pc_lookup(fe->mm, MM_OWNER_SHMEM(SM.obj, index));

	return pfn == MM_NO_PFN ? -1 : (int)frame_order(pfn_frame(fe->mm, pfn));
}

static int sm_register(struct fakeenv *fe)
{
	struct mm_shmem_vma v = {
	    .kind = SM.kind, .advice = SM.adv, .i_size_pages = SM_NR * MM_HPAGE_NR};

	return mm_khugepaged_enter_shmem(fe->mm, 7, &v, 0);
}

static enum mm_scan_result sm_madv(struct fakeenv *fe, unsigned r)
{
	return mm_madv_collapse(fe->mm, &SM_WALKER, (uint64_t)r * MM_HPAGE_SIZE, NULL, NULL);
}

/* 6.12 khugepaged_enter_vma: a shmem mapping registers its mm when the VMA passes the sysfs
 * check and khugepaged may run at all (hugepage_pmd_enabled: the anonymous PMD setting). */
TEST(collapse_registration_follows_khugepaged_enter_vma)
{
	struct fakeenv *fe =
	    sm_env("thp-always/always:shmem-enabled=advise", MM_SHMEM_INTERNAL, MM_VMA_DEFAULT);

	EXPECT_EQ(sm_register(fe), 0);
	EXPECT_EQ(counts(fe).khugepaged_mms, 0u); /* advise without MADV_HUGEPAGE */
	SM.adv = MM_VMA_HUGEPAGE;
	EXPECT_EQ(sm_register(fe), 0);
	EXPECT_EQ(counts(fe).khugepaged_mms, 1u);
	fakeenv_destroy(fe);
	/* anonymous THP off: khugepaged does not run in 6.12, shmem or not */
	fe = sm_env("thp-never/never:shmem-enabled=always", MM_SHMEM_INTERNAL, MM_VMA_HUGEPAGE);
	EXPECT_EQ(sm_register(fe), 0);
	EXPECT_EQ(counts(fe).khugepaged_mms, 0u);
	fakeenv_destroy(fe);
	fe = sm_env("linux-3.2", MM_SHMEM_ANON, MM_VMA_HUGEPAGE);
	EXPECT_EQ(sm_register(fe), 0);
	EXPECT_EQ(counts(fe).khugepaged_mms, 0u); /* no shmem THP in 3.x */
	fakeenv_destroy(fe);
}

/* khugepaged (6.12): 4 KiB pages faulted under advise without MADV_HUGEPAGE become one PMD-size
 * folio per range once the mapping is advised: hpage_collapse_scan_file's present against
 * max_ptes_none, collapse_file's allocation and counters, the holes in the folio, the old
 * frames freed; every range ends a visit; a second wake counts the huge ranges again
 * (collapse_pte_mapped_thp's SCAN_PMD_MAPPED taken as SCAN_SUCCEED). */
TEST(collapse_khugepaged_6_12)
{
	struct fakeenv *fe =
	    sm_env("thp-always/always:shmem-enabled=advise", MM_SHMEM_INTERNAL, MM_VMA_DEFAULT);
	struct mm_counts c0, c;

	sm_fill(fe, 0, MM_HPAGE_NR, 0);	      /* range 0: full */
	sm_fill(fe, MM_HPAGE_NR + 7, 100, 0); /* range 1: 100 pages, 412 holes */
	/* range 2: nothing; range 3: one page (present 1 = 512 - 511: collapses) */
	sm_fill(fe, 3 * MM_HPAGE_NR + 300, 1, 0);
	c0 = counts(fe);
	EXPECT_EQ(c0.shmem, 613u);
	EXPECT_EQ(c0.shmem_huge, 0u);
	SM.adv = MM_VMA_HUGEPAGE; /* MADV_HUGEPAGE: khugepaged_enter_vma */
	ASSERT_EQ(sm_register(fe), 0);
	EXPECT_EQ(mm_khugepaged(fe->mm, NULL), 10000000000ULL);
	c = counts(fe);
	EXPECT_EQ(stat(fe, MM_STAT_THP_COLLAPSE_ALLOC), 3u);
	EXPECT_EQ(stat(fe, MM_STAT_THP_COLLAPSE_ALLOC_FAILED), 0u);
	EXPECT_EQ(stat(fe, MM_STAT_KHUGEPAGED_PAGES_COLLAPSED), 3u);
	EXPECT_EQ(stat(fe, MM_STAT_THP_SCAN_EXCEED_NONE_PTE), 1u); /* range 2 */
	EXPECT_EQ(stat(fe, MM_STAT_KHUGEPAGED_FULL_SCANS), 1u);
	EXPECT_EQ(stat(fe, MM_STAT_THP_FILE_ALLOC), 0u); /* a fault's counter, not a collapse's */
	/* nr_shmem grows by the holes (NR_SHMEM += nr_none), nr_shmem_hugepages by the folios */
	EXPECT_EQ(c.shmem, 3u * MM_HPAGE_NR);
	EXPECT_EQ(c.shmem_huge, 3u * MM_HPAGE_NR);
	EXPECT_EQ(c.free + 3u * MM_HPAGE_NR, c0.free + 613u);
	/* the index: every page of ranges 0, 1 and 3 in a PMD-size folio, holes included */
	EXPECT_EQ(sm_order(fe, 0), 9);
	EXPECT_EQ(sm_order(fe, MM_HPAGE_NR + 500), 9); /* a hole before */
	EXPECT_EQ(sm_order(fe, 3 * MM_HPAGE_NR), 9);
	EXPECT_EQ(sm_order(fe, 2 * MM_HPAGE_NR), -1);
	check(fe);
	/* the next wake: ranges 0, 1 and 3 counted again at each visit (as many passes as the
	 * wake's budget allows), nothing allocated */
	fe->now += 10000000000ULL;
	mm_khugepaged(fe->mm, NULL);
	EXPECT_EQ(stat(fe, MM_STAT_KHUGEPAGED_PAGES_COLLAPSED) >= 6, 1);
	EXPECT_EQ(stat(fe, MM_STAT_KHUGEPAGED_PAGES_COLLAPSED) % 3, 0u);
	EXPECT_EQ(stat(fe, MM_STAT_THP_COLLAPSE_ALLOC), 3u);
	EXPECT_EQ(stat(fe, MM_STAT_KHUGEPAGED_FULL_SCANS), 2u);
	check(fe);
	fakeenv_destroy(fe);
}

/* 6.1: the same collapse; an already huge range is not counted again (khugepaged_scan_mm_slot's
 * find_pmd_or_thp_or_none gives SCAN_PMD_MAPPED). */
TEST(collapse_khugepaged_6_1)
{
	struct fakeenv *fe =
	    sm_env("linux-6.1:shmem-enabled=advise", MM_SHMEM_ANON, MM_VMA_DEFAULT);

	sm_fill(fe, 0, 40, 0);
	SM.adv = MM_VMA_HUGEPAGE;
	ASSERT_EQ(sm_register(fe), 0);
	mm_khugepaged(fe->mm, NULL);
	EXPECT_EQ(stat(fe, MM_STAT_THP_COLLAPSE_ALLOC), 1u);
	EXPECT_EQ(stat(fe, MM_STAT_KHUGEPAGED_PAGES_COLLAPSED), 1u);
	EXPECT_EQ(counts(fe).shmem_huge, (uint64_t)MM_HPAGE_NR);
	EXPECT_EQ(sm_order(fe, 100), 9);
	fe->now += 10000000000ULL;
	mm_khugepaged(fe->mm, NULL);
	EXPECT_EQ(stat(fe, MM_STAT_KHUGEPAGED_PAGES_COLLAPSED), 1u);
	check(fe);
	fakeenv_destroy(fe);
}

/* hpage_collapse_scan_file: present < 512 - max_ptes_none is SCAN_EXCEED_NONE_PTE. */
TEST(collapse_max_ptes_none_boundary)
{
	struct fakeenv *fe = sm_env("thp-always/always:shmem-enabled=advise,max-ptes-none=64",
				    MM_SHMEM_INTERNAL, MM_VMA_HUGEPAGE);

	sm_fill(fe, 0, MM_HPAGE_NR - 65, 0);	       /* 65 holes: one too many */
	sm_fill(fe, MM_HPAGE_NR, MM_HPAGE_NR - 64, 0); /* 64 holes */
	ASSERT_EQ(sm_register(fe), 0);
	mm_khugepaged(fe->mm, NULL);
	EXPECT_EQ(stat(fe, MM_STAT_THP_SCAN_EXCEED_NONE_PTE), 3u); /* ranges 0, 2, 3 */
	EXPECT_EQ(stat(fe, MM_STAT_THP_COLLAPSE_ALLOC), 1u);
	EXPECT_EQ(sm_order(fe, 0), 0);
	EXPECT_EQ(sm_order(fe, MM_HPAGE_NR), 9);
	check(fe);
	fakeenv_destroy(fe);
}

/* The VMA check: khugepaged enforces sysfs (advise needs MADV_HUGEPAGE), MADV_COLLAPSE does not
 * (shmem_huge_force) but deny, MADV_NOHUGEPAGE and a misaligned mapping stop both; 3.x has no
 * shmem THP. */
TEST(collapse_vma_check_per_caller_and_era)
{
	struct fakeenv *fe =
	    sm_env("thp-always/always:shmem-enabled=advise", MM_SHMEM_INTERNAL, MM_VMA_DEFAULT);
	struct mm_collapse_scan s;
	uint64_t a = 0;
	struct mm_policy p;

	sm_fill(fe, 0, MM_HPAGE_NR, 0);
	ASSERT_EQ(mm_khugepaged_enter(fe->mm, 7), 0); /* registered by an anonymous fault */
	mm_khugepaged(fe->mm, NULL);
	EXPECT_EQ(stat(fe, MM_STAT_THP_COLLAPSE_ALLOC), 0u);
	EXPECT_EQ(stat(fe, MM_STAT_KHUGEPAGED_PAGES_SCANNED), 0u); /* skip_vma: progress++ */
	EXPECT_EQ(sm_madv(fe, 0), MM_SCAN_SUCCEED);		   /* forced */
	EXPECT_EQ(sm_order(fe, 0), 9);
	fakeenv_destroy(fe);

	p = pol("thp-always/always:shmem-enabled=deny");
	ASSERT_EQ(sm_next(NULL, &a, &s), 0);
	s.shmem_vma.advice = MM_VMA_HUGEPAGE;
	EXPECT_EQ(mm_shmem_collapse_allowable(&p, &s, false), false);
	p = pol("thp-always/always:shmem-enabled=always");
	EXPECT_EQ(mm_shmem_collapse_allowable(&p, &s, true), true);
	s.shmem_vma.advice = MM_VMA_NOHUGEPAGE;
	EXPECT_EQ(mm_shmem_collapse_allowable(&p, &s, false), false);
	s.shmem_vma.advice = MM_VMA_DEFAULT;
	s.vma_ok = false;
	EXPECT_EQ(mm_shmem_collapse_allowable(&p, &s, false), false);
	s.vma_ok = true;
	/* within_size judged at the VMA's pgoff (vma->vm_pgoff), not at the range */
	p = pol("thp-always/always:shmem-enabled=within_size");
	s.shmem_vma.i_size_pages = 600;
	s.shmem_pgoff = 0;
	EXPECT_EQ(mm_shmem_collapse_allowable(&p, &s, true), true);
	s.shmem_pgoff = 512;
	EXPECT_EQ(mm_shmem_collapse_allowable(&p, &s, true), false);
	p = pol("linux-3.2");
	p.shmem_enabled = MM_SHMEM_HUGE_FORCE;
	EXPECT_EQ(mm_shmem_collapse_allowable(&p, &s, false), false);

	fe = sm_env("thp-always/always:shmem-enabled=always", MM_SHMEM_INTERNAL, MM_VMA_DEFAULT);
	sm_fill(fe, 0, 3, 9);
	sm_fill(fe, MM_HPAGE_NR, 3, 9);
	SM.misaligned = true;
	EXPECT_EQ(sm_madv(fe, 0), MM_SCAN_VMA_CHECK);
	EXPECT_EQ(mm_scan_result_errno(&fe->mm->cfg.policy, MM_SCAN_VMA_CHECK), -EINVAL);
	fakeenv_destroy(fe);
}

/* MADV_COLLAPSE (madvise_collapse -> hpage_collapse_scan_file -> collapse_file): no
 * max_ptes_none, the caller's GFP_TRANSHUGE, not khugepaged_pages_collapsed; an empty range
 * allocates first and then finds nothing (SCAN_TRUNCATED: EINVAL); a huge one is a success. */
TEST(collapse_madv_collapse)
{
	struct fakeenv *fe =
	    sm_env("thp-always/always:shmem-enabled=advise", MM_SHMEM_ANON, MM_VMA_DEFAULT);
	struct mm_counts c0;

	sm_fill(fe, 10, 3, 0);
	EXPECT_EQ(sm_madv(fe, 0), MM_SCAN_SUCCEED);
	EXPECT_EQ(stat(fe, MM_STAT_THP_COLLAPSE_ALLOC), 1u);
	EXPECT_EQ(stat(fe, MM_STAT_MADV_COLLAPSE), 1u);
	EXPECT_EQ(stat(fe, MM_STAT_KHUGEPAGED_PAGES_COLLAPSED), 0u);
	EXPECT_EQ(sm_order(fe, 511), 9);
	EXPECT_EQ(sm_madv(fe, 0), MM_SCAN_PMD_MAPPED);
	EXPECT_EQ(mm_scan_result_errno(&fe->mm->cfg.policy, MM_SCAN_PMD_MAPPED), 0);
	c0 = counts(fe);
	EXPECT_EQ(sm_madv(fe, 1), MM_SCAN_TRUNCATED);
	EXPECT_EQ(stat(fe, MM_STAT_THP_COLLAPSE_ALLOC), 2u);
	EXPECT_EQ(counts(fe).free, c0.free); /* the new folio went back */
	EXPECT_EQ(mm_scan_result_errno(&fe->mm->cfg.policy, MM_SCAN_TRUNCATED), -EINVAL);
	check(fe);
	fakeenv_destroy(fe);
}

/* 6.12 anonymous shmem: mTHP folios count their pages (present += folio_nr_pages) and are
 * freed whole. */
TEST(collapse_of_mthp_folios_6_12)
{
	struct fakeenv *fe =
	    sm_env("thp-always/always:shmem-hugepages-64kB=always,shmem-hugepages-2048kB=advise",
		   MM_SHMEM_ANON, MM_VMA_DEFAULT);
	struct mm_counts c0, c;

	sm_fill(fe, 0, 64, 4); /* four 64 KiB folios */
	c0 = counts(fe);
	EXPECT_EQ(c0.shmem, 64u);
	EXPECT_EQ(mstats(fe, 4).shmem_alloc, 4u);
	SM.adv = MM_VMA_HUGEPAGE;
	ASSERT_EQ(sm_register(fe), 0);
	mm_khugepaged(fe->mm, NULL);
	c = counts(fe);
	EXPECT_EQ(stat(fe, MM_STAT_THP_COLLAPSE_ALLOC), 1u);
	EXPECT_EQ(c.shmem, (uint64_t)MM_HPAGE_NR);
	EXPECT_EQ(c.free + MM_HPAGE_NR, c0.free + 64u);
	EXPECT_EQ(sm_order(fe, 17), 9);
	check(fe);
	fakeenv_destroy(fe);
}

/* A failed allocation: thp_collapse_alloc_failed, MADV_COLLAPSE's ENOMEM, nothing changed. */
TEST(collapse_allocation_failure)
{
	struct fakeenv *fe =
	    sm_env("thp-always/always:shmem-enabled=advise", MM_SHMEM_INTERNAL, MM_VMA_DEFAULT);
	struct mm_counts c0;
	uint32_t obj = SM.obj;

	sm_fill(fe, 0, 8, 0);
	/* another object's 4 KiB pages on every free frame: shmem frames do not move */
	SM.obj = 6;
	for (uint64_t i = 0;; i++) {
		struct mm_fault_res res;

		if (sfault(fe, 6, i, MM_SHMEM_INTERNAL, 0, &res) != 0 ||
		    res.outcome == MM_FAULT_NOMEM || counts(fe).free < 64)
			break;
	}
	SM.obj = obj;
	c0 = counts(fe);
	EXPECT_EQ(sm_madv(fe, 0), MM_SCAN_ALLOC_HUGE_PAGE_FAIL);
	EXPECT_EQ(stat(fe, MM_STAT_THP_COLLAPSE_ALLOC_FAILED), 1u);
	EXPECT_EQ(mm_scan_result_errno(&fe->mm->cfg.policy, MM_SCAN_ALLOC_HUGE_PAGE_FAIL), -ENOMEM);
	EXPECT_EQ(counts(fe).shmem, c0.shmem);
	EXPECT_EQ(sm_order(fe, 3), 0);
	check(fe);
	fakeenv_destroy(fe);
}

TEST_MAIN()

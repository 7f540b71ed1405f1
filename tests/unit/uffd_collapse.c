/* Collapse for real, in-process on a real userfaultfd: MADV_COLLAPSE of a 4 KiB-populated range
 * (with holes) becomes one emulated huge extent and one real PMD, data intact and holes zero;
 * khugepaged's visit (uffd_khugepaged_visit) walks the regions in address order with its
 * budget; a policy without MADV_COLLAPSE refuses it. Needs root or /dev/userfaultfd. */
#include "harness.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "util/sys.h"
#include "uffd/uffd_internal.h"

#define MB (1UL << 20)
#define HP (2UL << 20)

static struct uffd_live *mk(const char *policy)
{
	struct config cfg;
	struct uffd_live *lv = NULL;
	char err[512] = "";
	const struct config_opt *o;

	config_defaults(&cfg);
	o = config_opt_by_env("THPEMU_POLICY");
	ASSERT_EQ(config_opt_parse(o, NULL, policy, &cfg, err, sizeof(err)), 0);
	o = config_opt_by_env("THPEMU_POOL");
	ASSERT_EQ(config_opt_parse(o, NULL, "128M", &cfg, err, sizeof(err)), 0);
	cfg.handlers = 3;
	cfg.staging = 2;
	cfg.log = CONFIG_LOG_QUIET;
	if (uffd_live_create(&cfg, &lv, err, sizeof(err)) < 0) {
		if (strstr(err, "userfaultfd unavailable"))
			SKIP("%s", err);
		fprintf(stderr, "  create: %s\n", err);
		ASSERT(0);
	}
	return lv;
}

/* len bytes of 4 KiB pages (NOHUGEPAGE while touched), every page but the holes written with
 * its index; then MADV_HUGEPAGE. */
static char *populate(struct uffd_live *lv, size_t len, unsigned hole_every)
{
	long p =
	    uffd_mmap(lv, NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *c = (char *)p;

	ASSERT(!sys_is_err(p));
	ASSERT_EQ((uintptr_t)c % HP, 0);
	ASSERT_EQ(uffd_madvise(lv, c, len, MADV_NOHUGEPAGE), 0);
	for (size_t i = 0; i < len / 4096; i++)
		if (!hole_every || i % hole_every)
			*(uint32_t *)(c + i * 4096 + 8) = (uint32_t)i + 1;
	ASSERT_EQ(uffd_madvise(lv, c, len, MADV_HUGEPAGE), 0);
	return c;
}

static struct mm_counts counts(struct uffd_live *lv)
{
	struct mm_counts c;

	mm_get_counts(lv->mm, &c);
	return c;
}

#define HOST(lv, f) __atomic_load_n(&(lv)->stats->host.f, __ATOMIC_RELAXED)

TEST(madv_collapse_fills_holes_and_maps_a_pmd)
{
	struct uffd_live *lv = mk("modern-always:khugepaged=no");
	char *c = populate(lv, 2 * HP, 7);
	struct mm_counts before = counts(lv), after;

	EXPECT_EQ(before.anon_pmd, 0);
	EXPECT_EQ(uffd_madvise(lv, c, 2 * HP, 25), 0);
	after = counts(lv);
	EXPECT_EQ(after.anon_pmd, 1024);
	EXPECT_EQ(after.anon, 1024); /* the holes are zeroed subpages now */
	EXPECT_EQ(HOST(lv, collapses), 2);
	EXPECT_EQ(HOST(lv, madv_collapse_calls), 1);
	EXPECT_EQ(uffd_range_is_pmd(lv->pagemap_fd, (uintptr_t)c, 2 * HP), 1);
	for (size_t i = 0; i < 2 * HP / 4096; i++) {
		uint32_t v = *(uint32_t *)(c + i * 4096 + 8);

		if (i % 7 == 0)
			ASSERT_EQ(v, 0);
		else
			ASSERT_EQ(v, (uint32_t)i + 1);
	}
	/* already huge: nothing to do, still 0 */
	EXPECT_EQ(uffd_madvise(lv, c, HP, 25), 0);
	EXPECT_EQ(HOST(lv, collapses), 2);
	uffd_live_destroy(lv);
}

TEST(madv_collapse_untouched_range_is_einval_and_3x_has_none)
{
	struct uffd_live *lv = mk("modern-always:khugepaged=no");
	long p =
	    uffd_mmap(lv, NULL, HP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT(!sys_is_err(p));
	EXPECT_EQ(uffd_madvise(lv, (void *)p, HP, 25), -EINVAL);
	uffd_live_destroy(lv);
	lv = mk("linux-3.2");
	EXPECT_EQ(uffd_madvise(lv, populate(lv, HP, 0), HP, 25), -EINVAL);
	EXPECT_EQ(HOST(lv, collapses), 0);
	uffd_live_destroy(lv);
}

/* khugepaged's visit: one collapse ends it; the next resumes after that range. */
TEST(khugepaged_visit_walks_in_address_order)
{
	struct uffd_live *lv = mk("modern-always:khugepaged=no");
	char *c = populate(lv, 3 * HP, 0);
	uint64_t addr = 0;
	bool done = false;
	int progress;

	progress = uffd_khugepaged_visit(lv, &lv->workers[lv->nworkers], &addr, 4096, &done);
	EXPECT_GE(progress, 512);
	EXPECT(!done);
	EXPECT_EQ(counts(lv).anon_pmd, 512);
	EXPECT_GE(addr, (uintptr_t)c + HP);
	for (int k = 0; k < 2; k++)
		uffd_khugepaged_visit(lv, &lv->workers[lv->nworkers], &addr, 4096, &done);
	EXPECT_EQ(counts(lv).anon_pmd, 3 * 512);
	progress = uffd_khugepaged_visit(lv, &lv->workers[lv->nworkers], &addr, 4096, &done);
	EXPECT(done);
	for (size_t i = 0; i < 3 * HP / 4096; i++)
		ASSERT_EQ(*(uint32_t *)(c + i * 4096 + 8), (uint32_t)i + 1);
	uffd_live_destroy(lv);
}

TEST_MAIN()

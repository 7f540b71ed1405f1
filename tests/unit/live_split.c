/* The live underused split (core/live/split.c) in-process, on a real userfaultfd: the THP
 * shrinker (mm_shrink_thp, as reclaim runs it) calls the split_underused hook, which splits an
 * underused THP for real (zero pages unmapped and freed, the others kept with their data), and
 * leaves alone a THP that is not underused, one it cannot find, and one whose region is busy.
 * Needs root or /dev/userfaultfd. */
#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include "live_fixture.h"

#define STRIDE 12 /* one page in 12 written: 43 of 512, 469 zero */

static uint64_t vmstat(struct uffd_live *lv, enum mm_stat s)
{
	uint64_t v[MM_STAT_NR];

	mm_get_stats(lv->mm, v);
	return v[s];
}

static size_t resident(const char *p, size_t len)
{
	unsigned char vec[2 * HP / PG];
	size_t n = 0;

	ASSERT_LE(len, sizeof(vec) * PG);
	ASSERT_EQ(mincore((void *)p, len, vec), 0);
	for (size_t i = 0; i < len / PG; i++)
		n += vec[i] & 1;
	return n;
}

/* The fault is recorded once its handler is done with the extent (HUGE, lock released). */
static void settle_huge(struct uffd_live *lv, uint64_t want)
{
	for (int i = 0; i < 1000 && __atomic_load_n(&lv->stats->faults.lat[OBS_HUGE].count,
						    __ATOMIC_RELAXED) < want;
	     i++)
		usleep(1000);
	ASSERT_EQ(__atomic_load_n(&lv->stats->faults.lat[OBS_HUGE].count, __ATOMIC_RELAXED), want);
}

/* Two huge extents, one byte written every STRIDE pages; all huge, all resident. */
static char *sparse(struct uffd_live *lv)
{
	char *p = live_map(lv, 2 * HP);

	for (size_t i = 0; i < 2 * HP / PG; i += STRIDE)
		p[i * PG] = (char)(i | 1);
	settle_huge(lv, 2);
	ASSERT_EQ(live_counts(lv).anon_huge, 1024);
	ASSERT_EQ(resident(p, 2 * HP), 1024);
	return p;
}

static bool data_intact(const char *p, size_t len)
{
	for (size_t i = 0; i < len / PG; i++)
		for (size_t b = 0; b < PG; b++)
			if (p[i * PG + b] != (b == 0 && i % STRIDE == 0 ? (char)(i | 1) : 0))
				return false;
	return true;
}

TEST(underused_thps_are_split_for_real_by_the_shrinker)
{
	/* no khugepaged: after the reads below mm counts every page of both extents (anon 1024),
	 * so they are collapsible, and khugepaged's first scan comes within 100 ms of the first
	 * registration (with scan-sleep=100ms it collapsed both at once); a collapse in flight
	 * held its new block through the final munmap (anon 512, once, under TSan in CI) */
	struct uffd_live *lv = live_mk("modern-always:max-ptes-none=450,khugepaged=no", "256M");
	char *p = sparse(lv);
	const size_t kept = (HP / PG + STRIDE - 1) / STRIDE; /* 43 written pages per THP */

	EXPECT_EQ(mm_shrink_thp(lv->mm, 0, &lv->workers[0]), 2);
	EXPECT_EQ(vmstat(lv, MM_STAT_THP_UNDERUSED_SPLIT_PAGE), 2);
	EXPECT_EQ(HOST(lv, underused_splits), 2);
	EXPECT_EQ(HOST(lv, underused_pages_freed), 2 * (HP / PG - kept));
	EXPECT_EQ(live_counts(lv).anon_huge, 0);
	EXPECT_EQ(live_counts(lv).anon, 2 * kept);
	/* the zero pages are gone from the page tables: only the written ones are left */
	EXPECT_EQ(resident(p, 2 * HP), 2 * kept);
	EXPECT_EQ(uffd_range_is_pmd(lv->pagemap_fd, (uintptr_t)p, HP), 0);
	EXPECT(data_intact(p, 2 * HP)); /* reads of zero pages: first touches, zero */
	p[PG + 5] = 0x77;		/* a write where a zero page was: a fresh 4 KiB page */
	EXPECT_EQ(p[PG + 5], 0x77);
	EXPECT_EQ(p[0], 1);
	EXPECT_EQ(HOST(lv, uffd_errors), 0);
	EXPECT_EQ(uffd_munmap(lv, p, 2 * HP), 0);
	EXPECT_EQ(live_counts(lv).anon, 0);
	uffd_live_destroy(lv);
}

TEST(thps_that_are_not_underused_stay_whole)
{
	struct uffd_live *lv = live_mk("modern-always:max-ptes-none=511", "256M");
	char *p = sparse(lv);

	/* 511: thp_underused is never true, mm does not even ask */
	EXPECT_EQ(mm_shrink_thp(lv->mm, 0, &lv->workers[0]), 0);
	EXPECT_EQ(HOST(lv, underused_splits), 0);
	EXPECT_EQ(live_counts(lv).anon_huge, 1024);
	uffd_live_destroy(lv);

	lv = live_mk("modern-always:max-ptes-none=450", "256M");
	p = live_map(lv, 2 * HP);
	memset(p, 0x5a, HP);			/* a THP full of data */
	for (size_t i = 0; i < HP / PG; i += 8) /* and one with 64 written pages: */
		p[HP + i * PG] = 1;		/* 448 zero, not more than 450 */
	settle_huge(lv, 2);
	EXPECT_EQ(mm_shrink_thp(lv->mm, 0, &lv->workers[0]), 0);
	EXPECT_EQ(vmstat(lv, MM_STAT_THP_UNDERUSED_SPLIT_PAGE), 0);
	EXPECT_EQ(live_counts(lv).anon_huge, 1024);
	EXPECT_EQ(resident(p, 2 * HP), 1024);
	EXPECT_EQ(uffd_range_is_pmd(lv->pagemap_fd, (uintptr_t)p, 2 * HP), 1);
	uffd_live_destroy(lv);
}

TEST(the_hook_finds_only_its_thp_and_never_waits)
{
	struct uffd_live *lv = live_mk("modern-always:max-ptes-none=450", "256M");
	char *p = sparse(lv);
	struct uffd_region *r = uffd_region_get(&lv->table, (uintptr_t)p);
	uint32_t p0 = as_page_of(&r->as, (uintptr_t)p), head = as_pfn(&r->as, p0);
	uint64_t cookie = uffd_cookie(r, p0);

	ASSERT(r);
	/* not the THP's head, not an extent's first page, a cookie of no region */
	EXPECT_EQ(uffd_split_underused(&lv->workers[0], cookie, head + 1), -ENOENT);
	EXPECT_EQ(uffd_split_underused(&lv->workers[0], cookie + 1, head), -ENOENT);
	EXPECT_EQ(uffd_split_underused(&lv->workers[0], cookie + (1ULL << 40), head), -ENOENT);
	/* the region is busy (a handler materialising, a munmap...): busy, never a wait */
	pthread_rwlock_rdlock(&r->busy);
	EXPECT_EQ(uffd_split_underused(&lv->workers[0], cookie, head), -EAGAIN);
	pthread_rwlock_unlock(&r->busy);
	EXPECT_EQ(live_counts(lv).anon_huge, 1024);
	EXPECT_EQ(uffd_split_underused(&lv->workers[0], cookie, head), 1);
	EXPECT_EQ(live_counts(lv).anon_huge, 512);
	EXPECT_EQ(uffd_split_underused(&lv->workers[0], cookie, head), -ENOENT); /* split now */
	EXPECT(data_intact(p, 2 * HP));
	uffd_region_put(&lv->table, r);
	uffd_live_destroy(lv);
}

TEST_MAIN()

/* Collapse for real (core/live/collapse.c), in-process on a real userfaultfd: MADV_COLLAPSE of a
 * range populated with 4 KiB pages (written, and some only read: zero-page PTEs) gives one real
 * PMD with the data intact and the emulated extent HUGE on the new block; with holes the range
 * collapses too (holes read 0), a never-touched range is EINVAL, a 3.x profile knows no such
 * advice; khugepaged's visit (uffd_khugepaged_visit) collapses a 4 KiB range after
 * MADV_HUGEPAGE; a writer keeps writing during the collapse's copy (write-protected, its writes
 * let through and copied again) and its hold, and every page holds its last write. Needs root
 * or /dev/userfaultfd. */
#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include "live_fixture.h"

static uint8_t xstate(struct uffd_live *lv, char *a)
{
	struct uffd_region *r = uffd_region_get(&lv->table, (uintptr_t)a);
	uint8_t s;

	ASSERT(r);
	s = AS_X_STATE(as_xstate(&r->as, as_ext_of(&r->as, (uintptr_t)a)));
	uffd_region_put(&lv->table, r);
	return s;
}

static uint32_t anon_pmd(struct uffd_live *lv)
{
	struct mm_counts c;

	mm_get_counts(lv->mm, &c);
	return c.anon_pmd;
}

TEST(collapse_madv_populated_and_zero_pages)
{
	struct uffd_live *lv = live_mk("modern-always:enabled=madvise,khugepaged=no", "256M");
	char *p = live_map(lv, 4 * MB);
	unsigned long zeros = 0;

	for (size_t i = 0; i < 4 * MB / PG; i++) {
		if (i % 16 == 3)
			zeros += (unsigned char)p[i * PG + 7]; /* read: the zero page */
		else
			memset(p + i * PG, (int)(i % 251) + 1, PG);
	}
	EXPECT_EQ(zeros, 0);
	EXPECT_EQ(xstate(lv, p), AS_X_SMALL);
	EXPECT_EQ(uffd_range_is_pmd(lv->pagemap_fd, (uintptr_t)p, HP), 0);
	EXPECT_EQ(uffd_madvise(lv, p, 4 * MB, MADV_COLLAPSE), 0);
	for (size_t off = 0; off < 4 * MB; off += HP) {
		EXPECT_EQ(uffd_range_is_pmd(lv->pagemap_fd, (uintptr_t)p + off, HP), 1);
		EXPECT_EQ(xstate(lv, p + off), AS_X_HUGE);
	}
	for (size_t i = 0; i < 4 * MB / PG; i++)
		for (size_t k = 0; k < PG; k += 512)
			EXPECT_EQ((unsigned char)p[i * PG + k],
				  i % 16 == 3 ? 0 : (unsigned char)(i % 251 + 1));
	EXPECT_EQ(HOST(lv, collapses), 2);
	EXPECT_EQ(HOST(lv, collapse_host_small), 0);
	EXPECT_EQ(HOST(lv, madv_collapse_calls), 1);
	EXPECT_EQ(anon_pmd(lv), 2 * MM_HPAGE_NR);
	EXPECT_EQ(uffd_munmap(lv, p, 4 * MB), 0);
	uffd_live_destroy(lv);
}

TEST(collapse_madv_holes_untouched_and_3x)
{
	struct uffd_live *lv = live_mk("modern-never", "256M");
	char *p = live_map(lv, 4 * MB);

	for (size_t i = 0; i < HP / PG; i += 2)
		p[i * PG] = 'x'; /* extent 0: every other page; extent 1 never touched */
	errno = 0;
	EXPECT_EQ(uffd_madvise(lv, p, 4 * MB, MADV_COLLAPSE), -EINVAL); /* the untouched range */
	EXPECT_EQ(uffd_madvise(lv, p, HP, MADV_COLLAPSE), 0);		/* holes allowed: zeroed */
	EXPECT_EQ(xstate(lv, p), AS_X_HUGE);
	for (size_t i = 0; i < HP / PG; i++)
		EXPECT_EQ(p[i * PG], i % 2 ? 0 : 'x');
	EXPECT_EQ(uffd_munmap(lv, p, 4 * MB), 0);
	uffd_live_destroy(lv);

	lv = live_mk("linux-3.2:enabled=madvise", "256M");
	p = live_map(lv, 2 * MB);
	memset(p, 1, 2 * MB);
	EXPECT_EQ(uffd_madvise(lv, p, 2 * MB, MADV_COLLAPSE), -EINVAL);
	EXPECT_EQ(HOST(lv, collapses), 0);
	uffd_live_destroy(lv);
}

TEST(collapse_khugepaged_visit)
{
	struct uffd_live *lv = live_mk("modern-always:enabled=madvise,khugepaged=no", "256M");
	char *p = live_map(lv, 2 * MB);
	uint64_t addr = 0;
	bool done = false;
	int progress;

	memset(p, 7, 2 * MB);
	EXPECT_EQ(xstate(lv, p), AS_X_SMALL);
	/* enabled=madvise: khugepaged scans VM_HUGEPAGE ranges only */
	progress = uffd_khugepaged_visit(UFFD_W_KHD(lv), &addr, 4096, &done);
	EXPECT_GE(progress, 0);
	EXPECT_EQ(xstate(lv, p), AS_X_SMALL);
	EXPECT_EQ(uffd_madvise(lv, p, 2 * MB, MADV_HUGEPAGE), 0);
	addr = 0;
	progress = uffd_khugepaged_visit(UFFD_W_KHD(lv), &addr, 4096, &done);
	EXPECT_GE(progress, MM_HPAGE_NR);
	EXPECT_EQ(xstate(lv, p), AS_X_HUGE);
	EXPECT_EQ(uffd_range_is_pmd(lv->pagemap_fd, (uintptr_t)p, HP), 1);
	for (size_t off = 0; off < 2 * MB; off += 4096)
		EXPECT_EQ(p[off], 7);
	EXPECT_EQ(HOST(lv, collapses), 1);
	EXPECT_EQ(uffd_munmap(lv, p, 2 * MB), 0);
	uffd_live_destroy(lv);
}

/* A writer over every page of a 2 MiB range: word 0..7 of page i hold its count of writes. */
struct page_writer {
	uint64_t *base;
	uint64_t count[HP / PG];
	int stop; /* atomic */
};

static void *write_pages(void *arg)
{
	struct page_writer *pw = arg;

	while (!__atomic_load_n(&pw->stop, __ATOMIC_RELAXED))
		for (size_t i = 0; i < HP / PG && !__atomic_load_n(&pw->stop, __ATOMIC_RELAXED);
		     i++) {
			uint64_t v = ++pw->count[i];

			for (size_t k = 0; k < 8; k++)
				__atomic_store_n(&pw->base[i * (PG / 8) + k], v, __ATOMIC_RELAXED);
		}
	return NULL;
}

/* One collapse with the writer on its range: copy_early under write-protect (zero pages on, the
 * range registered MISSING | WP), or the copy inside the hold (zero pages off). The test gap
 * keeps the copy's window and the hold open 30 ms each, so the writer meets both. */
static void collapse_with_writer(bool zero_page)
{
	struct config cfg;
	struct uffd_live *lv;
	struct page_writer *pw = calloc(1, sizeof(*pw));
	pthread_t t;

	ASSERT(pw);
	live_config(&cfg, "modern-always:enabled=madvise,khugepaged=no", "256M");
	cfg.zero_page = zero_page;
	cfg.test_migrate_gap_ns = 30 * 1000 * 1000;
	lv = live_start(&cfg);
	pw->base = (uint64_t *)(void *)live_map(lv, 2 * MB);
	for (size_t i = 0; i < HP / PG; i++)
		pw->base[i * (PG / 8)] = 0; /* every page present, 4 KiB */
	EXPECT_EQ(xstate(lv, (char *)pw->base), AS_X_SMALL);
	ASSERT_EQ(pthread_create(&t, NULL, write_pages, pw), 0);
	EXPECT_EQ(uffd_madvise(lv, pw->base, 2 * MB, MADV_COLLAPSE), 0);
	__atomic_store_n(&pw->stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	EXPECT_EQ(xstate(lv, (char *)pw->base), AS_X_HUGE);
	EXPECT_EQ(uffd_range_is_pmd(lv->pagemap_fd, (uintptr_t)pw->base, HP), 1);
	for (size_t i = 0; i < HP / PG; i++)
		for (size_t k = 0; k < 8; k++)
			EXPECT_EQ(pw->base[i * (PG / 8) + k], pw->count[i]);
	EXPECT_EQ(HOST(lv, collapses), 1);
	if (zero_page)
		EXPECT_GE(HOST(lv, collapse_wp_writes), 1);
	else
		EXPECT_EQ(HOST(lv, collapse_wp_writes), 0);
	EXPECT_EQ(uffd_munmap(lv, pw->base, 2 * MB), 0);
	uffd_live_destroy(lv);
	free(pw);
}

TEST(collapse_writer_during_copy_and_hold)
{
	collapse_with_writer(true);
	collapse_with_writer(false);
}

TEST_MAIN()

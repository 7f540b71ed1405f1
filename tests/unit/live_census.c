/* The memory census (core/live/census.c): the light census (/proc/self/maps and PAGEMAP_SCAN)
 * gives what the full one (/proc/self/smaps) gives where it is taken, and leaves to the full one
 * what it cannot tell (a large unseen mapping, which may be a stack; resident shared memory,
 * counted at its Pss). The run-level figures are tested by integration live_census and
 * live_memory. Needs root or /dev/userfaultfd. */
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include "live_fixture.h"
#include "util/clock.h"

#define SLACK (64 * 1024) /* pages the test's own stack or the emulator's threads may touch */

/* Between two figures of the full census (the emulator's threads may still be starting: its own
 * memory grows meanwhile), within SLACK. */
#define EXPECT_BETWEEN(x, a, b)                                                                    \
	do {                                                                                       \
		EXPECT_GE((x) + SLACK, (a) < (b) ? (a) : (b));                                     \
		EXPECT_LE((x), ((a) > (b) ? (a) : (b)) + SLACK);                                   \
	} while (0)

/* Under ASan and TSan the runtimes' own mappings (shadow memory, marked MADV_DONTDUMP; mappings
 * above the scan's end) are split differently by the two censuses (the light one counts a
 * program's MADV_DONTDUMP memory as the program's: core/live/README.md), so the comparison is
 * made in the other builds, and the sanitizer builds check the full census alone. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

/* The light census is used on kernels from 6.16 with glibc before 2.42 (census.c) */
#define NEED_LIGHT()                                                                               \
	do {                                                                                       \
		if (!uffd_census_light_supported())                                                \
			SKIP("no light census here (a kernel before 6.16, or glibc 2.42+)");       \
	} while (0)

static void touch(char *p, size_t len)
{
	for (size_t off = 0; off < len; off += PG)
		p[off] = 1;
}

#if !SANITIZED
/* The emulator's start-up probe over (probe.c): the background thread's first thing after
 * uffd_live_create touches up to UFFD_PROBES pages of thpemu's own one at a time (1 MiB), writes
 * its samples into static arrays (the data of this binary, where the emulator is linked in:
 * the program's "small" memory here) and zaps those pages. thpemu's memory rises and falls back
 * meanwhile, so a census taken while it runs need not be between one before and one after it,
 * and a data page written then can reorder the largest unmanaged mappings of two censuses. A
 * probe that was never registered never runs. */
static void probe_over(struct uffd_live *lv)
{
	uint64_t give_up = clock_now_ns() + 60ULL * 1000 * 1000 * 1000;

	/* probe_len goes to 0 however the probe ends (probe.n only when it measured enough) */
	while (lv->probe_base && __atomic_load_n(&lv->probe_len, __ATOMIC_ACQUIRE)) {
		ASSERT(clock_now_ns() < give_up); /* the probe never ended: a defect of its own */
		usleep(1000);
	}
}

/* The light census of this process between two full ones; full is the second. The three are
 * taken once the emulator's start-up is over, and under the census lock, as the background
 * thread's census takes it (its buffer, mapped and unmapped meanwhile, would be two VMAs that
 * come and go): what still changes meanwhile (a handler thread's stack, a staged THP) only
 * grows. */
static void both(struct uffd_live *lv, struct uffd_census *light, struct uffd_census *full)
{
	struct uffd_census before;
	int rb, rl, rf;

	probe_over(lv);
	pthread_mutex_lock(&lv->census_lock);
	rb = uffd_census_read(lv, &before, UFFD_CENSUS_FULL);
	rl = uffd_census_read(lv, light, UFFD_CENSUS_LIGHT);
	rf = uffd_census_read(lv, full, UFFD_CENSUS_FULL);
	pthread_mutex_unlock(&lv->census_lock);
	ASSERT_EQ(rb, 0);
	ASSERT_EQ(rl, 1);
	ASSERT_EQ(rf, 0);
	EXPECT_BETWEEN(light->rss, before.rss, full->rss);
	EXPECT_BETWEEN(light->anon, before.anon, full->anon);
	EXPECT_BETWEEN(light->anon_own, before.anon_own, full->anon_own);
	EXPECT_GE(light->vmas, before.vmas < full->vmas ? before.vmas : full->vmas);
	EXPECT_LE(light->vmas, before.vmas > full->vmas ? before.vmas : full->vmas);
}

TEST(census_light_agrees_with_smaps)
{
	NEED_LIGHT();
	struct uffd_live *lv = live_mk("modern-always", "256M");
	char *managed = live_map(lv, 16 * MB);
	/* the program's unmanaged memory: small (below --min-region) and a brk heap */
	char *small =
	    mmap(NULL, 64 * 1024, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *heap = sbrk(256 * 1024);
	/* and a mapping the interposers did not see (in a process whose mmap they are) */
	char *unseen =
	    mmap(NULL, 1 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct uffd_census l, f;

	ASSERT(small != MAP_FAILED);
	ASSERT(unseen != MAP_FAILED);
	touch(unseen, 512 * 1024);
	ASSERT(heap != (void *)-1);
	touch(managed, 6 * MB);
	touch(small, 64 * 1024);
	touch(heap, 256 * 1024);
	both(lv, &l, &f);
	EXPECT_EQ(l.anon_managed, f.anon_managed);
	EXPECT_GE(l.anon_managed, 6 * MB);
	for (unsigned i = 0; i < UFFD_WHY_NR; i++)
		EXPECT_NEAR(l.why_anon[i], f.why_anon[i], SLACK);
	EXPECT_GE(l.why_anon[UFFD_WHY_small], 64 * 1024);
	EXPECT_GE(l.why_anon[UFFD_WHY_brk], 256 * 1024);
	EXPECT_GE(l.why_anon[UFFD_WHY_unseen], 512 * 1024);
	for (unsigned i = 0; i < UFFD_CENSUS_TOP; i++) {
		EXPECT_EQ(l.top[i].start, f.top[i].start);
		EXPECT_EQ(l.top[i].why, f.top[i].why);
		EXPECT(strcmp(l.top[i].name, f.top[i].name) == 0);
	}
	/* what the census keeps takes the light one */
	EXPECT_EQ(uffd_census_read(lv, &l, UFFD_CENSUS_AUTO), 1);
	munmap(small, 64 * 1024);
	munmap(unseen, 1 * MB);
	sbrk(-256 * 1024);
	uffd_live_destroy(lv);
}

/* Read first touches map the zero page (the huge zero page where a THP could go): neither
 * census counts it as resident. */
TEST(census_light_counts_no_zero_page)
{
	NEED_LIGHT();
	struct config cfg;
	struct uffd_live *lv;
	char *p;
	struct uffd_census l, f;
	volatile char sum = 0;

	live_config(&cfg, "modern-always", "256M");
	cfg.zero_page = true;
	lv = live_start(&cfg);
	p = live_map(lv, 8 * MB);
	for (size_t off = 0; off < 4 * MB; off += PG)
		sum += p[off]; /* two 2 MiB ranges: the huge zero page */
	for (size_t off = 4 * MB; off < 4 * MB + 64 * 1024; off += PG)
		p[off] = 1;
	for (size_t off = 6 * MB + 5 * PG; off < 6 * MB + 9 * PG; off += PG)
		sum += p[off];
	both(lv, &l, &f);
	EXPECT_EQ(sum, 0);
	EXPECT_EQ(l.anon_managed, f.anon_managed);
	EXPECT_GE(HOST(lv, huge_zero_faults), 1);
	uffd_live_destroy(lv);
}

/* A thread's stack (MAP_STACK, a PROT_NONE guard below it, as glibc makes one) is "stack" by
 * its VmFlags ("nh"), which only smaps has: the census is the full one. */
TEST(census_light_leaves_a_thread_stack_to_smaps)
{
	NEED_LIGHT();
	struct uffd_live *lv = live_mk("modern-always", "256M");
	char *stack = mmap(NULL, 8 * MB, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	struct uffd_census c;

	ASSERT(stack != MAP_FAILED);
	ASSERT_EQ(mprotect(stack, PG, PROT_NONE), 0);
	touch(stack + 6 * MB, 2 * MB);
	EXPECT_EQ(uffd_census_read(lv, &c, UFFD_CENSUS_LIGHT), -1);
	EXPECT_EQ(uffd_census_read(lv, &c, UFFD_CENSUS_AUTO), 0);
	EXPECT_GE(c.why_anon[UFFD_WHY_stack], 2 * MB); /* 6.7+: MAP_STACK is VM_NOHUGEPAGE */
	munmap(stack, 8 * MB);
	uffd_live_destroy(lv);
}

/* Resident shared memory is counted at its Pss, which only smaps has. */
TEST(census_light_leaves_shared_memory_to_smaps)
{
	NEED_LIGHT();
	struct uffd_live *lv = live_mk("modern-always", "256M");
	char *shm = mmap(NULL, 1 * MB, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct uffd_census c;

	ASSERT(shm != MAP_FAILED);
	EXPECT_EQ(uffd_census_read(lv, &c, UFFD_CENSUS_LIGHT), 1); /* nothing resident yet */
	touch(shm, 1 * MB);
	EXPECT_EQ(uffd_census_read(lv, &c, UFFD_CENSUS_LIGHT), -1);
	EXPECT_EQ(uffd_census_read(lv, &c, UFFD_CENSUS_AUTO), 0);
	EXPECT_GE(c.why_anon[UFFD_WHY_shared], 1 * MB);
	munmap(shm, 1 * MB);
	uffd_live_destroy(lv);
}

/* A private mapping of a tmpfs file holds shmem pages (smaps_rollup's Pss_Shmem, which the
 * light census takes for the machine's segment's alone): smaps tells. */
TEST(census_light_leaves_a_tmpfs_file_to_smaps)
{
	NEED_LIGHT();
	struct uffd_live *lv = live_mk("modern-always", "256M");
	int fd = memfd_create("census", MFD_CLOEXEC);
	char page[PG];
	volatile char *p;
	struct uffd_census c;

	ASSERT(fd >= 0);
	memset(page, 7, sizeof(page));
	for (int i = 0; i < 16; i++)
		ASSERT_EQ(write(fd, page, sizeof(page)), (ssize_t)sizeof(page));
	p = mmap(NULL, 16 * PG, PROT_READ, MAP_PRIVATE, fd, 0);
	ASSERT(p != MAP_FAILED);
	EXPECT_EQ(uffd_census_read(lv, &c, UFFD_CENSUS_LIGHT), 1); /* nothing resident yet */
	for (int i = 0; i < 16; i++)
		EXPECT_EQ(p[i * PG], 7);
	EXPECT_EQ(uffd_census_read(lv, &c, UFFD_CENSUS_LIGHT), -1);
	EXPECT_EQ(uffd_census_read(lv, &c, UFFD_CENSUS_AUTO), 0);
	munmap((void *)p, 16 * PG);
	close(fd);
	uffd_live_destroy(lv);
}

#else
TEST(census_full_under_a_sanitizer)
{
	struct uffd_live *lv = live_mk("modern-always", "256M");
	char *managed = live_map(lv, 16 * MB);
	struct uffd_census c;

	touch(managed, 6 * MB);
	ASSERT_EQ(uffd_census_read(lv, &c, UFFD_CENSUS_FULL), 0);
	EXPECT_GE(c.rss, 6 * MB);
	EXPECT_GE(c.anon, 6 * MB);
	uffd_live_destroy(lv);
}
#endif

TEST_MAIN()

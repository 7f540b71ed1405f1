/* A long-lived program whose memory starts as 4 KiB pages, for khugepaged and MADV_COLLAPSE:
 *
 *   collapse wait SIZE_MB TIMEOUT_S [HOLD_S]
 *       map SIZE_MB (2 MiB aligned) with MADV_NOHUGEPAGE, write every page (4 KiB faults), then
 *       MADV_HUGEPAGE, and while two threads keep reading and rewriting it (each page holds its
 *       index and a generation; a reader checks every word it reads), wait until the range's
 *       AnonHugePages reaches SIZE_MB or TIMEOUT_S passes, then go on HOLD_S more. Prints
 *         collapse: anonhuge_kb=K of=S seconds=T rewrites=N bad=B
 *       and exits 1 if a word read back was ever wrong.
 *   collapse madv
 *       MADV_COLLAPSE on: a fully written 2 MiB range (prints its result and AnonHugePages), a
 *       range with a hole, a range never touched, an unmapped range. Prints one line each:
 *         madv <case> rc=R errno=E anonhuge_kb=K
 *
 * It runs natively as well (the host kernel's khugepaged is slower: minutes).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

#define HP (2UL << 20)
#define PG 4096UL

static char *base;
static size_t len;
static volatile bool stop;
static unsigned long bad, rewrites;

static long anon_huge_kb(uintptr_t lo, uintptr_t hi)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[256];
	long kb = 0, v;
	uintptr_t a, b;
	bool in = false;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &a, &b) == 2)
			in = a < hi && b > lo;
		else if (in && sscanf(line, "AnonHugePages: %ld kB", &v) == 1)
			kb += v;
	}
	fclose(f);
	return kb;
}

static char *map_aligned(size_t n)
{
	char *p = mmap(NULL, n + HP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t a;

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	a = ((uintptr_t)p + HP - 1) & ~(HP - 1);
	if (a > (uintptr_t)p)
		munmap(p, a - (uintptr_t)p);
	munmap((char *)a + n, (uintptr_t)p + HP - a);
	return (char *)a;
}

/* Word k of page i holds i * 512 + k + generation << 40; a page's generation is in word 0. */
static void write_page(size_t i, uint64_t gen)
{
	uint64_t *w = (uint64_t *)(base + i * PG);

	for (size_t k = 1; k < PG / 8; k++)
		__atomic_store_n(&w[k], (i * 512 + k) | gen << 40, __ATOMIC_RELAXED);
	__atomic_store_n(&w[0], gen, __ATOMIC_RELEASE);
}

static void check_page(size_t i)
{
	uint64_t *w = (uint64_t *)(base + i * PG);
	uint64_t g0 = __atomic_load_n(&w[0], __ATOMIC_ACQUIRE);

	for (size_t k = 1; k < PG / 8; k++) {
		uint64_t v = __atomic_load_n(&w[k], __ATOMIC_RELAXED);

		/* the index part is always right; a word is never older than the generation word 0
		 * published after it (release/acquire), though a writer may have rewritten it
		 * since: a page copied back stale, or lost, breaks one or the other */
		if ((v & ((1ULL << 40) - 1)) != i * 512 + k || (v >> 40) < g0) {
			__atomic_fetch_add(&bad, 1, __ATOMIC_RELAXED);
			return;
		}
	}
}

static void *writer(void *arg)
{
	uint64_t gen = 1;
	size_t n = len / PG;

	(void)arg;
	while (!stop) { /* the pages of the even 4 KiB slots, rewritten over and over */
		gen++;
		for (size_t i = 0; i < n && !stop; i += 2)
			write_page(i, gen);
		__atomic_fetch_add(&rewrites, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *reader(void *arg)
{
	size_t n = len / PG;

	(void)arg;
	while (!stop)
		for (size_t i = 0; i < n && !stop; i++)
			check_page(i);
	return NULL;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int wait_mode(size_t mb, double timeout, double hold)
{
	pthread_t th[2];
	double t0;
	long kb = 0;

	len = mb << 20;
	base = map_aligned(len);
	madvise(base, len, MADV_NOHUGEPAGE);
	for (size_t i = 0; i < len / PG; i++)
		write_page(i, 1);
	madvise(base, len, MADV_HUGEPAGE);
	pthread_create(&th[0], NULL, writer, NULL);
	pthread_create(&th[1], NULL, reader, NULL);
	t0 = now_s();
	while (now_s() - t0 < timeout) {
		kb = anon_huge_kb((uintptr_t)base, (uintptr_t)base + len);
		if (kb >= (long)(len >> 10))
			break;
		usleep(50000);
	}
	if (hold > 0)
		usleep((useconds_t)(hold * 1e6));
	stop = true;
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	for (size_t i = 0; i < len / PG; i++) /* everything once more, quietly */
		check_page(i);
	printf("collapse: anonhuge_kb=%ld of=%zu seconds=%.1f rewrites=%lu bad=%lu\n", kb,
	       len >> 10, now_s() - t0, rewrites, bad);
	return bad ? 1 : 0;
}

static void madv_case(const char *name, char *p)
{
	int rc = madvise(p, HP, MADV_COLLAPSE);
	int e = rc ? errno : 0;

	printf("madv %s rc=%d errno=%d anonhuge_kb=%ld\n", name, rc, e,
	       anon_huge_kb((uintptr_t)p, (uintptr_t)p + HP));
}

static int madv_mode(void)
{
	char *p = map_aligned(4 * HP);

	madvise(p, 4 * HP, MADV_NOHUGEPAGE);
	madvise(p, 4 * HP, MADV_HUGEPAGE); /* one VMA again, faults still base? no: see below */
	/* faults of 4 KiB: write every page but the first of each 2 MiB, then that one, so that
	 * the first touch of each range is never in an empty extent... simpler: NOHUGEPAGE while
	 * writing, then undo it */
	madvise(p, 4 * HP, MADV_NOHUGEPAGE);
	for (size_t i = 0; i < HP / PG; i++)
		p[i * PG] = (char)(i | 1); /* range 0: full */
	for (size_t i = 1; i < HP / PG; i++)
		p[HP + i * PG] = (char)(i | 1); /* range 1: page 0 a hole */
	madvise(p, 4 * HP, MADV_HUGEPAGE);
	madv_case("full", p);
	for (size_t i = 0; i < HP / PG; i++)
		if (p[i * PG] != (char)(i | 1)) {
			printf("madv full: data lost at page %zu\n", i);
			return 1;
		}
	madv_case("hole", p + HP);
	madv_case("untouched", p + 2 * HP);
	munmap(p + 3 * HP, HP);
	madv_case("unmapped", p + 3 * HP);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "wait"))
		return wait_mode(strtoul(argv[2], NULL, 0), atof(argv[3]),
				 argc == 5 ? atof(argv[4]) : 0);
	if (argc == 2 && !strcmp(argv[1], "madv"))
		return madv_mode();
	fprintf(stderr, "usage: collapse wait SIZE_MB TIMEOUT_S [HOLD_S] | collapse madv\n");
	return 2;
}

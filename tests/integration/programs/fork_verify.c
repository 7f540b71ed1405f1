/* fork() while the emulator migrates the parent's pages: every child must read exactly what its
 * parent had written before the fork.
 *
 * The parent fills an area of 4 KiB pages (MADV_NOHUGEPAGE, so that they are migration sources)
 * with a pattern that depends only on the page and the word, then frees every other page, so
 * that its frames are scattered over half-empty pageblocks: exactly what compaction empties by
 * migrating the live pages when a 2 MiB block is wanted. A rewriter thread keeps writing
 * each page's first word again with the same value: a fork leaves the parent's pages shared
 * with the child, which the host refuses to move (UFFDIO_MOVE: EBUSY) until the parent writes
 * to them again. Churn threads keep faulting and freeing 2 MiB extents elsewhere, so that
 * emulated compaction keeps migrating the area's pages (unmap, copy, map back). Meanwhile the main
 * thread forks children without exec; each child verifies every page of the inherited area (or
 * PAGES_PER_CHILD random ones) and reports how many were wrong and how many of those were all zeros
 * (what a child forked while a page was moved out would see). Output: one line; exit status 1 if
 * any page was wrong.
 *
 *   fork_verify [VERIFICATIONS [AREA_MB [CHURNERS [PAGES_PER_CHILD]]]]   (0: every page)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGE  4096UL
#define HPAGE (2UL << 20)
#define WORDS (PAGE / 8)

static atomic_int stop;
static atomic_ullong churned;

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static void fill(uint64_t *page, uint64_t idx)
{
	for (uint64_t i = 0; i < WORDS; i++)
		page[i] = mix(idx * WORDS + i);
}

/* Live pages are the even ones; odd ones were freed (and read as zeros). 0: intact; 1: wrong;
 * 2: wrong and all zeros */
static int check(const uint64_t *page, uint64_t idx)
{
	int zeros = 1, bad = 0;

	for (uint64_t i = 0; i < WORDS; i++) {
		bad |= page[i] != (idx & 1 ? 0 : mix(idx * WORDS + i));
		zeros &= page[i] == 0;
	}
	return bad ? 1 + zeros : 0;
}

struct area {
	uint64_t *p;
	size_t npages;
};

/* Write every page's first word again (same value): the parent's pages become its own again
 * after each fork, and so movable. */
static void *rewrite(void *arg)
{
	const struct area *a = arg;

	while (!atomic_load(&stop))
		for (size_t i = 0; i < a->npages && !atomic_load(&stop); i += 2)
			__atomic_store_n(&a->p[i * WORDS], mix(i * WORDS), __ATOMIC_RELAXED);
	return NULL;
}

/* Fault and free 2 MiB extents, so that the emulated kernel compacts. */
static void *churn(void *arg)
{
	size_t len = 8 * HPAGE;

	(void)arg;
	while (!atomic_load(&stop)) {
		char *p =
		    mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			continue;
		for (size_t off = 0; off < len; off += PAGE)
			p[off] = (char)off;
		munmap(p, len);
		atomic_fetch_add(&churned, 1);
	}
	return NULL;
}

/* The child: verify random pages, report through the exit status (0..250 bad, 251+ zeros). */
static unsigned pages_per_child; /* 0: every page */

static int child(const uint64_t *area, size_t npages, unsigned seed, int out)
{
	unsigned bad = 0, zero = 0;
	uint64_t s = mix(seed);

	unsigned n = pages_per_child ? pages_per_child : (unsigned)npages;

	for (unsigned k = 0; k < n; k++) {
		uint64_t idx = k;
		int c;

		if (pages_per_child) {
			s = mix(s);
			idx = s % npages;
		}
		c = check(area + idx * WORDS, idx);
		bad += c != 0;
		zero += c == 2;
	}
	{
		unsigned msg[2] = {bad, zero};
		ssize_t w = write(out, msg, sizeof(msg));

		(void)w;
	}
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	unsigned long want = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
	size_t area_mb = argc > 2 ? strtoul(argv[2], NULL, 10) : 8;
	unsigned nchurn = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 3;
	size_t len = area_mb << 20, npages = len / PAGE;
	unsigned long verified = 0, bad = 0, zero = 0, children = 0;
	pthread_t th[8], rw;
	struct area a;
	uint64_t *area;
	int pfd[2];

	if (argc > 4)
		pages_per_child = (unsigned)strtoul(argv[4], NULL, 10);
	if (!npages) {
		fprintf(stderr, "fork_verify: nothing to verify\n");
		return 2;
	}
	area = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED || pipe(pfd) < 0) {
		perror("fork_verify: setup");
		return 2;
	}
	madvise(area, len, MADV_NOHUGEPAGE); /* 4 KiB pages: compaction may migrate them */
	for (size_t i = 0; i < npages; i++)
		fill(area + i * WORDS, i);
	for (size_t i = 1; i < npages; i += 2) /* half-empty pageblocks: compaction's food */
		madvise(area + i * WORDS, PAGE, MADV_DONTNEED);
	if (nchurn > 8)
		nchurn = 8;
	for (unsigned i = 0; i < nchurn; i++)
		pthread_create(&th[i], NULL, churn, NULL);
	a.p = area;
	a.npages = npages;
	pthread_create(&rw, NULL, rewrite, &a);
	while (verified < want) {
		pid_t pid = fork();
		unsigned msg[2];
		int st;

		if (pid < 0) {
			perror("fork_verify: fork");
			break;
		}
		if (pid == 0)
			_exit(child(area, npages, (unsigned)children, pfd[1]));
		children++;
		if (read(pfd[0], msg, sizeof(msg)) != (ssize_t)sizeof(msg) ||
		    waitpid(pid, &st, 0) != pid) {
			fprintf(stderr, "fork_verify: child %d said nothing\n", (int)pid);
			bad++;
			break;
		}
		verified += pages_per_child ? pages_per_child : npages;
		bad += msg[0];
		zero += msg[1];
	}
	atomic_store(&stop, 1);
	for (unsigned i = 0; i < nchurn; i++)
		pthread_join(th[i], NULL);
	pthread_join(rw, NULL);
	for (size_t i = 0; i < npages; i++) /* and the parent's own copy is intact too */
		bad += check(area + i * WORDS, i) != 0;
	printf("fork_verify: children=%lu verifications=%lu bad_pages=%lu zero_pages=%lu "
	       "churned=%llu\n",
	       children, verified, bad, zero, (unsigned long long)atomic_load(&churned));
	return bad ? 1 : 0;
}

/* Zero pages under the live emulator: every page read first, then written, must hold exactly
 * what was written, and every write must be seen (tests/integration/live_zeropage.sh counts the
 * write-protect faults in the report).
 *
 *   zeropage SIZE_MB THREADS [all|count]
 *
 * count: one 2 MiB-aligned region of SIZE_MB: THREADS threads read every page (each from its own
 * starting point, so reads of one page race), then each thread writes its own word of every
 * page (so writes to one page race too), then every page is checked.
 * all: the same, then
 *   - part of the region freed (MADV_DONTNEED) after the writes, read again (zeros) and written;
 *   - a second region read only, then fork(): the child sees zeros, writes its own pattern and
 *     checks it; the parent then still sees zeros, writes its pattern and checks it;
 *   - a third region read only, then moved and grown by mremap, then written and checked;
 *   - a fourth region (2 MiB) read, one page written (the huge zero page split), collapsed
 *     (MADV_COLLAPSE; refused by kernels without it: then left as it is), checked and written.
 * One line on stdout; exit status 1 on the first wrong word (named on stderr).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

#define PAGE  4096UL
#define HPAGE (2UL << 20)
#define MAXT  16

static size_t npages;
static int nthreads;
static volatile uint64_t *area;
static pthread_barrier_t bar;
static unsigned long bad;

static uint64_t pattern(size_t page, int word, uint64_t salt)
{
	return (page * 2654435761ULL + (uint64_t)word * 40503ULL + salt) | 1;
}

static void *aligned_map(size_t len)
{
	char *p =
	    mmap(NULL, len + HPAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t a;

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	a = ((uintptr_t)p + HPAGE - 1) & ~(HPAGE - 1);
	if (a > (uintptr_t)p)
		munmap(p, a - (uintptr_t)p);
	munmap((char *)a + len, (uintptr_t)p + HPAGE - a);
	return (void *)a;
}

static void fail(const char *what, size_t page, int word, uint64_t got, uint64_t want)
{
	fprintf(stderr, "zeropage: %s: page %zu word %d holds %#llx, expected %#llx\n", what, page,
		word, (unsigned long long)got, (unsigned long long)want);
	__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
}

/* Every word of pages [p0, p1) of a is zero. */
static void check_zero(const char *what, volatile uint64_t *a, size_t p0, size_t p1)
{
	for (size_t p = p0; p < p1; p++)
		for (int w = 0; w < (int)(PAGE / 8); w++)
			if (a[p * (PAGE / 8) + (size_t)w])
				return fail(what, p, w, a[p * (PAGE / 8) + (size_t)w], 0);
}

/* Word t of every page of [p0, p1) holds pattern(p, t, salt) for t < nwords, the rest zero. */
static void check(const char *what, volatile uint64_t *a, size_t p0, size_t p1, int nwords,
		  uint64_t salt)
{
	for (size_t p = p0; p < p1; p++)
		for (int w = 0; w < (int)(PAGE / 8); w++) {
			uint64_t want = w < nwords ? pattern(p, w, salt) : 0;

			if (a[p * (PAGE / 8) + (size_t)w] != want)
				return fail(what, p, w, a[p * (PAGE / 8) + (size_t)w], want);
		}
}

static void write_all(volatile uint64_t *a, size_t p0, size_t p1, int word, uint64_t salt)
{
	for (size_t p = p0; p < p1; p++)
		a[p * (PAGE / 8) + (size_t)word] = pattern(p, word, salt);
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	size_t start = npages * (size_t)t / (size_t)nthreads;
	uint64_t sum = 0;

	pthread_barrier_wait(&bar);
	for (size_t i = 0; i < npages; i++) /* reads: each from its own start */
		sum += area[((start + i) % npages) * (PAGE / 8) + (size_t)t];
	if (sum)
		fail("read first", start, t, sum, 0);
	pthread_barrier_wait(&bar);
	write_all(area, 0, npages, t, 0); /* writes: word t of every page, all threads at once */
	pthread_barrier_wait(&bar);
	return NULL;
}

int main(int argc, char **argv)
{
	size_t mb = argc > 1 ? strtoul(argv[1], NULL, 0) : 8;
	int all = argc > 3 && !strcmp(argv[3], "all");
	pthread_t th[MAXT];
	size_t len = mb << 20;

	nthreads = argc > 2 ? atoi(argv[2]) : 4;
	if (!mb || nthreads < 1 || nthreads > MAXT) {
		fprintf(stderr, "usage: zeropage SIZE_MB THREADS [all|count]\n");
		return 2;
	}
	npages = len / PAGE;
	area = aligned_map(len);
	pthread_barrier_init(&bar, NULL, (unsigned)nthreads);
	for (int t = 0; t < nthreads; t++)
		pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
	for (int t = 0; t < nthreads; t++)
		pthread_join(th[t], NULL);
	check("after the writes", area, 0, npages, nthreads, 0);
	if (all && !bad) {
		size_t q = npages / 4;
		volatile uint64_t *b, *c;
		uint64_t sum = 0;
		pid_t pid;
		int st = 0;

		/* a freed quarter (misaligned: a huge extent in part) reads zeros again */
		madvise((char *)area + q * PAGE + PAGE * 3, q * PAGE, MADV_DONTNEED);
		check_zero("freed, read", area, q + 3, 2 * q + 3);
		write_all(area, q + 3, 2 * q + 3, 0, 9);
		check("freed, written", area, q + 3, 2 * q + 3, 1, 9);
		check("the rest", area, 2 * q + 3, npages, nthreads, 0);

		/* fork after a read-only touch */
		b = aligned_map(len);
		for (size_t p = 0; p < npages; p++)
			sum += b[p * (PAGE / 8) + p % (PAGE / 8)];
		if (sum)
			fail("read before fork", 0, 0, sum, 0);
		pid = fork();
		if (pid == 0) {
			check_zero("child", b, 0, npages);
			write_all(b, 0, npages, 0, 5);
			write_all(b, 0, npages, 1, 5);
			check("child, written", b, 0, npages, 2, 5);
			_exit(bad ? 1 : 0);
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			fail("the fork child", 0, 0, (uint64_t)st, 0);
		check_zero("parent after the child", b, 0, npages);
		write_all(b, 0, npages, 0, 7);
		check("parent, written", b, 0, npages, 1, 7);

		/* mremap after a read-only touch: moved and grown */
		c = aligned_map(len);
		for (size_t p = 0; p < npages; p++)
			sum += c[p * (PAGE / 8)];
		c = mremap((void *)c, len, 2 * len, MREMAP_MAYMOVE);
		if (c == MAP_FAILED) {
			perror("mremap");
			return 2;
		}
		check_zero("remapped", c, 0, 2 * npages);
		write_all(c, 0, 2 * npages, 0, 3);
		check("remapped, written", c, 0, 2 * npages, 1, 3);

		/* a split huge zero page collapsed: 1 page of data, 511 zero pages */
		c = aligned_map(HPAGE);
		for (size_t p = 0; p < HPAGE / PAGE; p++)
			sum += c[p * (PAGE / 8)];
		c[0] = pattern(0, 0, 11);
		madvise((void *)c, HPAGE, MADV_COLLAPSE);
		check("collapsed, page 0", c, 0, 1, 1, 11);
		check_zero("collapsed, the rest", c, 1, HPAGE / PAGE);
		write_all(c, 0, HPAGE / PAGE, 0, 11);
		check("collapsed, written", c, 0, HPAGE / PAGE, 1, 11);
	}
	printf("zeropage: pages=%zu threads=%d %s bad=%lu\n", npages, nthreads,
	       all ? "all" : "count", bad);
	return bad ? 1 : 0;
}

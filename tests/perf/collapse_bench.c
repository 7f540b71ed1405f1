/* What a collapse costs the program: writer threads keep writing to the 2 MiB range that
 * MADV_COLLAPSE is collapsing, and each write is timed; the longest write during one collapse is
 * the program-visible hold of that collapse (the kernel's collapse_huge_page holds mmap_lock for
 * write from the PMD's flush to its set: a write to the range waits for it). Run natively for
 * the kernel's figure and under `thpemu run` for thpemu's, in the same way (collapse_bench.sh).
 *
 *   collapse_bench EXTENTS WRITERS
 *
 * The region is first touched with MADV_NOHUGEPAGE (4 KiB pages), then advised MADV_HUGEPAGE and
 * collapsed one extent at a time by the main thread. Every write adds 1 to a per-page counter;
 * the sum over the region must equal the writes made (no write lost across a collapse).
 * Prints one line per extent, `extent I rc R call_us C hold_us H quiet_us Q` (R: MADV_COLLAPSE's
 * errno, 0 when it succeeded; Q: the longest write in a window as long as the settling time
 * just before, without a collapse: the noise floor of the machine), and `summary extents=E huge=K
 * writes=W lost=L` (huge: AnonHugePages of the region, in extents). Exits 1 when a write was lost.
 */
#include <errno.h>
#include <pthread.h>
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

#define HPAGE (2UL << 20)
#define PAGE  4096UL
#define NPAGE (HPAGE / PAGE)

static uint8_t *region;
static unsigned long nextents;
static volatile int current = -1; /* the extent being collapsed, -1 between collapses */
static volatile int stop;

struct writer {
	pthread_t t;
	unsigned seed;
	uint64_t writes; /* every write made */
	uint64_t max_ns; /* the longest write since the last reset */
	volatile int reset;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *write_loop(void *arg)
{
	struct writer *w = arg;

	while (!stop) {
		int e = current;
		uint64_t t0, d;
		unsigned long p;

		if (w->reset) {
			w->max_ns = 0;
			__atomic_store_n(&w->reset, 0, __ATOMIC_RELEASE);
		}
		if (e < 0)
			e = (int)(rand_r(&w->seed) % nextents);
		p = (unsigned long)rand_r(&w->seed) % NPAGE;
		t0 = now_ns();
		__atomic_fetch_add((uint64_t *)(region + (unsigned long)e * HPAGE + p * PAGE), 1,
				   __ATOMIC_RELAXED);
		d = now_ns() - t0;
		w->writes++;
		if (d > w->max_ns)
			__atomic_store_n(&w->max_ns, d, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* Start every writer's longest write afresh, and wait until each has. */
static void reset(struct writer *ws, unsigned long nw)
{
	for (unsigned long i = 0; i < nw; i++)
		__atomic_store_n(&ws[i].reset, 1, __ATOMIC_RELEASE);
	for (unsigned long i = 0; i < nw; i++)
		while (__atomic_load_n(&ws[i].reset, __ATOMIC_ACQUIRE))
			sched_yield();
}

static uint64_t longest(const struct writer *ws, unsigned long nw)
{
	uint64_t m = 0;

	for (unsigned long i = 0; i < nw; i++) {
		uint64_t v = __atomic_load_n(&ws[i].max_ns, __ATOMIC_RELAXED);

		if (v > m)
			m = v;
	}
	return m;
}

static long anon_huge_kb(void)
{
	char line[256];
	FILE *f = fopen("/proc/self/smaps", "r");
	unsigned long lo = 0, hi = 0, r0 = (unsigned long)region;
	long kb = 0;
	int in = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		long v;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			in = lo < r0 + nextents * HPAGE && hi > r0;
		else if (in && sscanf(line, "AnonHugePages: %ld kB", &v) == 1)
			kb += v;
	}
	fclose(f);
	return kb;
}

int main(int argc, char **argv)
{
	unsigned long nw, want = 0, got = 0;
	struct writer *ws;
	uint8_t *raw;

	if (argc != 3 || (nextents = strtoul(argv[1], NULL, 10)) == 0 || nextents > 4096 ||
	    (nw = strtoul(argv[2], NULL, 10)) > 64) {
		fprintf(stderr, "usage: collapse_bench EXTENTS(1-4096) WRITERS(0-64)\n");
		return 2;
	}
	raw = mmap(NULL, (nextents + 1) * HPAGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	region = (uint8_t *)(((uintptr_t)raw + HPAGE - 1) & ~(HPAGE - 1));
	if (madvise(region, nextents * HPAGE, MADV_NOHUGEPAGE) != 0) {
		perror("madvise(MADV_NOHUGEPAGE)");
		return 1;
	}
	for (unsigned long i = 0; i < nextents * NPAGE; i++)
		*(uint64_t *)(region + i * PAGE) = 0;
	if (madvise(region, nextents * HPAGE, MADV_HUGEPAGE) != 0) {
		perror("madvise(MADV_HUGEPAGE)");
		return 1;
	}
	ws = calloc(nw ? nw : 1, sizeof(*ws));
	if (!ws)
		return 1;
	for (unsigned long i = 0; i < nw; i++) {
		ws[i].seed = (unsigned)(i * 7919 + 1);
		if (pthread_create(&ws[i].t, NULL, write_loop, &ws[i]) != 0) {
			perror("pthread_create");
			return 1;
		}
	}
	for (unsigned long e = 0; e < nextents; e++) {
		struct timespec settle = {0, 2000000};
		uint64_t t0, call, hold, quiet;
		int rc;

		current = (int)e;
		nanosleep(&settle, NULL); /* the writers are on the extent */
		reset(ws, nw);
		nanosleep(&settle, NULL); /* the same writes without a collapse: the noise floor */
		quiet = longest(ws, nw);
		reset(ws, nw);
		t0 = now_ns();
		rc = madvise(region + e * HPAGE, HPAGE, MADV_COLLAPSE) ? errno : 0;
		call = now_ns() - t0;
		nanosleep(&settle, NULL); /* a write waiting on the range finishes */
		hold = longest(ws, nw);
		printf("extent %lu rc %d call_us %.1f hold_us %.1f quiet_us %.1f\n", e, rc,
		       call / 1e3, hold / 1e3, quiet / 1e3);
	}
	stop = 1;
	for (unsigned long i = 0; i < nw; i++) {
		pthread_join(ws[i].t, NULL);
		want += ws[i].writes;
	}
	for (unsigned long i = 0; i < nextents * NPAGE; i++)
		got += *(uint64_t *)(region + i * PAGE);
	printf("summary extents=%lu huge=%ld writes=%lu lost=%ld\n", nextents,
	       anon_huge_kb() / (long)(HPAGE >> 10), want, (long)(want - got));
	return want == got ? 0 : 1;
}

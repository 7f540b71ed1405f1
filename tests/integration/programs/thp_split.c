/* THPs split over time, seen from a program (tests/integration/live_split.sh).
 *
 *   thp_split partial PRESSURE_MB
 *       maps 4 MiB (two THPs under modern-always), fills every page with a pattern, unmaps the
 *       last 1 MiB of the second THP (a partial unmap: the PMD is split, the THP is split at
 *       once (3.x) or queued for the shrinker (6.12)), then touches PRESSURE_MB more so that
 *       reclaim (and with it the THP shrinker) runs, and checks the 3 MiB it kept.
 *   thp_split underused NTHP PRESSURE_MB [wait]
 *       maps NTHP THPs and writes one byte every 12 pages (~43 of 512 pages not zero), then
 *       touches PRESSURE_MB (every page written: not underused) while a second thread writes a
 *       few more of the zero pages (racing with any split). Prints how many pages of the range
 *       are resident (mincore) before reading them back; with `wait` it waits up to 5 s for the
 *       range to lose pages (a split by the host's kswapd may come a little later). Then checks
 *       every byte: written pages hold their bytes, the others read zero.
 *   thp_split hold NTHP READY_FILE SECS
 *       the same THPs (no racer), then creates READY_FILE and waits up to SECS for them to be
 *       split by another process's reclaim (its request to this process), then checks them.
 *   thp_split pressure MB
 *       touches MB (for `hold`: the pressure from another process).
 * Exit status 0 when the data is intact, 1 otherwise (2: usage or setup).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE   4096UL
#define HPAGE  (2UL << 20)
#define STRIDE 12 /* one page written in 12: 43 of 512 */

static uint64_t pattern(size_t word)
{
	uint64_t x = (uint64_t)word * 0x9e3779b97f4a7c15ULL + 0x1234567;

	return x ^ (x >> 29) ? x ^ (x >> 29) : 1;
}

static void *map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	return p;
}

/* Touch mb MiB, every page written with a non-zero byte: memory pressure on the pool. */
static void pressure(size_t mb)
{
	uint8_t *p = map(mb << 20);

	for (size_t off = 0; off < (mb << 20); off += PAGE)
		p[off] = (uint8_t)(off / PAGE) | 1;
	/* kept mapped until exit: the pool stays under pressure */
}

static size_t resident(const void *addr, size_t len)
{
	unsigned char *vec = malloc(len / PAGE);
	size_t n = 0;

	if (!vec || mincore((void *)addr, len, vec) != 0) {
		perror("mincore");
		exit(2);
	}
	for (size_t i = 0; i < len / PAGE; i++)
		n += vec[i] & 1;
	free(vec);
	return n;
}

static int partial(size_t pressure_mb)
{
	size_t len = 2 * HPAGE, keep = len - (1UL << 20), bad = 0;
	uint64_t *w = map(len);

	for (size_t i = 0; i < len / sizeof(*w); i++)
		w[i] = pattern(i);
	if (munmap((uint8_t *)w + keep, len - keep) != 0) {
		perror("munmap");
		return 2;
	}
	pressure(pressure_mb);
	for (size_t i = 0; i < keep / sizeof(*w); i++)
		bad += w[i] != pattern(i);
	printf("thp_split partial: kept=%zu bad_words=%zu\n", keep, bad);
	return bad ? 1 : 0;
}

struct racer {
	uint8_t *base;
	size_t nthp;
	volatile int stop;
	uint8_t *written; /* per page: 1 if the racer wrote it */
};

/* Writes a few of the zero pages (offset 6 in a stride) while the pressure runs: a split must
 * never lose such a write, whenever it lands. At most 8 per THP: they stay underused. */
static void *race_writes(void *arg)
{
	struct racer *rc = arg;

	for (size_t k = 0; k < 8 && !rc->stop; k++) {
		for (size_t t = 0; t < rc->nthp; t++) {
			size_t page = t * (HPAGE / PAGE) + k * STRIDE + 6;

			rc->base[page * PAGE + 100] = (uint8_t)(page | 0x80);
			__atomic_store_n(&rc->written[page], 1, __ATOMIC_RELEASE);
		}
		usleep(2000);
	}
	return NULL;
}

/* What the racer and the check share with the set-up. */
static int check_sparse(uint8_t *p, size_t len, const uint8_t *written, size_t res0, size_t res,
			const char *what)
{
	size_t npages = len / PAGE, bad = 0;

	for (size_t i = 0; i < npages; i++) {
		const uint8_t *pg = p + i * PAGE;

		for (size_t b = 0; b < PAGE; b++) {
			uint8_t want = 0;

			if (b == 0 && i % STRIDE == 0)
				want = (uint8_t)(i | 1);
			else if (b == 100 && written && written[i])
				want = (uint8_t)(i | 0x80);
			bad += pg[b] != want;
		}
	}
	printf("thp_split %s: pages=%zu resident_before=%zu resident_after=%zu bad_bytes=%zu\n",
	       what, npages, res0, res, bad);
	return bad ? 1 : 0;
}

/* Wait up to secs for [p, p + len) to lose resident pages; returns the resident count. */
static size_t wait_for_split(const uint8_t *p, size_t len, size_t res0, int secs)
{
	struct timespec t0, t;
	size_t res = resident(p, len);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (res == res0) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec >= secs)
			break;
		usleep(10000);
		res = resident(p, len);
	}
	return res;
}

/* Sparse THPs in this process, the pressure from another one: say `ready` in a file, then
 * wait for another process's reclaim to have them split (by this process's agent). */
static int hold(size_t nthp, const char *ready, int secs)
{
	size_t len = nthp * HPAGE, res0, res;
	uint8_t *p = map(len);
	FILE *f;

	for (size_t i = 0; i < len / PAGE; i += STRIDE)
		p[i * PAGE] = (uint8_t)(i | 1);
	res0 = resident(p, len);
	f = fopen(ready, "w");
	if (!f || fclose(f) != 0)
		return 2;
	res = wait_for_split(p, len, res0, secs);
	return check_sparse(p, len, NULL, res0, res, "hold");
}

static int underused(size_t nthp, size_t pressure_mb, int wait)
{
	size_t len = nthp * HPAGE, npages = len / PAGE, res0, res;
	uint8_t *p = map(len);
	struct racer rc = {p, nthp, 0, calloc(npages, 1)};
	pthread_t th;
	int bad;

	if (!rc.written)
		return 2;
	for (size_t i = 0; i < npages; i += STRIDE)
		p[i * PAGE] = (uint8_t)(i | 1);
	res0 = resident(p, len);
	if (pthread_create(&th, NULL, race_writes, &rc) != 0)
		return 2;
	pressure(pressure_mb);
	rc.stop = 1;
	pthread_join(th, NULL);
	res = wait ? wait_for_split(p, len, res0, 5) : resident(p, len);
	bad = check_sparse(p, len, rc.written, res0, res, "underused");
	free(rc.written);
	return (int)bad;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "partial"))
		return partial(strtoul(argv[2], NULL, 0));
	if (argc >= 4 && !strcmp(argv[1], "underused"))
		return underused(strtoul(argv[2], NULL, 0), strtoul(argv[3], NULL, 0),
				 argc >= 5 && !strcmp(argv[4], "wait"));
	if (argc >= 5 && !strcmp(argv[1], "hold"))
		return hold(strtoul(argv[2], NULL, 0), argv[3], atoi(argv[4]));
	if (argc >= 3 && !strcmp(argv[1], "pressure")) {
		pressure(strtoul(argv[2], NULL, 0));
		return 0;
	}
	fprintf(stderr,
		"usage: thp_split partial PRESSURE_MB | underused NTHP PRESSURE_MB [wait] | "
		"hold NTHP READY_FILE SECS | pressure MB\n");
	return 2;
}

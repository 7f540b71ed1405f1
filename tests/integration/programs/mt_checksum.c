/* Multi-threaded allocation workload with a deterministic output: each thread allocates buffers
 * of varying sizes (malloc, realloc, and its own large mmaps), fills them from a seeded
 * generator, checks them and folds them into a checksum. The output is the same natively and
 * under thpemu, whatever the scheduling; any lost or corrupted byte changes it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

struct job {
	pthread_t th;
	unsigned id, rounds;
	uint64_t sum;
	unsigned bad;
};

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void fill(uint64_t *p, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = next(&seed);
}

static uint64_t fold(const uint64_t *p, size_t n, uint64_t seed, unsigned *bad)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++) {
		if (p[i] != next(&seed))
			(*bad)++;
		h = (h ^ p[i]) * 1099511628211ULL;
	}
	return h;
}

static void *run(void *arg)
{
	struct job *j = arg;

	for (unsigned r = 0; r < j->rounds; r++) {
		size_t n = ((size_t)r * 7919 + j->id * 104729) % (1 << 20) + 4096; /* words */
		uint64_t seed = ((uint64_t)j->id << 32 | r) + 1;
		uint64_t *p = malloc(n * 8), *q;

		if (!p) {
			perror("mt_checksum: malloc");
			exit(1);
		}
		fill(p, n, seed);
		q = realloc(p, n * 12); /* keeps the first n words */
		if (!q) {
			perror("mt_checksum: realloc");
			exit(1);
		}
		j->sum += fold(q, n, seed, &j->bad);
		free(q);
		if (r % 8 == 0) { /* a large mapping of its own, partly released */
			size_t m = (4 << 20) / 8;
			uint64_t *a = mmap(NULL, m * 8, PROT_READ | PROT_WRITE,
					   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			fill(a, m, seed * 31);
			madvise(a + m / 2, m * 4, MADV_DONTNEED);
			j->sum += fold(a, m / 2, seed * 31, &j->bad);
			for (size_t i = m / 2; i < m; i++)
				j->bad += a[i] != 0;
			munmap(a, m * 8);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned nthreads = argc > 1 ? (unsigned)atoi(argv[1]) : 4;
	unsigned rounds = argc > 2 ? (unsigned)atoi(argv[2]) : 64;
	struct job *jobs = calloc(nthreads, sizeof(*jobs));
	uint64_t total = 0;
	unsigned bad = 0;

	if (!jobs) {
		perror("mt_checksum: calloc");
		return 1;
	}
	for (unsigned t = 0; t < nthreads; t++) {
		jobs[t].id = t;
		jobs[t].rounds = rounds;
		pthread_create(&jobs[t].th, NULL, run, &jobs[t]);
	}
	for (unsigned t = 0; t < nthreads; t++) {
		pthread_join(jobs[t].th, NULL);
		printf("thread %u sum %016" PRIx64 "\n", t, jobs[t].sum);
		total ^= jobs[t].sum;
		bad += jobs[t].bad;
	}
	printf("total %016" PRIx64 " bad %u\n", total, bad);
	free(jobs);
	return bad ? 1 : 0;
}

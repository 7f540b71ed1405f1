/* zero_reuse MIB ROUNDS THREADS: a first touch reads zeros, however often memory is freed and
 * touched again. Each round, THREADS threads each take their share of MIB MiB (2 MiB aligned):
 * every 2 MiB extent gets a first write at a page inside it (a huge first touch under thpemu:
 * a staging THP moved in), then every byte of the extent but that one must be zero; then the
 * extent is filled with the round's pattern, so that a frame or a staged page handed out again
 * without a clear would show it. Between rounds the memory is freed: MADV_DONTNEED on even
 * rounds, one extent at a time, munmap and a new mmap on odd ones. Prints
 * "zero_reuse: ok EXTENTS extents" or the first bad byte, exit 1. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HPAGE (2UL << 20)

static uint8_t *base;
static size_t len;
static unsigned nthreads, round_no;
static unsigned long checked;
static int bad;

struct part {
	unsigned idx;
	pthread_t th;
};

static void *touch(void *arg)
{
	const struct part *pt = arg;
	size_t per = len / HPAGE / nthreads;
	uint8_t mark = (uint8_t)(0x5a ^ round_no), fill = (uint8_t)(0xa0 + round_no % 32);

	for (size_t e = pt->idx * per; e < (pt->idx + 1) * per; e++) {
		uint8_t *x = base + e * HPAGE;
		size_t at = ((e * 37 + round_no * 11) % 512) * 4096 + 123; /* the faulting byte */

		x[at] = mark;
		for (size_t i = 0; i < HPAGE; i++) {
			if (i != at && x[i] != 0) {
				fprintf(stderr,
					"zero_reuse: round %u extent %zu byte %zu is 0x%02x after "
					"a first touch\n",
					round_no, e, i, x[i]);
				__atomic_store_n(&bad, 1, __ATOMIC_RELAXED);
				return NULL;
			}
		}
		memset(x, fill, HPAGE);
		__atomic_add_fetch(&checked, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static uint8_t *map_aligned(size_t n)
{
	uint8_t *p =
	    mmap(NULL, n + HPAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t a;

	if (p == MAP_FAILED)
		return NULL;
	a = ((uintptr_t)p + HPAGE - 1) & ~(HPAGE - 1);
	if (a > (uintptr_t)p)
		munmap(p, a - (uintptr_t)p);
	munmap((uint8_t *)a + n, (uintptr_t)p + HPAGE - a);
	return (uint8_t *)a;
}

int main(int argc, char **argv)
{
	unsigned rounds;
	struct part pt[16];

	if (argc != 4 || (len = strtoul(argv[1], NULL, 10) << 20) < HPAGE ||
	    !(rounds = (unsigned)atoi(argv[2])) || !(nthreads = (unsigned)atoi(argv[3])) ||
	    nthreads > 16) {
		fprintf(stderr, "usage: zero_reuse MIB ROUNDS THREADS(1..16)\n");
		return 2;
	}
	len = len / HPAGE / nthreads * nthreads * HPAGE;
	for (round_no = 0; round_no < rounds && !bad; round_no++) {
		if (!base && !(base = map_aligned(len))) {
			perror("zero_reuse: mmap");
			return 1;
		}
		for (unsigned i = 0; i < nthreads; i++) {
			pt[i].idx = i;
			pthread_create(&pt[i].th, NULL, touch, &pt[i]);
		}
		for (unsigned i = 0; i < nthreads; i++)
			pthread_join(pt[i].th, NULL);
		if (round_no % 2 == 0) {
			/* not MADV_FREE: a page it freed may keep its data until reclaimed */
			for (size_t e = 0; e < len / HPAGE; e++)
				madvise(base + e * HPAGE, HPAGE, MADV_DONTNEED);
		} else {
			munmap(base, len);
			base = NULL;
		}
	}
	if (bad)
		return 1;
	printf("zero_reuse: ok %lu extents\n", checked);
	return 0;
}

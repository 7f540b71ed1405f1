/* Stress: writer threads keep checksummed patterns in their pages while other threads churn
 * memory (MADV_DONTNEED, partial and whole munmap) and a huge-fault thread keeps asking for
 * 2 MiB extents, so that emulated compaction migrates the program's pages under everyone's feet.
 * Every thread verifies its own data; any byte that is neither what it wrote nor zero where it
 * freed memory is corrupted. Output: one line with the counts; exit 1 if anything was corrupted.
 *
 *   stress_migrate [SECONDS [WRITERS [CHURNERS [MB_PER_WRITER]]]]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE  4096UL
#define HPAGE (2UL << 20)

static atomic_ullong corrupted, verified, churned, huge_touches;
static atomic_int stop, reported;

/* Describe the first few corrupted pages on stderr (what was there instead). */
static void describe(const char *who, const void *page, uint64_t tag, unsigned long bad)
{
	const uint64_t *w = page;
	unsigned zero = 0;

	if (!bad || atomic_fetch_add(&reported, 1) >= 8)
		return;
	for (size_t i = 0; i < PAGE / 8; i++)
		zero += w[i] == 0;
	fprintf(stderr,
		"stress: %s page %p: %lu bad bytes, word0 %#llx (expected tag %#llx), "
		"%u of 512 words zero\n",
		who, page, bad, (unsigned long long)w[0], (unsigned long long)tag, zero);
}

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A page: word 0 = tag, the rest generated from the tag. */
static void write_page(uint64_t *pg, uint64_t tag)
{
	uint64_t s = tag | 1;

	pg[0] = tag;
	for (size_t i = 1; i < PAGE / 8; i++)
		pg[i] = xs(&s);
}

/* Bytes of pg that differ from the page tag would have produced. */
static unsigned long check_page(const uint64_t *pg, uint64_t tag)
{
	uint64_t s = tag | 1;
	unsigned long bad = 0;

	if (pg[0] != tag)
		bad += 8;
	for (size_t i = 1; i < PAGE / 8; i++) {
		uint64_t want = xs(&s);

		if (pg[i] != want)
			for (int b = 0; b < 8; b++)
				bad += ((pg[i] >> (8 * b)) & 0xff) != ((want >> (8 * b)) & 0xff);
	}
	return bad;
}

static unsigned long check_zero(const uint64_t *p, size_t words)
{
	unsigned long bad = 0;

	for (size_t i = 0; i < words; i++)
		bad += p[i] != 0;
	return bad * 8;
}

struct writer {
	pthread_t th;
	unsigned id;
	size_t bytes;
	bool huge;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	size_t n = w->bytes / PAGE;
	uint64_t *area =
	    mmap(NULL, w->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t *tags = calloc(n, sizeof(*tags)), seed = w->id * 7919 + 1;
	unsigned long writes = 0;

	if (w->huge)
		madvise(area, w->bytes, MADV_HUGEPAGE);
	while (!stop) {
		size_t i = xs(&seed) % n;

		tags[i] = ((uint64_t)w->id << 48) | ((uint64_t)i << 20) | (writes & 0xfffff);
		write_page(area + i * (PAGE / 8), tags[i]);
		if (++writes % 256 == 0) {
			for (size_t k = 0; k < n; k++) {
				const uint64_t *pg = area + k * (PAGE / 8);

				unsigned long bad =
				    tags[k] ? check_page(pg, tags[k]) : check_zero(pg, PAGE / 8);

				describe("writer", pg, tags[k], bad);
				corrupted += bad;
				verified++;
			}
		}
	}
	munmap(area, w->bytes);
	free(tags);
	return NULL;
}

static void *churner_main(void *arg)
{
	uint64_t seed = (uintptr_t)arg * 104729 + 3;

	while (!stop) {
		size_t len = (1 + xs(&seed) % 4) * HPAGE, n = len / PAGE;
		uint64_t *a =
		    mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		size_t d0 = xs(&seed) % n, dn = 1 + xs(&seed) % (n - d0), cut = n / 2;

		for (size_t k = 0; k < n; k++)
			write_page(a + k * (PAGE / 8), seed + k);
		madvise(a + d0 * (PAGE / 8), dn * PAGE, MADV_DONTNEED);
		for (size_t k = 0; k < n; k++) {
			const uint64_t *pg = a + k * (PAGE / 8);
			bool freed = k >= d0 && k < d0 + dn;
			unsigned long bad =
			    freed ? check_zero(pg, PAGE / 8) : check_page(pg, seed + k);

			describe(freed ? "churner(freed)" : "churner", pg, freed ? 0 : seed + k,
				 bad);
			corrupted += bad;
		}
		for (size_t k = d0; k < d0 + dn; k++)
			write_page(a + k * (PAGE / 8), seed + k);
		munmap(a, cut * PAGE); /* the head goes first, the tail stays checked */
		for (size_t k = cut; k < n; k++) {
			unsigned long bad = check_page(a + k * (PAGE / 8), seed + k);

			describe("churner(tail)", a + k * (PAGE / 8), seed + k, bad);
			corrupted += bad;
		}
		munmap(a + cut * (PAGE / 8), (n - cut) * PAGE);
		churned++;
	}
	return NULL;
}

/* Keeps faulting fresh MADV_HUGEPAGE extents: the faults that make emulated compaction run. */
static void *huge_main(void *arg)
{
	while (!stop) {
		size_t len = 4 * HPAGE;
		char *p =
		    mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		madvise(p, len, MADV_HUGEPAGE);
		for (size_t off = 0; off < len; off += HPAGE)
			p[off] = 1;
		corrupted += p[HPAGE + 5] != 0;
		munmap(p, len);
		huge_touches++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned seconds = argc > 1 ? (unsigned)atoi(argv[1]) : 5;
	unsigned nw = argc > 2 ? (unsigned)atoi(argv[2]) : 4;
	unsigned nc = argc > 3 ? (unsigned)atoi(argv[3]) : 2;
	size_t mb = argc > 4 ? (size_t)atoi(argv[4]) : 8;
	struct writer *w = calloc(nw, sizeof(*w));
	pthread_t *ch = calloc(nc + 1, sizeof(*ch));

	if (!w || !ch) {
		perror("stress_migrate: calloc");
		return 2;
	}
	for (unsigned i = 0; i < nw; i++) {
		w[i] = (struct writer){.id = i + 1, .bytes = mb << 20, .huge = i % 2};
		pthread_create(&w[i].th, NULL, writer_main, &w[i]);
	}
	for (unsigned i = 0; i < nc; i++)
		pthread_create(&ch[i], NULL, churner_main, (void *)(uintptr_t)(i + 1));
	pthread_create(&ch[nc], NULL, huge_main, NULL);
	sleep(seconds);
	stop = 1;
	for (unsigned i = 0; i < nw; i++)
		pthread_join(w[i].th, NULL);
	for (unsigned i = 0; i <= nc; i++)
		pthread_join(ch[i], NULL);
	printf(
	    "stress: verified_pages=%llu churn_rounds=%llu huge_rounds=%llu corrupted_bytes=%llu\n",
	    (unsigned long long)verified, (unsigned long long)churned,
	    (unsigned long long)huge_touches, (unsigned long long)corrupted);
	return corrupted ? 1 : 0;
}

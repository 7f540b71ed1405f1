/* Holds memory and keeps checking it: fills MIB of private anonymous memory, then for SECONDS
 * verifies every page and rewrites it with the next generation's pattern, again and again. It
 * says whether it was managed at the start and at the end (a machine stopped under it makes it
 * step aside: managed at the start, unmanaged at the end, data intact).
 *
 *   holdcheck MIB SECONDS
 *
 * Output: "holdcheck: managed start=A end=B passes=N data ok"; exit 0 when every check passed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

extern int thpemu_active(void) __attribute__((weak));

static int managed(void)
{
	return thpemu_active ? thpemu_active() : 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t word(uint64_t gen, size_t i)
{
	return (gen * 0x9e3779b97f4a7c15ULL) ^ (i * 0xff51afd7ed558ccdULL);
}

int main(int argc, char **argv)
{
	size_t len, n, step = 4096 / sizeof(uint64_t);
	uint64_t *p, gen = 1;
	double end;
	int start;
	unsigned passes = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: holdcheck MIB SECONDS\n");
		return 2;
	}
	len = strtoul(argv[1], NULL, 10) << 20;
	end = now() + atof(argv[2]);
	n = len / sizeof(uint64_t);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 1;
	start = managed();
	for (size_t i = 0; i < n; i += step / 8)
		p[i] = word(gen, i);
	do {
		struct timespec ms = {0, 20000000};

		for (size_t i = 0; i < n; i += step / 8) {
			if (p[i] != word(gen, i)) {
				printf("holdcheck: word %zu of pass %u is wrong\n", i, passes);
				return 1;
			}
			p[i] = word(gen + 1, i);
		}
		gen++;
		passes++;
		nanosleep(&ms, NULL);
	} while (now() < end);
	printf("holdcheck: managed start=%d end=%d passes=%u data ok\n", start, managed(), passes);
	return 0;
}

/* Multi-size THP folios unmapped in part, seen from a program (tests/integration/live_mthp.sh).
 *
 *   mthp_partial
 *       maps 4 MiB plus one page (no 2 MiB extent of it is whole at the start: under
 *       hugepages-64kB=always its pages come in 64 KiB folios), fills every page with a
 *       pattern (first and last word), then: munmap of page 5 (part of folio 0),
 *       MADV_DONTNEED of page 20 (part of folio 1, reads back zero), munmap of pages 32..47
 *       (folio 2 whole), and checks every other page still holds its pattern.
 * Exit status 0 when the data is intact, 1 otherwise (2: setup).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PG     4096UL
#define NPAGES (1024UL + 1)

static uint64_t pattern(size_t p)
{
	return 0x9e3779b97f4a7c15ULL * (p + 1);
}

int main(void)
{
	uint8_t *m =
	    mmap(NULL, NPAGES * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t bad = 0, checked = 0;

	if (m == MAP_FAILED) {
		perror("mthp_partial: mmap");
		return 2;
	}
	for (size_t p = 0; p < NPAGES; p++) {
		uint64_t v = pattern(p);

		memcpy(m + p * PG, &v, sizeof(v));
		memcpy(m + (p + 1) * PG - sizeof(v), &v, sizeof(v));
	}
	if (munmap(m + 5 * PG, PG) || madvise(m + 20 * PG, PG, MADV_DONTNEED) ||
	    munmap(m + 32 * PG, 16 * PG)) {
		perror("mthp_partial: munmap/madvise");
		return 2;
	}
	for (size_t p = 0; p < NPAGES; p++) {
		uint64_t want = p == 20 ? 0 : pattern(p), a, b;

		if (p == 5 || (p >= 32 && p < 48))
			continue;
		memcpy(&a, m + p * PG, sizeof(a));
		memcpy(&b, m + (p + 1) * PG - sizeof(b), sizeof(b));
		checked++;
		if (a != want || b != want) {
			if (bad++ < 5)
				fprintf(stderr,
					"mthp_partial: page %zu: %016llx %016llx, want %016llx\n",
					p, (unsigned long long)a, (unsigned long long)b,
					(unsigned long long)want);
		}
	}
	printf("mthp_partial: checked=%zu bad=%zu\n", checked, bad);
	return bad ? 1 : 0;
}

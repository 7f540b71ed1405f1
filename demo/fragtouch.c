/* fragtouch: a user's own program for `thpemu fidelity` (README, "Fidelity"): it knows nothing of
 * thpemu or the oracle's protocol. It fills FILL MiB with 4 KiB pages, gives back the first half
 * of every 2 MiB of it (MADV_DONTNEED: free, but every pageblock half used), then maps REGION MiB
 * with MADV_HUGEPAGE and writes it 2 MiB at a time: the THP faults must find or make free 2 MiB
 * blocks among the half-used ones. Prints one line: what it did and how much of the region
 * AnonHugePages says is huge.
 *
 *   fragtouch FILL_MIB REGION_MIB
 *
 * Built twice (demo/CMakeLists.txt): fragtouch-static for the guest (no libc there) and
 * fragtouch for thpemu run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MIB   (1UL << 20)
#define HPAGE (2 * MIB)

static char *map_aligned(size_t len)
{
	char *p =
	    mmap(NULL, len + HPAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("fragtouch: mmap");
		exit(1);
	}
	return (char *)(((unsigned long)p + HPAGE - 1) & ~(HPAGE - 1));
}

/* AnonHugePages of the mapping holding addr (kB), from /proc/self/smaps. */
static long anonhuge_kb(const char *addr)
{
	char line[256];
	unsigned long lo, hi;
	int in = 0;
	long kb = -1;
	FILE *f = fopen("/proc/self/smaps", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' '))
			in = (unsigned long)addr >= lo && (unsigned long)addr < hi;
		else if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb;
}

int main(int argc, char **argv)
{
	char *end;
	unsigned long fill_mib, region_mib;
	size_t fill, region;
	char *a, *r;

	if (argc != 3 || (fill_mib = strtoul(argv[1], &end, 10), *end) ||
	    (region_mib = strtoul(argv[2], &end, 10), *end) || !region_mib) {
		fprintf(stderr, "usage: fragtouch FILL_MIB REGION_MIB\n");
		return 2;
	}
	fill = (fill_mib * MIB) & ~(HPAGE - 1);
	region = (region_mib * MIB + HPAGE - 1) & ~(HPAGE - 1);
	if (fill) {
		a = map_aligned(fill);
		madvise(a, fill, MADV_NOHUGEPAGE);
		memset(a, 1, fill);
		for (size_t off = 0; off < fill; off += HPAGE)
			madvise(a + off, HPAGE / 2, MADV_DONTNEED);
	}
	r = map_aligned(region);
	madvise(r, region, MADV_HUGEPAGE);
	for (size_t off = 0; off < region; off += HPAGE)
		memset(r + off, 2, HPAGE);
	printf("fragtouch: filled %lu MiB (half given back), wrote %lu MiB: %ld kB huge\n",
	       fill_mib, region_mib, anonhuge_kb(r));
	return 0;
}

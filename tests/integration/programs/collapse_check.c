/* A 4 MiB anonymous mapping populated with 4 KiB pages, then collapsed: by khugepaged (mode
 * "khugepaged": madvise(MADV_HUGEPAGE) after the pages exist, then wait) or by MADV_COLLAPSE
 * (mode "madv"). Two threads keep writing and reading back their own pages (a page of counter
 * patterns each time) while the collapse happens; at the end every page must hold exactly what
 * its thread last wrote. The mapping's huge coverage is read from PAGEMAP_SCAN (exact range) and
 * the AnonHugePages of its VMA in /proc/self/smaps.
 *
 * usage: collapse_check khugepaged SECONDS    wait up to SECONDS for the range to become huge
 *        collapse_check madv                   MADV_COLLAPSE of the populated range: 0 and huge
 *        collapse_check madv-zero              ... where every 16th page was only read (zero page)
 *        collapse_check madv-holes             half of extent 0 populated, extent 1 untouched:
 *                                              the whole range -1 EINVAL, extent 0 alone 0
 *        collapse_check madv-einval            MADV_COLLAPSE must fail with EINVAL (3.x)
 *        collapse_check madv-swap              every 4th page paged out (MADV_PAGEOUT) to the
 *                                              host's swap first, left alone by the writers:
 *                                              MADV_COLLAPSE 0, their data intact; prints
 *                                              "swapped N gone M" (M: of those, not even in
 *                                              the swap cache; exit 3 when nothing was swapped)
 * Prints "huge_kb N smaps_kb N"; exit 0 on success, 1 on a failed check, 2 on a usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/types.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "util/sys.h" /* PAGEMAP_SCAN and MADV_COLLAPSE where the system's headers lack them */

#define HPAGE	(2UL << 20)
#define PAGE	4096UL
#define LEN	(2 * HPAGE)
#define NPAGES	(LEN / PAGE)
#define WRITERS 2

static uint8_t *base;
static uint64_t counter[NPAGES]; /* BSS: unmanaged, the reference */
static volatile int stop_flag;
static volatile int bad;
static int swap_mode; /* madv-swap: pages p % 4 == 1 stay as written, out on the swap */

static void fill(size_t p, uint64_t c)
{
	uint64_t *w = (uint64_t *)(base + p * PAGE);

	for (size_t k = 0; k < PAGE / 8; k++)
		w[k] = ((uint64_t)p << 40) ^ (c << 12) ^ k;
}

static int check(size_t p, uint64_t c)
{
	const uint64_t *w = (const uint64_t *)(base + p * PAGE);

	for (size_t k = 0; k < PAGE / 8; k++) {
		uint64_t want = c ? (((uint64_t)p << 40) ^ (c << 12) ^ k) : 0;

		if (w[k] != want) {
			fprintf(stderr, "page %zu word %zu: %#llx, expected %#llx\n", p, k,
				(unsigned long long)w[k], (unsigned long long)want);
			return -1;
		}
	}
	return 0;
}

static void *writer(void *arg)
{
	size_t t = (size_t)arg;

	while (!stop_flag) {
		for (size_t p = t; p < NPAGES && !stop_flag; p += WRITERS) {
			if (!counter[p] || (swap_mode && p % 4 == 1))
				continue; /* a hole stays a hole, a swapped page swapped */
			fill(p, ++counter[p]);
			if (check(p, counter[p]))
				bad = 1;
		}
	}
	return NULL;
}

/* Bytes of the range whose pages are in category (PAGEMAP_SCAN: PAGE_IS_HUGE, PAGE_IS_SWAPPED),
 * or -1. */
static long scan_bytes(uint64_t category)
{
	struct page_region v[NPAGES / 2];
	struct pm_scan_arg a = {
	    .size = sizeof(a),
	    .start = (uintptr_t)base,
	    .end = (uintptr_t)base + LEN,
	    .vec = (uintptr_t)v,
	    .vec_len = NPAGES / 2,
	    .category_mask = category,
	    .return_mask = category,
	};
	int fd = open("/proc/self/pagemap", O_RDONLY);
	long n, bytes = 0;

	if (fd < 0)
		return -1;
	n = ioctl(fd, PAGEMAP_SCAN, &a);
	close(fd);
	for (long i = 0; i < n; i++)
		bytes += (long)(v[i].end - v[i].start);
	return n < 0 ? -1 : bytes;
}

static long huge_kb(void)
{
	long b = scan_bytes(PAGE_IS_HUGE);

	return b < 0 ? -1 : b >> 10;
}

/* Pages of the range the host swapped out now, or -1. */
static long swapped_pages(void)
{
	long b = scan_bytes(PAGE_IS_SWAPPED);

	return b < 0 ? -1 : b / (long)PAGE;
}

static long smaps_kb(void)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	int in = 0;
	long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' '))
			in = lo <= (uintptr_t)base && (uintptr_t)base < hi;
		else if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	double secs = argc > 2 ? atof(argv[2]) : 30;
	pthread_t th[WRITERS];
	int rc = 0, err = 0;
	long kb = 0;

	base = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED || ((uintptr_t)base & (HPAGE - 1))) {
		fprintf(stderr, "mapping %p not 2 MiB aligned (managed mappings are)\n", base);
		return 1;
	}
	for (size_t p = 0; p < NPAGES; p++) {
		if (!strcmp(mode, "madv-holes") && (p >= NPAGES / 2 || p % 2))
			continue; /* extent 0: every other page; extent 1: untouched */
		if (!strcmp(mode, "madv-zero") && p % 16 == 3) {
			/* read first: the shared zero page (a pte_none_or_zero entry to the
			 * kernel's collapse), data 0, never written */
			if (*(volatile uint64_t *)(base + p * PAGE) != 0)
				bad = 1;
			continue;
		}
		counter[p] = 1;
		fill(p, 1);
	}
	if (huge_kb() != 0) {
		fprintf(stderr, "the range is huge before any collapse (%ld kB)\n", huge_kb());
		return 1;
	}
	if (!strcmp(mode, "madv-swap")) {
		long n;

		swap_mode = 1;
		for (size_t p = 1; p < NPAGES; p += 4)
			madvise(base + p * PAGE, PAGE, MADV_PAGEOUT);
		unsigned char vec[NPAGES];
		long gone = 0;

		n = swapped_pages();
		if (mincore(base, LEN, vec) == 0)
			for (size_t p = 1; p < NPAGES; p += 4)
				gone += !(vec[p] & 1);
		/* gone: out of memory too, not only in the swap cache (mincore says 0) */
		printf("swapped %ld gone %ld\n", n, gone);
		if (n <= 0) {
			fprintf(stderr, "nothing was swapped out (no swap here?)\n");
			return 3;
		}
	}
	for (size_t t = 0; t < WRITERS; t++)
		pthread_create(&th[t], NULL, writer, (void *)t);
	sleep_ms(20);
	if (!strcmp(mode, "khugepaged")) {
		if (madvise(base, LEN, MADV_HUGEPAGE))
			perror("MADV_HUGEPAGE");
		for (long ms = 0; ms < (long)(secs * 1000) && (kb = huge_kb()) < (long)(LEN >> 10);
		     ms += 50)
			sleep_ms(50);
	} else if (!strcmp(mode, "madv") || !strcmp(mode, "madv-zero") ||
		   !strcmp(mode, "madv-swap")) {
		rc = madvise(base, LEN, MADV_COLLAPSE);
		err = errno;
		printf("madvise %d errno %d\n", rc, rc ? err : 0);
		if (rc)
			bad = 1;
	} else if (!strcmp(mode, "madv-holes")) {
		rc = madvise(base, LEN, MADV_COLLAPSE);
		err = errno;
		printf("whole %d errno %d\n", rc, rc ? err : 0);
		if (rc != -1 || err != EINVAL)
			bad = 1;
		rc = madvise(base, HPAGE, MADV_COLLAPSE);
		err = errno;
		printf("extent0 %d errno %d\n", rc, rc ? err : 0);
		if (rc)
			bad = 1;
	} else if (!strcmp(mode, "madv-einval")) {
		rc = madvise(base, LEN, MADV_COLLAPSE);
		err = errno;
		printf("madvise %d errno %d\n", rc, rc ? err : 0);
		if (rc != -1 || err != EINVAL)
			bad = 1;
	} else {
		fprintf(
		    stderr,
		    "usage: collapse_check khugepaged SECONDS | madv | madv-zero | madv-holes | "
		    "madv-einval | madv-swap\n");
		return 2;
	}
	sleep_ms(50); /* the writers go on over the collapsed range */
	stop_flag = 1;
	for (size_t t = 0; t < WRITERS; t++)
		pthread_join(th[t], NULL);
	for (size_t p = 0; p < NPAGES; p++)
		if (check(p, counter[p]))
			bad = 1;
	printf("huge_kb %ld smaps_kb %ld\n", huge_kb(), smaps_kb());
	return bad ? 1 : 0;
}

/* A program that locks its memory, then keeps working: compaction must still be able to move its
 * pages, and its data must survive.
 *
 *   locked [MB]   (default 32)
 *
 * 1. MB MiB of 4 KiB pages (MADV_NOHUGEPAGE), each stamped with its index;
 * 2. mlockall(MCL_CURRENT | MCL_FUTURE): every mapping is locked and populated (its time is
 *    printed: natively milliseconds);
 * 3. half of those pages are unmapped, 64 KiB on, 64 KiB off, leaving holes in every 2 MiB;
 * 4. MB MiB of new MADV_HUGEPAGE memory is written 2 MiB at a time (locked and populated at
 *    mmap, MCL_FUTURE), which under a fragmented pool needs compaction, which moves the pages
 *    left from step 1;
 * 5. MADV_DONTNEED of a locked page fails with EINVAL and leaves it as it was;
 * 6. every page left from step 1 and every new page is checked.
 *
 * Output: "mlockall_ms=N dontneed=EINVAL checked=N bad=N"; exit 1 if a page was bad.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define PAGE  4096UL
#define HPAGE (2UL << 20)
#define RUN   (64UL << 10)

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void *map(size_t len, int advice)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	madvise(p, len, advice);
	return p;
}

static void stamp(uint8_t *p, size_t len, uint64_t tag)
{
	for (size_t i = 0; i < len; i += PAGE)
		*(uint64_t *)(p + i) = tag + i / PAGE;
}

static unsigned long check(const uint8_t *p, size_t len, uint64_t tag, unsigned long *checked)
{
	unsigned long bad = 0;

	for (size_t i = 0; i < len; i += PAGE, (*checked)++)
		bad += *(const uint64_t *)(p + i) != tag + i / PAGE;
	return bad;
}

int main(int argc, char **argv)
{
	size_t len = (argc > 1 ? strtoul(argv[1], NULL, 10) : 32) << 20;
	uint8_t *old = map(len, MADV_NOHUGEPAGE), *fresh;
	unsigned long bad = 0, checked = 0;
	const char *dn;
	double t0, ms;

	stamp(old, len, 1UL << 40);
	t0 = now_ms();
	if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
		perror("mlockall");
		return 1;
	}
	ms = now_ms() - t0;
	for (size_t off = RUN; off < len; off += 2 * RUN)
		munmap(old + off, RUN);
	fresh = map(len, MADV_HUGEPAGE);
	for (size_t off = 0; off < len; off += HPAGE)
		stamp(fresh + off, HPAGE, (2UL << 40) + off / PAGE);
	dn = madvise(old, PAGE, MADV_DONTNEED) == 0 ? "ok" : errno == EINVAL ? "EINVAL" : "other";
	for (size_t off = 0; off < len; off += 2 * RUN)
		bad += check(old + off, RUN, (1UL << 40) + off / PAGE, &checked);
	bad += check(fresh, len, 2UL << 40, &checked);
	munlockall();
	printf("mlockall_ms=%.0f dontneed=%s checked=%lu bad=%lu\n", ms, dn, checked, bad);
	return bad ? 1 : 0;
}

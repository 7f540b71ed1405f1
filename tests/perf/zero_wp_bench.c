/* What it costs the live emulator to see a program's write to a page it answered a read with
 * (core/live/README.md, "Read faults and the zero page"): a handler thread serves the first
 * touches of 4096 pages (one at a time, from one faulting thread) in one of four ways, and the
 * faulting thread then writes each page once:
 *
 *   copy      a write first touch: UFFDIO_COPY of a zero page (the emulator's 4 KiB write path)
 *   zeropage  a read first touch: UFFDIO_ZEROPAGE (today's read path); the later write is a
 *             copy-on-write of the zero page the host serves and no handler sees
 *   zero-wp   a read first touch on a range also registered for write-protect: UFFDIO_ZEROPAGE
 *             (DONTWAKE), UFFDIO_WRITEPROTECT, UFFDIO_WAKE; the later write reaches the handler
 *             (a WP message), which lifts the protection: the host then copies the zero page
 *   copy-wp   the same with one UFFDIO_COPY(MODE_WP) of a zero page: no window between mapping
 *             and protecting, but a host page per read page
 *
 *   touch     no handler of its own: the same two passes over memory the emulator manages (run
 *             it under thpemu run; tests/perf/zero_bench.sh compares it with the floors above)
 *
 * and checks that UFFDIO_MOVE (the emulator's huge and migration moves) still works into a range
 * registered for write-protect. Prints p50 and p90 of each pass in microseconds, as the faulting
 * thread saw them, and the messages the handler read.
 *
 * usage: zero_wp_bench copy|zeropage|zero-wp|copy-wp|touch  (root or vm.unprivileged_userfaultfd)
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/sys.h" /* UFFDIO_MOVE where the system's headers lack it */

#define PG 4096UL
#define N  4096

enum { COPY, ZEROPAGE, ZERO_WP, COPY_WP, TOUCH, NMODES };
static const char *const names[] = {"copy", "zeropage", "zero-wp", "copy-wp", "touch"};
static int uffd, mode;
static char *zero;
static long missing, wp;
static uint64_t lat[N];

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static void must(int rc, const char *what)
{
	if (rc != 0) {
		fprintf(stderr, "zero_wp_bench: %s: %s\n", what, strerror(errno));
		exit(1);
	}
}

static void serve(uint64_t a)
{
	struct uffdio_copy c = {.dst = a, .src = (uint64_t)zero, .len = PG};
	struct uffdio_zeropage z = {.range = {a, PG}};
	struct uffdio_writeprotect w = {.range = {a, PG}, .mode = UFFDIO_WRITEPROTECT_MODE_WP};
	struct uffdio_range r = {a, PG};

	switch (mode) {
	case COPY:
		must(ioctl(uffd, UFFDIO_COPY, &c), "UFFDIO_COPY");
		break;
	case ZEROPAGE:
		must(ioctl(uffd, UFFDIO_ZEROPAGE, &z), "UFFDIO_ZEROPAGE");
		break;
	case ZERO_WP:
		z.mode = UFFDIO_ZEROPAGE_MODE_DONTWAKE;
		must(ioctl(uffd, UFFDIO_ZEROPAGE, &z), "UFFDIO_ZEROPAGE");
		must(ioctl(uffd, UFFDIO_WRITEPROTECT, &w), "UFFDIO_WRITEPROTECT");
		must(ioctl(uffd, UFFDIO_WAKE, &r), "UFFDIO_WAKE");
		break;
	default:
		c.mode = UFFDIO_COPY_MODE_WP;
		must(ioctl(uffd, UFFDIO_COPY, &c), "UFFDIO_COPY(WP)");
	}
}

static void *handler(void *arg)
{
	struct uffd_msg m;

	(void)arg;
	for (;;) {
		uint64_t a;

		if (read(uffd, &m, sizeof(m)) != (ssize_t)sizeof(m) ||
		    m.event != UFFD_EVENT_PAGEFAULT)
			continue;
		a = m.arg.pagefault.address & ~(PG - 1);
		if (m.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) {
			struct uffdio_writeprotect w = {.range = {a, PG}, .mode = 0}; /* wakes */

			__atomic_add_fetch(&wp, 1, __ATOMIC_RELAXED);
			must(ioctl(uffd, UFFDIO_WRITEPROTECT, &w), "UFFDIO_WRITEPROTECT(0)");
		} else {
			__atomic_add_fetch(&missing, 1, __ATOMIC_RELAXED);
			serve(a);
		}
	}
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void print(const char *what)
{
	qsort(lat, N, sizeof(lat[0]), cmp);
	printf("%-8s %-6s p50 %7.2f us  p90 %7.2f us\n", names[mode], what,
	       (double)lat[N / 2] / 1e3, (double)lat[N * 9 / 10] / 1e3);
}

static char *region(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct uffdio_register reg = {.range = {(uint64_t)p, len},
				      .mode = UFFDIO_REGISTER_MODE_MISSING |
					      (mode >= ZERO_WP ? UFFDIO_REGISTER_MODE_WP : 0)};

	if (p == MAP_FAILED)
		must(-1, "mmap");
	madvise(p, len, MADV_NOHUGEPAGE); /* 4 KiB first touches, as the emulator's small path */
	must(ioctl(uffd, UFFDIO_REGISTER, &reg), "UFFDIO_REGISTER");
	return p;
}

int main(int argc, char **argv)
{
	struct uffdio_api api = {.api = UFFD_API,
				 .features = UFFD_FEATURE_MOVE | UFFD_FEATURE_PAGEFAULT_FLAG_WP};
	volatile char sink = 0;
	pthread_t t;
	char *p, *src, *dst;

	for (mode = 0; argc == 2 && mode < NMODES && strcmp(argv[1], names[mode]); mode++)
		;
	if (argc != 2 || mode == NMODES) {
		fprintf(stderr, "usage: zero_wp_bench copy|zeropage|zero-wp|copy-wp|touch\n");
		return 2;
	}
	if (mode == TOUCH) { /* the emulator's handlers serve it: an ordinary mapping */
		p = mmap(NULL, N * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			must(-1, "mmap");
		madvise(p, N * PG, MADV_NOHUGEPAGE); /* 4 KiB first touches, as the floors' */
		for (size_t i = 0; i < N; i++) {
			uint64_t t0 = now_ns();

			sink += p[i * PG];
			lat[i] = now_ns() - t0;
		}
		print("first");
		for (size_t i = 0; i < N; i++) {
			uint64_t t0 = now_ns();

			p[i * PG] = 2;
			lat[i] = now_ns() - t0;
		}
		print("write");
		for (size_t i = 0; i < N; i++)
			if (p[i * PG] != 2)
				return 1;
		return 0;
	}
	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
	if (uffd < 0)
		must(-1, "userfaultfd");
	must(ioctl(uffd, UFFDIO_API, &api), "UFFDIO_API");
	zero = aligned_alloc(PG, PG);
	memset(zero, 0, PG);
	p = region(N * PG);
	pthread_create(&t, NULL, handler, NULL);
	for (size_t i = 0; i < N; i++) {
		uint64_t t0 = now_ns();

		if (mode == COPY)
			p[i * PG] = 1;
		else
			sink += p[i * PG];
		lat[i] = now_ns() - t0;
	}
	print("first");
	for (size_t i = 0; i < N; i++) {
		uint64_t t0 = now_ns();

		p[i * PG] = 2;
		lat[i] = now_ns() - t0;
	}
	print("write");
	printf("%-8s missing %ld wp %ld\n", names[mode], missing, wp);
	src = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	src[0] = 7;
	dst = region(PG);
	{
		struct uffdio_move mv = {.dst = (uint64_t)dst, .src = (uint64_t)src, .len = PG};
		int rc = ioctl(uffd, UFFDIO_MOVE, &mv);

		printf("%-8s UFFDIO_MOVE into the registration: %s\n", names[mode],
		       rc == 0 && dst[0] == 7 ? "ok" : strerror(errno));
	}
	(void)sink;
	return 0;
}

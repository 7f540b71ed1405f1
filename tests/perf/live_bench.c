/* Fault-service latency, seen from the faulting thread: the floors and the emulator.
 *
 *   live_bench bare4k N   a minimal userfaultfd handler (one thread, blocking read) answering
 *                         each 4 KiB write fault with UFFDIO_COPY of a zero page: the floor of
 *                         any uffd-based 4 KiB fault
 *   live_bench bare2m N   the same handler clearing a prefaulted 2 MiB THP and UFFDIO_MOVEing
 *                         it to the faulting extent: the floor of a real-PMD huge fault
 *   live_bench touch4k N  N first touches of 4 KiB pages of an ordinary mapping
 *   live_bench touch2m N  N first touches of 2 MiB extents of an ordinary (MADV_HUGEPAGE)
 *                         mapping; run these two under `thpemu run` to measure the emulator
 *
 * Each touch is timed around the faulting store. Output, one line:
 *   bench MODE n=N p50_us=X p99_us=Y mean_us=Z
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PAGE  4096UL
#define HPAGE (2UL << 20)

#ifndef UFFD_FEATURE_MOVE
#define UFFD_FEATURE_MOVE (1 << 16)
struct uffdio_move {
	__u64 dst, src, len, mode;
	__s64 move;
};
#define UFFDIO_MOVE _IOWR(UFFDIO, 0x05, struct uffdio_move)
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

struct bare {
	int uffd;
	bool huge;
	char *zero;    /* 4 KiB of zeros */
	char *staging; /* prefaulted 2 MiB chunks, one per fault */
	size_t next;
};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void die(const char *what)
{
	fprintf(stderr, "live_bench: %s: %s\n", what, strerror(errno));
	exit(errno == EPERM ? 77 : 1);
}

static int open_uffd(void)
{
	struct uffdio_api api = {.api = UFFD_API, .features = UFFD_FEATURE_MOVE};
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);

	if (fd < 0) {
		int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);

		if (dev < 0)
			die("userfaultfd");
		fd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC);
		close(dev);
		if (fd < 0)
			die("USERFAULTFD_IOC_NEW");
	}
	if (ioctl(fd, UFFDIO_API, &api) < 0)
		die("UFFDIO_API");
	return fd;
}

static void *bare_handler(void *arg)
{
	struct bare *b = arg;
	struct uffd_msg msg;

	while (read(b->uffd, &msg, sizeof(msg)) == sizeof(msg)) {
		uintptr_t a = (uintptr_t)msg.arg.pagefault.address;

		if (msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		if (b->huge) {
			char *chunk = b->staging + b->next++ * HPAGE;
			struct uffdio_move m = {
			    .dst = a & ~(HPAGE - 1), .src = (uintptr_t)chunk, .len = HPAGE};

			memset(chunk, 0, HPAGE); /* clear_huge_page, as the emulator does */
			ioctl(b->uffd, UFFDIO_MOVE, &m);
		} else {
			struct uffdio_copy c = {
			    .dst = a & ~(PAGE - 1), .src = (uintptr_t)b->zero, .len = PAGE};

			ioctl(b->uffd, UFFDIO_COPY, &c);
		}
	}
	return NULL;
}

static char *map_aligned(size_t len)
{
	char *p =
	    mmap(NULL, len + HPAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap");
	return (char *)(((uintptr_t)p + HPAGE - 1) & ~(HPAGE - 1));
}

/* Set up the bare handler over [p, p + len). */
static void bare_setup(struct bare *b, char *p, size_t len, size_t n)
{
	struct uffdio_register reg = {.range = {(uintptr_t)p, len},
				      .mode = UFFDIO_REGISTER_MODE_MISSING};
	pthread_t th;

	b->uffd = open_uffd();
	b->zero = calloc(1, PAGE);
	if (b->huge) {
		b->staging = map_aligned(n * HPAGE);
		madvise(b->staging, n * HPAGE, MADV_HUGEPAGE);
		madvise(b->staging, n * HPAGE, MADV_DONTFORK);
		if (madvise(b->staging, n * HPAGE, MADV_POPULATE_WRITE) < 0)
			die("MADV_POPULATE_WRITE");
	}
	if (ioctl(b->uffd, UFFDIO_REGISTER, &reg) < 0)
		die("UFFDIO_REGISTER");
	pthread_create(&th, NULL, bare_handler, b);
	pthread_detach(th);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void report(const char *mode, double *v, size_t n)
{
	double sum = 0;

	qsort(v, n, sizeof(*v), cmp);
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	printf("bench %s n=%zu p50_us=%.2f p99_us=%.2f mean_us=%.2f\n", mode, n, v[n / 2],
	       v[(size_t)((double)n * 0.99)], sum / (double)n);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	size_t n = argc > 2 ? strtoul(argv[2], NULL, 10) : 1000;
	bool huge = strstr(mode, "2m") != NULL, bare = strncmp(mode, "bare", 4) == 0;
	size_t step = huge ? HPAGE : PAGE, len = n * step;
	struct bare b = {.huge = huge};
	double *lat = calloc(n, sizeof(*lat));
	char *p;

	if (!n || (!bare && strncmp(mode, "touch", 5)) || (!huge && !strstr(mode, "4k"))) {
		fprintf(stderr, "usage: live_bench bare4k|bare2m|touch4k|touch2m N\n");
		return 2;
	}
	p = map_aligned(len);
	madvise(p, len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	if (bare)
		bare_setup(&b, p, len, n);
	else
		usleep(huge ? 1000000 : 100000); /* let the emulator's staging fill up */
	for (size_t i = 0; i < n; i++) {
		double t0 = now_us();

		*(volatile char *)(p + i * step) = 1;
		lat[i] = now_us() - t0;
	}
	report(mode, lat, n);
	return 0;
}

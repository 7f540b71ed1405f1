/* Fault-service latency, seen from the faulting threads: the floors and the emulator.
 *
 *   live_bench bare4k N [T [H]]  a minimal userfaultfd handler (H threads, default 1, each
 *                                blocked in read() on a blocking userfaultfd) answering each
 *                                4 KiB write fault with UFFDIO_COPY of a zero page: the floor of
 *                                any uffd-based 4 KiB fault
 *   live_bench bare2m N [T [H]]  the same handler clearing a prefaulted 2 MiB THP and
 *                                UFFDIO_MOVEing it to the faulting extent: the floor of a
 *                                real-PMD huge fault
 *   live_bench bare2m-pte N [T [H]]  the same with the faulting mapping MADV_NOHUGEPAGE and the
 *                                empty page table the host's 4 KiB fault path leaves freed
 *                                (MADV_DONTNEED, CONFIG_PT_RECLAIM) before the move: no 2 MiB
 *                                folio allocated, cleared and discarded by the host before the
 *                                message (the floor of `thpemu run --host-fault pte`)
 *   live_bench touch4k N [T]     N first touches of 4 KiB pages of an ordinary mapping
 *   live_bench touch2m N [T]     N first touches of 2 MiB extents of an ordinary (MADV_HUGEPAGE)
 *                                mapping; run these two under `thpemu run` to measure the emulator
 *   live_bench migrate N [B]     the floor of migrating a program page: UFFDIO_MOVE it out to a
 *                                registered scratch page (DONTWAKE), UFFDIO_COPY it back, per
 *                                page (B=1) or B pages per ioctl (the kernel's
 *                                COMPACT_CLUSTER_MAX batch is 32); with FREE, the free of the
 *   live_bench migrate N B FREE  old copies is timed too: one MADV_DONTNEED of the scratch
 *                                pages per FREE pages (as the emulator frees them)
 *   live_bench compactee MB      MB MiB of 4 KiB pages, about half freed (runs of 17 kept, 16
 *                                freed: 64 KiB holes), then 2 MiB first touches: run under
 *                                `thpemu run` with a pool just big enough, compaction migrates
 *                                the program's pages while the program waits (the emulator's
 *                                per-page migration cost)
 *
 * T faulting threads (default 1) each touch N/T pages of their own, started together. Each touch
 * is timed around the faulting store. Output, one line:
 *   bench MODE n=N threads=T p50_us=X p99_us=Y mean_us=Z rate=F wakeups=W
 * rate: faults per second over the whole run (first start to last end); wakeups: voluntary
 * context switches (sleeps, each ended by a wake-up) of the handler threads per fault (the bare
 * handlers', or thpemu's `thpemu-flt*` threads when run under the emulator; -1 if they cannot be
 * read).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
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

#include "util/sys.h" /* UFFDIO_MOVE where the system's headers lack it */

#define PAGE  4096UL
#define HPAGE (2UL << 20)
#define MAXT  64

struct bare {
	int uffd;
	bool huge, pte;
	char *zero;    /* 4 KiB of zeros */
	char *staging; /* prefaulted 2 MiB chunks, one per fault */
	size_t next;   /* next staging chunk (atomic) */
	int tids[MAXT];
	unsigned nh;
};

struct toucher {
	pthread_t th;
	char *base;
	size_t count, step;
	double *lat;
	double t_start, t_end;
	pthread_barrier_t *bar;
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
	unsigned me = __atomic_fetch_add(&b->nh, 1, __ATOMIC_RELAXED);

	b->tids[me] = (int)syscall(SYS_gettid);
	while (read(b->uffd, &msg, sizeof(msg)) == sizeof(msg)) {
		uintptr_t a = (uintptr_t)msg.arg.pagefault.address;

		if (msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		if (b->huge) {
			size_t i = __atomic_fetch_add(&b->next, 1, __ATOMIC_RELAXED);
			char *chunk = b->staging + i * HPAGE;
			struct uffdio_move m = {
			    .dst = a & ~(HPAGE - 1), .src = (uintptr_t)chunk, .len = HPAGE};

			if (b->pte) /* the table do_anonymous_page made: a PMD move needs pmd_none
				     */
				madvise((void *)(uintptr_t)m.dst, HPAGE, MADV_DONTNEED);
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

static void uffd_register(int uffd, void *p, size_t len)
{
	struct uffdio_register reg = {.range = {(uintptr_t)p, len},
				      .mode = UFFDIO_REGISTER_MODE_MISSING};

	if (ioctl(uffd, UFFDIO_REGISTER, &reg) < 0)
		die("UFFDIO_REGISTER");
}

/* Set up the bare handler (nh threads) over [p, p + len). */
static void bare_setup(struct bare *b, char *p, size_t len, size_t n, unsigned nh)
{
	b->uffd = open_uffd();
	b->zero = calloc(1, PAGE);
	if (b->huge) {
		b->staging = map_aligned(n * HPAGE);
		madvise(b->staging, n * HPAGE, MADV_HUGEPAGE);
		madvise(b->staging, n * HPAGE, MADV_DONTFORK);
		if (madvise(b->staging, n * HPAGE, MADV_POPULATE_WRITE) < 0)
			die("MADV_POPULATE_WRITE");
	}
	uffd_register(b->uffd, p, len);
	for (unsigned i = 0; i < nh; i++) {
		pthread_t th;

		pthread_create(&th, NULL, bare_handler, b);
		pthread_detach(th);
	}
	while (__atomic_load_n(&b->nh, __ATOMIC_RELAXED) < nh)
		usleep(1000);
	usleep(10000); /* every handler blocked in read() */
}

/* Voluntary context switches (sleeps, each ended by a wake-up) of one thread of this process. */
static long task_switches(const char *tid)
{
	char path[320], line[128];
	long sum = 0, v;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%s/status", tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1)
			sum += v; /* a sleep and its wake-up; preemptions by other load are not */
	fclose(f);
	return sum;
}

/* Summed context switches of the handler threads: the bare handler's (tids), else the
 * emulator's (threads named thpemu-flt*). */
static long handler_switches(const struct bare *b)
{
	char path[300], comm[32], tid[16];
	struct dirent *d;
	long sum = 0, found = 0;
	DIR *dir;

	if (b) {
		for (unsigned i = 0; i < b->nh; i++) {
			snprintf(tid, sizeof(tid), "%d", b->tids[i]);
			sum += task_switches(tid);
		}
		return sum;
	}
	dir = opendir("/proc/self/task");
	if (!dir)
		return -1;
	while ((d = readdir(dir))) {
		FILE *f;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && strncmp(comm, "thpemu-flt", 10) == 0) {
			sum += task_switches(d->d_name);
			found++;
		}
		fclose(f);
	}
	closedir(dir);
	return found ? sum : -1;
}

static void *touch_main(void *arg)
{
	struct toucher *t = arg;

	pthread_barrier_wait(t->bar);
	t->t_start = now_us();
	for (size_t i = 0; i < t->count; i++) {
		double t0 = now_us();

		*(volatile char *)(t->base + i * t->step) = 1;
		t->lat[i] = now_us() - t0;
	}
	t->t_end = now_us();
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void report(const char *mode, double *v, size_t n, unsigned threads, double secs,
		   double wakeups)
{
	double sum = 0;

	qsort(v, n, sizeof(*v), cmp);
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	printf("bench %s n=%zu threads=%u p50_us=%.2f p99_us=%.2f mean_us=%.2f rate=%.0f "
	       "wakeups=%.2f\n",
	       mode, n, threads, v[n / 2], v[(size_t)((double)n * 0.99)], sum / (double)n,
	       secs > 0 ? (double)n / secs : 0, wakeups);
}

/* The migration floor: n program pages (populated through the uffd, as the emulator's are) are
 * moved out to a registered scratch area and copied back, `batch` pages per ioctl. */
static int migrate_floor(size_t n, size_t batch, size_t free_every)
{
	int uffd = open_uffd();
	size_t slen = (free_every > batch ? free_every : batch) * PAGE, used = 0;
	char *prog = map_aligned(n * PAGE), *scratch = map_aligned(slen);
	char *data = malloc(PAGE);
	double *lat = calloc(n / batch + 1, sizeof(*lat)), t_all;
	size_t nb = 0;

	if (!data || !lat)
		die("malloc");
	madvise(prog, n * PAGE, MADV_NOHUGEPAGE);
	madvise(scratch, slen, MADV_NOHUGEPAGE);
	uffd_register(uffd, prog, n * PAGE);
	uffd_register(uffd, scratch, slen);
	for (size_t i = 0; i < n; i++) { /* every program page populated */
		struct uffdio_copy c = {
		    .dst = (uintptr_t)prog + i * PAGE, .src = (uintptr_t)data, .len = PAGE};

		memset(data, (int)(i & 0xff) | 1, PAGE);
		if (ioctl(uffd, UFFDIO_COPY, &c) < 0)
			die("UFFDIO_COPY (populate)");
	}
	t_all = now_us();
	for (size_t i = 0; i + batch <= n; i += batch) {
		uintptr_t a = (uintptr_t)prog + i * PAGE;
		char *sp = scratch + (free_every ? used * PAGE : 0);
		struct uffdio_move m = {.dst = (uintptr_t)sp,
					.src = a,
					.len = batch * PAGE,
					.mode = UFFDIO_MOVE_MODE_DONTWAKE};
		struct uffdio_copy c = {.dst = a, .src = (uintptr_t)sp, .len = batch * PAGE};
		double t0 = now_us();

		if (ioctl(uffd, UFFDIO_MOVE, &m) < 0)
			die("UFFDIO_MOVE");
		if (ioctl(uffd, UFFDIO_COPY, &c) < 0)
			die("UFFDIO_COPY");
		if (!free_every) { /* the old copies' free, untimed */
			lat[nb++] = (now_us() - t0) / (double)batch;
			madvise(scratch, batch * PAGE, MADV_DONTNEED);
			continue;
		}
		used += batch; /* the free of the old copies, timed: one DONTNEED per free_every */
		if (used + batch > free_every) {
			madvise(scratch, used * PAGE, MADV_DONTNEED);
			used = 0;
		}
		lat[nb++] = (now_us() - t0) / (double)batch;
	}
	t_all = now_us() - t_all;
	for (size_t i = 0; i < n; i++)
		if (prog[i * PAGE] != (char)((i & 0xff) | 1))
			die("migrated data differs");
	{
		char mode[32];

		snprintf(mode, sizeof(mode), "migrate/%zu/%zu", batch, free_every);
		report(mode, lat, nb, 1, t_all / 1e6, 0);
	}
	return 0;
}

/* A program whose pages compaction has to move, and which stays out of the emulator's way while
 * it does: MB MiB of 4 KiB pages (MADV_NOHUGEPAGE), every other 64 KiB of them freed, then 2 MiB
 * first touches (MADV_HUGEPAGE) that, in a pool just big enough, only compaction can serve. One
 * thread, idle in its faults: the migrations' cost (the report's host.anon_migrate_ns /
 * anon_migrations) is not inflated by program threads competing for the CPUs, as it is under
 * stress_migrate. The kept pages are checked at the end. */
#define COMPACTEE_KEPT	 17
#define COMPACTEE_PERIOD 33

static int compactee(size_t mb)
{
	size_t len = mb << 20, np = len / PAGE, nh = len / 2 / HPAGE;
	char *a = map_aligned(len), *h = map_aligned(nh * HPAGE);
	double t0 = now_us();

	madvise(a, len, MADV_NOHUGEPAGE);
	madvise(h, nh * HPAGE, MADV_HUGEPAGE);
	for (size_t i = 0; i < np; i++)
		a[i * PAGE] = (char)((i & 0x7f) | 1);
	/* holes in every pageblock, with a period of 33 pages, not 32: the frames follow the touch
	 * order, and holes 32 pages apart would all sit at one phase against the free scanner's
	 * async stride of 32 (COMPACT_CLUSTER_MAX), which then finds no free page in any block
	 * when that phase is wrong (the model has no fast_isolate_freepages to find them on the
	 * free lists: core/mm/README.md) */
	for (size_t i = COMPACTEE_KEPT; i < np; i += COMPACTEE_PERIOD)
		madvise(a + i * PAGE, (np - i < 16 ? np - i : 16) * PAGE, MADV_DONTNEED);
	for (size_t i = 0; i < nh; i++)
		h[i * HPAGE] = 1;
	for (size_t i = 0; i < np; i++)
		if (a[i * PAGE] !=
		    (i % COMPACTEE_PERIOD >= COMPACTEE_KEPT ? 0 : (char)((i & 0x7f) | 1)))
			die("a kept page changed");
	printf("bench compactee mb=%zu extents=%zu secs=%.3f\n", mb, nh, (now_us() - t0) / 1e6);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	size_t n = argc > 2 ? strtoul(argv[2], NULL, 10) : 1000;
	unsigned nt = argc > 3 ? (unsigned)atoi(argv[3]) : 1;
	unsigned nh = argc > 4 ? (unsigned)atoi(argv[4]) : 1;
	bool huge = strstr(mode, "2m") != NULL, bare = strncmp(mode, "bare", 4) == 0;
	bool pte = strcmp(mode, "bare2m-pte") == 0;
	size_t step = huge ? HPAGE : PAGE, len, per;
	struct bare b = {.huge = huge, .pte = pte};
	struct toucher t[MAXT];
	pthread_barrier_t bar;
	double *lat, t0 = 0, t1 = 0;
	long sw0, sw1;
	char *p;

	if (strcmp(mode, "compactee") == 0)
		return compactee(n);
	if (strcmp(mode, "migrate") == 0)
		return migrate_floor(n, argc > 3 ? strtoul(argv[3], NULL, 10) : 1,
				     argc > 4 ? strtoul(argv[4], NULL, 10) : 0);
	if (!n || nt < 1 || nt > MAXT || nh < 1 || nh > MAXT ||
	    (strcmp(mode, "bare4k") && strcmp(mode, "bare2m") && !pte && strcmp(mode, "touch4k") &&
	     strcmp(mode, "touch2m"))) {
		fprintf(stderr,
			"usage: live_bench bare4k|bare2m|bare2m-pte|touch4k|touch2m N [THREADS "
			"[HANDLERS]] | migrate N [BATCH [FREE]] | compactee MB\n");
		return 2;
	}
	per = n / nt;
	n = per * nt;
	len = n * step;
	lat = calloc(n, sizeof(*lat));
	p = map_aligned(len);
	madvise(p, len, huge && !pte ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	if (bare)
		bare_setup(&b, p, len, n, nh);
	else
		usleep(huge ? 1000000 : 100000); /* let the emulator's staging fill up */
	pthread_barrier_init(&bar, NULL, nt);
	sw0 = handler_switches(bare ? &b : NULL);
	for (unsigned i = 0; i < nt; i++) {
		t[i] = (struct toucher){.base = p + i * per * step,
					.count = per,
					.step = step,
					.lat = lat + i * per,
					.bar = &bar};
		pthread_create(&t[i].th, NULL, touch_main, &t[i]);
	}
	for (unsigned i = 0; i < nt; i++) {
		pthread_join(t[i].th, NULL);
		if (i == 0 || t[i].t_start < t0)
			t0 = t[i].t_start;
		if (t[i].t_end > t1)
			t1 = t[i].t_end;
	}
	sw1 = handler_switches(bare ? &b : NULL);
	report(mode, lat, n, nt, (t1 - t0) / 1e6,
	       sw0 >= 0 && sw1 >= 0 ? (double)(sw1 - sw0) / (double)n : -1);
	return 0;
}

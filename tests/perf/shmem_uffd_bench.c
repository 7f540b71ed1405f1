/* Which userfaultfd mode serves shared memory better (core/live/README.md, "Shared memory
 * (shmem) through userfaultfd"): a bare handler, no emulator. One process (the "first") touches
 * every 4 KiB page of a 2 MiB-aligned shared region once, with a write, from one thread; then
 * CHILDREN forked processes (the "second" ones, one after the other) touch every page again,
 * each with a userfaultfd of its own registered as the first one's (a fork drops the parent's
 * registration without UFFD_FEATURE_EVENT_FORK: mm/userfaultfd.c dup_userfaultfd(), 6.18).
 *
 *   floor    no userfaultfd: the host kernel's own shmem faults (mm/shmem.c shmem_fault())
 *   copy4k   MISSING; every message answered with UFFDIO_COPY of one zero page (what thpemu does)
 *   copy2m   MISSING; a message answered with one UFFDIO_COPY of the whole 2 MiB around it
 *   cont4k   MINOR (UFFD_FEATURE_MINOR_SHMEM); the page cache filled first, outside the timed
 *            touches (fallocate of the file, or MADV_POPULATE_WRITE + MADV_DONTNEED of an
 *            anonymous mapping: the pages stay cached, the PTEs go); every message answered
 *            with UFFDIO_CONTINUE of one page
 *   cont2m   the same with one UFFDIO_CONTINUE of the whole 2 MiB around the address
 *   falloc2m MISSING; a message answered by fallocate() of the 2 MiB around it in the file and
 *            UFFDIO_WAKE: the retried fault finds the host's folio, which the host maps itself
 *            (a PMD where the folio is PMD-size: mm/memory.c finish_fault() do_set_pmd()); a
 *            file or memfd only
 *   both     one range registered MISSING|MINOR: which message a first touch and a touch of a
 *            cached but unmapped page bring (a check, not a timing)
 *
 * Backing (one of): --memfd (default), --anon (MAP_SHARED|MAP_ANONYMOUS), --file PATH (a file
 * on a tmpfs: mounted huge=always it holds PMD-size folios whatever shmem_enabled says).
 *
 * Each process prints one line of key=value: the per-page latency of its touches (p50, p90, as
 * the touching thread saw them), the time to touch each 2 MiB (p50, p90), the whole region, the
 * page faults the touching thread took (getrusage: a page an ioctl mapped is touched with none,
 * yet on a virtual machine its first access through a new PTE may still cost microseconds),
 * the messages its handler read (and how many were MINOR), what /proc/self/smaps says of the region
 * (ShmemPmdMapped + FilePmdMapped, Rss) and how many of its pages sit in a THP of the page cache
 * (/proc/self/pagemap + /proc/kpageflags). The first process also prints the time it took to
 * fill the page cache before the cont modes (fill_us). Data is checked: every page read back
 * holds the first process's byte and zeros elsewhere.
 *
 * usage: shmem_uffd_bench MODE [--memfd|--anon|--file PATH] [--mb N] [--children N]
 * (root: /proc/kpageflags, and userfaultfd without vm.unprivileged_userfaultfd)
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
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PG    4096UL
#define HPAGE (2UL << 20)

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

enum { FLOOR, COPY4K, COPY2M, CONT4K, CONT2M, FALLOC2M, BOTH };
static const char *const mode_names[] = {"floor",  "copy4k",   "copy2m", "cont4k",
					 "cont2m", "falloc2m", "both"};
enum { MEMFD, ANON, FILEB };
static const char *const backing_names[] = {"memfd", "anon", "file"};

static int mode, backing;
static const char *path;
static size_t len;
static char *region;
static int fd = -1;
static char *zeros;

/* the handler's state (one per process: a child starts afresh) */
static int uffd = -1;
static long msgs, minor_msgs; /* written by the handler before it wakes the toucher */

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "shmem_uffd_bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void must(int rc, const char *what)
{
	if (rc != 0)
		die(what);
}

/* One UFFDIO_COPY or UFFDIO_CONTINUE over [a, a+n): a page present already (-EEXIST) is
 * skipped, and the range woken at the end (an ioctl that stopped early woke only what it
 * mapped). */
static void fill(uint64_t a, uint64_t n, int cont)
{
	uint64_t done = 0;

	while (done < n) {
		int64_t got;
		int rc;

		if (cont) {
			struct uffdio_continue c = {.range = {a + done, n - done},
						    .mode = UFFDIO_CONTINUE_MODE_DONTWAKE};
			rc = ioctl(uffd, UFFDIO_CONTINUE, &c);
			got = c.mapped;
		} else {
			struct uffdio_copy c = {.dst = a + done,
						.src = (uint64_t)zeros,
						.len = n - done,
						.mode = UFFDIO_COPY_MODE_DONTWAKE};
			rc = ioctl(uffd, UFFDIO_COPY, &c);
			got = c.copy;
		}
		if (rc == 0)
			break;
		if (errno == EAGAIN && got > 0) {
			done += (uint64_t)got;
			continue;
		}
		if (errno != EEXIST)
			die(cont ? "UFFDIO_CONTINUE" : "UFFDIO_COPY");
		done += (got > 0 ? (uint64_t)got : 0) + PG; /* the page that is there already */
	}
	struct uffdio_range w = {a, n};
	must(ioctl(uffd, UFFDIO_WAKE, &w), "UFFDIO_WAKE");
}

static void *handler(void *arg)
{
	(void)arg;
	for (;;) {
		struct uffd_msg m;
		ssize_t r = read(uffd, &m, sizeof(m));

		if (r < 0 && errno == EINTR)
			continue;
		if (r != (ssize_t)sizeof(m))
			die("read(userfaultfd)");
		if (m.event != UFFD_EVENT_PAGEFAULT)
			continue;
		__atomic_fetch_add(&msgs, 1, __ATOMIC_RELEASE);
		uint64_t a = m.arg.pagefault.address & ~(PG - 1);
		int minor = (m.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_MINOR) != 0;

		__atomic_fetch_add(&minor_msgs, minor, __ATOMIC_RELEASE);
		int whole = mode == COPY2M || mode == CONT2M || mode == FALLOC2M;
		uint64_t lo = whole ? a & ~(HPAGE - 1) : a, n = whole ? HPAGE : PG;

		switch (mode) {
		case COPY4K:
		case COPY2M:
		case CONT4K:
		case CONT2M:
			fill(lo, n, mode == CONT4K || mode == CONT2M);
			break;
		case FALLOC2M: {
			struct uffdio_range w = {lo, HPAGE};
			must(fallocate(fd, 0, (off_t)(lo - (uint64_t)region), (off_t)HPAGE),
			     "fallocate");
			must(ioctl(uffd, UFFDIO_WAKE, &w), "UFFDIO_WAKE");
			break;
		}
		default: /* both: answer what the message asks */
			fill(a, PG, minor);
			break;
		}
	}
	return NULL;
}

/* a userfaultfd of this process, the region registered in this mode, a handler thread */
static void start_handler(void)
{
	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
	if (uffd < 0)
		die("userfaultfd");
	struct uffdio_api api = {.api = UFFD_API, .features = UFFD_FEATURE_MINOR_SHMEM};
	must(ioctl(uffd, UFFDIO_API, &api), "UFFDIO_API (UFFD_FEATURE_MINOR_SHMEM)");
	uint64_t m = mode == COPY4K || mode == COPY2M || mode == FALLOC2M
			 ? UFFDIO_REGISTER_MODE_MISSING
		     : mode == BOTH ? UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_MINOR
				    : UFFDIO_REGISTER_MODE_MINOR;
	struct uffdio_register reg = {.range = {(uint64_t)region, len}, .mode = m};
	must(ioctl(uffd, UFFDIO_REGISTER, &reg), "UFFDIO_REGISTER");
	msgs = minor_msgs = 0;
	pthread_t t;
	must(pthread_create(&t, NULL, handler, NULL), "pthread_create");
	pthread_detach(t);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* the q-th percentile of v[0..n) in microseconds (sorts v) */
static double pct(uint64_t *v, size_t n, int q)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	size_t i = (n * (size_t)q + 99) / 100;
	return (double)v[i ? i - 1 : 0] / 1000.0;
}

/* smaps of the region: PMD-mapped kB (ShmemPmdMapped + FilePmdMapped) and Rss kB */
static void smaps(long *pmd_kb, long *rss_kb)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[256];
	int in = 0;

	*pmd_kb = *rss_kb = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		long v;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = lo <= (unsigned long)region && (unsigned long)region < hi;
			continue;
		}
		if (!in)
			continue;
		if (sscanf(line, "ShmemPmdMapped: %ld", &v) == 1 ||
		    sscanf(line, "FilePmdMapped: %ld", &v) == 1)
			*pmd_kb += v;
		else if (sscanf(line, "Rss: %ld", &v) == 1)
			*rss_kb += v;
	}
	fclose(f);
}

/* pages of the region mapped here whose frame is part of a THP (kpageflags bit 22) */
static long thp_pages(void)
{
	int pm = open("/proc/self/pagemap", O_RDONLY), kf = open("/proc/kpageflags", O_RDONLY);
	long n = 0;

	if (pm < 0 || kf < 0)
		goto out;
	for (size_t off = 0; off < len; off += PG) {
		uint64_t e, flags;
		off_t at = (off_t)(((uint64_t)region + off) / PG * 8);

		if (pread(pm, &e, 8, at) != 8 || !(e & (1ULL << 63)))
			continue;
		uint64_t pfn = e & ((1ULL << 55) - 1);
		if (pread(kf, &flags, 8, (off_t)(pfn * 8)) == 8 && (flags & (1ULL << 22)))
			n++;
	}
out:
	if (pm >= 0)
		close(pm);
	if (kf >= 0)
		close(kf);
	return n;
}

/* touch every page once with a write (the first process writes 1 at byte 8, a later one VAL at
 * byte 16), check every page (the first's byte, this one's, zeros elsewhere), print one line */
static void touch(const char *who, unsigned char val, double fill_us)
{
	size_t n = len / PG, chunks = len / HPAGE;
	uint64_t *lat = calloc(n, sizeof(*lat)), *chunk = calloc(chunks, sizeof(*chunk));
	long bad = 0;
	size_t off = val == 1 ? 8 : 16;

	if (!lat || !chunk)
		die("calloc");
	struct rusage ru0, ru1;
	getrusage(RUSAGE_THREAD, &ru0);
	uint64_t t_all = now_ns();
	for (size_t c = 0; c < chunks; c++) {
		uint64_t t_c = now_ns();
		for (size_t i = c * (HPAGE / PG); i < (c + 1) * (HPAGE / PG); i++) {
			volatile unsigned char *p = (volatile unsigned char *)region + i * PG;
			uint64_t t0 = now_ns();
			p[off] = val;
			lat[i] = now_ns() - t0;
		}
		chunk[c] = now_ns() - t_c;
	}
	uint64_t total = now_ns() - t_all;
	getrusage(RUSAGE_THREAD, &ru1);
	for (size_t i = 0; i < n; i++) {
		const unsigned char *p = (const unsigned char *)region + i * PG;
		if (p[8] != 1 || p[off] != val || p[0] != 0 || p[PG - 1] != 0)
			bad++;
	}
	long pmd_kb, rss_kb;
	smaps(&pmd_kb, &rss_kb);
	printf("%s %s %s page_p50=%.2f page_p90=%.2f chunk_p50=%.1f chunk_p90=%.1f total_us=%.0f "
	       "faults=%ld msgs=%ld minor=%ld pmd_kb=%ld rss_kb=%ld thp_pages=%ld fill_us=%.0f "
	       "bad=%ld\n",
	       mode_names[mode], backing_names[backing], who, pct(lat, n, 50), pct(lat, n, 90),
	       pct(chunk, chunks, 50), pct(chunk, chunks, 90), (double)total / 1000.0,
	       (ru1.ru_minflt - ru0.ru_minflt) + (ru1.ru_majflt - ru0.ru_majflt),
	       __atomic_load_n(&msgs, __ATOMIC_ACQUIRE),
	       __atomic_load_n(&minor_msgs, __ATOMIC_ACQUIRE), pmd_kb, rss_kb, thp_pages(), fill_us,
	       bad);
	fflush(stdout);
	free(lat);
	free(chunk);
	if (bad)
		exit(3);
}

/* both: one range MISSING|MINOR; a first touch, then the same page unmapped and touched again */
static void both_check(void)
{
	start_handler();
	volatile char *p = region;
	p[0] = 1; /* not cached: MISSING */
	long m1 = __atomic_load_n(&msgs, __ATOMIC_ACQUIRE),
	     n1 = __atomic_load_n(&minor_msgs, __ATOMIC_ACQUIRE);
	must(madvise(region, PG, MADV_DONTNEED), "MADV_DONTNEED");
	char v = p[0]; /* cached, not mapped here: MINOR */
	long m2 = __atomic_load_n(&msgs, __ATOMIC_ACQUIRE) - m1;
	long n2 = __atomic_load_n(&minor_msgs, __ATOMIC_ACQUIRE) - n1;
	printf("both %s register=ok first_touch_msgs=%ld first_touch_minor=%ld "
	       "unmapped_cached_msgs=%ld unmapped_cached_minor=%ld data=%s\n",
	       backing_names[backing], m1, n1, m2, n2, v == 1 ? "ok" : "BAD");
	exit(v == 1 && m1 == 1 && n1 == 0 && m2 == 1 && n2 == 1 ? 0 : 3);
}

int main(int argc, char **argv)
{
	int children = 1;

	if (argc < 2)
		goto usage;
	for (mode = 0; mode <= BOTH && strcmp(argv[1], mode_names[mode]); mode++)
		;
	if (mode > BOTH)
		goto usage;
	len = 16UL << 20;
	backing = MEMFD;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--memfd"))
			backing = MEMFD;
		else if (!strcmp(argv[i], "--anon"))
			backing = ANON;
		else if (!strcmp(argv[i], "--file") && i + 1 < argc)
			backing = FILEB, path = argv[++i];
		else if (!strcmp(argv[i], "--mb") && i + 1 < argc && atoi(argv[i + 1]) >= 2)
			len = ((size_t)atoi(argv[++i]) << 20) & ~(HPAGE - 1);
		else if (!strcmp(argv[i], "--children") && i + 1 < argc && atoi(argv[i + 1]) >= 0)
			children = atoi(argv[++i]);
		else
			goto usage;
	}
	zeros = mmap(NULL, HPAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (zeros == MAP_FAILED)
		die("mmap zeros");
	if (backing == MEMFD)
		fd = memfd_create("shmem_uffd_bench", MFD_CLOEXEC);
	else if (backing == FILEB)
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (backing != ANON && (fd < 0 || ftruncate(fd, (off_t)len)))
		die(path ? path : "memfd");
	/* 2 MiB-aligned, as shmem_get_unmapped_area places a mapping that may hold huge pages */
	char *va = mmap(NULL, len + HPAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (va == MAP_FAILED)
		die("mmap reserve");
	char *at = (char *)(((uintptr_t)va + HPAGE - 1) & ~(HPAGE - 1));
	region = mmap(at, len, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_FIXED | (backing == ANON ? MAP_ANONYMOUS : 0),
		      backing == ANON ? -1 : fd, 0);
	if (region == MAP_FAILED)
		die("mmap region");

	if (mode == FALLOC2M && backing == ANON) {
		fprintf(stderr, "shmem_uffd_bench: falloc2m needs a file (--memfd or --file)\n");
		return 2;
	}
	if (mode == BOTH)
		both_check();
	double fill_us = 0;
	if (mode == CONT4K || mode == CONT2M) { /* the pages must exist before MINOR sees them */
		uint64_t t0 = now_ns();
		if (backing == ANON) {
			must(madvise(region, len, MADV_POPULATE_WRITE), "MADV_POPULATE_WRITE");
			must(madvise(region, len, MADV_DONTNEED), "MADV_DONTNEED");
		} else {
			must(fallocate(fd, 0, 0, (off_t)len), "fallocate");
		}
		fill_us = (double)(now_ns() - t0) / 1000.0;
	}
	if (mode != FLOOR)
		start_handler();
	touch("first", 1, fill_us);
	for (int c = 0; c < children; c++) {
		pid_t pid = fork();
		if (pid < 0)
			die("fork");
		if (pid == 0) {
			uffd = -1;
			if (mode != FLOOR)
				start_handler();
			touch("second", (unsigned char)(2 + c % 200), 0);
			_exit(0);
		}
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "shmem_uffd_bench: child %d failed\n", c);
			return 1;
		}
	}
	if (backing == FILEB)
		unlink(path);
	return 0;
usage:
	fprintf(stderr, "usage: shmem_uffd_bench floor|copy4k|copy2m|cont4k|cont2m|falloc2m|both "
			"[--memfd|--anon|--file PATH] [--mb N] [--children N]\n");
	return 2;
}

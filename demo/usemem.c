/* usemem: a self-timing first-touch workload in the spirit of mmtests' thpscale/thpcompact.
 *
 * It maps SIZE bytes (2 MiB aligned), optionally MADV_HUGEPAGE, and its threads touch it one
 * 2 MiB extent at a time: each extent's first byte is written, mincore() of the page 256 KiB in
 * says whether that first touch mapped a huge page (as thpscale decides), then the whole extent
 * is memset. The time of that sequence is the fault latency, printed mmtests-style:
 *   fault <tid> <huge|base> <latency_us> <sec.usec>
 * then a summary with the region's AnonHugePages from /proc/self/smaps:
 *   usemem: extents=N huge=N huge_pct=P anonhuge_kb=K p50_us=X p99_us=Y max_us=Z
 * --loops repeats map -> touch -> unmap in one process; --delay waits before the first map (so
 * that a writer started with the process under thpemu run has filled the page cache); --hold
 * keeps each mapping that long before unmapping it, reading it every second and printing its
 * AnonHugePages ("hold <sec> anonhuge_kb=<kB>"): a long-lived process for khugepaged, whose
 * summary's anonhuge_kb is then the value at the end of the hold. --wait-writeback waits,
 * after --delay, until the machine has that much page cache under writeback (a copy to a slow
 * device well under way, as when the 2011 stalls were seen): nr_writeback of /proc/vmstat, or
 * of the emulated machine's (thpemu_vmstat) under thpemu. It runs natively as well as under
 * thpemu: it does not link the emulator (the API is declared weak).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define HPAGE	     (2UL << 20)
#define WAIT_MAX_NS  (120 * 1000000000ULL) /* --wait-writeback gives up after this */
#define WAIT_POLL_NS (20 * 1000000ULL)

/* libthpemu.so's, when preloaded (core/include/thpemu.h) */
extern int thpemu_active(void) __attribute__((weak));
extern int thpemu_vmstat(char *buf, size_t len) __attribute__((weak));
#define PROBE_OFFSET (64 * 4096UL) /* thpscale's mincore probe: 64 pages into the extent */

struct sample {
	uint32_t tid;
	bool huge;
	double us;
	struct timespec when; /* CLOCK_REALTIME at the end of the touch */
};

struct opts {
	uint64_t size;
	unsigned threads;
	bool madvise;
	unsigned loops;
	uint64_t hold_ns;
	uint64_t delay_ns; /* before the first loop */
	uint64_t wait_wb;  /* bytes under writeback to wait for, after the delay */
	bool quiet;
};

struct worker {
	pthread_t th;
	char *base;
	size_t first, count; /* extents [first, first + count) */
	struct sample *out;  /* count samples */
	pthread_barrier_t *bar;
};

static void usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "usemem: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(2);
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	double v = strtod(s, &end);
	uint64_t mult = 1;

	if (end == s || v < 0)
		return -1;
	if (*end == 'k' || *end == 'K')
		mult = 1ULL << 10;
	else if (*end == 'm' || *end == 'M')
		mult = 1ULL << 20;
	else if (*end == 'g' || *end == 'G')
		mult = 1ULL << 30;
	else if (*end)
		return -1;
	if (*end && end[1] && strcmp(end + 1, "iB") && strcmp(end + 1, "B"))
		return -1;
	*out = (uint64_t)(v * (double)mult);
	return 0;
}

static int parse_duration(const char *s, uint64_t *ns)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || v < 0)
		return -1;
	if (!strcmp(end, "ns"))
		*ns = (uint64_t)v;
	else if (!strcmp(end, "us"))
		*ns = (uint64_t)(v * 1e3);
	else if (!strcmp(end, "ms"))
		*ns = (uint64_t)(v * 1e6);
	else if (!strcmp(end, "s") || (!*end && v == 0))
		*ns = (uint64_t)(v * 1e9);
	else if (!strcmp(end, "m"))
		*ns = (uint64_t)(v * 60e9);
	else
		return -1;
	return 0;
}

/* --help; also the source of usemem.1 (help2man) */
static void usage(void)
{
	printf("usage: usemem --size SIZE [--threads N] [--madvise|--no-madvise] "
	       "[--loops N] [--hold DUR] [--delay DUR]\n"
	       "              [--wait-writeback SIZE] [--quiet]\n\n"
	       "A self-timing first-touch workload (after mmtests' thpscale): maps SIZE bytes, "
	       "touches them one\n"
	       "2 MiB extent at a time and prints each touch's latency and whether it got a huge "
	       "page:\n"
	       "  fault TID huge|base LATENCY_US SEC.USEC\n"
	       "then one summary line, with the mapping's AnonHugePages in kB\n"
	       "  usemem: extents=N huge=N huge_pct=P anonhuge_kb=K p50_us=X p99_us=Y max_us=Z\n"
	       "It runs natively or under 'thpemu run'; it does not link the emulator.\n\n"
	       "Options:\n"
	       "  --size SIZE       bytes to map per loop, at least 2M (e.g. 8M, 512M, 4G)\n"
	       "  --threads N       threads sharing the extents (1..1024; default 1)\n"
	       "  --madvise         MADV_HUGEPAGE the mapping (the default)\n"
	       "  --no-madvise      leave the mapping without MADV_HUGEPAGE\n"
	       "  --loops N         repeat map, touch, unmap N times (default 1)\n"
	       "  --hold DUR        keep each mapping DUR before unmapping it, printing its\n"
	       "                    AnonHugePages every second (e.g. 500ms, 2s, 1m)\n"
	       "  --delay DUR       wait DUR before the first mapping (e.g. 1s)\n"
	       "  --wait-writeback SIZE\n"
	       "                    then wait until SIZE of page cache is under writeback\n"
	       "                    (nr_writeback of /proc/vmstat; under thpemu, of the\n"
	       "                    emulated machine), at most 120 s; prints how long it\n"
	       "                    waited (e.g. 8M: a copy to a slow device under way)\n"
	       "  --quiet           print the summary only, not one line per fault\n"
	       "  --help            this help\n"
	       "  --version         print the version (thpemu's)\n");
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lopts[] = {
	    {"size", required_argument, NULL, 's'},
	    {"threads", required_argument, NULL, 't'},
	    {"madvise", no_argument, NULL, 'm'},
	    {"no-madvise", no_argument, NULL, 'n'},
	    {"loops", required_argument, NULL, 'l'},
	    {"hold", required_argument, NULL, 'h'},
	    {"delay", required_argument, NULL, 'd'},
	    {"wait-writeback", required_argument, NULL, 'w'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"help", no_argument, NULL, 'H'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	char *end;

	*o = (struct opts){.threads = 1, .madvise = true, .loops = 1};
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (parse_size(optarg, &o->size) < 0 || o->size < HPAGE)
				usage_error(
				    "--size: '%s' is not a size of at least 2M (e.g. 512M, 4G)",
				    optarg);
			break;
		case 't':
			o->threads = (unsigned)strtoul(optarg, &end, 10);
			if (*end || o->threads < 1 || o->threads > 1024)
				usage_error("--threads: '%s' is not accepted (1..1024)", optarg);
			break;
		case 'm':
			o->madvise = true;
			break;
		case 'n':
			o->madvise = false;
			break;
		case 'l':
			o->loops = (unsigned)strtoul(optarg, &end, 10);
			if (*end || o->loops < 1)
				usage_error("--loops: '%s' is not accepted (a positive integer)",
					    optarg);
			break;
		case 'h':
			if (parse_duration(optarg, &o->hold_ns) < 0)
				usage_error("--hold: '%s' is not a duration (e.g. 500ms, 2s)",
					    optarg);
			break;
		case 'd':
			if (parse_duration(optarg, &o->delay_ns) < 0)
				usage_error("--delay: '%s' is not a duration (e.g. 500ms, 5s)",
					    optarg);
			break;
		case 'w':
			if (parse_size(optarg, &o->wait_wb) < 0 || !o->wait_wb)
				usage_error("--wait-writeback: '%s' is not a size above 0 (e.g. "
					    "8M, 512K)",
					    optarg);
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'H':
			usage();
			exit(0);
		case 'V':
			printf("usemem (thpemu) " THPEMU_VERSION "\n");
			exit(0);
		default:
			usage_error(
			    "unknown option '%s' (accepted: --size, --threads, --madvise, "
			    "--no-madvise, --loops, --hold, --delay, --wait-writeback, --quiet, "
			    "--help, --version)",
			    argv[optind - 1]);
		}
	}
	if (!o->size)
		usage_error("%s", "--size is required (e.g. --size 512M)");
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* First touch of one extent, the huge/base probe and the 2 MiB memset: the timed sequence. Its
 * own symbol so that stall reports name it in the application stack. */
__attribute__((noinline)) static bool usemem_touch_extent(char *ext, double *us)
{
	unsigned char vec = 0;
	double t0 = now_us();

	*(volatile char *)ext = 1;
	if (mincore(ext + PROBE_OFFSET, 4096, &vec) < 0)
		vec = 0;
	memset(ext, 0x5a, HPAGE);
	*us = now_us() - t0;
	return vec & 1;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint32_t tid = (uint32_t)syscall(SYS_gettid);

	pthread_barrier_wait(w->bar);
	for (size_t i = 0; i < w->count; i++) {
		struct sample *s = &w->out[i];

		s->huge = usemem_touch_extent(w->base + (w->first + i) * HPAGE, &s->us);
		s->tid = tid;
		clock_gettime(CLOCK_REALTIME, &s->when);
	}
	return NULL;
}

/* AnonHugePages (kB) of the VMAs overlapping [lo, hi). */
static uint64_t anon_huge_kb(uintptr_t lo, uintptr_t hi)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	bool in = false;
	uint64_t kb = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		uintptr_t a, b;
		unsigned long v;

		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &a, &b) == 2) /* a VMA header */
			in = a < hi && b > lo;
		else if (in && sscanf(line, "AnonHugePages: %lu kB", &v) == 1)
			kb += v;
	}
	fclose(f);
	return kb;
}

static char *map_aligned(size_t len)
{
	char *p =
	    mmap(NULL, len + HPAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t a;

	if (p == MAP_FAILED)
		return NULL;
	a = ((uintptr_t)p + HPAGE - 1) & ~(HPAGE - 1);
	if (a > (uintptr_t)p)
		munmap(p, a - (uintptr_t)p);
	munmap((char *)a + len, (uintptr_t)p + HPAGE - a);
	return (char *)a;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL)};

	while (ns && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static double since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Keep the mapping for hold_ns, reading every page once a second (a long-lived process using
 * its memory: khugepaged collapses it meanwhile, or the shrinker splits it) and printing the
 * region's AnonHugePages then: "hold <sec> anonhuge_kb=<kB>". Returns the last value. */
static uint64_t hold(const struct opts *o, const char *base, size_t len, uint64_t kb)
{
	struct timespec t0;
	volatile unsigned long sum = 0;
	double left;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		left = (double)o->hold_ns / 1e9 - since(&t0);
		if (left <= 0)
			break;
		sleep_ns(left < 1.0 ? (uint64_t)(left * 1e9) : 1000000000ULL);
		for (size_t off = 0; off < len; off += 4096)
			sum += (unsigned char)base[off];
		kb = anon_huge_kb((uintptr_t)base, (uintptr_t)base + len);
		if (!o->quiet)
			printf("hold %.1f anonhuge_kb=%" PRIu64 "\n", since(&t0), kb);
	}
	(void)sum;
	return kb;
}

/* One map -> touch -> unmap cycle; returns the region's AnonHugePages before the unmap (at the
 * end of --hold with one). */
static uint64_t run_loop(const struct opts *o, size_t nexts, struct sample *out)
{
	size_t len = nexts * HPAGE;
	char *base = map_aligned(len);
	struct worker *w = calloc(o->threads, sizeof(*w));
	pthread_barrier_t bar;
	uint64_t kb;

	if (!base || !w) {
		fprintf(stderr, "usemem: cannot map %zu bytes: %s\n", len, strerror(errno));
		exit(1);
	}
	if (o->madvise && madvise(base, len, MADV_HUGEPAGE) < 0)
		fprintf(stderr, "usemem: madvise(MADV_HUGEPAGE): %s\n", strerror(errno));
	pthread_barrier_init(&bar, NULL, o->threads);
	for (unsigned t = 0; t < o->threads; t++) {
		w[t].base = base;
		w[t].first = nexts * t / o->threads;
		w[t].count = nexts * (t + 1) / o->threads - w[t].first;
		w[t].out = out + w[t].first;
		w[t].bar = &bar;
		pthread_create(&w[t].th, NULL, worker_main, &w[t]);
	}
	for (unsigned t = 0; t < o->threads; t++)
		pthread_join(w[t].th, NULL);
	kb = anon_huge_kb((uintptr_t)base, (uintptr_t)base + len);
	if (o->hold_ns)
		kb = hold(o, base, len, kb);
	munmap(base, len);
	pthread_barrier_destroy(&bar);
	free(w);
	return kb;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Pages under writeback now: nr_writeback of the emulated machine under thpemu, else the host's
 * /proc/vmstat; -1 if neither can be read. */
static long long nr_writeback(void)
{
	static char buf[16384]; /* not managed memory: no fault while the emulator holds its lock */
	const char *p;
	FILE *f;
	size_t n;

	if (thpemu_active && thpemu_active() && thpemu_vmstat) {
		if (thpemu_vmstat(buf, sizeof(buf)) < 0)
			return -1;
	} else {
		f = fopen("/proc/vmstat", "r");
		if (!f)
			return -1;
		n = fread(buf, 1, sizeof(buf) - 1, f);
		buf[n] = '\0';
		fclose(f);
	}
	for (p = buf; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, "nr_writeback ", 13))
			return strtoll(p + 13, NULL, 10);
	return -1;
}

/* --wait-writeback: until that many bytes are under writeback, WAIT_MAX_NS at most. Says how
 * long it waited, and what it saw. */
static void wait_writeback(uint64_t bytes)
{
	uint64_t pages = (bytes + 4095) / 4096;
	struct timespec t0;
	long long n = -1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((n = nr_writeback()) >= 0 && (uint64_t)n < pages &&
	       since(&t0) * 1e9 < (double)WAIT_MAX_NS)
		sleep_ns(WAIT_POLL_NS);
	if (n < 0)
		fprintf(stderr, "usemem: --wait-writeback: no nr_writeback to read; not waiting\n");
	else if ((uint64_t)n < pages)
		fprintf(
		    stderr,
		    "usemem: --wait-writeback: %llu kB under writeback after %.0f s, not %" PRIu64
		    " kB; going on\n",
		    n * 4ULL, since(&t0), pages * 4);
	else
		printf("usemem: waited %.1f s for writeback: %llu kB under writeback\n", since(&t0),
		       n * 4ULL);
}

/* Nearest-rank percentile of sorted values. */
static double percentile(const double *v, size_t n, double q)
{
	size_t k;

	if (!n)
		return 0;
	k = (size_t)(q * (double)n + 0.999999);
	return v[k ? k - 1 : 0];
}

int main(int argc, char **argv)
{
	struct opts o;
	size_t nexts, total, huge = 0;
	struct sample *s;
	double *lat;
	uint64_t kb = 0;

	parse_args(argc, argv, &o);
	nexts = (o.size + HPAGE - 1) / HPAGE;
	total = nexts * o.loops;
	s = calloc(total, sizeof(*s));
	lat = calloc(total, sizeof(*lat));
	if (!s || !lat)
		return 1;
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	sleep_ns(o.delay_ns);
	if (o.wait_wb)
		wait_writeback(o.wait_wb);
	for (unsigned l = 0; l < o.loops; l++) {
		struct sample *ls = s + (size_t)l * nexts;

		kb = run_loop(&o, nexts, ls);
		for (size_t i = 0; !o.quiet && i < nexts; i++)
			printf("fault %u %s %.0f %ld.%06ld\n", ls[i].tid,
			       ls[i].huge ? "huge" : "base", ls[i].us, (long)ls[i].when.tv_sec,
			       ls[i].when.tv_nsec / 1000);
	}
	for (size_t i = 0; i < total; i++) {
		huge += s[i].huge;
		lat[i] = s[i].us;
	}
	qsort(lat, total, sizeof(*lat), cmp_double);
	printf("usemem: extents=%zu huge=%zu huge_pct=%.1f anonhuge_kb=%" PRIu64
	       " p50_us=%.0f p99_us=%.0f max_us=%.0f\n",
	       total, huge, 100.0 * (double)huge / (double)total, kb, percentile(lat, total, 0.50),
	       percentile(lat, total, 0.99), lat[total - 1]);
	free(s);
	free(lat);
	return 0;
}

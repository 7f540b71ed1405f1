/* What the oracle's workloads share: arguments, mappings, the thpscale-style first touch, the
 * fragmenting filler, counter snapshots, AnonHugePages samples and per-extent outcomes (wl.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/units.h"
#include "wl.h"

/* /proc/kpageflags bits (include/uapi/linux/kernel-page-flags.h) */
#define KPF_COMPOUND_HEAD 15
#define KPF_COMPOUND_TAIL 16
#define KPF_THP		  22
#define PM_PRESENT	  (1ULL << 63)
#define PM_PFN_MASK	  ((1ULL << 55) - 1)

#define THP_SYSFS "/sys/kernel/mm/transparent_hugepage"

extern int thpemu_active(void) __attribute__((weak));
extern int thpemu_vmstat(char *buf, size_t len) __attribute__((weak));
extern int thpemu_mthp_stats(char *buf, size_t len) __attribute__((weak));
extern char **environ;

static const char *wl_name = "thpemu-wl";
static uint64_t phase_t0;

/* ---- start, arguments, errors ---------------------------------------------------------------- */

void wl_set_name(const char *name)
{
	wl_name = name;
}

void wl_start(const char *name)
{
	wl_name = name;
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	printf("ORACLE wl %s %d\n", name, WL_PROTOCOL);
	wl_snapshot_point("start");
}

void wl_usage(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s%s: ", strcmp(wl_name, "thpemu-wl") ? "thpemu-wl " : "", wl_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(2);
}

void wl_die(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printf("ORACLE error %s\n", msg);
	fflush(stdout);
	fprintf(stderr, "%s%s: %s\n", strcmp(wl_name, "thpemu-wl") ? "thpemu-wl " : "", wl_name,
		msg);
	exit(1);
}

/* Sizes, durations and counts are util/units.c's, as every thpemu option's: "64M" and "20ms" mean
 * what they mean to thpemu run. A relative amount is a percentage, of base_kb. */
int wl_parse_amount(const char *s, uint64_t base_kb, uint64_t *bytes, bool *pct_out)
{
	size_t n = strlen(s);
	double ratio;

	*pct_out = n && s[n - 1] == '%';
	if (!*pct_out)
		return units_parse_size(s, bytes) ? -1 : 0;
	if (units_parse_ratio(s, 1.0, &ratio))
		return -1;
	*bytes = (uint64_t)(ratio * (double)base_kb * 1024.0);
	return 0;
}

int wl_parse_duration(const char *s, uint64_t *ns)
{
	return units_parse_duration(s, ns) ? -1 : 0;
}

uint64_t wl_parse_uint(const char *opt, const char *s, uint64_t max)
{
	uint64_t v;

	if (units_parse_uint(s, max, &v))
		wl_usage("%s: '%s' is not an integer 0..%llu", opt, s, (unsigned long long)max);
	return v;
}

const char *wl_parse_advice(const char *opt, const char *s)
{
	if (strcmp(s, "hugepage") && strcmp(s, "none") && strcmp(s, "nohugepage"))
		wl_usage("%s: '%s' is not hugepage, none or nohugepage", opt, s);
	return s;
}

void wl_check_relative(const char *opt, bool pct)
{
	if (pct && thpemu_active && thpemu_active())
		wl_usage("%s: a percentage is of the guest's memory; under thpemu give a size (the "
			 "oracle's JSON has the bytes it resolved in info)",
			 opt);
}

int wl_getopt(const char *name, int argc, char **argv, const struct option *lo,
	      void (*usage)(const char *name))
{
	int c = getopt_long(argc, argv, "", lo, NULL);

	if (c == 'h') {
		usage(name);
		exit(0);
	}
	if (c == '?' || c == ':')
		wl_usage("unknown option (see thpemu-wl %s --help)", name);
	if (c == -1 && optind < argc)
		wl_usage("unexpected argument '%s'", argv[optind]);
	return c;
}

uint64_t wl_amount(const char *opt, const char *s, uint64_t base_kb, uint64_t min)
{
	uint64_t b;
	bool pct;

	if (wl_parse_amount(s, base_kb, &b, &pct))
		wl_usage("%s: '%s' is not a size (64M) or a percentage (80%%)", opt, s);
	if (b < min)
		wl_usage("%s: at least %lluM", opt, (unsigned long long)(min >> 20));
	wl_check_relative(opt, pct);
	return b;
}

uint64_t wl_seed(uint64_t opt)
{
	const char *env = getenv("ORACLE_SEED");

	if (opt)
		return opt;
	return env && *env ? strtoull(env, NULL, 10) : 1;
}

/* splitmix64 */
uint64_t wl_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* ---- memory ------------------------------------------------------------------------------ */

const char *wl_file_dir(void)
{
	static const char *const env[] = {"ORACLE_DISK", "THPEMU_DEVICE_DIR", "TMPDIR"};

	for (size_t i = 0; i < sizeof(env) / sizeof(env[0]); i++) {
		const char *v = getenv(env[i]);

		if (v && *v)
			return v;
	}
	return "/tmp";
}

uint64_t wl_meminfo_kb(const char *field)
{
	char line[256];
	size_t n = strlen(field);
	uint64_t v = 0;
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && line[n] == ':') {
			v = strtoull(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

void wl_map(struct wl_region *r, size_t len)
{
	size_t want = (len + WL_HPAGE - 1) & ~(WL_HPAGE - 1);
	char *p = mmap(NULL, want + WL_HPAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	char *a;

	if (p == MAP_FAILED)
		wl_die("mmap %zu bytes: %s", want, strerror(errno));
	a = (char *)(((uintptr_t)p + WL_HPAGE - 1) & ~(WL_HPAGE - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (a + want < p + want + WL_HPAGE)
		munmap(a + want, (size_t)(p + want + WL_HPAGE - (a + want)));
	r->base = a;
	r->len = want;
}

void wl_advise(const struct wl_region *r, const char *advice)
{
	int a;

	if (!strcmp(advice, "none"))
		return;
	a = !strcmp(advice, "hugepage") ? MADV_HUGEPAGE : MADV_NOHUGEPAGE;
	if (madvise(r->base, r->len, a) < 0)
		wl_die("madvise %s: %s", advice, strerror(errno));
}

void wl_touch_extent(const struct wl_region *r, size_t i, bool per_page, struct wl_fault *f)
{
	char *p = r->base + i * WL_HPAGE;
	unsigned char vec = 0;
	uint64_t t0 = wl_now_ns();

	*(volatile char *)p = 1;
	if (mincore(p + WL_PROBE, WL_PAGE, &vec) < 0)
		vec = 0;
	if (per_page)
		for (size_t off = WL_PAGE; off < WL_HPAGE; off += WL_PAGE)
			((volatile char *)p)[off] = 1;
	else
		memset(p, 1, WL_HPAGE);
	f->ns = wl_now_ns() - t0;
	f->huge = vec & 1;
	f->done = true;
}

void wl_fill(struct wl_region *filler, uint64_t fill, unsigned keep, bool lock, uint64_t *rng)
{
	size_t pages, groups, prev_end = 0;

	filler->base = NULL;
	filler->len = 0;
	if (!fill)
		return;
	wl_map(filler, fill);
	wl_advise(filler, "nohugepage");
	pages = filler->len / WL_PAGE;
	for (size_t i = 0; i < pages; i++)
		filler->base[i * WL_PAGE] = 1;
	groups = keep > 1 ? pages / keep : 0;
	/* free the pages between consecutive kept ones: one madvise per kept page */
	for (size_t g = 0; g < groups; g++) {
		size_t kept = g * keep + (size_t)(wl_rand(rng) % keep);

		if (kept > prev_end && madvise(filler->base + prev_end * WL_PAGE,
					       (kept - prev_end) * WL_PAGE, MADV_DONTNEED) < 0)
			wl_die("madvise DONTNEED: %s", strerror(errno));
		prev_end = kept + 1;
	}
	if (groups && pages > prev_end)
		madvise(filler->base + prev_end * WL_PAGE, (pages - prev_end) * WL_PAGE,
			MADV_DONTNEED);
	if (lock && mlock2(filler->base, filler->len, MLOCK_ONFAULT) < 0)
		wl_die("mlock2 MLOCK_ONFAULT: %s", strerror(errno));
}

/* ---- the machine's memory, for the emulator to start from ------------------------------------ */

#define SNAP_LINE_B64  180	     /* base64 characters a console line (135 bytes) */
#define SNAP_MAX_BYTES (256UL << 20) /* reserved, not touched: a snapshot is KBs to a few MBs */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* FNV-1a, 64 bits: the host checks the text it reassembled (result.c does the same). */
static uint64_t fnv1a(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

static void print_b64(const unsigned char *p, size_t n)
{
	char line[SNAP_LINE_B64 + 1];
	size_t used = 0;

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		size_t k = n - i < 3 ? n - i : 3;

		if (k > 1)
			v |= (uint32_t)p[i + 1] << 8;
		if (k > 2)
			v |= p[i + 2];
		line[used++] = b64[v >> 18 & 63];
		line[used++] = b64[v >> 12 & 63];
		line[used++] = k > 1 ? b64[v >> 6 & 63] : '=';
		line[used++] = k > 2 ? b64[v & 63] : '=';
		if (used == SNAP_LINE_B64 || i + 3 >= n) {
			printf("ORACLE S %.*s\n", (int)used, line);
			used = 0;
		}
	}
}

/* The helper's text into buf (at most cap bytes); its length, or -1 with why set. */
static ssize_t run_helper(const char *helper, char *buf, size_t cap, char *why, size_t wlen)
{
	/* every zone of the node: the kernel allocates from all of them (ZONE_DMA too) */
	char *argv[] = {(char *)helper, (char *)"--quiet", (char *)"--zone", (char *)"all", NULL};
	posix_spawn_file_actions_t fa;
	int fds[2], status = 0, rc;
	size_t used = 0;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0) {
		snprintf(why, wlen, "pipe: %s", strerror(errno));
		return -1;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
	rc = posix_spawn(&pid, helper, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	if (rc) {
		close(fds[0]);
		snprintf(why, wlen, "%s: %s", helper, strerror(rc));
		return -1;
	}
	for (;;) {
		ssize_t n = read(fds[0], buf + used, cap - used);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += (size_t)n;
		if (used == cap)
			break;
	}
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) || used == cap) {
		snprintf(why, wlen, "%s: %s %d%s", helper,
			 WIFEXITED(status) ? "exit status" : "signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
			 used == cap ? ", output too long" : "");
		return -1;
	}
	return (ssize_t)used;
}

void wl_snapshot_point(const char *point)
{
	const char *helper = getenv("ORACLE_SNAPSHOT"), *at = getenv("ORACLE_SNAPSHOT_AT");
	char why[256];
	ssize_t n;
	char *buf;

	if (!helper || !*helper || strcmp(at && *at ? at : "phase", point))
		return;
	fflush(stdout);
	/* reserved, and touched only as the text arrives: the pass itself saw none of it */
	buf = mmap(NULL, SNAP_MAX_BYTES, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (buf == MAP_FAILED) {
		printf("ORACLE snapshot failed mmap: %s\n", strerror(errno));
		fflush(stdout);
		return;
	}
	/* 4 KiB pages: a THP fault here could compact, between the snapshot and the phase */
	madvise(buf, SNAP_MAX_BYTES, MADV_NOHUGEPAGE);
	n = run_helper(helper, buf, SNAP_MAX_BYTES, why, sizeof(why));
	if (n < 0) {
		printf("ORACLE snapshot failed %s\n", why);
	} else {
		printf("ORACLE snapshot begin %s\n", point);
		print_b64((const unsigned char *)buf, (size_t)n);
		printf("ORACLE snapshot end %zd %016llx\n", n,
		       (unsigned long long)fnv1a((const unsigned char *)buf, (size_t)n));
	}
	fflush(stdout);
	munmap(buf, SNAP_MAX_BYTES);
}

/* ---- counters ---------------------------------------------------------------------------- */

#define SNAP_MAX (48 << 10)

struct snap {
	char vmstat[SNAP_MAX];
	char mthp[SNAP_MAX]; /* "SIZE STAT VALUE\n" lines */
	bool taken;
};

static struct snap snaps[2];

static void read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;

	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
}

static void snap_mthp(char *buf, size_t len)
{
	struct dirent *de;
	size_t used = 0;
	DIR *d = opendir(THP_SYSFS);

	buf[0] = '\0';
	if (!d)
		return;
	while ((de = readdir(d))) {
		char dir[320], val[64];
		struct dirent *se;
		DIR *sd;

		if (strncmp(de->d_name, "hugepages-", 10))
			continue;
		snprintf(dir, sizeof(dir), THP_SYSFS "/%s/stats", de->d_name);
		sd = opendir(dir);
		while (sd && (se = readdir(sd))) {
			char path[640];
			int n;

			if (se->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, se->d_name);
			read_text(path, val, sizeof(val));
			n = snprintf(buf + used, len - used, "%s %s %lld\n", de->d_name + 10,
				     se->d_name, strtoll(val, NULL, 10));
			if (n > 0 && (size_t)n < len - used)
				used += (size_t)n;
		}
		if (sd)
			closedir(sd);
	}
	closedir(d);
}

static void take(struct snap *s)
{
	const char *c = getenv("ORACLE_COUNTERS");

	if (!c || strcmp(c, "1"))
		return;
	s->taken = true;
	/* under thpemu the machine that counts is the emulated one: /proc/vmstat is the host's */
	if (thpemu_active && thpemu_active()) {
		if (!thpemu_vmstat || thpemu_vmstat(s->vmstat, sizeof(s->vmstat)) < 0)
			s->taken = false;
		/* the per-size stats files, as the emulated kernel keeps them (none before 6.8) */
		if (!thpemu_mthp_stats || thpemu_mthp_stats(s->mthp, sizeof(s->mthp)) < 0)
			s->mthp[0] = '\0';
		return;
	}
	read_text("/proc/vmstat", s->vmstat, sizeof(s->vmstat));
	snap_mthp(s->mthp, sizeof(s->mthp));
}

static void print_snap(const char *tag, const struct snap *s)
{
	const char *p;

	if (!s->taken)
		return;
	for (p = s->vmstat; *p;) {
		const char *nl = strchr(p, '\n');
		int n = nl ? (int)(nl - p) : (int)strlen(p);

		printf("ORACLE snap %s vmstat %.*s\n", tag, n, p);
		p += n + (nl ? 1 : 0);
	}
	for (p = s->mthp; *p;) {
		const char *nl = strchr(p, '\n');
		int n = nl ? (int)(nl - p) : (int)strlen(p);

		printf("ORACLE snap %s mthp %.*s\n", tag, n, p);
		p += n + (nl ? 1 : 0);
	}
}

/* ---- the phase ----------------------------------------------------------------------------- */

struct sample {
	double ms;
	uint64_t kb;
};

static struct sample samples[WL_MAX_SAMPLE];
static size_t nsamples;

uint64_t wl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

double wl_phase_ms(void)
{
	return (double)(wl_now_ns() - phase_t0) / 1e6;
}

void wl_phase_begin(void)
{
	wl_snapshot_point("phase");
	fflush(stdout);
	take(&snaps[0]);
	phase_t0 = wl_now_ns();
}

void wl_phase_end(void)
{
	take(&snaps[1]);
}

uint64_t wl_anonhuge_kb(const struct wl_region *r)
{
	uintptr_t lo = (uintptr_t)r->base, hi = lo + r->len, s = 0, e = 0;
	char line[512];
	uint64_t kb = 0;
	FILE *f = fopen("/proc/self/smaps", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b;

		if (sscanf(line, "%lx-%lx ", &a, &b) == 2) {
			s = a;
			e = b;
		} else if (!strncmp(line, "AnonHugePages:", 14) && s < hi && e > lo) {
			kb += strtoull(line + 14, NULL, 10);
		}
	}
	fclose(f);
	return kb;
}

void wl_sample(const struct wl_region *r)
{
	if (nsamples == WL_MAX_SAMPLE)
		return;
	samples[nsamples].ms = wl_phase_ms();
	samples[nsamples].kb = wl_anonhuge_kb(r);
	nsamples++;
}

void wl_sleep_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL)};

	nanosleep(&ts, NULL);
}

double wl_sample_for(const struct wl_region *r, uint64_t dur_ns, uint64_t every_ns, bool until_huge)
{
	uint64_t t0 = wl_now_ns();

	while (wl_now_ns() - t0 < dur_ns) {
		wl_sleep_ns(every_ns);
		wl_sample(r);
		if (until_huge && wl_anonhuge_kb(r) * 1024 >= r->len)
			return wl_phase_ms();
	}
	return -1;
}

void wl_print_phase(void)
{
	print_snap("phase-begin", &snaps[0]);
	print_snap("phase-end", &snaps[1]);
	for (size_t i = 0; i < nsamples; i++)
		printf("ORACLE anonhuge %.3f %llu\n", samples[i].ms,
		       (unsigned long long)samples[i].kb);
}

void wl_print_faults(const struct wl_fault *f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (f[i].done)
			printf("ORACLE fault %zu %s %.1f\n", i, f[i].huge ? "huge" : "base",
			       (double)f[i].ns / 1e3);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void wl_latency_summary(const struct wl_fault *f, size_t n, char *buf, size_t len)
{
	uint64_t *v = calloc(n ? n : 1, sizeof(*v));
	size_t m = 0;

	for (size_t i = 0; v && i < n; i++)
		if (f[i].done)
			v[m++] = f[i].ns;
	if (!m) {
		snprintf(buf, len, "p50_us=0 p90_us=0 p99_us=0 max_us=0");
		free(v);
		return;
	}
	qsort(v, m, sizeof(*v), cmp_u64);
	/* nearest rank */
	snprintf(buf, len, "p50_us=%.1f p90_us=%.1f p99_us=%.1f max_us=%.1f",
		 (double)v[(m * 50 + 99) / 100 - 1] / 1e3, (double)v[(m * 90 + 99) / 100 - 1] / 1e3,
		 (double)v[(m * 99 + 99) / 100 - 1] / 1e3, (double)v[m - 1] / 1e3);
	free(v);
}

/* ---- per-extent outcome: pagemap + kpageflags ------------------------------------------------ */

enum ext_state { EXT_NONE, EXT_BASE, EXT_MTHP, EXT_HUGE, EXT_MIXED, EXT_UNKNOWN };
static const char *const ext_names[] = {"none", "base", "mthp", "huge", "mixed", "unknown"};

struct kpf {
	int pm;	 /* /proc/self/pagemap */
	int kpf; /* /proc/kpageflags */
};

static int page_flags(const struct kpf *k, uint64_t pfn, uint64_t *flags)
{
	return pread(k->kpf, flags, 8, (off_t)(pfn * 8)) == 8 ? 0 : -1;
}

static uint64_t pfn_of(uint64_t pm)
{
	return pm & PM_PFN_MASK;
}

/* The folio starting at page p of the extent: how many of its pages follow (a tail of the next
 * pfn continues it). */
static size_t folio_run(const uint64_t *pm, const uint64_t *fl, size_t p)
{
	size_t q = p + 1;

	while (q < 512 && (pm[q] & PM_PRESENT) && (fl[q] & (1ULL << KPF_COMPOUND_TAIL)) &&
	       pfn_of(pm[q]) == pfn_of(pm[q - 1]) + 1)
		q++;
	return q - p;
}

/* Classify extent i; add its pages per folio order to orders[]. */
static enum ext_state classify(const struct kpf *k, const struct wl_region *r, size_t i,
			       uint64_t orders[10])
{
	uint64_t pm[512], fl[512];
	size_t present = 0, large = 0, folios = 0;
	off_t off = (off_t)(((uintptr_t)r->base + i * WL_HPAGE) / WL_PAGE * 8);

	if (pread(k->pm, pm, sizeof(pm), off) != sizeof(pm))
		return EXT_UNKNOWN;
	for (size_t p = 0; p < 512; p++) {
		fl[p] = 0;
		if (!(pm[p] & PM_PRESENT))
			continue;
		if (!pfn_of(pm[p]) || page_flags(k, pfn_of(pm[p]), &fl[p]))
			return EXT_UNKNOWN; /* PFNs hidden (not CAP_SYS_ADMIN) */
		present++;
	}
	if (!present)
		return EXT_NONE;
	for (size_t p = 0; p < 512;) {
		size_t run;
		unsigned o = 0;

		if (!(pm[p] & PM_PRESENT)) {
			p++;
			continue;
		}
		run = folio_run(pm, fl, p);
		while (o < 9 && (2u << o) <= run)
			o++;
		orders[o] += run;
		if (fl[p] & (1ULL << KPF_THP))
			large += run;
		folios++;
		p += run;
	}
	if (folios == 1 && present == 512 && (fl[0] & (1ULL << KPF_THP)) &&
	    (fl[0] & (1ULL << KPF_COMPOUND_HEAD)) && pfn_of(pm[0]) % 512 == 0)
		return EXT_HUGE;
	if (large == present)
		return EXT_MTHP;
	return large ? EXT_MIXED : EXT_BASE;
}

size_t wl_print_extents(const struct wl_region *r)
{
	struct kpf k = {open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC),
			open("/proc/kpageflags", O_RDONLY | O_CLOEXEC)};
	uint64_t orders[10] = {0};
	size_t n = r->len / WL_HPAGE, huge = 0;
	bool known = true;

	for (size_t i = 0; i < n; i++) {
		enum ext_state s =
		    k.pm >= 0 && k.kpf >= 0 ? classify(&k, r, i, orders) : EXT_UNKNOWN;

		known &= s != EXT_UNKNOWN;
		huge += s == EXT_HUGE;
		printf("ORACLE extent %zu %s\n", i, ext_names[s]);
	}
	for (unsigned o = 0; known && o < 10; o++)
		if (orders[o])
			printf("ORACLE order %u %llu\n", o, (unsigned long long)orders[o]);
	if (k.pm >= 0)
		close(k.pm);
	if (k.kpf >= 0)
		close(k.kpf);
	return huge;
}

void wl_report_faults(const struct wl_region *r, const struct wl_fault *f, size_t n)
{
	size_t huge = 0, final_huge;
	char lat[160];

	for (size_t i = 0; i < n; i++)
		huge += f[i].huge;
	wl_print_phase();
	wl_print_faults(f, n);
	final_huge = wl_print_extents(r);
	wl_latency_summary(f, n, lat, sizeof(lat));
	printf("ORACLE summary extents=%zu huge=%zu base=%zu huge_pct=%.1f final_huge=%zu "
	       "anonhuge_kb=%llu %s\n",
	       n, huge, n - huge, 100.0 * (double)huge / (double)n, final_huge,
	       (unsigned long long)wl_anonhuge_kb(r), lat);
	fflush(stdout);
}

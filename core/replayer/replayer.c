/* thpemu-replayer: a fault trace (core/obs/trace.h) acted out by a real process, so that
 * `thpemu replay TRACE` can run it live under the emulator with any policy.
 *
 * One thread per recorded thread replays that thread's records at their recorded times
 * (relative to the start; --speed scales them): a MAP is an mmap at the recorded place, a
 * RELEASE an munmap (a PROT_NONE mapping over the range, so the place stays reserved) or
 * MADV_DONTNEED, an ADVISE an madvise, a REMAP an mremap, an ADOPT a raw mmap whose RESIDENT
 * pages are touched before it is handed to the emulator (thpemu_manage), and a FAULT a touch of
 * the page — a write or a read, as recorded. A recorded huge fault stands for a touch of the
 * whole extent, so the extent's other pages are touched right after it (cheap if this run gives
 * a huge page too). A thread waits for every memory change recorded before its next record.
 *
 * Addresses keep their 2 MiB phase but not their value: the recording's address ranges are
 * gathered into clusters, and each cluster is placed in a PROT_NONE reservation of this process
 * at a 2 MiB-aligned offset. The program's own memory (glibc malloc, thread stacks) is not
 * managed: `thpemu replay` runs it with --allocator none.
 *
 * Exit status: 0, 1 if the trace cannot be read or the reservations fail, 2 for a bad option.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "obs/trace.h"
#include "util/text.h"

#define PAGE	4096UL
#define HPAGE	(2UL << 20)
#define GAP_MAX (1UL << 30) /* ranges closer than this share a cluster */

extern int thpemu_manage(void *addr, size_t len) __attribute__((weak));

struct cluster {
	uintptr_t lo, hi; /* recorded */
	intptr_t delta;	  /* recorded + delta = here */
};

struct rthread {
	pthread_t th;
	const struct obs_trace_thread *rec; /* its records */
	uint64_t faults, implied, late, lag_max_ns;
};

static struct obs_trace tr;
static struct obs_trace_plan plan; /* threads, change order, release dependencies */
static struct cluster *clusters;
static size_t nclusters;
static struct rthread *threads;
static unsigned nthreads;
static double speed = 1.0;
static uint64_t t_start;
static size_t changes_done;
static pthread_mutex_t change_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t change_cond = PTHREAD_COND_INITIALIZER;
static uint64_t errors, touch_errors;
static __thread sigjmp_buf touch_jmp;
static __thread volatile sig_atomic_t in_touch;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = {(time_t)(t / 1000000000ULL), (long)(t % 1000000000ULL)};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* ---- address clusters ------------------------------------------------------------------------ */

struct range {
	uintptr_t lo, hi;
};

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int build_clusters(void)
{
	struct range *r = malloc((tr.n + 1) * sizeof(*r));
	size_t n = 0;

	if (!r)
		return -ENOMEM;
	for (size_t i = 0; i < tr.n; i++) {
		const struct obs_trace_rec *e = &tr.recs[i];

		if (e->type == OBS_TR_FAULT)
			r[n++] =
			    (struct range){e->addr & ~(HPAGE - 1), (e->addr | (HPAGE - 1)) + 1};
		else if (e->type == OBS_TR_REMAP)
			r[n++] = (struct range){e->val2, e->val2 + e->val};
		else if (e->type != OBS_TR_END && e->val)
			r[n++] = (struct range){e->addr, e->addr + e->val};
	}
	qsort(r, n, sizeof(*r), cmp_range);
	clusters = calloc(n ? n : 1, sizeof(*clusters));
	if (!clusters) {
		free(r);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		struct cluster *c = nclusters ? &clusters[nclusters - 1] : NULL;

		if (c && r[i].lo <= c->hi + GAP_MAX) {
			if (r[i].hi > c->hi)
				c->hi = r[i].hi;
			continue;
		}
		clusters[nclusters++] = (struct cluster){r[i].lo & ~(HPAGE - 1), r[i].hi, 0};
	}
	free(r);
	for (size_t i = 0; i < nclusters; i++) {
		struct cluster *c = &clusters[i];
		size_t len = ((c->hi - c->lo + HPAGE - 1) & ~(HPAGE - 1)) + 2 * HPAGE;
		long p = syscall(SYS_mmap, NULL, len, PROT_NONE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (p == -1)
			return -errno;
		c->delta = (intptr_t)(((uintptr_t)p + HPAGE - 1) & ~(HPAGE - 1)) - (intptr_t)c->lo;
	}
	return 0;
}

static uintptr_t here(uintptr_t a)
{
	size_t lo = 0, hi = nclusters;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (clusters[mid].hi <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < nclusters ? (uintptr_t)((intptr_t)a + clusters[lo].delta) : a;
}

/* ---- records --------------------------------------------------------------------------------- */

/* A touch of memory that is not there (a mapping that failed, a release the replay ran early)
 * is counted and skipped rather than fatal. */
static void segv(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	if (in_touch)
		siglongjmp(touch_jmp, 1);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void touch(uintptr_t a, bool write)
{
	if (sigsetjmp(touch_jmp, 0)) {
		in_touch = 0;
		__atomic_fetch_add(&touch_errors, 1, __ATOMIC_RELAXED);
		return;
	}
	in_touch = 1;
	if (write)
		*(volatile char *)a = 1;
	else
		(void)*(volatile char *)a;
	in_touch = 0;
}

/* The length of the mapping that starts at a (for mremap's old length). */
static size_t mapping_len(uintptr_t a)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo, hi;
	size_t len = 0;
	char line[512];

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo == a) {
			len = hi - lo;
			break;
		}
	if (f)
		fclose(f);
	return len;
}

static void check(long rc)
{
	if (rc == -1)
		__atomic_fetch_add(&errors, 1, __ATOMIC_RELAXED);
}

static void check_map(void *p)
{
	check(p == MAP_FAILED ? -1 : 0);
}

/* ADOPT: a mapping the emulator did not see being made; its RESIDENT records follow it. */
static size_t do_adopt(struct rthread *t, size_t k)
{
	const struct obs_trace_rec *e = &tr.recs[t->rec->idx[k]];
	uintptr_t a = here(e->addr);
	long p = syscall(SYS_mmap, a, e->val, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);

	check(p);
	while (k + 1 < t->rec->n && tr.recs[t->rec->idx[k + 1]].type == OBS_TR_RESIDENT) {
		const struct obs_trace_rec *r = &tr.recs[t->rec->idx[++k]];

		for (uintptr_t x = here(r->addr); p != -1 && x < here(r->addr) + r->val; x += PAGE)
			touch(x, true);
	}
	if (p != -1 && thpemu_manage)
		check(thpemu_manage((void *)a, e->val));
	return k;
}

static void do_fault(struct rthread *t, const struct obs_trace_rec *e)
{
	uintptr_t a = here(e->addr);
	bool write = e->flags & OBS_TRF_WRITE;

	touch(a, write);
	t->faults++;
	if (obs_trace_decision(e) != 0 /* MM_FAULT_HUGE */)
		return;
	for (uintptr_t x = a & ~(HPAGE - 1); x < (a & ~(HPAGE - 1)) + HPAGE; x += PAGE) {
		if (x == a)
			continue;
		touch(x, write);
		t->implied++;
	}
}

static void do_change(const struct obs_trace_rec *e)
{
	void *a = (void *)here(e->addr);

	switch (e->type) {
	case OBS_TR_MAP:
		check_map(mmap(a, e->val, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
		break;
	case OBS_TR_RELEASE:
		if (e->flags & OBS_TRF_UNMAP) /* keep the place reserved: PROT_NONE over it */
			check_map(mmap(a, e->val, PROT_NONE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1,
				       0));
		else
			check(madvise(a, e->val, MADV_DONTNEED));
		break;
	case OBS_TR_ADVISE:
		check(madvise(a, e->val, e->advice == 1 ? MADV_HUGEPAGE : MADV_NOHUGEPAGE));
		break;
	case OBS_TR_REMAP: {
		size_t old = mapping_len((uintptr_t)a);

		if (old)
			check_map(mremap(a, old, e->val, MREMAP_MAYMOVE | MREMAP_FIXED,
					 (void *)here(e->val2)));
		else
			check(-1);
		break;
	}
	default:
		break;
	}
}

static void change_done(void)
{
	pthread_mutex_lock(&change_lock);
	changes_done++;
	pthread_cond_broadcast(&change_cond);
	pthread_mutex_unlock(&change_lock);
}

/* Fault i is done: the release waiting for it may go once its other faults are done too. */
static void fault_done(size_t i)
{
	if (plan.fault_before[i] == UINT32_MAX)
		return;
	pthread_mutex_lock(&change_lock);
	plan.release_pending[plan.fault_before[i]]--;
	pthread_cond_broadcast(&change_cond);
	pthread_mutex_unlock(&change_lock);
}

static void *thread_main(void *arg)
{
	struct rthread *t = arg;

	for (size_t k = 0; k < t->rec->n; k++) {
		size_t i = t->rec->idx[k];
		const struct obs_trace_rec *e = &tr.recs[i];
		uint64_t due = t_start + (uint64_t)((double)obs_trace_effect_ns(e) / speed);
		uint64_t now = now_ns();

		if (now < due)
			sleep_until(due);
		else if (now - due > t->lag_max_ns)
			t->lag_max_ns = now - due;
		t->late += now > due + 10000000ULL;
		pthread_mutex_lock(&change_lock);
		while (changes_done < plan.next_change[i] || plan.release_pending[i])
			pthread_cond_wait(&change_cond, &change_lock);
		pthread_mutex_unlock(&change_lock);
		if (e->type == OBS_TR_FAULT) {
			do_fault(t, e);
			fault_done(i);
			continue;
		}
		if (e->type == OBS_TR_ADOPT) {
			size_t k2 = do_adopt(t, k);

			for (; k < k2; k++)
				change_done(); /* its RESIDENT records */
		} else {
			do_change(e);
		}
		change_done();
	}
	return NULL;
}

/* ---- set-up ---------------------------------------------------------------------------------- */

static int prepare(void)
{
	if (obs_trace_plan(&tr, &plan) < 0)
		return -ENOMEM;
	nthreads = plan.nthreads;
	threads = calloc(nthreads + 1, sizeof(*threads));
	if (!threads)
		return -ENOMEM;
	for (unsigned i = 0; i < nthreads; i++)
		threads[i].rec = &plan.threads[i];
	return build_clusters();
}

static void usage(FILE *f)
{
	fprintf(f, "usage: thpemu-replayer TRACE [--speed F] [--quiet]\n"
		   "Acts out a fault trace (thpemu run --trace) at its recorded times; run it "
		   "with 'thpemu replay'.\n\n"
		   "Options:\n"
		   "  --speed F   replay F times faster (0 < F; default 1)\n"
		   "  --quiet     print nothing but errors (no summary, no warning)\n"
		   "  --help      this help\n"
		   "  --version   print the version (thpemu's)\n");
}

int main(int argc, char **argv)
{
	const char *path = NULL;
	uint64_t faults = 0, implied = 0, late = 0, lag = 0;
	bool quiet = false;
	char err[512], esc[1024];
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--version")) {
			printf("thpemu-replayer " THPEMU_VERSION "\n");
			return 0;
		} else if (!strcmp(argv[i], "--quiet")) {
			quiet = true;
		} else if (!strcmp(argv[i], "--speed") && i + 1 < argc) {
			char *end;

			speed = strtod(argv[++i], &end);
			if (*end || !(speed > 0) || speed > 1e6) {
				fprintf(stderr,
					"thpemu-replayer: --speed: '%s' is not accepted "
					"(a positive number, e.g. 0.5 or 10)\n",
					text_escape(argv[i], esc, sizeof(esc)));
				return 2;
			}
		} else if (argv[i][0] == '-' || path) {
			fprintf(stderr,
				"thpemu-replayer: unexpected argument '%s' (usage: "
				"thpemu-replayer TRACE [--speed F] [--quiet])\n",
				text_escape(argv[i], esc, sizeof(esc)));
			return 2;
		} else {
			path = argv[i];
		}
	}
	if (!path) {
		usage(stderr);
		return 2;
	}
	if (obs_trace_load(path, &tr, err, sizeof(err)) < 0) {
		fprintf(stderr, "thpemu-replayer: %s\n", text_escape(err, esc, sizeof(esc)));
		return 1;
	}
	obs_trace_sort(&tr);
	rc = prepare();
	if (rc < 0) {
		fprintf(stderr, "thpemu-replayer: cannot set up the replay: %s\n", strerror(-rc));
		return 1;
	}
	if (!thpemu_manage && !quiet)
		fprintf(stderr, "thpemu-replayer: not running under thpemu: faults are the "
				"kernel's\n");
	{
		struct sigaction sa = {.sa_sigaction = segv, .sa_flags = SA_SIGINFO | SA_NODEFER};

		sigemptyset(&sa.sa_mask);
		sigaction(SIGSEGV, &sa, NULL);
		sigaction(SIGBUS, &sa, NULL);
	}
	t_start = now_ns();
	for (unsigned i = 0; i < nthreads; i++)
		if ((rc = pthread_create(&threads[i].th, NULL, thread_main, &threads[i]))) {
			fprintf(stderr, "thpemu-replayer: pthread_create: %s\n", strerror(rc));
			return 1;
		}
	for (unsigned i = 0; i < nthreads; i++) {
		pthread_join(threads[i].th, NULL);
		faults += threads[i].faults;
		implied += threads[i].implied;
		late += threads[i].late;
		if (threads[i].lag_max_ns > lag)
			lag = threads[i].lag_max_ns;
	}
	if (!quiet)
		printf("thpemu-replayer: %zu records, %u threads, %llu faults touched (+%llu "
		       "implied), %llu records > 10 ms late, max lag %.1f ms, %llu call errors, "
		       "%llu touches of missing memory, %.2f s\n",
		       tr.n, nthreads, (unsigned long long)faults, (unsigned long long)implied,
		       (unsigned long long)late, (double)lag / 1e6, (unsigned long long)errors,
		       (unsigned long long)touch_errors, (double)(now_ns() - t_start) / 1e9);
	return 0;
}

/* Cost of observation on the fault path, as ratios to a bare clock_gettime measured in the
 * same run (a fault handler reads the clock at least twice per fault anyway).
 *
 *   obs_faults_record          per fault, one thread and two threads sharing one struct
 *   obs_hist_record            the histogram part alone
 *   obs_stack_capture          handler-side stack at ~12 frames: libunwind (guard open) on a
 *                              thread before obs_unwind_thread_warm (cursor walk) and after
 *                              (unw_backtrace), and the frame-pointer fallback (guard closed)
 *   obs_stalls_add             one stall event appended into a fresh (untouched) store: the
 *                              first touch of its pages is most of this cost (~50 ns/op when
 *                              the store is pre-faulted, measured with MAP_POPULATE)
 *
 * Each figure is the best of several rounds (noise from other processes only adds time).
 * THPEMU_PERF_QUICK=1 runs short rounds. Exit status: 0, or 1 if a capture returned no frames
 * or a ratio is absurd (> 100000x, a broken build rather than a slow machine).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "obs/faults.h"
#include "obs/stall.h"
#include "obs/unwind.h"

static uint64_t iters = 2000000;
static int rounds = 5;
static double floor_ns;
static int failed;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Best-of-rounds ns per call of fn(i); reset (optional) runs untimed before each round. */
static double measure_with(void (*fn)(uint64_t i), uint64_t n, void (*reset)(void))
{
	double best = 1e30;

	for (int r = 0; r < rounds; r++) {
		uint64_t t0;

		if (reset)
			reset();
		t0 = now_ns();

		for (uint64_t i = 0; i < n; i++)
			fn(i);
		double per = (double)(now_ns() - t0) / (double)n;

		if (per < best)
			best = per;
	}
	return best;
}

static double measure(void (*fn)(uint64_t i), uint64_t n)
{
	return measure_with(fn, n, NULL);
}

static void report(const char *name, double ns)
{
	double ratio = ns / floor_ns;

	printf("obs_bench: %-38s %9.1f ns/op  %8.2fx clock_gettime\n", name, ns, ratio);
	if (ratio > 100000) {
		printf("obs_bench: %s: ratio out of any plausible range\n", name);
		failed = 1;
	}
}

/* ---- subjects ------------------------------------------------------------------------- */

static volatile uint64_t sink;
static struct obs_faults faults;
static struct obs_hist hist;
static struct mm_fault_rec rec;
static struct obs_stalls *stalls;
static struct obs_stack stack;

static void do_clock(uint64_t i)
{
	sink += now_ns() + i;
}

static void do_hist(uint64_t i)
{
	obs_hist_record(&hist, 1000 + (i & 0xffff) * 37);
}

static void do_faults(uint64_t i)
{
	rec.outcome = (uint8_t)(i & 1);
	obs_faults_record(&faults, &rec, 2000 + (i & 0xfff) * 101);
}

#define STALLS_PER_ROUND (1 << 15)

static void do_stall(uint64_t i)
{
	struct obs_stall_event ev;

	obs_stall_event_init(&ev);
	ev.duration_ns = 2000000000ULL + i;
	ev.handler = stack;
	if (obs_stalls_add(stalls, &ev) != 0)
		failed = 1;
}

/* A fresh, untouched store per round: first-touch page faults of the store are part of the
 * cost a live run pays. */
static void reset_stalls(void)
{
	obs_stalls_destroy(stalls);
	if (obs_stalls_create(&stalls, STALLS_PER_ROUND, 1, OBS_STACKS_CAPTURED) < 0)
		failed = 1;
}

/* ~12 frames deep, like a handler's wait hook under mm's compaction call chain. */
__attribute__((noinline)) static unsigned deep(int n)
{
	unsigned got;

	if (n > 0) {
		got = deep(n - 1);
		sink += got;
		return got;
	}
	return obs_stack_capture(&stack, 0);
}

static void do_capture(uint64_t i)
{
	(void)i;
	if (deep(10) == 0)
		failed = 1;
}

/* ---- two threads on one obs_faults ------------------------------------------------------ */

static void *faults_thread(void *arg)
{
	uint64_t n = *(uint64_t *)arg;
	struct mm_fault_rec r = {0};

	for (uint64_t i = 0; i < n; i++)
		obs_faults_record(&faults, &r, 2000 + (i & 0xfff) * 101);
	return NULL;
}

static double measure_faults_shared(uint64_t n)
{
	double best = 1e30;

	for (int r = 0; r < rounds; r++) {
		pthread_t t[2];
		uint64_t t0 = now_ns();

		for (int k = 0; k < 2; k++)
			pthread_create(&t[k], NULL, faults_thread, &n);
		for (int k = 0; k < 2; k++)
			pthread_join(t[k], NULL);
		double per = (double)(now_ns() - t0) / (double)(2 * n);

		if (per < best)
			best = per;
	}
	return best;
}

int main(void)
{
	const char *quick = getenv("THPEMU_PERF_QUICK");

	if (quick && strcmp(quick, "1") == 0) {
		iters = 200000;
		rounds = 3;
	}
	obs_faults_init(&faults);
	obs_hist_init(&hist);
	if (obs_stalls_create(&stalls, 1, 1, OBS_STACKS_CAPTURED) < 0 || obs_unwind_init(1) < 0 ||
	    obs_unwind_thread_init(NULL, 0) < 0) {
		fprintf(stderr, "obs_bench: setup failed\n");
		return 1;
	}

	floor_ns = measure(do_clock, iters);
	printf("obs_bench: floor: clock_gettime(CLOCK_MONOTONIC) %.1f ns/op (%" PRIu64
	       " iterations, best of %d)\n",
	       floor_ns, iters, rounds);
	report("obs_hist_record", measure(do_hist, iters));
	report("obs_faults_record (1 thread)", measure(do_faults, iters));
	report("obs_faults_record (2 threads, shared)", measure_faults_shared(iters / 2));

	deep(10); /* warm the unwinder's caches for these IPs */
	report("obs_stack_capture libunwind, cold thread", measure(do_capture, iters / 2000));
	printf("obs_bench:   %u frames, method %s\n", stack.nr,
	       obs_unwind_method_name(stack.method));
	if (!obs_unwind_thread_warm())
		failed = 1;
	deep(10);
	report("obs_stack_capture libunwind", measure(do_capture, iters / 20));
	printf("obs_bench:   %u frames, method %s\n", stack.nr,
	       obs_unwind_method_name(stack.method));
	obs_unwind_set_limit(0);
	report("obs_stack_capture frame-pointer", measure(do_capture, iters / 20));
	printf("obs_bench:   %u frames, method %s\n", stack.nr,
	       obs_unwind_method_name(stack.method));

	report("obs_stalls_add", measure_with(do_stall, STALLS_PER_ROUND, reset_stalls));

	obs_stalls_destroy(stalls);
	return failed;
}

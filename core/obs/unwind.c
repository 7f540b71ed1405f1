/* Handler-side stack capture (see unwind.h): libunwind under a concurrency guard, with a
 * frame-pointer walk as the fallback.
 *
 * Mirrors what the kernel does for a stalled task's /proc/PID/stack (save_stack_trace_tsk): a
 * list of return addresses, innermost first, taken where the task blocks. Here the blocking
 * "kernel" code is the handler thread's own call chain (mm's compact_zone, unmap_and_move,
 * wait_on_frame_writeback ...), captured from inside the wait hook.
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "obs/unwind.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>

#define LOAD(p)	    __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

static unsigned unwind_limit;  /* threads allowed inside libunwind at once */
static unsigned unwind_inside; /* threads inside libunwind now */
/* A fork is being prepared: nobody enters libunwind until it is done, and the fork waits until
 * nobody is inside. libunwind's own locks are private memory: a fork child inherits one held by
 * a thread that does not exist in the child, and its first unwind deadlocks. */
static unsigned unwind_forking;
static int unwind_ready; /* obs_unwind_init() has run */
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;

/* This thread's stack, for the frame-pointer walk (initial-exec: no allocation on access in a
 * preloaded library). */
static __thread uintptr_t tls_stack_lo __attribute__((tls_model("initial-exec")));
static __thread uintptr_t tls_stack_hi __attribute__((tls_model("initial-exec")));
/* unw_backtrace's trace cache exists for this thread (obs_unwind_thread_warm). */
static __thread int tls_trace_warm __attribute__((tls_model("initial-exec")));

static const char *const method_names[OBS_UNWIND_NR] = {
    [OBS_UNWIND_NONE] = "none",
    [OBS_UNWIND_LIBUNWIND] = "libunwind",
    [OBS_UNWIND_FRAMEPTR] = "frame-pointer",
    [OBS_UNWIND_MODELLED] = "modelled",
    [OBS_UNWIND_PROC_PC] = "proc-pc",
};

const char *obs_unwind_method_name(enum obs_unwind_method m)
{
	return m < OBS_UNWIND_NR ? method_names[m] : "?";
}

/* Walk saved (rbp, return address) pairs from fp while they stay inside this thread's stack and
 * move towards its base. Everything read lies in [lo, hi): a garbage rbp from code built without
 * frame pointers ends the walk instead of faulting (or, worse, touching managed memory). */
static unsigned fp_walk(struct obs_stack *st, uintptr_t fp, unsigned skip)
{
	uintptr_t lo = tls_stack_lo, hi = tls_stack_hi;
	unsigned n = 0;

	while (hi > lo + 2 * sizeof(uintptr_t) && n < OBS_STACK_MAX) {
		const uintptr_t *frame = (const uintptr_t *)fp;
		uintptr_t next, ret;

		if (fp < lo || fp > hi - 2 * sizeof(uintptr_t) || (fp & (sizeof(uintptr_t) - 1)))
			break;
		next = frame[0];
		ret = frame[1];
		if (!ret)
			break;
		if (skip)
			skip--;
		else
			st->ips[n++] = ret;
		if (next <= fp)
			break;
		fp = next;
	}
	st->nr = (uint8_t)n;
	st->method = n ? OBS_UNWIND_FRAMEPTR : OBS_UNWIND_NONE;
	st->exact_first = 0;
	return n;
}

__attribute__((noinline)) unsigned obs_stack_capture_fp(struct obs_stack *st, unsigned skip)
{
	return fp_walk(st, (uintptr_t)__builtin_frame_address(0), skip);
}

/* A DWARF walk with libunwind's cursor API into buf (IPs, innermost first): the same frames
 * unw_backtrace gives, without its per-thread trace cache (the cursor's per-thread state, the
 * register-state cache under UNW_CACHE_PER_THREAD, is a thread-local variable). About 40 us for
 * 16 frames against 0.2 us for a warm unw_backtrace: a thread uses it until
 * obs_unwind_thread_warm() has built its trace cache. */
static __attribute__((always_inline)) inline int cursor_walk(void **buf, int max)
{
	unw_context_t uc;
	unw_cursor_t c;
	int n = 0;

	if (unw_getcontext(&uc) < 0 || unw_init_local(&c, &uc) < 0)
		return 0;
	do {
		unw_word_t ip;

		if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0 || !ip)
			break;
		buf[n++] = (void *)ip;
	} while (n < max && unw_step(&c) > 0);
	return n;
}

/* A libunwind walk into st, starting at the frame whose return address is `from` (the caller of
 * obs_stack_capture), so the result does not depend on how this file was inlined. */
static unsigned libunwind_walk(struct obs_stack *st, uintptr_t from, unsigned skip)
{
	void *buf[OBS_STACK_MAX + 8];
	int max = (int)(sizeof(buf) / sizeof(buf[0]));
	int got = tls_trace_warm ? unw_backtrace(buf, max) : cursor_walk(buf, max);
	int i = 0;
	unsigned n = 0;

	while (i < got && (uintptr_t)buf[i] != from)
		i++;
	if (i == got) /* not found: unexpected frame layout, trust nothing */
		return 0;
	for (i += (int)skip; i < got && n < OBS_STACK_MAX; i++)
		st->ips[n++] = (uintptr_t)buf[i];
	st->nr = (uint8_t)n;
	st->method = n ? OBS_UNWIND_LIBUNWIND : OBS_UNWIND_NONE;
	st->exact_first = 0;
	return n;
}

static bool guard_enter(void)
{
	if (!LOAD(&unwind_ready))
		return false;
	if (__atomic_add_fetch(&unwind_inside, 1, __ATOMIC_SEQ_CST) <= LOAD(&unwind_limit) &&
	    !__atomic_load_n(&unwind_forking, __ATOMIC_SEQ_CST))
		return true;
	__atomic_sub_fetch(&unwind_inside, 1, __ATOMIC_RELEASE);
	return false;
}

bool obs_unwind_enter(void)
{
	return guard_enter();
}

void obs_unwind_exit(void)
{
	__atomic_sub_fetch(&unwind_inside, 1, __ATOMIC_RELEASE);
}

void obs_unwind_fork_prepare(void)
{
	__atomic_store_n(&unwind_forking, 1, __ATOMIC_SEQ_CST);
	/* an unwind takes microseconds; a thread stopped inside one would hold the fork, so the
	 * wait is bounded (1 s) and the child then simply never unwinds */
	for (int i = 0; i < 10000 && __atomic_load_n(&unwind_inside, __ATOMIC_SEQ_CST); i++) {
		struct timespec ts = {0, 100000};

		nanosleep(&ts, NULL);
	}
}

void obs_unwind_fork_parent(void)
{
	__atomic_store_n(&unwind_forking, 0, __ATOMIC_SEQ_CST);
}

void obs_unwind_fork_child(void)
{
	/* nobody was inside at the fork (or a stuck one never leaves: keep the child out) */
	if (__atomic_load_n(&unwind_inside, __ATOMIC_SEQ_CST) == 0)
		__atomic_store_n(&unwind_forking, 0, __ATOMIC_SEQ_CST);
}

static void guard_exit(void)
{
	__atomic_sub_fetch(&unwind_inside, 1, __ATOMIC_RELEASE);
}

__attribute__((noinline)) unsigned obs_stack_capture(struct obs_stack *st, unsigned skip)
{
	uintptr_t from = (uintptr_t)__builtin_return_address(0);
	unsigned n = 0;

	if (guard_enter()) {
		n = libunwind_walk(st, from, skip);
		guard_exit();
	}
	if (!n)
		n = fp_walk(st, (uintptr_t)__builtin_frame_address(0), skip);
	return n;
}

/* One DWARF unwind with the cursor API: initialises libunwind's global state (the
 * mutex-protected first call) and this thread's register-state cache, which need no memory.
 * unw_backtrace's trace cache is not built here (see obs_unwind_thread_warm). */
static __attribute__((noinline)) void warm_up(void)
{
	void *buf[OBS_STACK_MAX];

	cursor_walk(buf, OBS_STACK_MAX);
}

void obs_unwind_set_limit(unsigned max_in_libunwind)
{
	STORE(&unwind_limit, max_in_libunwind);
}

int obs_unwind_init(unsigned max_in_libunwind)
{
	pthread_mutex_lock(&init_lock);
	if (!unwind_ready) {
		if (unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD) < 0) {
			pthread_mutex_unlock(&init_lock);
			return -EINVAL;
		}
		warm_up();
		__atomic_store_n(&unwind_ready, 1, __ATOMIC_RELEASE);
	}
	obs_unwind_set_limit(max_in_libunwind);
	pthread_mutex_unlock(&init_lock);
	return 0;
}

int obs_unwind_thread_init(void *lo, size_t size)
{
	pthread_attr_t attr;
	int err;

	if (!lo) {
		err = pthread_getattr_np(pthread_self(), &attr);
		if (err)
			return -err;
		err = pthread_attr_getstack(&attr, &lo, &size);
		pthread_attr_destroy(&attr);
		if (err)
			return -err;
	}
	tls_stack_lo = (uintptr_t)lo;
	tls_stack_hi = (uintptr_t)lo + size;
	if (guard_enter()) {
		warm_up();
		guard_exit();
	}
	return 0;
}

int obs_unwind_thread_warm(void)
{
	void *buf[OBS_STACK_MAX];

	if (tls_trace_warm)
		return 1;
	if (!guard_enter()) /* the loader lock: as for a capture */
		return 0;
	unw_backtrace(buf, OBS_STACK_MAX); /* creates and fills the thread's trace cache */
	guard_exit();
	tls_trace_warm = 1;
	return 1;
}

/* The emulator's threads and the program's per-thread credential state.
 *
 * Linux keeps credentials per thread. glibc makes set*id and setgroups process-wide by running
 * the same system call on every thread it knows (nptl_setxid.c: a SIGSETXID to each thread, whose
 * handler calls it), and aborts the process when the threads disagree about the result
 * ("Fatal glibc error: setxid failed"). It propagates nothing else: capset(2), prctl(PR_SET_
 * KEEPCAPS), securebits, PR_CAPBSET_DROP and PR_CAP_AMBIENT change the calling thread only. A
 * single-threaded program that does `prctl(PR_SET_KEEPCAPS, 1); setresuid(u); capset(...);
 * setresgid(g)` (setpriv, su, daemons dropping root) is consistent natively; with the emulator's
 * threads present, setresuid dropped *their* capabilities, their setresgid fails with EPERM and
 * glibc aborts the program.
 *
 * So the interposers of prctl and capset (core/preload) hand every such change that succeeded on
 * the program's thread to guard_cred_replicate(), which has each emulator thread make the same call
 * on itself before the program's call returns. An emulator thread is registered by its creator
 * before it is created (so that a request made before it first runs waits for it: it starts with
 * the credentials its creator had) and reaches guard_thread_sync() whenever it wakes; the
 * requester wakes them through their own wake-up function and waits until every registered
 * thread has seen the request. A thread stalled in a
 * long fault delays the program's call by as long (timing only). The credentials then always
 * match the program's, which also means an emulator thread never keeps privileges the program
 * gave up.
 *
 * A process ends when its last thread ends. glibc counts the threads it made (__nptl_nthreads):
 * a thread returning from its start routine or calling pthread_exit takes itself off, and the
 * one that takes the count to zero calls exit(0) (nptl/pthread_create.c: start_thread; for the
 * main thread's pthread_exit, sysdeps/nptl/libc_start_call_main.h). The emulator's threads are
 * made by pthread_create too, so a program whose last thread left with pthread_exit (main
 * handing over to workers, a fork child whose only thread finished) stayed alive as long as they
 * did - for ever, with every signal but SIGKILL pending on threads that block them all. So they
 * do not count: the creator takes each new thread off the count, and the thread puts itself back
 * just before it returns into start_thread, which takes it off again. The count is a
 * GLIBC_PRIVATE export kept for libthread_db (nptl/db_info.c: DB_MAIN_VARIABLE); referenced
 * weakly, so that without it (another C library) nothing changes.
 */
#include "inprocess/guard.h"

#include <errno.h>
#include <linux/capability.h>
#include <linux/prctl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>
#include <time.h>

#include "util/sys.h"

#define REPLICATE_PATIENCE_NS (30ULL * 1000000000ULL) /* give up on a thread after this */
#define REWAKE_NS	      (20ULL * 1000000ULL)

static struct guard_thread *threads; /* registered emulator threads (list_lock) */
static int list_lock;
static pthread_mutex_t req_mutex = PTHREAD_MUTEX_INITIALIZER; /* one request at a time */

static struct {
	uint32_t seq; /* request number (atomic); threads apply each once */
	enum guard_cred_op op;
	long a[5];
	struct __user_cap_header_struct hdr;
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	int errors; /* threads whose call failed (atomic) */
} req;

static void list_acquire(void)
{
	while (__atomic_exchange_n(&list_lock, 1, __ATOMIC_ACQUIRE))
		;
}

static void list_release(void)
{
	__atomic_store_n(&list_lock, 0, __ATOMIC_RELEASE);
}

static __thread struct guard_thread *self; /* the calling emulator thread's entry, if any */

extern unsigned int __nptl_nthreads __attribute__((weak));

bool guard_thread_counted(void)
{
	return &__nptl_nthreads != NULL;
}

/* The program's last thread ended while this one was being made (it saw our thread in the count
 * and did not end the process): end it on the program's behalf, as glibc would have, from a
 * thread of its own (the caller may be one the exit handlers wait for). It is the program's
 * thread, not one of the emulator's (not in core/live's table of them): exit() runs the
 * program's exit handlers and destructors here. */
static void *exit_on_behalf(void *unused)
{
	(void)unused;
	exit(0);
}

static void uncount(void)
{
	pthread_attr_t attr;
	pthread_t t;

	if (!guard_thread_counted() || __atomic_sub_fetch(&__nptl_nthreads, 1, __ATOMIC_ACQ_REL))
		return;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, exit_on_behalf, NULL) != 0)
		exit(0);
	pthread_attr_destroy(&attr);
}

static void *thread_main(void *arg)
{
	struct guard_thread *t = arg;
	void *ret;

	/* named by itself, before it does anything: the creator's pthread_setname_np opened
	 * /proc/self/task/TID/comm, a descriptor in the program's range at a moment of ours, and a
	 * file write per thread (7 a process) */
	if (t->name[0])
		sys_call6(SYS_prctl, PR_SET_NAME, (long)t->name, 0, 0, 0, 0);
	ret = t->fn(t->fn_arg);

	/* start_thread takes this thread off the count after we return: put it back first (t may
	 * be gone by now: only the count is touched) */
	if (guard_thread_counted())
		__atomic_add_fetch(&__nptl_nthreads, 1, __ATOMIC_ACQ_REL);
	return ret;
}

void guard_thread_enter(struct guard_thread *t, void (*wake)(void *), void *arg)
{
	t->tid = 0; /* not running yet */
	t->wake = wake;
	t->arg = arg;
	list_acquire();
	/* registered by its creator before it exists: it will start with the creator's credentials.
	 * The program's thread has seen every request so far; an emulator thread that makes one
	 * (the background thread makes handlers on demand) has seen those it applied, and the new
	 * thread applies the rest itself (a request in flight waits for it, as it is listed). */
	__atomic_store_n(&t->seen,
			 self ? __atomic_load_n(&self->seen, __ATOMIC_ACQUIRE)
			      : __atomic_load_n(&req.seq, __ATOMIC_ACQUIRE),
			 __ATOMIC_RELEASE);
	t->next = threads;
	threads = t;
	list_release();
}

/* A stack from the emulator's arena (core/inprocess/vm.c: glibc would map one wherever the kernel
 * puts it, in a fork child perhaps where the program means to map), as large as glibc's default
 * (RLIMIT_STACK), with a guard page below; a fork child, which has none of our threads, gives its
 * copy back. */
static int stack_attr(struct guard_thread *t, pthread_attr_t *attr)
{
	size_t size = 0, page = 4096;
	long p;

	if (pthread_getattr_default_np(attr) != 0)
		return pthread_attr_init(attr) ? -ENOMEM : 0;
	pthread_attr_getstacksize(attr, &size);
	size = (size + page - 1) & ~(page - 1);
	p = guard_vm_map(size + page, 0, MAP_NORESERVE, GUARD_VM_PARENT_ONLY);
	if (sys_is_err(p))
		return 0; /* glibc's stack, then */
	sys_call3(SYS_mprotect, p, page, PROT_NONE);
	if (pthread_attr_setstack(attr, (void *)(p + (long)page), size) != 0) {
		guard_vm_unmap((void *)p, size + page);
		return 0;
	}
	t->stack = (void *)p;
	t->stack_len = size + page;
	return 0;
}

static void stack_free(struct guard_thread *t)
{
	if (t->stack)
		guard_vm_unmap(t->stack, t->stack_len);
	t->stack = NULL;
}

int guard_thread_join(pthread_t th, struct guard_thread *t)
{
	int rc = pthread_join(th, NULL);

	if (rc == 0)
		stack_free(t);
	return -rc;
}

int guard_thread_timedjoin(pthread_t th, struct guard_thread *t, uint64_t ns)
{
	struct timespec ts;
	uint64_t at;
	int rc;

	if (ns) {
		clock_gettime(CLOCK_REALTIME, &ts); /* pthread_timedjoin_np's clock */
		at = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec + ns;
		ts.tv_sec = (time_t)(at / 1000000000ULL);
		ts.tv_nsec = (long)(at % 1000000000ULL);
		rc = pthread_timedjoin_np(th, NULL, &ts);
	} else {
		rc = pthread_tryjoin_np(th, NULL);
	}
	if (rc == 0)
		stack_free(t);
	return -rc;
}

int guard_thread_create(pthread_t *th, struct guard_thread *t, void (*wake)(void *), void *wake_arg,
			void *(*fn)(void *), void *arg, const char *name)
{
	pthread_attr_t attr;
	sigset_t all, old;
	int rc;

	guard_thread_enter(t, wake, wake_arg);
	t->fn = fn;
	t->fn_arg = arg;
	t->stack = NULL;
	snprintf(t->name, sizeof(t->name), "%s", name ? name : "");
	rc = stack_attr(t, &attr);
	if (rc < 0) {
		guard_thread_leave(t);
		return rc;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); /* the thread inherits the full mask */
	rc = -pthread_create(th, &attr, thread_main, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (rc < 0) {
		stack_free(t);
		guard_thread_leave(t);
		return rc;
	}
	uncount();
	return 0;
}

void guard_thread_started(struct guard_thread *t)
{
	__atomic_store_n(&t->tid, sys_gettid(), __ATOMIC_RELEASE);
	self = t;
	guard_thread_sync(t);
}

void guard_sync_self(void)
{
	if (self)
		guard_thread_sync(self);
}

void guard_thread_leave(struct guard_thread *t)
{
	if (self == t)
		self = NULL;
	list_acquire();
	for (struct guard_thread **p = &threads; *p; p = &(*p)->next) {
		if (*p == t) {
			*p = t->next;
			break;
		}
	}
	list_release();
}

unsigned guard_thread_tids(int *out, unsigned max)
{
	unsigned n = 0;

	list_acquire();
	for (struct guard_thread *t = threads; t && n < max; t = t->next) {
		int tid = __atomic_load_n(&t->tid, __ATOMIC_ACQUIRE);

		if (tid)
			out[n++] = tid;
	}
	list_release();
	return n;
}

bool guard_thread_is(int tid)
{
	bool found = false;

	list_acquire();
	for (struct guard_thread *t = threads; t && !found; t = t->next)
		found = __atomic_load_n(&t->tid, __ATOMIC_ACQUIRE) == tid;
	list_release();
	return found;
}

static long apply(void)
{
	if (req.op == GUARD_CRED_CAPSET) {
		struct __user_cap_header_struct h = req.hdr;

		h.pid = 0; /* this thread */
		return sys_call2(SYS_capset, &h, req.data);
	}
	return sys_call6(SYS_prctl, req.a[0], req.a[1], req.a[2], req.a[3], req.a[4], 0);
}

bool guard_thread_pending(const struct guard_thread *t)
{
	return __atomic_load_n(&t->seen, __ATOMIC_ACQUIRE) !=
	       __atomic_load_n(&req.seq, __ATOMIC_ACQUIRE);
}

void guard_thread_sync(struct guard_thread *t)
{
	uint32_t s = __atomic_load_n(&req.seq, __ATOMIC_ACQUIRE);

	if (__atomic_load_n(&t->seen, __ATOMIC_ACQUIRE) == s)
		return;
	if (apply() < 0)
		__atomic_fetch_add(&req.errors, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&t->seen, s, __ATOMIC_RELEASE);
	sys_futex_wake(&req.seq, 1); /* the requester sleeps on the request number */
}

/* Wake every registered thread that has not seen request s; returns how many there are. */
static unsigned wake_behind(uint32_t s)
{
	unsigned n = 0;

	list_acquire();
	for (struct guard_thread *t = threads; t; t = t->next) {
		if (__atomic_load_n(&t->seen, __ATOMIC_ACQUIRE) == s)
			continue;
		n++;
		if (t->wake)
			t->wake(t->arg);
	}
	list_release();
	return n;
}

int guard_cred_replicate(enum guard_cred_op op, const long a[5], const void *cap_hdr,
			 const void *cap_data)
{
	uint64_t waited = 0;
	unsigned behind;
	uint32_t s;
	int errors;

	pthread_mutex_lock(&req_mutex);
	req.op = op;
	if (a)
		memcpy(req.a, a, sizeof(req.a));
	if (op == GUARD_CRED_CAPSET) {
		const struct __user_cap_header_struct *h = cap_hdr;
		unsigned words = h->version == _LINUX_CAPABILITY_VERSION_1 ? 1 : 2;

		req.hdr = *h;
		memset(req.data, 0, sizeof(req.data));
		memcpy(req.data, cap_data, words * sizeof(req.data[0]));
	}
	__atomic_store_n(&req.errors, 0, __ATOMIC_RELAXED);
	s = __atomic_add_fetch(&req.seq, 1, __ATOMIC_ACQ_REL);
	while ((behind = wake_behind(s)) != 0 && waited < REPLICATE_PATIENCE_NS) {
		struct timespec ts = {0, (long)REWAKE_NS};

		sys_futex_wait(&req.seq, s, &ts); /* woken by each sync, or after a while */
		waited += REWAKE_NS;
	}
	errors = __atomic_load_n(&req.errors, __ATOMIC_RELAXED) + (int)behind;
	pthread_mutex_unlock(&req_mutex);
	return errors;
}

bool guard_prctl_is_cred(int option)
{
	switch (option) {
	case PR_SET_KEEPCAPS:
	case PR_SET_SECUREBITS:
	case PR_CAPBSET_DROP:
	case PR_CAP_AMBIENT:
		return true;
	default:
		return false;
	}
}

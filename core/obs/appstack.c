/* Application-side stack capture (see unwind.h): where was the program when its fault stalled?
 *
 * The 2011 monitor (watch-dstate.pl) read the kernel stack of a task in D state; the user half
 * of the story (which function of the program touched the memory) was missing. Here a
 * non-fault-path thread first classifies the faulting thread from /proc/self/task/TID/syscall
 * (the kernel's proc_pid_syscall / task_current_syscall): blocked outside a syscall means the
 * fault was taken in user mode, so a queued real-time signal makes the thread unwind itself from
 * the signal's ucontext into a preallocated slot; inside a syscall means a kernel-mode fault
 * (e.g. read(2) into a fresh buffer), which is recorded by syscall number and never signalled.
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "obs/unwind.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/sys.h"

#define LOAD_ACQ(p)	__atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE_REL(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define CAS(p, oldp, v)                                                                            \
	__atomic_compare_exchange_n((p), (oldp), (v), false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)

#define APP_SLOTS		  8
#define APP_IDX_BITS		  8
#define APP_GEN_MASK		  0x7fffffU /* keeps sival_int positive */
#define APP_DEFAULT_SIGNAL_OFFSET 7

/* Slot life cycle: IDLE -> CLAIMED (requester fills tid/gen) -> ARMED (signal sent) -> WRITING
 * (the target thread's handler owns it) -> DONE (requester copies, back to IDLE). A requester
 * that times out takes ARMED back to IDLE, or WRITING to ABANDONED, which the writer turns into
 * IDLE when it finishes. */
enum slot_state { SLOT_IDLE, SLOT_CLAIMED, SLOT_ARMED, SLOT_WRITING, SLOT_DONE, SLOT_ABANDONED };

struct app_slot {
	uint32_t state;	     /* enum slot_state; also the futex word the requester sleeps on */
	uint32_t gen;	     /* request generation, sent in si_value to reject stale signals */
	pid_t tid;	     /* thread asked */
	struct obs_stack st; /* filled by the target thread */
};

static struct app_slot app_slots[APP_SLOTS];
static int app_signo;		  /* 0 while not installed */
static struct sigaction app_prev; /* disposition we chain to */

/* ---- The signal handler (runs on the application thread) ------------------------------- */

static bool is_request(const siginfo_t *si)
{
	return si->si_code == SI_QUEUE && si->si_pid == getpid() && si->si_value.sival_int >= 0 &&
	       (si->si_value.sival_int & ((1 << APP_IDX_BITS) - 1)) < APP_SLOTS;
}

/* glibc's sigaction itself: the preload library interposes `sigaction` to keep this signal's
 * disposition the program's own business (core/preload/process.c). */
extern int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);

/* Hand a signal that is not ours to whatever was installed before us. */
static void chain(int sig, siginfo_t *si, void *uc)
{
	if (app_prev.sa_flags & SA_SIGINFO) {
		if (app_prev.sa_sigaction)
			app_prev.sa_sigaction(sig, si, uc);
	} else if (app_prev.sa_handler == SIG_DFL) {
		/* a real-time signal's default is to terminate: do what would have happened */
		__sigaction(sig, &app_prev, NULL);
		sys_tgkill(sys_getpid(), sys_gettid(), sig);
	} else if (app_prev.sa_handler != SIG_IGN) {
		app_prev.sa_handler(sig);
	}
}

static void unwind_ucontext(struct obs_stack *st, void *uc)
{
	unw_cursor_t c;
	unsigned n = 0;

	if (obs_unwind_enter()) {
		if (unw_init_local2(&c, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) == 0) {
			do {
				unw_word_t ip;

				if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0 || !ip)
					break;
				st->ips[n++] = (uintptr_t)ip;
			} while (n < OBS_STACK_MAX && unw_step(&c) > 0);
		}
		obs_unwind_exit();
	}
	st->nr = (uint8_t)n;
	st->method = n ? OBS_UNWIND_LIBUNWIND : OBS_UNWIND_NONE;
	st->exact_first = 1;
}

static void app_handler(int sig, siginfo_t *si, void *uc)
{
	int saved_errno = errno;
	unsigned idx, gen;
	struct app_slot *s;
	uint32_t expect = SLOT_ARMED;

	if (!is_request(si)) {
		chain(sig, si, uc);
		goto out;
	}
	idx = (unsigned)si->si_value.sival_int & ((1U << APP_IDX_BITS) - 1);
	gen = (unsigned)si->si_value.sival_int >> APP_IDX_BITS;
	s = &app_slots[idx];
	if (!CAS(&s->state, &expect, SLOT_WRITING))
		goto out; /* stale signal of a request already given up */
	if (s->gen != gen || s->tid != sys_gettid()) {
		STORE_REL(&s->state, SLOT_ARMED); /* someone else's request: leave it armed */
		goto out;
	}
	unwind_ucontext(&s->st, uc);
	expect = SLOT_WRITING;
	if (!CAS(&s->state, &expect, SLOT_DONE))
		STORE_REL(&s->state, SLOT_IDLE); /* requester abandoned it: free the slot */
	sys_futex_wake(&s->state, 1);
out:
	errno = saved_errno;
}

int obs_appstack_install(int signo)
{
	struct sigaction sa;

	if (signo == 0)
		signo = SIGRTMIN + APP_DEFAULT_SIGNAL_OFFSET;
	if (signo < SIGRTMIN || signo > SIGRTMAX)
		return -EINVAL;
	if (app_signo)
		return app_signo == signo ? signo : -EBUSY;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = app_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (__sigaction(signo, &sa, &app_prev) < 0)
		return -errno;
	__atomic_store_n(&app_signo, signo, __ATOMIC_RELEASE);
	return signo;
}

void obs_appstack_uninstall(void)
{
	if (!app_signo)
		return;
	__sigaction(app_signo, &app_prev, NULL);
	__atomic_store_n(&app_signo, 0, __ATOMIC_RELEASE);
}

int obs_appstack_signo(void)
{
	return __atomic_load_n(&app_signo, __ATOMIC_ACQUIRE);
}

void obs_appstack_program_sigaction(const struct sigaction *act, struct sigaction *old)
{
	struct sigaction prev = app_prev;

	if (act)
		app_prev = *act; /* what the handler chains to from now on */
	if (old)
		*old = prev;
}

/* ---- /proc classification ---------------------------------------------------------------- */

/* "/proc/self/task/<tid>/<leaf>" without stdio (fault-path callers use obs_task_comm). */
static void task_path(char *buf, pid_t tid, const char *leaf)
{
	static const char head[] = "/proc/self/task/";
	char digits[16];
	int nd = 0;
	size_t len = sizeof(head) - 1;

	memcpy(buf, head, len);
	do {
		digits[nd++] = (char)('0' + tid % 10);
		tid /= 10;
	} while (tid > 0 && nd < (int)sizeof(digits));
	while (nd)
		buf[len++] = digits[--nd];
	buf[len++] = '/';
	strcpy(buf + len, leaf);
}

/* Read a small /proc file into buf (NUL-terminated). Returns length or -errno. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	sys_close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/* Parse a "0x..." hexadecimal field; returns the position after it. */
static const char *parse_hex(const char *p, uintptr_t *v)
{
	*v = 0;
	while (*p == ' ')
		p++;
	if (p[0] == '0' && p[1] == 'x')
		p += 2;
	for (;; p++) {
		int d = *p >= '0' && *p <= '9'	 ? *p - '0'
			: *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
						 : -1;

		if (d < 0)
			return p;
		*v = *v * 16 + (uintptr_t)d;
	}
}

int obs_task_state(pid_t tid, long *nr, uintptr_t *pc)
{
	char path[64], buf[256];
	ssize_t n;
	long v = 0;
	const char *p = buf;
	uintptr_t sp;

	if (pc)
		*pc = 0;
	if (tid <= 0)
		return -EINVAL;
	task_path(path, tid, "syscall");
	n = read_small(path, buf, sizeof(buf));
	if (n == -ENOENT || n == -ESRCH)
		return OBS_TASK_GONE;
	if (n < 0)
		return (int)n;
	if (strncmp(buf, "running", 7) == 0)
		return OBS_TASK_RUNNING;
	if (*p == '-') { /* "-1 sp pc": not in a syscall */
		p = parse_hex(p + 3, &sp);
		if (pc)
			parse_hex(p, pc);
		return OBS_TASK_USER;
	}
	if (*p < '0' || *p > '9')
		return -EPROTO;
	while (*p >= '0' && *p <= '9')
		v = v * 10 + (*p++ - '0');
	if (nr)
		*nr = v;
	return OBS_TASK_SYSCALL;
}

int obs_task_comm(pid_t tid, char comm[16])
{
	char path[64];
	ssize_t n;

	task_path(path, tid, "comm");
	n = read_small(path, comm, 16);
	if (n < 0)
		return (int)n;
	while (n > 0 && comm[n - 1] == '\n')
		comm[--n] = '\0';
	return 0;
}

/* ---- Requester ------------------------------------------------------------------------- */

static struct app_slot *claim_slot(unsigned *idx)
{
	for (unsigned i = 0; i < APP_SLOTS; i++) {
		uint32_t expect = SLOT_IDLE;

		if (CAS(&app_slots[i].state, &expect, SLOT_CLAIMED)) {
			*idx = i;
			return &app_slots[i];
		}
	}
	return NULL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Sleep until the slot leaves state `from` or deadline passes. Returns the state seen. */
static uint32_t wait_while(struct app_slot *s, uint32_t from, uint64_t deadline)
{
	for (;;) {
		uint32_t cur = LOAD_ACQ(&s->state);
		uint64_t now = now_ns();
		struct timespec rel;

		if (cur != from || now >= deadline)
			return cur;
		rel.tv_sec = (time_t)((deadline - now) / 1000000000ULL);
		rel.tv_nsec = (long)((deadline - now) % 1000000000ULL);
		sys_futex_wait(&s->state, from, &rel);
	}
}

static int send_request(pid_t tid, unsigned idx, unsigned gen)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	si.si_signo = app_signo;
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value.sival_int = (int)((gen << APP_IDX_BITS) | idx);
	return sys_rt_tgsigqueueinfo(sys_getpid(), tid, app_signo, &si);
}

/* Wait for the target thread; on timeout take the slot back, or leave it to the writer. */
static enum obs_app_result await_slot(struct app_slot *s, struct obs_stack *st, uint64_t timeout_ns)
{
	uint32_t cur = wait_while(s, SLOT_ARMED, now_ns() + timeout_ns), expect;

	if (cur == SLOT_ARMED) {
		expect = SLOT_ARMED;
		if (CAS(&s->state, &expect, SLOT_IDLE))
			return OBS_APP_TIMEOUT;
		cur = expect;
	}
	if (cur == SLOT_WRITING) /* the thread is unwinding: give it as long again */
		cur = wait_while(s, SLOT_WRITING, now_ns() + timeout_ns);
	if (cur == SLOT_WRITING) {
		expect = SLOT_WRITING;
		if (CAS(&s->state, &expect, SLOT_ABANDONED))
			return OBS_APP_TIMEOUT;
		cur = expect;
	}
	if (cur != SLOT_DONE)
		return OBS_APP_TIMEOUT;
	*st = s->st;
	STORE_REL(&s->state, SLOT_IDLE);
	return OBS_APP_USER;
}

/* A program that installed its own handler for our signal must not receive our requests. */
static bool handler_still_ours(void)
{
	struct sigaction cur;

	if (__sigaction(app_signo, NULL, &cur) < 0)
		return false;
	return (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == app_handler;
}

/* A thread that blocks the signal would keep the request pending where the program can see it
 * (sigpending, a signalfd): never ask such a thread. */
static bool blocks_signal(pid_t tid, int sig)
{
	char path[64], buf[2048];
	const char *p;
	unsigned long long mask = 0;

	task_path(path, tid, "status");
	if (read_small(path, buf, sizeof(buf)) < 0)
		return true;
	p = strstr(buf, "SigBlk:");
	if (!p)
		return true;
	for (p += 7; *p == ' ' || *p == '\t'; p++)
		;
	for (; (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'); p++)
		mask = mask * 16 + (unsigned long long)(*p <= '9' ? *p - '0' : *p - 'a' + 10);
	return (mask >> (sig - 1)) & 1;
}

/* A thread still returning from our handler blocks the signal for a moment (the kernel adds it
 * to the mask while the handler runs): only a mask that stays is the program's. */
static bool blocks_signal_for_long(pid_t tid, int sig)
{
	for (int i = 0; i < 10; i++) {
		struct timespec ms = {0, 1000000};

		if (!blocks_signal(tid, sig))
			return false;
		nanosleep(&ms, NULL);
	}
	return true;
}

/* The signal path: claim a slot, send the request, wait. */
static enum obs_app_result capture_by_signal(pid_t tid, struct obs_stack *st, uint64_t timeout_ns)
{
	struct app_slot *s;
	unsigned idx, gen;

	/* installed when first needed: a program that never stalls never sees the handler */
	if (!app_signo && obs_appstack_install(0) < 0)
		return OBS_APP_UNAVAILABLE;
	if (!handler_still_ours() || blocks_signal_for_long(tid, app_signo))
		return OBS_APP_UNAVAILABLE;
	s = claim_slot(&idx);
	if (!s)
		return OBS_APP_UNAVAILABLE;
	gen = (s->gen + 1) & APP_GEN_MASK;
	s->gen = gen;
	s->tid = tid;
	STORE_REL(&s->state, SLOT_ARMED);
	if (send_request(tid, idx, gen) < 0) {
		uint32_t expect = SLOT_ARMED;

		if (CAS(&s->state, &expect, SLOT_IDLE))
			return OBS_APP_UNAVAILABLE;
	}
	return await_slot(s, st, timeout_ns);
}

enum obs_app_result obs_appstack_capture(pid_t tid, struct obs_stack *st, long *syscall_nr,
					 uint64_t timeout_ns)
{
	enum obs_app_result r;
	long nr = -1;
	uintptr_t pc = 0;
	int state = obs_task_state(tid, &nr, &pc);

	st->nr = 0;
	st->method = OBS_UNWIND_NONE;
	st->exact_first = 0;
	if (syscall_nr)
		*syscall_nr = -1;
	if (state == OBS_TASK_SYSCALL) {
		if (syscall_nr)
			*syscall_nr = nr;
		return OBS_APP_SYSCALL;
	}
	if (state < 0 || state == OBS_TASK_GONE)
		return OBS_APP_UNAVAILABLE;
	r = capture_by_signal(tid, st, timeout_ns);
	if (r == OBS_APP_TIMEOUT && obs_task_state(tid, NULL, NULL) == OBS_TASK_GONE)
		return OBS_APP_UNAVAILABLE; /* it exited meanwhile */
	if (r != OBS_APP_USER && state == OBS_TASK_USER && pc) {
		/* at least the faulting instruction, which /proc gave for free */
		st->ips[0] = pc;
		st->nr = 1;
		st->method = OBS_UNWIND_PROC_PC;
		st->exact_first = 1;
		r = OBS_APP_USER;
	}
	return r;
}

static const char *const app_result_names[OBS_APP_NR] = {
    [OBS_APP_NONE] = "none",
    [OBS_APP_USER] = "user",
    [OBS_APP_SYSCALL] = "syscall",
    [OBS_APP_TIMEOUT] = "timeout",
    [OBS_APP_UNAVAILABLE] = "unavailable",
};

const char *obs_app_result_name(enum obs_app_result r)
{
	return r < OBS_APP_NR ? app_result_names[r] : "?";
}

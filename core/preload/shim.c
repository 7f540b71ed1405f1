/* LD_PRELOAD interposers: mmap, mmap64, munmap, mremap, madvise (the program-facing side of
 * sys_mmap / sys_munmap / sys_mremap / sys_madvise), and fallocate, ftruncate, truncate (holes
 * and truncations of managed shared memory files).
 *
 * Eligible calls (private anonymous read-write mappings of at least THPEMU_MIN_REGION, and any
 * call touching managed memory) go to core/live; everything else is the raw system call. The
 * library never calls its own interposed names and never calls dlsym.
 *
 * Initialisation runs in the library constructor, where malloc is safe. An allocator usually
 * gets there first (jemalloc initialises from the first malloc, which libc makes before any
 * constructor runs): such early calls pass straight through, and the mappings they create are
 * remembered in a small static table and adopted once the emulator is up. Calls that re-enter
 * the library (an allocator's mmap under our own malloc, a signal handler interrupting us) and
 * calls from the emulator's threads pass through too.
 *
 * After fork() the kernel has dropped the child's registrations (no EVENT_FORK): on a shared
 * machine (THPEMU_MACHINE, `thpemu run`) the child joins it as a process of its own in the atfork
 * child handler (core/live/member.c), otherwise it runs unmanaged; exec'd programs initialise
 * afresh through LD_PRELOAD; vfork/posix_spawn children share the parent's memory and its
 * handlers until they exec.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <linux/userfaultfd.h>
#include <time.h>
#include <unistd.h>
#include <valgrind/valgrind.h>

#include "obs/unwind.h"
#include "preload/shim.h"
#include "util/sys.h"

#define EXPORT	  __attribute__((visibility("default")))
#define EARLY_MAX 64
#define EARLY_MIN (64 << 10) /* mappings smaller than this are never worth adopting */

enum shim_state {
	SHIM_UNINIT, /* before the constructor: pass through, remember mappings */
	SHIM_INITIALISING,
	SHIM_LIVE,
	SHIM_UNMANAGED, /* disabled, bad configuration, no userfaultfd: pass through */
	SHIM_CHILD,	/* a fork child: pass through */
	SHIM_DETACHED,	/* stepped aside (seccomp, unshare, setns): pass through */
};

static int shim_state;
static struct uffd_live *shim_lv;
static int shim_calls; /* interposed calls inside the emulator now (a step aside waits) */

/* Mappings made before initialisation (pre-constructor allocator calls). */
static struct {
	uintptr_t lo, hi;
} early[EARLY_MAX];
static unsigned nearly;
static int early_lock;

static long early_ret(long r, void **out)
{
	if (sys_is_err(r)) {
		errno = (int)-r;
		*out = MAP_FAILED;
		return -1;
	}
	*out = (void *)r;
	return 0;
}

static void early_acquire(void)
{
	while (__atomic_exchange_n(&early_lock, 1, __ATOMIC_ACQUIRE))
		;
}

static void early_release(void)
{
	__atomic_store_n(&early_lock, 0, __ATOMIC_RELEASE);
}

/* Remove [lo, hi) from the early table (splitting an entry if needed). */
static void early_forget(uintptr_t lo, uintptr_t hi)
{
	early_acquire();
	for (unsigned i = 0; i < nearly; i++) {
		uintptr_t a = early[i].lo, b = early[i].hi;

		if (hi <= a || lo >= b)
			continue;
		if (lo > a && hi < b && nearly < EARLY_MAX) {
			early[nearly].lo = hi;
			early[nearly].hi = b;
			nearly++;
			early[i].hi = lo;
		} else if (lo > a) {
			early[i].hi = lo;
		} else if (hi < b) {
			early[i].lo = hi;
		} else {
			early[i] = early[--nearly];
			i--;
		}
	}
	early_release();
}

static void early_remember(uintptr_t lo, size_t len, int prot, int flags)
{
	if (!(flags & MAP_ANONYMOUS) || (flags & MAP_TYPE) != MAP_PRIVATE || len < EARLY_MIN ||
	    prot != (PROT_READ | PROT_WRITE) || (flags & (MAP_STACK | MAP_GROWSDOWN | MAP_HUGETLB)))
		return;
	early_forget(lo, lo + len);
	early_acquire();
	if (nearly < EARLY_MAX) {
		early[nearly].lo = lo;
		early[nearly].hi = (lo + len + UFFD_PAGE_SIZE - 1) & ~(UFFD_PAGE_SIZE - 1);
		nearly++;
	}
	early_release();
}

static void child_of(bool real_fork);

/* The emulator, when this call may use it. A process made by a raw clone(2) without CLONE_VM
 * or _Fork (no atfork handler ran) finds it is not the process the emulator was made for. */
static struct uffd_live *live(void)
{
	if (__atomic_load_n(&shim_state, __ATOMIC_ACQUIRE) != SHIM_LIVE || uffd_tls_passthrough)
		return NULL;
	if (!uffd_live_own_process(shim_lv)) {
		child_of(false);
		return NULL;
	}
	return shim_lv;
}

/* Bracket a call into the emulator: the emulator may only step aside between such calls. */
static struct uffd_live *enter(void)
{
	struct uffd_live *lv;

	__atomic_add_fetch(&shim_calls, 1, __ATOMIC_SEQ_CST);
	lv = live();
	if (lv)
		uffd_tls_passthrough++;
	else
		__atomic_sub_fetch(&shim_calls, 1, __ATOMIC_SEQ_CST);
	return lv;
}

static void leave(void)
{
	uffd_tls_passthrough--;
	__atomic_sub_fetch(&shim_calls, 1, __ATOMIC_SEQ_CST);
}

/* An eligible mapping made on the emulator's own threads or while it was busy stays unmanaged. */
static void count_reentrant(size_t len, int prot, int flags, int fd)
{
	if (__atomic_load_n(&shim_state, __ATOMIC_ACQUIRE) == SHIM_LIVE &&
	    uffd_mmap_eligible(shim_lv, len, prot, flags, fd))
		uffd_stat_add(&uffd_live_stats(shim_lv)->host.reentrant_calls, 1);
}

static bool tracking_early(void)
{
	int s = __atomic_load_n(&shim_state, __ATOMIC_ACQUIRE);

	return s == SHIM_UNINIT || s == SHIM_INITIALISING;
}

/* mmap and mmap64 (one function on LP64): a static body, so that mmap64 does not call the
 * exported mmap through the PLT (no call of ours reaches an interposed name). */
static void *shim_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	struct uffd_live *lv = enter();
	void *out;
	long r;

	if (lv && (uffd_mmap_eligible(lv, len, prot, flags, fd) ||
		   ((flags & MAP_FIXED) && uffd_is_managed(lv, addr, len)))) {
		r = uffd_mmap(lv, addr, len, prot, flags, fd, off);
	} else if (lv && uffd_shmem_eligible(lv, len, prot, flags, fd)) {
		r = uffd_shmem_mmap(lv, addr, len, prot, flags, fd, off);
	} else {
		r = sys_mmap(addr, len, prot, flags, fd, off);
		if (lv)
			uffd_passthrough_mapped(lv, r, len, prot, flags);
		if (!lv && tracking_early() && !sys_is_err(r))
			early_remember((uintptr_t)r, len, prot, flags);
		else if (!lv)
			count_reentrant(len, prot, flags, fd);
	}
	if (lv)
		leave();
	early_ret(r, &out);
	return out;
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return shim_mmap(addr, len, prot, flags, fd, off);
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return shim_mmap(addr, len, prot, flags, fd, off);
}

static int int_ret(long r)
{
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return (int)r;
}

EXPORT int munmap(void *addr, size_t len)
{
	struct uffd_live *lv = enter();
	long r;

	if (lv && uffd_is_managed(lv, addr, len)) {
		r = uffd_munmap(lv, addr, len);
		leave();
		return int_ret(r);
	}
	if (lv) {
		uffd_passthrough_unmapped(lv, addr, len);
		leave();
	}
	r = sys_munmap(addr, len);
	if (!lv && tracking_early() && r == 0)
		early_forget((uintptr_t)addr, (uintptr_t)addr + len);
	return int_ret(r);
}

EXPORT int madvise(void *addr, size_t len, int advice)
{
	struct uffd_live *lv = enter();
	long r;

	if (lv && uffd_is_managed(lv, addr, len)) {
		r = uffd_madvise(lv, addr, len, advice);
		leave();
		return int_ret(r);
	}
	if (lv && advice == MADV_REMOVE) { /* a hole in shared memory: its frames go too */
		r = uffd_shmem_remove(lv, addr, len);
		leave();
		return int_ret(r);
	}
	if (lv) {
		bool answered = uffd_shmem_madvise(lv, addr, len, advice, &r);

		leave();
		if (answered)
			return int_ret(r);
	}
	return int_ret(sys_madvise(addr, len, advice));
}

EXPORT void *mremap(void *old, size_t oldlen, size_t newlen, int flags, ...)
{
	struct uffd_live *lv = enter();
	void *new_addr = NULL, *out;
	va_list ap;
	long r;

	if (flags & MREMAP_FIXED) {
		va_start(ap, flags);
		new_addr = va_arg(ap, void *);
		va_end(ap);
	}
	if (lv && uffd_shmem_overlaps(lv, (uintptr_t)old, (uintptr_t)old + (oldlen ? oldlen : 1))) {
		r = uffd_shmem_mremap(lv, old, oldlen, newlen, flags, new_addr);
	} else if (lv && (uffd_is_managed(lv, old, oldlen) ||
			  ((flags & MREMAP_FIXED) && uffd_is_managed(lv, new_addr, newlen)))) {
		r = uffd_mremap(lv, old, oldlen, newlen, flags, new_addr);
	} else {
		r = sys_mremap(old, oldlen, newlen, flags, new_addr);
		if (!lv && tracking_early() && !sys_is_err(r)) {
			early_forget((uintptr_t)old, (uintptr_t)old + oldlen);
			early_remember((uintptr_t)r, newlen, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS);
		}
	}
	if (lv)
		leave();
	early_ret(r, &out);
	return out;
}

/* ---- holes and truncation of shared memory files ---------------------------------------------
 * fallocate(FALLOC_FL_PUNCH_HOLE) and a shrinking ftruncate/truncate of a tmpfs file free its
 * pages in the kernel: after the real call succeeds, core/live frees the same frames. */

static int shim_fallocate(int fd, int mode, off_t off, off_t len)
{
	long r = sys_call4(SYS_fallocate, fd, mode, off, len);
	struct uffd_live *lv;

	if (r == 0 && (mode & FALLOC_FL_PUNCH_HOLE) && (lv = enter())) {
		uffd_shmem_fallocated(lv, fd, mode, off, len);
		leave();
	}
	return int_ret(r);
}

EXPORT int fallocate(int fd, int mode, off_t off, off_t len)
{
	return shim_fallocate(fd, mode, off, len);
}

EXPORT int fallocate64(int fd, int mode, off_t off, off_t len)
{
	return shim_fallocate(fd, mode, off, len);
}

static int shim_truncate(int fd, const char *path, off_t size)
{
	long r =
	    path ? sys_call2(SYS_truncate, (long)path, size) : sys_call2(SYS_ftruncate, fd, size);
	struct uffd_live *lv;

	if (r == 0 && (lv = enter())) {
		uffd_shmem_truncated(lv, fd, path, size);
		leave();
	}
	return int_ret(r);
}

EXPORT int ftruncate(int fd, off_t size)
{
	return shim_truncate(fd, NULL, size);
}

EXPORT int ftruncate64(int fd, off_t size)
{
	return shim_truncate(fd, NULL, size);
}

EXPORT int truncate(const char *path, off_t size)
{
	return shim_truncate(-1, path, size);
}

EXPORT int truncate64(const char *path, off_t size)
{
	return shim_truncate(-1, path, size);
}

/* ---- life cycle ------------------------------------------------------------------------------ */

/* The forking thread's prepare ran: parent undoes it whatever the state became meanwhile (a
 * thread stepping aside during the fork). */
static __thread bool fork_prepared __attribute__((tls_model("initial-exec")));

static void shim_atfork_prepare(void)
{
	fork_prepared = __atomic_load_n(&shim_state, __ATOMIC_ACQUIRE) == SHIM_LIVE;
	if (fork_prepared) {
		guard_fork_prepare();	   /* no page of the program is mid-migration in the copy */
		obs_unwind_fork_prepare(); /* nor any thread inside libunwind (its locks) */
	}
}

static void shim_atfork_parent(void)
{
	if (fork_prepared) {
		fork_prepared = false;
		obs_unwind_fork_parent();
		guard_fork_parent();
	}
}

static void shim_atfork_child(void);

/* A fork child (real_fork: fork's atfork handlers ran, glibc has forgotten the parent's other
 * threads) or a process made by a raw clone or _Fork, found at its first call (glibc still
 * lists the parent's threads, whose stacks must stay). */
static void child_of(bool real_fork)
{
	int s = __atomic_load_n(&shim_state, __ATOMIC_ACQUIRE);

	if (s == SHIM_LIVE || s == SHIM_DETACHED) {
		struct uffd_live *child;

		guard_fork_child(real_fork);
		obs_unwind_fork_child();
		uffd_tls_passthrough++;
		child = uffd_live_forked_child(shim_lv);
		uffd_tls_passthrough--;
		if (child && s == SHIM_LIVE) { /* a process of the same machine (THPEMU_MACHINE) */
			shim_lv = child;
			return;
		}
		__atomic_store_n(&shim_state, SHIM_CHILD, __ATOMIC_RELEASE);
	}
}

static void shim_atfork_child(void)
{
	fork_prepared = false; /* LIVE or DETACHED now: child_of releases what prepare took */
	child_of(true);
}

void shim_step_aside(const char *why)
{
	int expect = SHIM_LIVE;

	if (!__atomic_compare_exchange_n(&shim_state, &expect, SHIM_DETACHED, false,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return;
	/* no call enters the emulator any more; let those inside finish */
	while (__atomic_load_n(&shim_calls, __ATOMIC_SEQ_CST))
		sched_yield();
	uffd_tls_passthrough++;
	uffd_live_detach(shim_lv, why);
	uffd_tls_passthrough--;
}

static void *machine_stopped_main(void *arg)
{
	struct timespec ms = {0, 1000000};

	(void)arg;
	uffd_tls_passthrough++;	 /* this thread is the emulator's */
	uffd_own_thread_enter(); /* its faults until the ranges are handed back too */
	while (__atomic_load_n(&shim_state, __ATOMIC_ACQUIRE) == SHIM_INITIALISING)
		nanosleep(&ms, NULL); /* the stop came while we were joining */
	shim_step_aside("the machine was stopped");
	uffd_own_thread_leave(); /* detached, never joined: out before it ends */
	return NULL;
}

/* `thpemu machine stop` (called on the emulator's background thread, which stepping aside
 * joins): step aside on a thread of our own, with every signal blocked (the program's handlers
 * are not meant to run there). */
static void shim_machine_stopped(void)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t t;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_attr_init(&attr) == 0) {
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &attr, machine_stopped_main, NULL) != 0)
			fprintf(stderr, "thpemu: the machine was stopped, but this process cannot "
					"step aside (no thread)\n");
		pthread_attr_destroy(&attr);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void shim_cred_replicate(enum guard_cred_op op, const long a[5], const void *hdr, const void *data)
{
	struct uffd_live *lv = shim_live();
	int failed;

	if (!lv)
		return;
	failed = guard_cred_replicate(op, a, hdr, data);
	uffd_stat_add(&uffd_live_stats(lv)->host.cred_changes, 1);
	if (failed)
		uffd_say_once(lv, 6, "a credential change of the program could not be made on ",
			      (uint64_t)failed, " of the emulator's threads");
}

bool shim_prctl_thp(int option, long a2, long a3, long a4, long a5, long *ret)
{
	struct uffd_live *lv = shim_live();

	return lv && uffd_live_prctl_thp(lv, option, a2, a3, a4, a5, ret);
}

void shim_deepbind_loaded(const char *file)
{
	struct uffd_live *lv = shim_live();

	if (!lv)
		return;
	uffd_stat_add(&uffd_live_stats(lv)->host.deepbind_loads, 1);
	/* the report's note, not the program's stderr: nothing went wrong */
	if (uffd_live_config(lv)->log >= CONFIG_LOG_INFO)
		fprintf(stderr, "thpemu: %s loaded without RTLD_DEEPBIND (a preloaded allocator)\n",
			file ? file : "(main program)");
	if (__atomic_load_n(&uffd_live_stats(lv)->host.deepbind_loads, __ATOMIC_RELAXED) == 1)
		uffd_note(lv, "libraries loaded with RTLD_DEEPBIND were loaded without it, so that "
			      "they use the preloaded allocator (host.deepbind_loads)");
}

void shim_uffd_register(const void *arg)
{
	const struct uffdio_register *reg = arg;
	struct uffd_live *lv = shim_live();

	if (lv && reg->range.len)
		uffd_release_for_program(lv, reg->range.start, reg->range.start + reg->range.len);
}

void shim_mlocked(bool all, int flags)
{
	struct uffd_live *lv = shim_live();

	if (lv)
		uffd_live_mlocked(lv, all, flags);
}

static void adopt_early(struct uffd_live *lv)
{
	for (unsigned i = 0; i < nearly; i++) {
		size_t len = early[i].hi - early[i].lo;

		if (len >= uffd_live_config(lv)->min_region)
			uffd_adopt(lv, (void *)early[i].lo, len, PROT_READ | PROT_WRITE);
	}
	nearly = 0;
}

/* Without a usable emulator: say why once, leave a record for `thpemu run`, pass through. */
static void run_unmanaged(const char *why, bool quiet)
{
	const char *dir = getenv("THPEMU_RUN_DIR");

	if (!quiet)
		fprintf(stderr, "thpemu: %s; running unmanaged\n", why);
	if (dir && *dir) {
		char path[600];
		FILE *f;
		struct uffd_stats *st = calloc(1, sizeof(*st));

		snprintf(path, sizeof(path), "%s/%d.stats", dir, (int)getpid());
		uffd_stats_keep_previous(dir, (int)getpid());
		f = st ? fopen(path, "w") : NULL;
		if (f) {
			st->magic = UFFD_STATS_MAGIC;
			st->version = UFFD_STATS_VERSION;
			st->size = sizeof(*st);
			uffd_stats_identify(st);
			st->state = UFFD_PROC_UNMANAGED;
			snprintf(st->note, sizeof(st->note), " %s", why);
			fwrite(st, sizeof(*st), 1, f);
			fclose(f);
		}
		free(st);
	}
	__atomic_store_n(&shim_state, SHIM_UNMANAGED, __ATOMIC_RELEASE);
}

/* The debugger tracing this process from its start, if any (its program's name). A debugger reads
 * and writes the program's memory through /proc/PID/mem or ptrace(PEEKDATA), whose page-table
 * walk cannot wait for a userfaultfd handler (mm/memory.c: __access_remote_vm calls
 * get_user_pages_remote without a lock to drop, so fs/userfaultfd.c: handle_userfault answers
 * VM_FAULT_SIGBUS): a managed page never touched would read as EIO ("Cannot access memory"), and
 * a debugger that resumes only the faulting thread (scheduler-locking) stops the handlers that
 * would serve it. strace and other tracers use process_vm_readv, which can wait, and keep the
 * program managed. */
static bool traced_by_debugger(char *name, size_t len)
{
	static const char *const debuggers[] = {"gdb", "lldb", "rr"};
	char buf[2048], path[64], exe[256];
	const char *t;
	long n, tracer;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	sys_close(fd);
	buf[n > 0 ? n : 0] = '\0';
	t = strstr(buf, "\nTracerPid:");
	tracer = t ? strtol(t + 11, NULL, 10) : 0;
	if (tracer <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%ld/exe", tracer);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = '\0';
	t = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
	for (size_t i = 0; i < sizeof(debuggers) / sizeof(debuggers[0]); i++)
		if (strncmp(t, debuggers[i], strlen(debuggers[i])) == 0) {
			snprintf(name, len, "%s (pid %ld)", t, tracer);
			return true;
		}
	return false;
}

/* Programs the emulator cannot serve: why, or NULL. */
static const char *cannot_serve(char *buf, size_t len)
{
	char who[300];

	/* valgrind runs every thread of the program on one lock: a thread waiting in a fault
	 * holds it, so no handler thread ever runs to serve the fault */
	if (RUNNING_ON_VALGRIND)
		return "running under valgrind, whose threads take turns on one lock (a thread "
		       "waiting for a userfaultfd handler keeps it from running)";
	if (traced_by_debugger(who, sizeof(who))) {
		snprintf(buf, len,
			 "traced by the debugger %s, whose reads of memory cannot wait for a "
			 "userfaultfd handler",
			 who);
		return buf;
	}
	return NULL;
}

/* glibc calls an object's constructors with the program's argc, argv and envp (elf/dl-init.c:
 * call_init): the record's command line is taken from argv, without reading /proc. */
__attribute__((constructor)) static void shim_init(int argc, char **argv, char **envp)
{
	struct config cfg;
	char err[512] = "";
	const char *why;

	(void)envp;
	__atomic_store_n(&shim_state, SHIM_INITIALISING, __ATOMIC_RELEASE);
	if (argc > 0 && argv)
		uffd_stats_identify_args(argv);
	uffd_tls_passthrough++;
	shim_deepbind_init(); /* managed or not, a preloaded allocator is there */
	if (getauxval(AT_SECURE)) {
		/* set-user-ID, set-group-ID or file capabilities: the caller's environment is not
		 * to be trusted, so no THPEMU_* variable is even read, and no file is written */
		fprintf(stderr, "thpemu: secure execution (set-user-ID, set-group-ID or file "
				"capabilities): THPEMU_* ignored; running unmanaged\n");
		__atomic_store_n(&shim_state, SHIM_UNMANAGED, __ATOMIC_RELEASE);
		goto out;
	}
	if (config_from_env(&cfg, err, sizeof(err)) < 0) {
		run_unmanaged(err, false);
		goto out;
	}
	if (cfg.disable) {
		run_unmanaged("THPEMU_DISABLE is set", true);
		goto out;
	}
	why = cannot_serve(err, sizeof(err));
	if (why) {
		run_unmanaged(why, cfg.log == CONFIG_LOG_QUIET);
		goto out;
	}
	guard_fd_init(); /* before the emulator opens anything: its descriptors go out of reach */
	uffd_set_machine_stop_hook(shim_machine_stopped);
	if (uffd_live_create(&cfg, &shim_lv, err, sizeof(err)) < 0) {
		guard_fd_fini(); /* nothing of ours is open: the program's limits are its own again
				  */
		run_unmanaged(err, cfg.log == CONFIG_LOG_QUIET);
		goto out;
	}
	pthread_atfork(shim_atfork_prepare, shim_atfork_parent, shim_atfork_child);
	adopt_early(shim_lv);
	if (cfg.log >= CONFIG_LOG_INFO)
		fprintf(stderr, "thpemu: pid %d managed: policy %s, pool %llu MiB, %u handlers\n",
			(int)getpid(), uffd_live_stats(shim_lv)->policy,
			(unsigned long long)(cfg.pool_bytes >> 20),
			uffd_live_stats(shim_lv)->handlers);
	__atomic_store_n(&shim_state, SHIM_LIVE, __ATOMIC_RELEASE);
out:
	uffd_tls_passthrough--;
}

/* Preloaded by hand, there is no `thpemu run` summary to say how much of the program's memory
 * went unmanaged: the library says it at exit, once, when the memory census saw at least 1 MiB
 * of it, mostly unmanaged. A program whose malloc is glibc's and that had nothing managed at all
 * (glibc maps its heap through its internal __mmap, which no interposer sees) is told what to
 * preload. */
static void say_what_went_unmanaged(struct uffd_live *lv)
{
	struct uffd_stats *st = calloc(1, sizeof(*st));
	const struct config *cfg = uffd_live_config(lv);
	uint64_t prog;

	if (!st || cfg->run_dir[0] || cfg->log == CONFIG_LOG_QUIET)
		goto out;
	uffd_live_stats_copy(lv, st);
	prog = st->mem.anon > st->mem.anon_own ? st->mem.anon - st->mem.anon_own : 0;
	if (shim_malloc_is_glibc() && !st->host.messages && prog >= (1ULL << 20))
		fprintf(stderr,
			"thpemu: pid %d managed none of its memory (%.1f MiB anonymous at its "
			"largest): its malloc is glibc's, whose heap no interposer sees; preload "
			"%s after libthpemu.so, or run it with thpemu run\n",
			(int)getpid(), (double)prog / 1048576.0, THPEMU_JEMALLOC_PATH);
	else
		uffd_memory_warning(stderr, &st->mem, 1ULL << 20);
out:
	free(st);
}

__attribute__((destructor)) static void shim_fini(void)
{
	int s = __atomic_load_n(&shim_state, __ATOMIC_ACQUIRE);

	if (s == SHIM_LIVE || s == SHIM_DETACHED) {
		uffd_live_exit(shim_lv, NULL);
		say_what_went_unmanaged(shim_lv);
	}
}

struct uffd_live *shim_live(void)
{
	return __atomic_load_n(&shim_state, __ATOMIC_ACQUIRE) == SHIM_LIVE ? shim_lv : NULL;
}

/* LD_PRELOAD interposers of the process-level calls a program makes that could meet the emulator:
 * its descriptors (close, close_range, closefrom), its limits (getrlimit, setrlimit, prlimit),
 * its per-thread credentials (prctl, capset), sandboxing and namespaces (seccomp, unshare,
 * setns) and the generic syscall(2) through which libraries make some of these calls.
 *
 * Each behaves as it would natively (core/inprocess says why the emulator's descriptors and threads
 * are invisible to these calls), or, where the call cannot work with the emulator's threads
 * present, the emulator steps aside for the process first (shim_step_aside: its memory is
 * handed back to the kernel intact, its threads end) and the call then runs as natively:
 *   - a seccomp filter: the emulator's own system calls (userfaultfd ioctls, io_uring) are not
 *     the program's and a filter written for the program may refuse them;
 *   - unshare of a user namespace (or CLONE_THREAD/SIGHAND/VM) and setns into a user, mount or
 *     time namespace: the kernel allows them only to a single-threaded process.
 * prctl(PR_SET_THP_DISABLE) and PR_GET_THP_DISABLE are the emulated kernel's (core/live: it
 * honours them as the kernel would and tells the host too); the mlock family (mlock, mlock2,
 * mlockall, munlockall) is passed on with news of it. A
 * UFFDIO_REGISTER on a userfaultfd of the program's own (ioctl) first has the emulator hand the
 * managed memory it covers back to the kernel.
 *
 * Calls made by the emulator itself (uffd_tls_passthrough) go straight to the kernel.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <linux/capability.h>
#include <linux/close_range.h>
#include <linux/nsfs.h>
#include <linux/prctl.h>
#include <linux/seccomp.h>
#include <linux/userfaultfd.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include "inprocess/guard.h"
#include "obs/unwind.h"
#include "preload/shim.h"
#include "util/sys.h"

#define EXPORT	__attribute__((visibility("default")))
#define STR_(x) #x
#define STR(x)	STR_(x)

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

int capset(void *hdr, const void *data); /* glibc exports it without a header declaring it */

static long ret_errno(long r)
{
	if (sys_is_err(r)) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* ---- descriptors ------------------------------------------------------------------------------
 */

/* close(2) as the program sees it; syscall(SYS_close) shares it without calling the exported
 * close through the PLT. */
static int close_as_native(int fd)
{
	long r;

	if (guard_fd_is_ours(fd) && uffd_tls_passthrough) {
		/* the emulator (or a library it called) closing its own */
		guard_fd_close(fd);
		return 0;
	}
	/* close(2) is a cancellation point: act on a pending cancel before the close rather than
	 * inside it, so that no thread leaves with its close still announced (the raw call below
	 * cannot be cancelled). */
	pthread_testcancel();
	guard_fd_close_begin(); /* no descriptor of the emulator's is on its way up meanwhile */
	r = guard_fd_is_ours(fd) ? -EBADF /* natively this number is not open */
				 : sys_call1(SYS_close, fd);
	guard_fd_close_end();
	return (int)ret_errno(r);
}

EXPORT int close(int fd)
{
	return close_as_native(fd);
}

static long close_range_as_native(unsigned lo, unsigned hi, unsigned flags)
{
	long r;

	if (uffd_tls_passthrough)
		return sys_call3(SYS_close_range, lo, hi, flags);
	guard_fd_close_begin();
	r = guard_close_range(lo, hi, flags);
	guard_fd_close_end();
	return r;
}

/* dup2(2) / dup3(2) close the number they replace: as close(2), never while one of the emulator's
 * descriptors is on its way up through the program's range. (A number of the emulator's zone is
 * at or above the program's soft limit: the kernel refuses it with EBADF, as natively.) */
static long dup3_as_native(long nr, int old, int new, int flags)
{
	long r;

	guard_fd_close_begin();
	if (guard_fd_is_ours(new) && !uffd_tls_passthrough)
		r = -EBADF; /* a number of ours below the zone (no zone): not the program's */
	else
		r = nr == SYS_dup2 ? sys_call2(SYS_dup2, old, new)
				   : sys_call3(SYS_dup3, old, new, flags);
	guard_fd_close_end();
	return r;
}

EXPORT int dup2(int old, int new)
{
	return (int)ret_errno(dup3_as_native(SYS_dup2, old, new, 0));
}

EXPORT int dup3(int old, int new, int flags)
{
	return (int)ret_errno(dup3_as_native(SYS_dup3, old, new, flags));
}

EXPORT int close_range(unsigned lo, unsigned hi, int flags)
{
	return (int)ret_errno(close_range_as_native(lo, hi, (unsigned)flags));
}

EXPORT void closefrom(int lo)
{
	if (lo >= 0)
		close_range_as_native((unsigned)lo, ~0U, 0);
}

/* The emulator's libraries make descriptors of their own (libunwind keeps a pipe to probe
 * addresses with): made on an emulator thread or during its set-up, they go to the zone too. */
EXPORT int pipe2(int fds[2], int flags)
{
	bool ours = uffd_tls_passthrough;
	long r;

	if (ours)
		guard_fd_make_begin();
	r = sys_call2(SYS_pipe2, fds, flags);
	if (r == 0 && ours) {
		int a = guard_fd_own(fds[0]), b = guard_fd_own(fds[1]);

		if (a < 0 || b < 0) {
			guard_fd_close(a);
			guard_fd_close(b);
			r = a < 0 ? a : b;
		} else {
			fds[0] = a;
			fds[1] = b;
			/* a library's pipe lives in its static state: a fork child inherits both */
			guard_fd_keep_across_fork(a);
			guard_fd_keep_across_fork(b);
		}
	}
	if (ours)
		guard_fd_make_end();
	return (int)ret_errno(r);
}

/* ---- limits ------------------------------------------------------------------------------------
 */

/* rlimit and rlimit64 are the same two 64-bit words on LP64. */
_Static_assert(sizeof(struct rlimit) == sizeof(struct rlimit64), "rlimit layout");

EXPORT int prlimit(pid_t pid, __rlimit_resource_t resource, const struct rlimit *new_lim,
		   struct rlimit *old_lim)
{
	return (int)ret_errno(guard_prlimit(pid, (int)resource, new_lim, old_lim));
}

EXPORT int prlimit64(pid_t pid, __rlimit_resource_t resource, const struct rlimit64 *new_lim,
		     struct rlimit64 *old_lim)
{
	return (int)ret_errno(
	    guard_prlimit(pid, (int)resource, (const void *)new_lim, (void *)old_lim));
}

EXPORT int getrlimit(__rlimit_resource_t resource, struct rlimit *rl)
{
	return (int)ret_errno(guard_prlimit(0, (int)resource, NULL, rl));
}

EXPORT int getrlimit64(__rlimit_resource_t resource, struct rlimit64 *rl)
{
	return (int)ret_errno(guard_prlimit(0, (int)resource, NULL, (void *)rl));
}

EXPORT int setrlimit(__rlimit_resource_t resource, const struct rlimit *rl)
{
	return (int)ret_errno(guard_prlimit(0, (int)resource, rl, NULL));
}

EXPORT int setrlimit64(__rlimit_resource_t resource, const struct rlimit64 *rl)
{
	return (int)ret_errno(guard_prlimit(0, (int)resource, (const void *)rl, NULL));
}

/* ---- credentials, sandboxes, namespaces -------------------------------------------------------
 */

static long do_prctl(long option, long a2, long a3, long a4, long a5)
{
	long a[5] = {option, a2, a3, a4, a5};
	long r;

	if (uffd_tls_passthrough)
		return sys_call6(SYS_prctl, option, a2, a3, a4, a5, 0);
	if (option == PR_SET_SECCOMP && a2 == SECCOMP_MODE_FILTER)
		shim_step_aside("the program installs a seccomp filter");
	if ((option == PR_SET_THP_DISABLE || option == PR_GET_THP_DISABLE) &&
	    shim_prctl_thp((int)option, a2, a3, a4, a5, &r))
		return r;
	r = sys_call6(SYS_prctl, option, a2, a3, a4, a5, 0);
	if (r < 0)
		return r;
	if (guard_prctl_is_cred((int)option) && shim_live())
		shim_cred_replicate(GUARD_CRED_PRCTL, a, NULL, NULL);
	return r;
}

EXPORT int prctl(int option, ...)
{
	unsigned long a2, a3, a4, a5;
	va_list ap;

	va_start(ap, option);
	a2 = va_arg(ap, unsigned long);
	a3 = va_arg(ap, unsigned long);
	a4 = va_arg(ap, unsigned long);
	a5 = va_arg(ap, unsigned long);
	va_end(ap);
	return (int)ret_errno(do_prctl(option, (long)a2, (long)a3, (long)a4, (long)a5));
}

static long do_capset(void *hdr, const void *data)
{
	const struct __user_cap_header_struct *h = hdr;
	long r = sys_call2(SYS_capset, hdr, data);

	/* only a change of the calling thread's own sets is per thread (pid 0 or its tid) */
	if (r == 0 && !uffd_tls_passthrough && h && data &&
	    (h->pid == 0 || h->pid == sys_gettid()) && shim_live())
		shim_cred_replicate(GUARD_CRED_CAPSET, NULL, hdr, data);
	return r;
}

EXPORT int capset(void *hdr, const void *data)
{
	return (int)ret_errno(do_capset(hdr, data));
}

static long do_seccomp(long op, long flags, long args)
{
	if (!uffd_tls_passthrough && op == SECCOMP_SET_MODE_FILTER)
		shim_step_aside("the program installs a seccomp filter");
	return sys_call3(SYS_seccomp, op, flags, args);
}

/* The kernel accepts these only from a single-threaded process (kernel/fork.c: ksys_unshare,
 * check_unshare_flags). */
#define UNSHARE_SINGLE (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM)
/* setns into these needs a single thread too (kernel/user_namespace.c: userns_install,
 * fs/namespace.c: mntns_install, kernel/time/namespace.c: timens_install). */
#define SETNS_SINGLE (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWTIME)

static long do_unshare(long flags)
{
	if (!uffd_tls_passthrough && (flags & UNSHARE_SINGLE))
		shim_step_aside("the program unshares into a new user namespace (single-threaded "
				"processes only)");
	return sys_call1(SYS_unshare, flags);
}

EXPORT int unshare(int flags)
{
	return (int)ret_errno(do_unshare(flags));
}

static long do_setns(long fd, long nstype)
{
	long type = nstype;

	if (!uffd_tls_passthrough) {
		if (!type) /* a namespace descriptor: ask it what it is */
			type = sys_call3(SYS_ioctl, fd, NS_GET_NSTYPE, 0);
		if (type > 0 && (type & SETNS_SINGLE))
			shim_step_aside("the program joins a user, mount or time namespace "
					"(single-threaded processes only)");
	}
	return sys_call2(SYS_setns, fd, nstype);
}

EXPORT int setns(int fd, int nstype)
{
	return (int)ret_errno(do_setns(fd, nstype));
}

/* ---- memory locks -----------------------------------------------------------------------------
 */

/* The kernel does the work; the emulator learns that the program locks memory (its own pages
 * are then emptied with MADV_DONTNEED_LOCKED, and after mlockall(MCL_FUTURE) a new managed
 * mapping is populated through it: core/live/mapops.c). */
static long after_lock(long r, bool all, int flags)
{
	if (r == 0 && all)
		guard_vm_lock_all(flags != -1);
	if (r == 0 && !uffd_tls_passthrough)
		shim_mlocked(all, flags);
	return r;
}

EXPORT int mlock(const void *addr, size_t len)
{
	return (int)ret_errno(after_lock(sys_call2(SYS_mlock, addr, len), false, 0));
}

EXPORT int mlock2(const void *addr, size_t len, unsigned int flags)
{
	return (int)ret_errno(after_lock(sys_call3(SYS_mlock2, addr, len, flags), false, 0));
}

EXPORT int mlockall(int flags)
{
	return (int)ret_errno(after_lock(sys_call1(SYS_mlockall, flags), true, flags));
}

EXPORT int munlockall(void)
{
	return (int)ret_errno(after_lock(sys_call0(SYS_munlockall), true, -1));
}

/* ---- the program's own userfaultfd --------------------------------------------------------------
 */

static long do_ioctl(int fd, unsigned long req, void *arg)
{
	if (req == UFFDIO_REGISTER && arg && !uffd_tls_passthrough && !guard_fd_is_ours(fd))
		shim_uffd_register(arg);
	return sys_call3(SYS_ioctl, fd, req, arg);
}

EXPORT int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	return (int)ret_errno(do_ioctl(fd, req, arg));
}

/* ---- libraries --------------------------------------------------------------------------------
 */

/* dlopen(RTLD_DEEPBIND) has the library look up its symbols in itself and its own dependencies
 * before the global scope (elf/dl-open.c, elf/dl-lookup.c), so it binds malloc and free to the C
 * library's even when an allocator was preloaded: PHP loads every extension so, and an extension
 * then freed a preloaded jemalloc's memory with glibc's free (a segfault). When the program's
 * malloc is a preloaded allocator's, a DEEPBIND load is made without the flag, as heaptrack does
 * for the same reason (PHP itself stopped using the flag when dlmopen exists: php-src pull
 * request 18612). The load goes through dlmopen(LM_ID_BASE), which is dlopen for a program in the
 * base namespace (the only one that sees this library); the jump keeps the program's return
 * address, from which glibc finds the caller whose RUNPATH the search uses. */
static bool deepbind_strip; /* set once, at start */

extern void *__libc_malloc(size_t);

bool shim_malloc_is_glibc(void)
{
	return (void *)malloc == (void *)__libc_malloc;
}

void shim_deepbind_init(void)
{
	const char *preload = getenv("LD_PRELOAD");
	Dl_info in;

	if (shim_malloc_is_glibc() || !preload || !dladdr((void *)malloc, &in) || !in.dli_fname)
		return;
	/* only an allocator the program was given through LD_PRELOAD (thpemu run's jemalloc, or
	 * one preloaded by hand), not one linked into the program (natively the same) */
	deepbind_strip = strstr(preload, in.dli_fname) != NULL;
}

int shim_deepbind(const char *file, int mode); /* called from the assembly below */

__attribute__((used)) int shim_deepbind(const char *file, int mode)
{
	if (!deepbind_strip)
		return mode;
	shim_deepbind_loaded(file);
	return mode & ~RTLD_DEEPBIND;
}

#if defined(__x86_64__)
/* dlopen(file, mode): if RTLD_DEEPBIND, mode = shim_deepbind(file, mode); then jump to
 * dlmopen(LM_ID_BASE, file, mode) with the caller's return address still on the stack. */
__asm__(".text\n"
	".p2align 4\n"
	".globl dlopen\n"
	".type dlopen, @function\n"
	"dlopen:\n"
	".cfi_startproc\n"
	"	testl $" STR(RTLD_DEEPBIND) ", %esi\n"
					    "	jz 1f\n"
					    "	pushq %rdi\n"
					    ".cfi_adjust_cfa_offset 8\n"
					    "	pushq %rsi\n"
					    ".cfi_adjust_cfa_offset 8\n"
					    "	subq $8, %rsp\n"
					    ".cfi_adjust_cfa_offset 8\n"
					    "	call shim_deepbind\n"
					    "	addq $8, %rsp\n"
					    ".cfi_adjust_cfa_offset -8\n"
					    "	popq %rsi\n"
					    ".cfi_adjust_cfa_offset -8\n"
					    "	popq %rdi\n"
					    ".cfi_adjust_cfa_offset -8\n"
					    "	movl %eax, %esi\n"
					    "1:	movl %esi, %edx\n"
					    "	movq %rdi, %rsi\n"
					    "	xorl %edi, %edi\n" /* LM_ID_BASE */
					    "	jmp dlmopen@PLT\n"
					    ".cfi_endproc\n"
					    ".size dlopen, .-dlopen\n");
#else
EXPORT void *dlopen(const char *file, int mode)
{
	if (mode & RTLD_DEEPBIND)
		mode = shim_deepbind(file, mode);
	return dlmopen(LM_ID_BASE, file, mode); /* the caller's RUNPATH is not searched */
}
#endif

/* ---- signals --------------------------------------------------------------------------------- */

extern int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);

/* The signal the emulator asks a stalled thread for its stack with (obs/appstack.c) is the
 * program's as far as it can tell: it sees and sets the disposition our handler chains to. */
EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!uffd_tls_passthrough && sig > 0 && sig == obs_appstack_signo()) {
		obs_appstack_program_sigaction(act, old);
		return 0;
	}
	return __sigaction(sig, act, old);
}

/* ---- syscall(2) ---------------------------------------------------------------------------------
 */

/* Libraries make some of the calls above through syscall(2) (libseccomp's seccomp, close_range
 * before glibc had a wrapper): those take the same path. Anything else is the raw call. */
EXPORT long syscall(long nr, ...)
{
	long a[6];
	va_list ap;

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	switch (nr) {
	case SYS_close:
		return close_as_native((int)a[0]);
	case SYS_close_range:
		return ret_errno(
		    close_range_as_native((unsigned)a[0], (unsigned)a[1], (unsigned)a[2]));
	case SYS_dup2:
		return ret_errno(dup3_as_native(SYS_dup2, (int)a[0], (int)a[1], 0));
	case SYS_dup3:
		return ret_errno(dup3_as_native(SYS_dup3, (int)a[0], (int)a[1], (int)a[2]));
	case SYS_prlimit64:
		return ret_errno(
		    guard_prlimit((int)a[0], (int)a[1], (const void *)a[2], (void *)a[3]));
	case SYS_getrlimit:
		return ret_errno(guard_prlimit(0, (int)a[0], NULL, (void *)a[1]));
	case SYS_setrlimit:
		return ret_errno(guard_prlimit(0, (int)a[0], (const void *)a[1], NULL));
	case SYS_prctl:
		return ret_errno(do_prctl(a[0], a[1], a[2], a[3], a[4]));
	case SYS_capset:
		return ret_errno(do_capset((void *)a[0], (const void *)a[1]));
	case SYS_seccomp:
		return ret_errno(do_seccomp(a[0], a[1], a[2]));
	case SYS_unshare:
		return ret_errno(do_unshare(a[0]));
	case SYS_setns:
		return ret_errno(do_setns(a[0], a[1]));
	case SYS_ioctl:
		return ret_errno(do_ioctl((int)a[0], (unsigned long)a[1], (void *)a[2]));
	case SYS_mlock:
		return ret_errno(after_lock(sys_call2(SYS_mlock, a[0], a[1]), false, 0));
	case SYS_mlock2:
		return ret_errno(after_lock(sys_call3(SYS_mlock2, a[0], a[1], a[2]), false, 0));
	case SYS_mlockall:
		return ret_errno(after_lock(sys_call1(SYS_mlockall, a[0]), true, (int)a[0]));
	case SYS_munlockall:
		return ret_errno(after_lock(sys_call0(SYS_munlockall), true, -1));
	default:
		return ret_errno(sys_call6(nr, a[0], a[1], a[2], a[3], a[4], a[5]));
	}
}

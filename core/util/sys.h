/* Raw system calls and the userfaultfd / pagemap uapi that Debian 12's headers lack: the one
 * system-call layer of every module that must not reach an interposer.
 *
 * The preload library interposes mmap, munmap, mremap, madvise, close, close_range, closefrom,
 * pipe2, the rlimit calls, prctl, capset, unshare, setns, syscall and sigaction (the `global:`
 * list of core/preload/libthpemu.map). Its own code must never call one of those names: the call
 * would go through the PLT to its own interposer (or to another preloaded library's), and on
 * the fault path or in a signal handler it would also disturb the program's errno. So
 * everything here issues the system call directly and returns the kernel's convention: a
 * non-negative result or -errno. On x86_64 this is an inline `syscall` instruction
 * (async-signal-safe, no libc state touched); elsewhere it falls back to syscall(2) and
 * saves/restores errno. tests/integration/live_selfcalls.sh checks the built library for
 * relocations against the interposed names.
 *
 * The uapi values mirror include/uapi/linux/userfaultfd.h and include/uapi/linux/fs.h of
 * Linux 6.8+ (UFFDIO_MOVE) and 6.7+ (PAGEMAP_SCAN).
 */
#ifndef THPEMU_UTIL_SYS_H
#define THPEMU_UTIL_SYS_H

#include <errno.h>
#include <linux/userfaultfd.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- uapi constants missing from linux-libc-dev 6.1 ---------------------------------------- */

#ifndef UFFD_FEATURE_MOVE
#define UFFD_FEATURE_MOVE (1 << 16)
#endif
#ifndef _UFFDIO_MOVE
#define _UFFDIO_MOVE 0x05
#endif
#ifndef UFFDIO_MOVE_MODE_DONTWAKE
#define UFFDIO_MOVE_MODE_DONTWAKE	 ((__u64)1 << 0)
#define UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES ((__u64)1 << 1)
struct uffdio_move {
	__u64 dst;
	__u64 src;
	__u64 len;
	__u64 mode;
	__s64 move; /* bytes moved, or -errno if nothing moved (written by the kernel) */
};
#define UFFDIO_MOVE _IOWR(UFFDIO, _UFFDIO_MOVE, struct uffdio_move)
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

#ifndef PAGEMAP_SCAN
#define PAGE_IS_FILE	(1 << 2)
#define PAGE_IS_PRESENT (1 << 3)
#define PAGE_IS_SWAPPED (1 << 4)
#define PAGE_IS_PFNZERO (1 << 5)
#define PAGE_IS_HUGE	(1 << 6)
struct page_region {
	__u64 start;
	__u64 end;
	__u64 categories;
};
struct pm_scan_arg {
	__u64 size;
	__u64 flags;
	__u64 start;
	__u64 end;
	__u64 walk_end;
	__u64 vec;
	__u64 vec_len;
	__u64 max_pages;
	__u64 category_inverted;
	__u64 category_mask;
	__u64 category_anyof_mask;
	__u64 return_mask;
};
#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#endif

/* ---- raw system calls ------------------------------------------------------------------------ */

#if defined(__x86_64__)
static inline long sys_call6(long n, long a1, long a2, long a3, long a4, long a5, long a6)
{
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	register long r9 __asm__("r9") = a6;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#else
static inline long sys_call6(long n, long a1, long a2, long a3, long a4, long a5, long a6)
{
	int saved = errno;
	long ret = syscall(n, a1, a2, a3, a4, a5, a6);

	if (ret == -1)
		ret = -errno;
	errno = saved;
	return ret;
}
#endif

#define SYS_ARG(x)		 ((long)(x))
#define sys_call0(n)		 sys_call6(n, 0, 0, 0, 0, 0, 0)
#define sys_call1(n, a)		 sys_call6(n, SYS_ARG(a), 0, 0, 0, 0, 0)
#define sys_call2(n, a, b)	 sys_call6(n, SYS_ARG(a), SYS_ARG(b), 0, 0, 0, 0)
#define sys_call3(n, a, b, c)	 sys_call6(n, SYS_ARG(a), SYS_ARG(b), SYS_ARG(c), 0, 0, 0)
#define sys_call4(n, a, b, c, d) sys_call6(n, SYS_ARG(a), SYS_ARG(b), SYS_ARG(c), SYS_ARG(d), 0, 0)

/* True for a raw result that carries an error (the kernel's IS_ERR_VALUE). */
static inline int sys_is_err(long r)
{
	return r < 0 && r >= -4095;
}

static inline long sys_mmap(void *addr, size_t len, int prot, int flags, int fd, long off)
{
	return sys_call6(SYS_mmap, SYS_ARG(addr), SYS_ARG(len), prot, flags, fd, off);
}

static inline int sys_munmap(void *addr, size_t len)
{
	return (int)sys_call2(SYS_munmap, addr, len);
}

static inline long sys_mremap(void *old, size_t oldlen, size_t newlen, int flags, void *new_addr)
{
	return sys_call6(SYS_mremap, SYS_ARG(old), SYS_ARG(oldlen), SYS_ARG(newlen), flags,
			 SYS_ARG(new_addr), 0);
}

static inline int sys_mprotect(void *addr, size_t len, int prot)
{
	return (int)sys_call3(SYS_mprotect, addr, len, prot);
}

static inline int sys_madvise(void *addr, size_t len, int advice)
{
	return (int)sys_call3(SYS_madvise, addr, len, advice);
}

/* Empty pages of the emulator's own (a scratch page a migration left its old copy in, the page
 * that wakes a handler): MADV_DONTNEED_LOCKED (Linux 5.18, mm/madvise.c:
 * madvise_dontneed_free_valid_vma) drops them even after the program locked every mapping of the
 * process with mlockall(MCL_CURRENT), where MADV_DONTNEED fails with EINVAL. */
static inline int sys_zap(void *addr, size_t len)
{
	return sys_madvise(addr, len, MADV_DONTNEED_LOCKED);
}

static inline int sys_ioctl(int fd, unsigned long req, void *arg)
{
	return (int)sys_call3(SYS_ioctl, fd, req, arg);
}

static inline long sys_read(int fd, void *buf, size_t len)
{
	return sys_call3(SYS_read, fd, buf, len);
}

static inline long sys_write(int fd, const void *buf, size_t len)
{
	return sys_call3(SYS_write, fd, buf, len);
}

static inline int sys_close(int fd)
{
	return (int)sys_call1(SYS_close, fd);
}

static inline int sys_gettid(void)
{
	return (int)sys_call0(SYS_gettid);
}

static inline int sys_getpid(void)
{
	return (int)sys_call0(SYS_getpid);
}

/* Futexes private to this process (cheaper: no lookup of the backing object). */
static inline int sys_futex_wait(uint32_t *uaddr, uint32_t val, const void *timeout)
{
	return (int)sys_call4(SYS_futex, uaddr, 128 /* FUTEX_WAIT_PRIVATE */, val, timeout);
}

static inline int sys_futex_wake(uint32_t *uaddr, int nr)
{
	return (int)sys_call3(SYS_futex, uaddr, 129 /* FUTEX_WAKE_PRIVATE */, nr);
}

static inline int sys_getppid(void)
{
	return (int)sys_call0(SYS_getppid);
}

static inline int sys_openat(int dirfd, const char *path, int flags, unsigned mode)
{
	return (int)sys_call4(SYS_openat, dirfd, path, flags, mode);
}

/* struct stat is the kernel's on x86_64 and on the asm-generic architectures. */
static inline int sys_fstat(int fd, struct stat *st)
{
	return (int)sys_call2(SYS_fstat, fd, st);
}

static inline int sys_ftruncate(int fd, long len)
{
	return (int)sys_call2(SYS_ftruncate, fd, len);
}

static inline int sys_truncate(const char *path, long len)
{
	return (int)sys_call2(SYS_truncate, (long)path, len);
}

static inline int sys_memfd_create(const char *name, unsigned flags)
{
	return (int)sys_call2(SYS_memfd_create, name, flags);
}

/* A descriptor of process pid (Linux 5.3+); readable (POLLIN) once it has exited. */
static inline int sys_pidfd_open(int pid, unsigned flags)
{
	return (int)sys_call2(SYS_pidfd_open, pid, flags);
}

/* ppoll(2) without a signal mask; timeout is a struct timespec * (NULL: forever). */
static inline int sys_ppoll(void *fds, unsigned long nfds, const void *timeout)
{
	return (int)sys_call4(SYS_ppoll, fds, nfds, timeout, NULL);
}

/* The same on a word other processes map too: without FUTEX_PRIVATE_FLAG the kernel keys the
 * futex by the backing object and offset, not by (mm, address), so waker and sleeper may be in
 * different processes (at any address). */
static inline int sys_futex_wait_shared(uint32_t *uaddr, uint32_t val, const void *timeout)
{
	return (int)sys_call4(SYS_futex, uaddr, 0 /* FUTEX_WAIT */, val, timeout);
}

static inline int sys_futex_wake_shared(uint32_t *uaddr, int nr)
{
	return (int)sys_call3(SYS_futex, uaddr, 1 /* FUTEX_WAKE */, nr);
}

/* Send sig to one thread of process tgid (tgkill(2)). */
static inline int sys_tgkill(int tgid, int tid, int sig)
{
	return (int)sys_call3(SYS_tgkill, tgid, tid, sig);
}

/* Queue sig with the caller's siginfo to one thread (rt_tgsigqueueinfo(2); a siginfo_t *). */
static inline int sys_rt_tgsigqueueinfo(int tgid, int tid, int sig, void *info)
{
	return (int)sys_call4(SYS_rt_tgsigqueueinfo, tgid, tid, sig, info);
}

#endif

/* Report-time symbolisation of captured stacks, and x86_64 syscall names.
 *
 * Prints frames the way a kernel developer reads them in a stall report (the kernel's %pS:
 * "function+0xOFF"), plus the object the code lives in. Names come from libunwind's local
 * address-space get_proc_name accessor, which reads each object's .symtab, so static and hidden
 * functions (mm's compact_zone, the program's usemem_touch_extent) resolve; dladdr gives the
 * object and is the fallback for the name. Not for the fault path: it opens files and allocates.
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "obs/unwind.h"

#include <dlfcn.h>
#include <link.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char *base_name(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	if (!path || !*path)
		return "?";
	return slash ? slash + 1 : path;
}

/* In a stripped object (Debian's libc) the symbol found may be a distant exported one: start_thread
 * would print as "pthread_condattr_setpshared+0x515". A name is only trusted if addr lies inside
 * that symbol: when the symbol's start is a dynamic symbol with a size (dladdr1 at the start), the
 * offset must be below that size. Names libunwind found in .symtab only are kept. */
static bool beyond_symbol(uintptr_t addr, uintptr_t off)
{
	const ElfW(Sym) *sym = NULL;
	Dl_info di;

	if (!dladdr1((void *)(addr - off), &di, (void **)&sym, RTLD_DL_SYMENT) || !sym ||
	    (uintptr_t)di.dli_saddr != addr - off)
		return false;
	return sym->st_size && off >= sym->st_size;
}

/* Function containing addr and addr's offset into it: 0; -1 if unknown (then *off is addr's
 * offset in its object, or addr itself when no object is known). */
static int lookup(uintptr_t addr, char *name, size_t len, uintptr_t *off, const char **obj)
{
	unw_accessors_t *acc = unw_get_accessors(unw_local_addr_space);
	unw_word_t uoff = 0;
	Dl_info di;
	bool have_dl = dladdr((void *)addr, &di) != 0;

	*obj = have_dl ? base_name(di.dli_fname) : "?";
	if (acc && acc->get_proc_name &&
	    acc->get_proc_name(unw_local_addr_space, addr, name, len, &uoff, NULL) == 0 && *name &&
	    !beyond_symbol(addr, (uintptr_t)uoff)) {
		*off = (uintptr_t)uoff;
		return 0;
	}
	if (have_dl && di.dli_sname && di.dli_saddr &&
	    !beyond_symbol(addr, addr - (uintptr_t)di.dli_saddr)) {
		snprintf(name, len, "%s", di.dli_sname);
		*off = addr - (uintptr_t)di.dli_saddr;
		return 0;
	}
	*off = have_dl ? addr - (uintptr_t)di.dli_fbase : addr;
	return -1;
}

const char *obs_symbolise(uintptr_t ip, bool exact, char *buf, size_t len)
{
	uintptr_t look = exact || !ip ? ip : ip - 1, off;
	char name[256];
	const char *obj;

	if (lookup(look, name, sizeof(name), &off, &obj) == 0)
		snprintf(buf, len, "%s+0x%" PRIxPTR " (%s)", name, off + (ip - look), obj);
	else if (strcmp(obj, "?") != 0)
		snprintf(buf, len, "?? (%s+0x%" PRIxPTR ")", obj, off + (ip - look));
	else
		snprintf(buf, len, "0x%" PRIxPTR " (?)", ip);
	return buf;
}

const char *obs_symbolise_function(uintptr_t ip, bool exact, char *buf, size_t len)
{
	uintptr_t look = exact || !ip ? ip : ip - 1, off;
	const char *obj;

	if (lookup(look, buf, len, &off, &obj) != 0)
		snprintf(buf, len, "0x%" PRIxPTR, ip);
	return buf;
}

/* The x86_64 syscalls a program is likely to be inside when it faults on its own memory
 * (copies to or from user buffers) plus the common blocking ones. */
static const struct {
	int nr;
	const char *name;
} syscall_names[] = {
    {0, "read"},
    {1, "write"},
    {2, "open"},
    {3, "close"},
    {4, "stat"},
    {5, "fstat"},
    {6, "lstat"},
    {7, "poll"},
    {8, "lseek"},
    {9, "mmap"},
    {10, "mprotect"},
    {11, "munmap"},
    {12, "brk"},
    {13, "rt_sigaction"},
    {14, "rt_sigprocmask"},
    {16, "ioctl"},
    {17, "pread64"},
    {18, "pwrite64"},
    {19, "readv"},
    {20, "writev"},
    {21, "access"},
    {22, "pipe"},
    {23, "select"},
    {24, "sched_yield"},
    {25, "mremap"},
    {26, "msync"},
    {27, "mincore"},
    {28, "madvise"},
    {32, "dup"},
    {33, "dup2"},
    {35, "nanosleep"},
    {39, "getpid"},
    {40, "sendfile"},
    {41, "socket"},
    {42, "connect"},
    {43, "accept"},
    {44, "sendto"},
    {45, "recvfrom"},
    {46, "sendmsg"},
    {47, "recvmsg"},
    {56, "clone"},
    {57, "fork"},
    {58, "vfork"},
    {59, "execve"},
    {60, "exit"},
    {61, "wait4"},
    {62, "kill"},
    {63, "uname"},
    {72, "fcntl"},
    {74, "fsync"},
    {75, "fdatasync"},
    {77, "ftruncate"},
    {78, "getdents"},
    {79, "getcwd"},
    {82, "rename"},
    {87, "unlink"},
    {89, "readlink"},
    {96, "gettimeofday"},
    {97, "getrlimit"},
    {102, "getuid"},
    {158, "arch_prctl"},
    {186, "gettid"},
    {202, "futex"},
    {217, "getdents64"},
    {228, "clock_gettime"},
    {230, "clock_nanosleep"},
    {231, "exit_group"},
    {232, "epoll_wait"},
    {257, "openat"},
    {262, "newfstatat"},
    {270, "pselect6"},
    {271, "ppoll"},
    {275, "splice"},
    {278, "vmsplice"},
    {281, "epoll_pwait"},
    {285, "fallocate"},
    {288, "accept4"},
    {295, "preadv"},
    {296, "pwritev"},
    {299, "recvmmsg"},
    {307, "sendmmsg"},
    {310, "process_vm_readv"},
    {311, "process_vm_writev"},
    {318, "getrandom"},
    {319, "memfd_create"},
    {326, "copy_file_range"},
    {327, "preadv2"},
    {328, "pwritev2"},
    {332, "statx"},
    {426, "io_uring_enter"},
    {441, "epoll_pwait2"},
};

const char *obs_syscall_name(long nr)
{
	for (size_t i = 0; i < sizeof(syscall_names) / sizeof(syscall_names[0]); i++)
		if (syscall_names[i].nr == nr)
			return syscall_names[i].name;
	return NULL;
}

/* Report-time symbolisation of captured stacks, and x86_64 syscall names.
 *
 * Prints frames the way a kernel developer reads them in a stall report (the kernel's %pS:
 * "function+0xOFF"), then where the code lives, "(object+0xADDR)" with the address as the
 * object's ELF file numbers it (what addr2line -e takes), then the source line when debug
 * information has one. Names come from elfutils' libdwfl, one session per process that keeps
 * each module's symbol tables and debug information once opened: the module's .symtab (static
 * and hidden functions: mm's compact_zone, the program's usemem_touch_extent), the .dynsym of a
 * stripped library (Debian's libc), and the build-id debug file a Debian -dbg / -dbgsym package
 * installs under /usr/lib/debug (libc6-dbg names libc's static functions: start_thread,
 * _int_malloc). An address no symbol covers prints "?? (object+0xADDR)", never the nearest
 * exported name below it.
 *
 * libdw is dlopen'ed at the first lookup, not linked: symbolisation runs inside the managed
 * program, at its exit, and only when a stall was captured; linked, every managed process would
 * load libdw, libelf, libz and libbz2 at start for nothing. Debug files are found locally by
 * build ID only (dwfl_build_id_find_debuginfo), not with dwfl_standard_find_debuginfo: with
 * DEBUGINFOD_URLS set (Debian's libdebuginfod-common sets it in login shells) that one downloads
 * from the network, from inside the program.
 *
 * Not for the fault path: it opens files and allocates.
 */
#include "obs/unwind.h"

#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define OBS_DEBUGINFO_PATH "/usr/lib/debug"

/* The libdwfl calls made, resolved from libdw.so.1 at the first lookup (the two libelf ones
 * through libdw's handle, which searches its dependencies). */
#define DW_FUNCS(X)                                                                                \
	X(dwfl_begin)                                                                              \
	X(dwfl_end)                                                                                \
	X(dwfl_report_begin)                                                                       \
	X(dwfl_report_end)                                                                         \
	X(dwfl_linux_proc_report)                                                                  \
	X(dwfl_linux_proc_find_elf)                                                                \
	X(dwfl_build_id_find_debuginfo)                                                            \
	X(dwfl_addrmodule)                                                                         \
	X(dwfl_module_info)                                                                        \
	X(dwfl_module_getelf)                                                                      \
	X(dwfl_module_addrinfo)                                                                    \
	X(dwfl_module_getsrc)                                                                      \
	X(dwfl_lineinfo)                                                                           \
	X(elf_getphdrnum)                                                                          \
	X(gelf_getphdr)

static struct {
	pthread_mutex_t lock;
	int loaded; /* 0: not tried, 1: libdw resolved, -1: unavailable */
	Dwfl *dwfl; /* this process's modules, NULL until the first lookup */
	Dwfl_Callbacks cb;
	char path[256]; /* debuginfo_path */
	char *pathp;
#define X(f) __typeof__(f) *f;
	DW_FUNCS(X)
#undef X
} dw = {.lock = PTHREAD_MUTEX_INITIALIZER, .path = OBS_DEBUGINFO_PATH};

static bool dw_load(void)
{
	void *h;

	if (dw.loaded)
		return dw.loaded > 0;
	dw.loaded = -1;
	h = dlmopen(LM_ID_BASE, "libdw.so.1", RTLD_NOW | RTLD_LOCAL); /* not our own dlopen */
	if (!h)
		return false;
#define X(f)                                                                                       \
	if (!(dw.f = (__typeof__(f) *)dlsym(h, #f)))                                               \
		goto missing;
	DW_FUNCS(X)
#undef X
	dw.pathp = dw.path;
	dw.cb = (Dwfl_Callbacks){.find_elf = dw.dwfl_linux_proc_find_elf,
				 .find_debuginfo = dw.dwfl_build_id_find_debuginfo,
				 .debuginfo_path = &dw.pathp};
	dw.loaded = 1;
	return true;
missing: /* an older libdw: frames print as "?? (object+0xADDR)" */
	dlclose(h);
	return false;
}

/* (Re)read this process's mappings into the session; modules already known keep what was read
 * from their files. */
static int dw_report(void)
{
	int err;

	dw.dwfl_report_begin(dw.dwfl);
	err = dw.dwfl_linux_proc_report(dw.dwfl, getpid());
	return dw.dwfl_report_end(dw.dwfl, NULL, NULL) != 0 || err != 0 ? -1 : 0;
}

/* The module holding addr; a miss rereads the mappings once (a library loaded since). */
static Dwfl_Module *dw_module(uintptr_t addr)
{
	Dwfl_Module *m;

	if (!dw_load())
		return NULL;
	if (!dw.dwfl) {
		dw.dwfl = dw.dwfl_begin(&dw.cb);
		if (dw.dwfl && dw_report() < 0) {
			dw.dwfl_end(dw.dwfl);
			dw.dwfl = NULL;
		}
		if (!dw.dwfl)
			return NULL;
		return dw.dwfl_addrmodule(dw.dwfl, addr);
	}
	m = dw.dwfl_addrmodule(dw.dwfl, addr);
	if (!m && dw_report() == 0)
		m = dw.dwfl_addrmodule(dw.dwfl, addr);
	return m;
}

void obs_symbolise_end(void)
{
	pthread_mutex_lock(&dw.lock);
	if (dw.dwfl)
		dw.dwfl_end(dw.dwfl);
	dw.dwfl = NULL;
	pthread_mutex_unlock(&dw.lock);
}

void obs_symbolise_debuginfo_path(const char *path)
{
	obs_symbolise_end();
	pthread_mutex_lock(&dw.lock);
	snprintf(dw.path, sizeof(dw.path), "%s", path ? path : OBS_DEBUGINFO_PATH);
	pthread_mutex_unlock(&dw.lock);
}

static const char *base_name(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	if (!path || !*path)
		return "?";
	return slash ? slash + 1 : path;
}

/* The last two components of a source path ("mm/compact.c", "malloc/malloc.c"): enough to
 * tell files apart, without the build machine's directories. */
static const char *src_tail(const char *path)
{
	const char *p = path + strlen(path);
	int slashes = 0;

	while (p > path && !(p[-1] == '/' && ++slashes == 2))
		p--;
	return p;
}

struct sym {
	char name[256]; /* "" when no symbol covers the address */
	uintptr_t off;	/* into the function */
	const char *obj;
	uintptr_t obj_addr; /* the address as the object's file numbers it */
	char src[160];	    /* "dir/file.c:123" or "" */
};

/* Whether addr, biased into elf's numbering, lies in one of its PT_LOAD segments.
 * dwfl_addrmodule can name the module just below an address that is in none: a page mapped right
 * past an object's end came back as libasan's (its 5 MiB .bss, in a CI run) or ld.so's (2 of 20
 * ASan runs of unit/obs_symbolise). Such a page is not the object's. */
static bool in_segment(Elf *elf, GElf_Addr bias, uintptr_t addr)
{
	GElf_Addr a = addr - bias;
	GElf_Phdr ph;
	size_t n;

	if (dw.elf_getphdrnum(elf, &n) != 0)
		return true; /* no program headers to tell: trust the span */
	for (size_t i = 0; i < n; i++)
		if (dw.gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && a >= ph.p_vaddr &&
		    a - ph.p_vaddr < ph.p_memsz)
			return true;
	return false;
}

/* Everything known about addr; false when it lies in no known object. Called with dw.lock. */
static bool lookup(uintptr_t addr, struct sym *s)
{
	Dwfl_Module *m = dw_module(addr);
	Dwarf_Addr start = 0;
	GElf_Addr bias = 0;
	GElf_Off off = 0;
	GElf_Sym es;
	Elf *elf;
	const char *name, *file;
	Dwfl_Line *line;
	int lineno = 0;
	Dl_info di;

	s->name[0] = s->src[0] = '\0';
	if (!m) { /* no libdw, or not in /proc/self/maps: the loader may still know it */
		if (!dladdr((void *)addr, &di) || !di.dli_fname)
			return false;
		s->obj = base_name(di.dli_fname);
		s->obj_addr = addr - (uintptr_t)di.dli_fbase;
		return true;
	}
	elf = dw.dwfl_module_getelf(m, &bias);
	if (elf && !in_segment(elf, bias, addr))
		return false;
	/* the name the loader knows the object by (libjansson.so.4, not the file it links to) */
	name = dw.dwfl_module_info(m, NULL, &start, NULL, NULL, NULL, NULL, NULL);
	s->obj = base_name(dladdr((void *)addr, &di) && di.dli_fname && *di.dli_fname ? di.dli_fname
										      : name);
	s->obj_addr = addr - (elf ? bias : start);
	name = dw.dwfl_module_addrinfo(m, addr, &off, &es, NULL, NULL, NULL);
	if (name && *name) {
		snprintf(s->name, sizeof(s->name), "%s", name);
		s->off = off;
	}
	line = dw.dwfl_module_getsrc(m, addr);
	file = line ? dw.dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
	if (file && lineno > 0)
		snprintf(s->src, sizeof(s->src), " %s:%d", src_tail(file), lineno);
	return true;
}

const char *obs_symbolise(uintptr_t ip, bool exact, char *buf, size_t len)
{
	uintptr_t look = exact || !ip ? ip : ip - 1, d = ip - look;
	struct sym s;

	pthread_mutex_lock(&dw.lock);
	if (!lookup(look, &s))
		snprintf(buf, len, "0x%" PRIxPTR " (?)", ip);
	else if (s.name[0])
		snprintf(buf, len, "%s+0x%" PRIxPTR " (%s+0x%" PRIxPTR ")%s", s.name, s.off + d,
			 s.obj, s.obj_addr + d, s.src);
	else
		snprintf(buf, len, "?? (%s+0x%" PRIxPTR ")%s", s.obj, s.obj_addr + d, s.src);
	pthread_mutex_unlock(&dw.lock);
	return buf;
}

const char *obs_symbolise_function(uintptr_t ip, bool exact, char *buf, size_t len)
{
	uintptr_t look = exact || !ip ? ip : ip - 1;
	struct sym s;

	pthread_mutex_lock(&dw.lock);
	if (lookup(look, &s) && s.name[0])
		snprintf(buf, len, "%s", s.name);
	else
		snprintf(buf, len, "0x%" PRIxPTR, ip);
	pthread_mutex_unlock(&dw.lock);
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

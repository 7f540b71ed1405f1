/* Symbolisation (core/obs/symbolise.c, elfutils' libdwfl): frames in Debian's stripped libc named
 * from its .dynsym, a libc function that is not in .dynsym named from the build-id debug file
 * libc6-dbg installs (and "??" without it), this program's own functions with their source line,
 * a library loaded after the first lookup, and addresses in no object (a page far from all, and
 * one placed right past a library's .bss, inside the span libdwfl reads from /proc/self/maps).
 *
 * The expected addresses come from the other direction: a libdwfl session of the test's own
 * walks libc's symbol table by name (the code under test goes from an address to a name), and
 * dladdr gives libc's load address. */
#include "harness.h"
#include "obs/unwind.h"

#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <inttypes.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

/* libc's own definition of sym: looked up in libc's scope, not the program's, where a
 * sanitizer's interceptor comes first. */
static uintptr_t libc_sym(const char *sym)
{
	void *h = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	uintptr_t at = h ? (uintptr_t)dlsym(h, sym) : 0;

	if (h)
		dlclose(h);
	return at;
}

/* libc's load address and base name, from the loader. */
static uintptr_t libc_base(const char **name)
{
	Dl_info di;

	if (!dladdr((void *)libc_sym("malloc"), &di) || !di.dli_fname)
		return 0;
	*name = strrchr(di.dli_fname, '/') ? strrchr(di.dli_fname, '/') + 1 : di.dli_fname;
	return (uintptr_t)di.dli_fbase;
}

/* The run-time address of libc's symbol `want` found by name in the symbol table libdwfl reads
 * from libc's build-id debug file under /usr/lib/debug; 0 when there is no such file (libc6-dbg
 * not installed) or no such symbol. */
static uintptr_t libc_debug_symbol(const char *want)
{
	static char *path = "/usr/lib/debug";
	static const Dwfl_Callbacks cb = {.find_elf = dwfl_linux_proc_find_elf,
					  .find_debuginfo = dwfl_build_id_find_debuginfo,
					  .debuginfo_path = &path};
	Dwfl *d = dwfl_begin(&cb);
	Dwfl_Module *m;
	const char *debugfile = NULL;
	uintptr_t found = 0;
	int n;

	if (!d)
		return 0;
	dwfl_report_begin(d);
	if (dwfl_linux_proc_report(d, getpid()) != 0 || dwfl_report_end(d, NULL, NULL) != 0)
		goto out;
	m = dwfl_addrmodule(d, libc_sym("malloc"));
	n = m ? dwfl_module_getsymtab(m) : -1;
	if (m)
		dwfl_module_info(m, NULL, NULL, NULL, NULL, NULL, NULL, &debugfile);
	if (!debugfile || strncmp(debugfile, "/usr/lib/debug/.build-id/", 25) != 0)
		goto out;
	for (int i = 0; i < n && !found; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(m, i, &sym, &addr, NULL, NULL, NULL);

		if (name && strcmp(name, want) == 0 && GELF_ST_TYPE(sym.st_info) == STT_FUNC)
			found = addr;
	}
out:
	dwfl_end(d);
	return found;
}

TEST(dynsym_names_malloc_in_stripped_libc)
{
	uintptr_t malloc_at = libc_sym("malloc"), base;
	const char *lib = NULL;
	char buf[512], want[128];

	obs_symbolise_debuginfo_path("/nonexistent"); /* .dynsym only, as without libc6-dbg */
	base = libc_base(&lib);
	ASSERT(malloc_at && base);
	obs_symbolise(malloc_at + 0x10, true, buf, sizeof(buf));
	printf("  malloc+0x10: %s\n", buf);
	/* malloc and __libc_malloc are one address in .dynsym: either name is right */
	ASSERT(strstr(buf, "malloc+0x10 (") != NULL);
	snprintf(want, sizeof(want), "(%s+0x%" PRIxPTR ")", lib, malloc_at + 0x10 - base);
	EXPECT(strstr(buf, want) != NULL);
	/* a return address is looked up at ip - 1 and printed as itself */
	obs_symbolise(malloc_at + 0x10, false, buf, sizeof(buf));
	EXPECT(strstr(buf, "malloc+0x10 (") != NULL);
	obs_symbolise_function(malloc_at + 0x10, true, buf, sizeof(buf));
	EXPECT(strstr(buf, "malloc") != NULL);
	EXPECT(strchr(buf, '+') == NULL);
}

TEST(static_libc_function_is_named_from_the_build_id_debug_file)
{
	uintptr_t at = libc_debug_symbol("_int_malloc"), base;
	const char *lib = NULL;
	char buf[512], want[160];

	if (!at)
		SKIP("no /usr/lib/debug/.build-id file with _int_malloc for this libc (install "
		     "libc6-dbg)\n");
	ASSERT(libc_sym("_int_malloc") == 0); /* not exported: not in libc's .dynsym */
	base = libc_base(&lib);
	ASSERT(base);
	obs_symbolise(at + 0x40, true, buf, sizeof(buf));
	printf("  with libc6-dbg:    %s\n", buf);
	snprintf(want, sizeof(want), "_int_malloc+0x40 (%s+0x%" PRIxPTR ") ", lib,
		 at + 0x40 - base);
	EXPECT(strncmp(buf, want, strlen(want)) == 0);
	/* the debug file has libc's line table too */
	EXPECT(strstr(buf, " malloc/malloc.c:") != NULL);
	obs_symbolise_function(at + 0x40, true, buf, sizeof(buf));
	ASSERT_STREQ(buf, "_int_malloc");

	/* without the debug file the address is in no symbol libc itself has */
	obs_symbolise_debuginfo_path("/nonexistent");
	obs_symbolise(at + 0x40, true, buf, sizeof(buf));
	printf("  without:           %s\n", buf);
	snprintf(want, sizeof(want), "?? (%s+0x%" PRIxPTR ")", lib, at + 0x40 - base);
	ASSERT_STREQ(buf, want);
	obs_symbolise_debuginfo_path(NULL);
	obs_symbolise(at + 0x40, true, buf, sizeof(buf));
	EXPECT(strncmp(buf, "_int_malloc+0x40 ", 17) == 0);
}

/* The caller's return address, and the line of the call. noipa keeps gcc from inlining or
 * cloning them (clang does not know it; noinline does there). */
#ifdef __clang__
#define NOFOLD __attribute__((noinline))
#else
#define NOFOLD __attribute__((noipa))
#endif
static int call_line;
NOFOLD static uintptr_t obs_test_return_address(void)
{
	return (uintptr_t)__builtin_return_address(0);
}
NOFOLD static uintptr_t obs_test_caller(void)
{
	call_line = __LINE__ + 1;
	uintptr_t ra = obs_test_return_address();

	__asm__ volatile("" ::: "memory"); /* work after the call: not a tail call */
	return ra;
}

TEST(own_static_function_with_its_source_line)
{
	uintptr_t ra = obs_test_caller();
	char buf[512], want[64];

	obs_symbolise(ra, false, buf, sizeof(buf));
	printf("  %s\n", buf);
	EXPECT(strncmp(buf, "obs_test_caller+0x", 18) == 0);
	EXPECT(strstr(buf, " (obs_symbolise+0x") != NULL);
#ifdef THPEMU_TEST_DEBUGINFO /* built with -g: the line table says where the call is */
	snprintf(want, sizeof(want), ") unit/obs_symbolise.c:%d", call_line);
	EXPECT(strlen(buf) > strlen(want) && strcmp(buf + strlen(buf) - strlen(want), want) == 0);
#else
	(void)want;
#endif
	obs_symbolise_function(ra, false, buf, sizeof(buf));
	ASSERT_STREQ(buf, "obs_test_caller");
}

TEST(library_loaded_after_the_first_lookup_is_found)
{
	/* a library this program has not loaded (unit tests link with --as-needed, not always) */
	static const char *const libs[][2] = {{"libjansson.so.4", "json_loads"},
					      {"libfuse3.so.3", "fuse_session_new"},
					      {"libjemalloc.so.2", "mallctl"}};
	char buf[512], want[96];
	void *h = NULL, *fn = NULL;
	unsigned i;

	obs_symbolise((uintptr_t)obs_test_caller, true, buf, sizeof(buf)); /* session begins */
	for (i = 0; i < sizeof(libs) / sizeof(libs[0]) && !fn; i++) {
		if (dlsym(RTLD_DEFAULT, libs[i][1]))
			continue; /* loaded already */
		h = dlopen(libs[i][0], RTLD_LAZY | RTLD_LOCAL);
		fn = h ? dlsym(h, libs[i][1]) : NULL;
	}
	if (!fn)
		SKIP("none of libjansson.so.4, libfuse3.so.3, libjemalloc.so.2 could be loaded "
		     "anew\n");
	i--;
	obs_symbolise((uintptr_t)fn + 1, true, buf, sizeof(buf));
	printf("  %s\n", buf);
	snprintf(want, sizeof(want), "%s+0x1 (%s+0x", libs[i][1], libs[i][0]);
	EXPECT(strncmp(buf, want, strlen(want)) == 0);
}

TEST(address_in_no_object)
{
	/* far from every object (under TSan a kernel-placed page landed inside libtsan's span), in
	 * the low application range TSan allows on x86_64 (below 0x8000000000) */
	void *anon = mmap((void *)0x4000000000UL, 4096, PROT_READ,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	char buf[512], want[64];

	if (anon == MAP_FAILED)
		anon = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT(anon != MAP_FAILED);
	snprintf(want, sizeof(want), "0x%" PRIxPTR " (?)", (uintptr_t)anon + 8);
	ASSERT_STREQ(obs_symbolise((uintptr_t)anon + 8, true, buf, sizeof(buf)), want);
	snprintf(want, sizeof(want), "0x%" PRIxPTR, (uintptr_t)anon + 8);
	ASSERT_STREQ(obs_symbolise_function((uintptr_t)anon + 8, true, buf, sizeof(buf)), want);
	ASSERT_STREQ(obs_symbolise(0, false, buf, sizeof(buf)), "0x0 (?)");
	munmap(anon, 4096);
	obs_symbolise_end();
	obs_symbolise_end(); /* idempotent */
}

struct past_bss {
	bool anon_only;	  /* only objects whose .bss runs past their file's last page */
	void *page;	  /* the page mapped */
	uintptr_t last;	  /* the object's last byte below it */
	const char *name; /* the object's */
};

/* dl_iterate_phdr callback: map a page at the first page past an object's last PT_LOAD (its
 * .bss end), where nothing else is mapped. */
static int map_past_bss(struct dl_phdr_info *info, size_t size, void *data)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), end = 0, file_end = 0;
	struct past_bss *pb = data;
	void *p;

	(void)size;
	if (!info->dlpi_name || !*info->dlpi_name || strstr(info->dlpi_name, "vdso"))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_LOAD &&
		    info->dlpi_phdr[i].p_vaddr + info->dlpi_phdr[i].p_memsz > end) {
			end = info->dlpi_phdr[i].p_vaddr + info->dlpi_phdr[i].p_memsz;
			file_end = info->dlpi_phdr[i].p_vaddr + info->dlpi_phdr[i].p_filesz;
		}
	/* the loader maps a .bss past the file's last page as an anonymous mapping of its own */
	if (pb->anon_only && (end + pg - 1) / pg <= (file_end + pg - 1) / pg)
		return 0;
	pb->last = info->dlpi_addr + end - 1;
	pb->name = info->dlpi_name;
	end = (info->dlpi_addr + end + pg - 1) & ~(pg - 1);
	p = mmap((void *)end, pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
		 0);
	if (p == MAP_FAILED)
		return 0;
	if (p != (void *)end) { /* a kernel without MAP_FIXED_NOREPLACE placed it elsewhere */
		munmap(p, pg);
		return 0;
	}
	pb->page = p;
	return 1;
}

TEST(address_just_past_a_library_bss_is_in_no_object)
{
	struct past_bss pb = {0};
	char buf[512], want[64];

	/* libdwfl's module span runs on over the anonymous mappings right after an object's last
	 * file mapping; a page there (where the kernel put one under ASan, past libasan's 5 MiB
	 * .bss) must not be named as the object's */
	pb.anon_only = true; /* the case that was misnamed: an anonymous .bss, then the page */
	dl_iterate_phdr(map_past_bss, &pb);
	pb.anon_only = false;
	if (!pb.page)
		dl_iterate_phdr(map_past_bss, &pb);
	if (!pb.page)
		SKIP("every library's next page is taken\n");
	obs_symbolise_end(); /* a fresh session reads the page in /proc/self/maps */
	/* the object's own last byte still is the object's */
	obs_symbolise(pb.last, true, buf, sizeof(buf));
	printf("  %s's last .bss byte: %s\n", pb.name, buf);
	EXPECT(strstr(buf, "(?)") == NULL);
	snprintf(want, sizeof(want), "0x%" PRIxPTR " (?)", (uintptr_t)pb.page + 8);
	obs_symbolise((uintptr_t)pb.page + 8, true, buf, sizeof(buf));
	printf("  the page past it: %s\n", buf);
	munmap(pb.page, (size_t)sysconf(_SC_PAGESIZE));
	ASSERT_STREQ(buf, want);
}

TEST_MAIN()

/* mremap_cases: mremap calls the kernel refuses or takes, on memory split into VMAs by advice
 * and by mprotect, with the outcome of each (errno, data intact) on stdout - which must read the
 * same natively and under thpemu. Then the refused calls once more on one 8 MiB mapping, which
 * is touched afterwards (`mremap_cases refused`): under thpemu those touches must still fault
 * through the emulator (a refused mremap used to leave the whole mapping unmanaged). */
#include <sys/mman.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <stdint.h>
#define MB (1UL << 20)
static void t(const char *name, int split, int flags, size_t oldl, size_t newl)
{
	char *p = mmap(NULL, 6 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(p, 7, 6 * MB);
	if (split == 1)
		madvise(p + 2 * MB, 2 * MB, MADV_NOHUGEPAGE);
	if (split == 2)
		mprotect(p + 2 * MB, 2 * MB, PROT_READ);
	void *q = mremap(p, oldl, newl, flags, NULL);
	int e = q == MAP_FAILED ? errno : 0;
	/* is the old region still intact? */
	int ok = 1;
	for (size_t i = 0; i < 6 * MB; i += 4096)
		if (q == MAP_FAILED && p[i] != 7) {
			ok = 0;
			break;
		}
	printf("%-40s -> %s%s %s\n", name, q == MAP_FAILED ? "FAIL " : "ok",
	       q == MAP_FAILED ? strerror(e) : "", ok ? "data-ok" : "DATA-LOST");
}
int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "refused") == 0)
		goto refused;
	t("dontunmap size change", 0, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, 6 * MB, 8 * MB);
	t("dontunmap no maymove", 0, MREMAP_DONTUNMAP, 6 * MB, 6 * MB);
	t("dontunmap across 3 vmas (advice)", 1, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, 6 * MB, 6 * MB);
	t("dontunmap across 3 vmas (mprotect)", 2, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, 6 * MB,
	  6 * MB);
	t("maymove grow across 3 vmas (advice)", 1, MREMAP_MAYMOVE, 6 * MB, 8 * MB);
	t("move across 3 vmas same size (advice)", 1, MREMAP_MAYMOVE, 6 * MB, 6 * MB);
	t("bad flags", 0, 0x80, 6 * MB, 6 * MB);
	t("grow in place no maymove", 0, 0, 6 * MB, 8 * MB);
	t("shrink across 3 vmas (advice)", 1, 0, 6 * MB, 1 * MB);
	return 0;
refused:;

	char *m = mmap(NULL, 8 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int refused = 0;
	madvise(m + 2 * MB, 2 * MB, MADV_NOHUGEPAGE);
	refused += mremap(m, 8 * MB, 10 * MB, MREMAP_MAYMOVE | MREMAP_DONTUNMAP) == MAP_FAILED;
	refused += mremap(m, 8 * MB, 8 * MB, MREMAP_MAYMOVE | MREMAP_DONTUNMAP) == MAP_FAILED;
	refused += mremap(m, 8 * MB, 10 * MB, MREMAP_MAYMOVE) == MAP_FAILED;
	refused += mremap(m, 8 * MB, 8 * MB, 0x80) == MAP_FAILED;
	memset(m, 1, 8 * MB);
	printf("refused %d of 4, then touched 8 MiB\n", refused);
	return 0;
}

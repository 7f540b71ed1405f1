/* The public API (core/include/thpemu.h) from a program that also runs natively: weak
 * references are NULL without the library. Prints what it learns; argv[1] is where to write the
 * process's report. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "thpemu.h"

extern const char *thpemu_version(void) __attribute__((weak));
extern int thpemu_active(void) __attribute__((weak));
extern int thpemu_is_managed(const void *addr) __attribute__((weak));
extern int thpemu_get_counters(struct thpemu_counters *c, size_t size) __attribute__((weak));
extern int thpemu_write_report(const char *path) __attribute__((weak));
extern int thpemu_vmstat(char *buf, size_t len) __attribute__((weak));

/* thpemu_vmstat into memory the program never touched (managed: its first touch is a fault
 * the emulator serves while the call runs) and into a buffer too small for it. */
static void vmstat_probe(void)
{
	size_t len = 1UL << 20;
	char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char small[16];
	unsigned long long alloc = 0;
	const char *l;
	int n;

	if (buf == MAP_FAILED)
		return;
	n = thpemu_vmstat(buf, len);
	l = n > 0 ? strstr(buf, "thp_fault_alloc ") : NULL;
	if (l)
		sscanf(l + 16, "%llu", &alloc);
	printf("vmstat: len_ok=%d thp_fault_alloc=%llu small=%d\n",
	       n > 0 && (size_t)n == strlen(buf), alloc, thpemu_vmstat(small, sizeof(small)));
	/* the gauges come first, as in /proc/vmstat */
	printf("vmstat gauges: first=%.13s writeback=%d\n", n > 0 ? buf : "",
	       n > 0 && strstr(buf, "\nnr_dirty ") && strstr(buf, "\nnr_writeback "));
}

int main(int argc, char **argv)
{
	size_t len = 8UL << 20;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct thpemu_counters c;

	memset(p, 1, len);
	if (!thpemu_active || !thpemu_active()) {
		printf("api: active=0\n");
		return 0;
	}
	if (thpemu_get_counters(&c, sizeof(c)) != 0)
		return 1;
	printf("api: active=1 version=%s managed=%d stack_managed=%d faults=%llu huge=%llu "
	       "real_pmd=%llu managed_bytes=%llu\n",
	       thpemu_version(), thpemu_is_managed(p + 12345), thpemu_is_managed(&c),
	       (unsigned long long)c.faults, (unsigned long long)c.huge_faults,
	       (unsigned long long)c.real_pmd_faults, (unsigned long long)c.managed_bytes);
	vmstat_probe();
	return argc > 1 && thpemu_write_report(argv[1]) != 0;
}

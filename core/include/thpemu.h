/* thpemu: the small public API of libthpemu.so (the LD_PRELOAD emulator).
 *
 * A program does not need any of this to run under thpemu. Programs that want to know whether
 * they are being emulated, or to read their own counters, can declare these functions weak and
 * test them for NULL, so that the same binary runs natively:
 *
 *   extern int thpemu_active(void) __attribute__((weak));
 *   if (thpemu_active && thpemu_active()) ...
 */
#ifndef THPEMU_PUBLIC_H
#define THPEMU_PUBLIC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct thpemu_counters {
	uint64_t faults;	  /* first-touch faults served by the emulator (huge + base +
				   * those served by multi-size THP folios) */
	uint64_t huge_faults;	  /* of which emulated huge (2 MiB) decisions */
	uint64_t base_faults;	  /* of which 4 KiB decisions (including outside the pool) */
	uint64_t nomem_faults;	  /* served outside the exhausted emulated pool */
	uint64_t real_pmd_faults; /* huge decisions that ended PMD-mapped on the host */
	uint64_t anon_migrations; /* program pages really migrated by emulated compaction */
	uint64_t managed_bytes;	  /* memory under management now */
};

/* "0.1.0" */
const char *thpemu_version(void);
/* 1 if the emulator manages this process's memory, 0 if it runs unmanaged. */
int thpemu_active(void);
/* 1 if addr lies in memory the emulator manages. */
int thpemu_is_managed(const void *addr);
/* Fill *c (size = sizeof(*c), for forward compatibility). Returns 0, or -1 when inactive. */
int thpemu_get_counters(struct thpemu_counters *c, size_t size);
/* The emulated machine's vmstat counters now, as /proc/vmstat prints them: "NAME VALUE\n" lines
 * with the kernel's names, first the gauges nr_free_pages, nr_file_pages (shmem included),
 * nr_dirty, nr_writeback and nr_shmem (pages now), then the events (core/mm/vmstat.c:
 * thp_fault_alloc, compact_stall, ...; the few of thpemu's own have names the kernel does not
 * use), into buf, NUL-terminated. Returns the length, or -1 with errno ENODEV (not emulating)
 * or ENOSPC (buf too small: nothing written past len). Machine-wide: every process of the
 * machine counts. */
int thpemu_vmstat(char *buf, size_t len);
/* The emulated machine's per-size THP statistics now, as
 * /sys/kernel/mm/transparent_hugepage/hugepages-<size>kB/stats/ hold them: "SIZEkB NAME VALUE\n"
 * lines, sizes 16kB..2048kB, the kernel's file names (anon_fault_alloc, anon_fault_fallback,
 * shmem_alloc, ...), into buf, NUL-terminated. Returns the length (0 under a profile whose era
 * has no mTHP, as a kernel before 6.8 has no such files), or -1 with errno ENODEV or ENOSPC as
 * thpemu_vmstat. Machine-wide. */
int thpemu_mthp_stats(char *buf, size_t len);
/* Write this process's JSON report to path now. Returns 0 or -1 (errno set). */
int thpemu_write_report(const char *path);
/* Hand the emulator a private anonymous read-write mapping the interposers never saw (made with
 * a raw mmap system call, or before the library started): pages already resident stay as they
 * are, outside the emulated pool; the others become first touches like any other. addr and len
 * must be page aligned. Returns 0, or -1 with errno ENODEV (not emulating), EINVAL (bad range),
 * EEXIST (it overlaps managed memory) or ENOSPC (the region table is full). */
int thpemu_manage(void *addr, size_t len);

#ifdef __cplusplus
}
#endif

#endif

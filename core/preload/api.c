/* The public API (core/include/thpemu.h) over the process's emulator. */
#include "thpemu.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "preload/shim.h"
#include "util/sys.h"
#include "util/outfile.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT const char *thpemu_version(void)
{
	return THPEMU_VERSION;
}

EXPORT int thpemu_active(void)
{
	return shim_live() != NULL;
}

EXPORT int thpemu_is_managed(const void *addr)
{
	struct uffd_live *lv = shim_live();

	return lv && uffd_is_managed(lv, addr, 1);
}

EXPORT int thpemu_get_counters(struct thpemu_counters *c, size_t size)
{
	struct uffd_live *lv = shim_live();
	struct thpemu_counters v;
	const struct uffd_stats *st;

	if (!lv)
		return -1;
	st = uffd_live_stats(lv);
	memset(&v, 0, sizeof(v));
	v.huge_faults = __atomic_load_n(&st->faults.lat[OBS_HUGE].count, __ATOMIC_RELAXED);
	v.base_faults = __atomic_load_n(&st->faults.lat[OBS_BASE].count, __ATOMIC_RELAXED);
	v.faults = v.huge_faults + v.base_faults +
		   __atomic_load_n(&st->faults.lat[OBS_MTHP].count, __ATOMIC_RELAXED);
	v.nomem_faults = __atomic_load_n(&st->faults.nomem, __ATOMIC_RELAXED);
	v.real_pmd_faults = __atomic_load_n(&st->host.real_pmd_faults, __ATOMIC_RELAXED);
	v.anon_migrations = __atomic_load_n(&st->host.anon_migrations, __ATOMIC_RELAXED);
	v.managed_bytes = __atomic_load_n(&st->host.bytes_managed, __ATOMIC_RELAXED);
	memcpy(c, &v, size < sizeof(v) ? size : sizeof(v));
	return 0;
}

/* One "NAME VALUE\n" line at buf + *used; false (buf cut at *used) when it does not fit. */
static bool vmstat_line(char *buf, size_t len, size_t *used, const char *name, uint64_t value)
{
	int n = snprintf(buf + *used, len > *used ? len - *used : 0, "%s %llu\n", name,
			 (unsigned long long)value);

	if (n < 0 || (size_t)n >= len - *used) {
		if (len)
			buf[*used] = '\0';
		return false;
	}
	*used += (size_t)n;
	return true;
}

EXPORT int thpemu_mthp_stats(char *buf, size_t len)
{
	struct uffd_live *lv = shim_live();
	struct obs_mthp m;
	size_t used = 0;

	if (!lv) {
		errno = ENODEV;
		return -1;
	}
	/* as thpemu_vmstat: a copy on this stack first */
	uffd_live_snapshot(lv);
	m = uffd_live_stats(lv)->mthp;
	if (len)
		buf[0] = '\0';
	for (unsigned o = MM_MTHP_MIN_ORDER; m.era_has_mthp && o <= OBS_MTHP_PMD_ORDER; o++) {
		const struct mm_mthp_stats *st = &m.st[o];
		const struct {
			const char *name;
			uint64_t v;
		} f[] = {
		    {"anon_fault_alloc", st->anon_fault_alloc},
		    {"anon_fault_fallback", st->anon_fault_fallback},
		    {"anon_fault_fallback_charge", st->anon_fault_fallback_charge},
		    {"split", st->split},
		    {"split_failed", st->split_failed},
		    {"split_deferred", st->split_deferred},
		    {"nr_anon", st->nr_anon},
		    {"nr_anon_partially_mapped", st->nr_anon_partially_mapped},
		    {"shmem_alloc", st->shmem_alloc},
		    {"shmem_fallback", st->shmem_fallback},
		    {"shmem_fallback_charge", st->shmem_fallback_charge},
		};

		for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
			char name[48];

			snprintf(name, sizeof(name), "%ukB %s", 4U << o, f[i].name);
			if (!vmstat_line(buf, len, &used, name, f[i].v)) {
				errno = ENOSPC;
				return -1;
			}
		}
	}
	return (int)used;
}

EXPORT int thpemu_vmstat(char *buf, size_t len)
{
	/* the gauges /proc/vmstat prints first, with the kernel's names and in its order
	 * (mm/vmstat.c vmstat_text): free frames, the page cache with shmem (NR_FILE_PAGES), its
	 * dirty pages, those under writeback, and shmem with tmpfs (NR_SHMEM; core/mm pool.c
	 * mm_get_counts) */
	static const char *const gauges[] = {"nr_free_pages", "nr_file_pages", "nr_dirty",
					     "nr_writeback", "nr_shmem"};
	struct uffd_live *lv = shim_live();
	uint64_t v[MM_STAT_NR], g[5];
	const struct uffd_stats *st;
	size_t used = 0;

	if (!lv) {
		errno = ENODEV;
		return -1;
	}
	/* mm's counters into the process's record, then a copy on this stack: buf may be managed
	 * memory not yet touched, and its fault must not come while mm's lock is held */
	uffd_live_snapshot(lv);
	st = uffd_live_stats(lv);
	for (unsigned i = 0; i < MM_STAT_NR; i++)
		v[i] = __atomic_load_n(&st->vmstat[i], __ATOMIC_RELAXED);
	g[0] = __atomic_load_n(&st->counts.free, __ATOMIC_RELAXED);
	g[1] = __atomic_load_n(&st->counts.file_pages, __ATOMIC_RELAXED);
	g[2] = __atomic_load_n(&st->counts.file_dirty, __ATOMIC_RELAXED);
	g[3] = __atomic_load_n(&st->counts.file_writeback, __ATOMIC_RELAXED);
	g[4] = __atomic_load_n(&st->counts.shmem, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < 5; i++)
		if (!vmstat_line(buf, len, &used, gauges[i], g[i]))
			goto nospc;
	for (unsigned i = 0; i < MM_STAT_NR; i++)
		if (!vmstat_line(buf, len, &used, mm_stat_names[i], v[i]))
			goto nospc;
	return (int)used;
nospc:
	errno = ENOSPC;
	return -1;
}

EXPORT int thpemu_write_report(const char *path)
{
	struct uffd_live *lv = shim_live();
	char err[700];
	FILE *f;
	int rc, fd;

	if (!lv) {
		errno = ENODEV;
		return -1;
	}
	uffd_live_snapshot(lv);
	fd = outfile_open(path, err, sizeof(err)); /* never through someone else's link */
	if (fd < 0) {
		errno = -fd;
		return -1;
	}
	f = fdopen(fd, "w");
	if (!f) {
		sys_close(fd);
		return -1;
	}
	rc = uffd_live_report(lv, f, NULL);
	if (fclose(f) != 0 || rc < 0) {
		errno = EIO;
		return -1;
	}
	return 0;
}

EXPORT int thpemu_manage(void *addr, size_t len)
{
	struct uffd_live *lv = shim_live();
	int rc;

	if (!lv) {
		errno = ENODEV;
		return -1;
	}
	if (((uintptr_t)addr | len) & (UFFD_PAGE_SIZE - 1) || !len) {
		errno = EINVAL;
		return -1;
	}
	if (uffd_is_managed(lv, addr, len)) {
		errno = EEXIST;
		return -1;
	}
	uffd_tls_passthrough++;
	rc = uffd_adopt(lv, addr, len, PROT_READ | PROT_WRITE);
	uffd_tls_passthrough--;
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	return 0;
}

/* The `host` policy profile: this machine's own THP settings, read from sysfs.
 *
 * The profile is the modern era (thp-ENABLED/DEFRAG) with the values this kernel shows in
 * /sys/kernel/mm/transparent_hugepage (enabled, defrag, khugepaged/{pages_to_scan,
 * scan_sleep_millisecs, alloc_sleep_millisecs, max_ptes_none, max_ptes_swap, max_ptes_shared,
 * defrag}, shrink_underused, hugepages-<size>kB/enabled; 6.12 mm/huge_memory.c and
 * mm/khugepaged.c, the sysfs attributes of hugepage_init_sysfs and khugepaged_attr_group),
 * shared memory's shmem_enabled and hugepages-<size>kB/shmem_enabled (6.12 mm/shmem.c
 * shmem_enabled_show, thpsize_shmem_enabled_show), /dev/shm's huge= in /proc/mounts (mm/shmem.c
 * shmem_show_options: shown unless never) and /proc/sys/vm/defrag_mode (6.15 mm/page_alloc.c).
 * Each knob goes through the spec language's own key (mm_policy_set), so a value the emulator
 * cannot model is refused as the key would be.
 *
 * Files of knobs the emulator does not model (use_zero_page, anon_beside_full, ...) are not
 * read; a missing optional file (an older kernel: no max_ptes_shared before 5.8, no
 * shrink_underused before 6.12, no mTHP before 6.8, no per-size shmem_enabled before 6.11, no
 * shmem_enabled before 4.8, no defrag_mode before 6.15) keeps the 6.12 default; a value the
 * emulator cannot model (an mTHP size it has no order for, enabled but not never; a number out
 * of range) is an error naming the file and the value. A missing enabled/defrag file means no
 * THP: an error.
 */
#include "policy/policy.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define THP_DIR "sys/kernel/mm/transparent_hugepage/"

static const char *const enabled_values[] = {"always", "madvise", "never", NULL};
static const char *const defrag_values[] = {"always",  "defer", "defer+madvise",
					    "madvise", "never", NULL};

/* root/rel's text without its trailing newline; -ENOENT (err set if required) if unreadable. */
static int host_read(const char *root, const char *rel, char *buf, size_t len, char *err,
		     size_t errlen, bool required)
{
	char path[4096];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "re");
	if (!f) {
		if (required)
			snprintf(err, errlen,
				 "policy host: cannot read %s: %s (is THP built into this kernel?)",
				 path, strerror(errno));
		return -ENOENT;
	}
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

/* "always [madvise] never" -> index of the bracketed value in values, or -1 */
static int host_choice(const char *text, const char *const *values)
{
	const char *open = strchr(text, '['), *close = open ? strchr(open, ']') : NULL;

	if (!close)
		return -1;
	for (int i = 0; values[i]; i++)
		if (strlen(values[i]) == (size_t)(close - open - 1) &&
		    !strncmp(open + 1, values[i], (size_t)(close - open - 1)))
			return i;
	return -1;
}

static int host_bad(const char *root, const char *rel, const char *val, const char *why, char *err,
		    size_t errlen)
{
	snprintf(err, errlen, "policy host: %s/%s: cannot model '%s' (%s)", root, rel, val, why);
	return -EINVAL;
}

/* The bracketed value of rel's text buf as an index of values, or host_bad's error. */
static int host_pick(const char *root, const char *rel, const char *buf, const char *const *values,
		     const char *why, char *err, size_t errlen)
{
	int i = host_choice(buf, values);

	return i >= 0 ? i : host_bad(root, rel, buf, why, err, errlen);
}

/* A required bracketed setting (enabled, defrag): its index in values, or -errno. */
static int host_setting(const char *root, const char *rel, const char *const *values,
			const char *why, char *err, size_t errlen)
{
	char buf[256];

	if (host_read(root, rel, buf, sizeof(buf), err, errlen, true))
		return -EINVAL;
	return host_pick(root, rel, buf, values, why, err, errlen);
}

/* khugepaged's numeric files and shrink_underused, each through its spec key. */
static int host_knobs(const char *root, struct mm_policy *p, char *err, size_t errlen)
{
	static const struct {
		const char *file, *key;
		bool ms;   /* a duration in milliseconds */
		bool flag; /* 0 or 1 */
	} knobs[] = {
	    {"khugepaged/pages_to_scan", "pages-to-scan", false, false},
	    {"khugepaged/scan_sleep_millisecs", "scan-sleep", true, false},
	    {"khugepaged/alloc_sleep_millisecs", "alloc-sleep", true, false},
	    {"khugepaged/max_ptes_none", "max-ptes-none", false, false},
	    {"khugepaged/max_ptes_swap", "max-ptes-swap", false, false},
	    {"khugepaged/max_ptes_shared", "max-ptes-shared", false, false},
	    {"khugepaged/defrag", "khugepaged-defrag", false, true},
	    {"shrink_underused", "shrink-underused", false, true},
	};
	char buf[256], rel[4096], val[300], kerr[256];

	for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		char *end;
		unsigned long v;

		snprintf(rel, sizeof(rel), THP_DIR "%s", knobs[i].file);
		if (host_read(root, rel, buf, sizeof(buf), err, errlen, false))
			continue;
		errno = 0;
		v = strtoul(buf, &end, 10);
		if (!*buf || *end || errno || buf[0] == '-')
			return host_bad(root, rel, buf, "not a number", err, errlen);
		if (knobs[i].flag)
			snprintf(val, sizeof(val), "%s", v ? "yes" : "no");
		else
			snprintf(val, sizeof(val), "%lu%s", v, knobs[i].ms ? "ms" : "");
		if (knobs[i].flag && v > 1)
			return host_bad(root, rel, buf, "expected 0 or 1", err, errlen);
		if (mm_policy_set(p, knobs[i].key, val, kerr, sizeof(kerr)))
			return host_bad(root, rel, buf, kerr, err, errlen);
	}
	return 0;
}

/* mTHP: every hugepages-<size>kB/enabled; none before 6.8 (the PMD size inherits). */
static int host_sizes(const char *root, struct mm_policy *p, char *err, size_t errlen)
{
	static const char *const thp_size_choice[] = {"always", "inherit", "madvise", "never",
						      NULL};
	static const enum mm_thp_size size_of_choice[] = {MM_THP_SIZE_ALWAYS, MM_THP_SIZE_INHERIT,
							  MM_THP_SIZE_MADVISE, MM_THP_SIZE_NEVER};
	char buf[256], rel[4096];
	struct dirent *de;
	DIR *dir;
	int rc = 0;

	snprintf(rel, sizeof(rel), "%s/" THP_DIR, root);
	dir = opendir(rel);
	while (dir && rc == 0 && (de = readdir(dir))) {
		unsigned long kb;
		unsigned order = 0;
		char *end;
		int c;

		if (strncmp(de->d_name, "hugepages-", 10))
			continue;
		kb = strtoul(de->d_name + 10, &end, 10);
		if (strcmp(end, "kB"))
			continue;
		snprintf(rel, sizeof(rel), THP_DIR "%s/enabled", de->d_name);
		if (host_read(root, rel, buf, sizeof(buf), err, errlen, false))
			continue; /* shmem-only sizes (8kB) have no anon enabled file */
		c = host_pick(root, rel, buf, thp_size_choice, "no [always|inherit|madvise|never]",
			      err, errlen);
		if (c < 0) {
			rc = c;
			break;
		}
		while (order <= MM_POLICY_PMD_ORDER && (4UL << order) != kb)
			order++;
		if (order < MM_POLICY_MTHP_MIN_ORDER || order > MM_POLICY_PMD_ORDER) {
			if (size_of_choice[c] != MM_THP_SIZE_NEVER)
				rc = host_bad(
				    root, rel, buf,
				    "the emulator models 4 KiB pages and sizes 16kB..2048kB", err,
				    errlen);
			continue;
		}
		p->hugepages[order] = size_of_choice[c];
	}
	if (dir)
		closedir(dir);
	return rc;
}

/* Shared memory: shmem_enabled, every hugepages-<size>kB/shmem_enabled, /dev/shm's huge=. */
static int host_shmem(const char *root, struct mm_policy *p, char *err, size_t errlen)
{
	static const char *const shmem_choice[] = {"always", "within_size", "advise", "never",
						   "deny",   "force",	    NULL};
	static const char *const size_choice[] = {"always", "inherit", "within_size",
						  "advise", "never",   NULL};
	char buf[512], rel[4096], key[64], kerr[256];
	struct dirent *de;
	DIR *dir;
	FILE *f;
	int c, rc = 0;

	if (!host_read(root, THP_DIR "shmem_enabled", buf, sizeof(buf), err, errlen, false)) {
		c = host_pick(root, THP_DIR "shmem_enabled", buf, shmem_choice,
			      "no [always|within_size|advise|never|deny|force]", err, errlen);
		if (c < 0)
			return c;
		if (mm_policy_set(p, "shmem-enabled", shmem_choice[c], kerr, sizeof(kerr)))
			return host_bad(root, THP_DIR "shmem_enabled", buf, kerr, err, errlen);
	}
	snprintf(rel, sizeof(rel), "%s/" THP_DIR, root);
	dir = opendir(rel);
	while (dir && rc == 0 && (de = readdir(dir))) {
		unsigned long kb;
		char *end;

		if (strncmp(de->d_name, "hugepages-", 10))
			continue;
		kb = strtoul(de->d_name + 10, &end, 10);
		if (strcmp(end, "kB"))
			continue;
		snprintf(rel, sizeof(rel), THP_DIR "%s/shmem_enabled", de->d_name);
		if (host_read(root, rel, buf, sizeof(buf), err, errlen, false))
			continue; /* anon-only sizes, or before 6.11 */
		c = host_pick(root, rel, buf, size_choice,
			      "no [always|inherit|within_size|advise|never]", err, errlen);
		if (c < 0) {
			rc = c;
			break;
		}
		if (kb < 16 || kb > 2048) {
			/* sizes the emulator has no order for (8kB; the PUD size) */
			if (strcmp(size_choice[c], "never"))
				rc = host_bad(root, rel, buf,
					      "the emulator models shmem sizes 16kB..2048kB", err,
					      errlen);
			continue;
		}
		snprintf(key, sizeof(key), "shmem-hugepages-%lukB", kb);
		if (mm_policy_set(p, key, size_choice[c], kerr, sizeof(kerr)))
			rc = host_bad(root, rel, buf, kerr, err, errlen);
	}
	if (dir)
		closedir(dir);
	if (rc)
		return rc;
	snprintf(rel, sizeof(rel), "%s/proc/mounts", root);
	f = fopen(rel, "re");
	while (f && fgets(buf, sizeof(buf), f)) {
		char dev[128], mnt[256], fs[64], opts[256], *h;
		size_t n;

		if (sscanf(buf, "%127s %255s %63s %255s", dev, mnt, fs, opts) != 4 ||
		    strcmp(mnt, "/dev/shm") || strcmp(fs, "tmpfs"))
			continue;
		h = strstr(opts, "huge=");
		n = h ? strcspn(h + 5, ",") : 0;
		snprintf(key, sizeof(key), "%.*s", (int)n, h ? h + 5 : "");
		if (mm_policy_set(p, "tmpfs-huge", h ? key : "never", kerr, sizeof(kerr)))
			rc = host_bad(root, "proc/mounts", opts, kerr, err, errlen);
	}
	if (f)
		fclose(f);
	return rc;
}

int policy_host(const char *root, struct mm_policy *p, char *err, size_t errlen)
{
	char buf[256], base[64];
	int e, d, rc;

	if (!root)
		root = "";
	e = host_setting(root, THP_DIR "enabled", enabled_values, "no [always|madvise|never]", err,
			 errlen);
	if (e < 0)
		return e;
	d = host_setting(root, THP_DIR "defrag", defrag_values, "no bracketed defrag mode", err,
			 errlen);
	if (d < 0)
		return d;
	snprintf(base, sizeof(base), "thp-%s/%s", enabled_values[e], defrag_values[d]);
	rc = mm_policy_parse(base, p, err, errlen);
	if (rc == 0)
		rc = host_knobs(root, p, err, errlen);
	if (rc == 0)
		rc = host_sizes(root, p, err, errlen);
	if (rc == 0)
		rc = host_shmem(root, p, err, errlen);
	if (rc == 0 &&
	    !host_read(root, "proc/sys/vm/defrag_mode", buf, sizeof(buf), err, errlen, false)) {
		if (strcmp(buf, "0") && strcmp(buf, "1"))
			return host_bad(root, "proc/sys/vm/defrag_mode", buf, "expected 0 or 1",
					err, errlen);
		p->defrag_mode = buf[0] == '1';
	}
	return rc;
}

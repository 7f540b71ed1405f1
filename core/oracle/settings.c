/* The kernel settings an oracle boot may make: THP's sysfs files, khugepaged's, the per-size
 * (mTHP) enables, and vm/kernel sysctls. Each is named as the kernel names it, so a key says
 * where it is written:
 *
 *   enabled, defrag, use_zero_page, shrink_underused  /sys/kernel/mm/transparent_hugepage/KEY
 *   shmem_enabled                                     /sys/kernel/mm/transparent_hugepage/KEY
 *   hugepages-SIZEkB                                  .../hugepages-SIZEkB/enabled
 *   hugepages-SIZEkB/shmem_enabled                    .../hugepages-SIZEkB/shmem_enabled
 *   tmpfs.huge                                        a tmpfs mounted on /dev/shm with huge=
 *   khugepaged/KNOB                                   .../khugepaged/KNOB
 *   vm.NAME, kernel.NAME                              /proc/sys/vm/NAME, /proc/sys/kernel/NAME
 *
 * The guest's /init applies the same rule (guest.c), so the settings travel on the kernel
 * command line as one word, OSET=KEY:VALUE,KEY:VALUE,... (init/main.c passes a word it does not
 * know to init as an environment variable; at most MAX_INIT_ENVS of them, so one word for all).
 * They are applied in class order, THP enables first: writing `enabled` (or a per-size enable)
 * restarts khugepaged and recomputes min_free_kbytes (mm/khugepaged.c, start_stop_khugepaged ->
 * set_recommended_min_free_kbytes), which would undo a vm.min_free_kbytes written before it.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle/oracle.h"

#define THP_DIR "/sys/kernel/mm/transparent_hugepage/"

#define NUM(k, max_, cls, since_)                                                                  \
	{                                                                                          \
		k, NULL, max_, cls, since_                                                         \
	}
#define ENUM(k, v, cls, since_)                                                                    \
	{                                                                                          \
		k, v, 0, cls, since_                                                               \
	}

static const char mthp_values[] = "always|inherit|madvise|never";
/* mm/shmem.c (6.12): shmem_enabled_store's words (shmem_parse_huge), and the per-size
 * thpsize_shmem_enabled_store's */
static const char shmem_values[] = "always|within_size|advise|never|deny|force";
static const char shmem_size_values[] = "always|inherit|within_size|advise|never";

/* clang-format off */
static const struct oracle_knob knobs[] = {
    ENUM("enabled", "always|madvise|never", ORACLE_KNOB_THP, "2.6.38"),
    ENUM("defrag", "always|defer|defer+madvise|madvise|never", ORACLE_KNOB_THP, "2.6.38"),
    ENUM("use_zero_page", "0|1", ORACLE_KNOB_THP, "3.8"),
    ENUM("shrink_underused", "0|1", ORACLE_KNOB_THP, "6.12"),
    ENUM("shmem_enabled", shmem_values, ORACLE_KNOB_THP, "4.8"),
    ENUM("hugepages-16kB", mthp_values, ORACLE_KNOB_MTHP, "6.8"),
    ENUM("hugepages-32kB", mthp_values, ORACLE_KNOB_MTHP, "6.8"),
    ENUM("hugepages-64kB", mthp_values, ORACLE_KNOB_MTHP, "6.8"),
    ENUM("hugepages-128kB", mthp_values, ORACLE_KNOB_MTHP, "6.8"),
    ENUM("hugepages-256kB", mthp_values, ORACLE_KNOB_MTHP, "6.8"),
    ENUM("hugepages-512kB", mthp_values, ORACLE_KNOB_MTHP, "6.8"),
    ENUM("hugepages-1024kB", mthp_values, ORACLE_KNOB_MTHP, "6.8"),
    ENUM("hugepages-2048kB", mthp_values, ORACLE_KNOB_MTHP, "6.8"),
    ENUM("hugepages-16kB/shmem_enabled", shmem_size_values, ORACLE_KNOB_MTHP, "6.11"),
    ENUM("hugepages-32kB/shmem_enabled", shmem_size_values, ORACLE_KNOB_MTHP, "6.11"),
    ENUM("hugepages-64kB/shmem_enabled", shmem_size_values, ORACLE_KNOB_MTHP, "6.11"),
    ENUM("hugepages-128kB/shmem_enabled", shmem_size_values, ORACLE_KNOB_MTHP, "6.11"),
    ENUM("hugepages-256kB/shmem_enabled", shmem_size_values, ORACLE_KNOB_MTHP, "6.11"),
    ENUM("hugepages-512kB/shmem_enabled", shmem_size_values, ORACLE_KNOB_MTHP, "6.11"),
    ENUM("hugepages-1024kB/shmem_enabled", shmem_size_values, ORACLE_KNOB_MTHP, "6.11"),
    ENUM("hugepages-2048kB/shmem_enabled", shmem_size_values, ORACLE_KNOB_MTHP, "6.11"),
    /* not a file: /init mounts a tmpfs on /dev/shm with huge=VALUE (mm/shmem.c
     * shmem_parse_one, Opt_huge), where POSIX shm files live */
    ENUM("tmpfs.huge", "never|always|within_size|advise", ORACLE_KNOB_MTHP, "4.8"),
    ENUM("khugepaged/defrag", "0|1", ORACLE_KNOB_KHUGEPAGED, "2.6.38"),
    NUM("khugepaged/pages_to_scan", 1u << 30, ORACLE_KNOB_KHUGEPAGED, "2.6.38"),
    NUM("khugepaged/scan_sleep_millisecs", 1u << 30, ORACLE_KNOB_KHUGEPAGED, "2.6.38"),
    NUM("khugepaged/alloc_sleep_millisecs", 1u << 30, ORACLE_KNOB_KHUGEPAGED, "2.6.38"),
    NUM("khugepaged/max_ptes_none", 511, ORACLE_KNOB_KHUGEPAGED, "2.6.38"),
    NUM("khugepaged/max_ptes_swap", 511, ORACLE_KNOB_KHUGEPAGED, "4.8"),
    NUM("khugepaged/max_ptes_shared", 511, ORACLE_KNOB_KHUGEPAGED, "5.8"),
    NUM("vm.compaction_proactiveness", 100, ORACLE_KNOB_VM, "5.9"),
    NUM("vm.watermark_boost_factor", 1u << 30, ORACLE_KNOB_VM, "5.0"),
    NUM("vm.watermark_scale_factor", 3000, ORACLE_KNOB_VM, "4.6"),
    ENUM("vm.compact_unevictable_allowed", "0|1", ORACLE_KNOB_VM, "4.1"),
    NUM("vm.extfrag_threshold", 1000, ORACLE_KNOB_VM, "2.6.35"),
    NUM("vm.min_free_kbytes", 1u << 30, ORACLE_KNOB_VM, "2.6"),
    NUM("vm.dirty_ratio", 100, ORACLE_KNOB_VM, "2.6"),
    NUM("vm.dirty_background_ratio", 100, ORACLE_KNOB_VM, "2.6"),
    NUM("vm.dirty_bytes", UINT64_MAX >> 1, ORACLE_KNOB_VM, "2.6.29"),
    NUM("vm.dirty_background_bytes", UINT64_MAX >> 1, ORACLE_KNOB_VM, "2.6.29"),
    NUM("vm.dirty_expire_centisecs", 1u << 30, ORACLE_KNOB_VM, "2.6"),
    NUM("vm.dirty_writeback_centisecs", 1u << 30, ORACLE_KNOB_VM, "2.6"),
    NUM("vm.swappiness", 200, ORACLE_KNOB_VM, "2.6"),
    ENUM("vm.overcommit_memory", "0|1|2", ORACLE_KNOB_VM, "2.6"),
    ENUM("kernel.randomize_va_space", "0|1|2", ORACLE_KNOB_KERNEL, "2.6.12"),
};
/* clang-format on */

const struct oracle_knob *oracle_knob(size_t i)
{
	return i < sizeof(knobs) / sizeof(knobs[0]) ? &knobs[i] : NULL;
}

const struct oracle_knob *oracle_knob_find(const char *key)
{
	for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++)
		if (!strcmp(knobs[i].key, key))
			return &knobs[i];
	return NULL;
}

int oracle_knob_path(const char *key, char *buf, size_t len)
{
	int n;

	if (!strncmp(key, "vm.", 3))
		n = snprintf(buf, len, "/proc/sys/vm/%s", key + 3);
	else if (!strncmp(key, "kernel.", 7))
		n = snprintf(buf, len, "/proc/sys/kernel/%s", key + 7);
	else if (!strcmp(key, "tmpfs.huge"))
		n = snprintf(buf, len, "/dev/shm");
	else if (!strncmp(key, "hugepages-", 10) && !strchr(key, '/'))
		n = snprintf(buf, len, THP_DIR "%s/enabled", key);
	else
		n = snprintf(buf, len, THP_DIR "%s", key);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Is value one of the |-separated words of list? */
static int one_of(const char *list, const char *value)
{
	size_t n = strlen(value);

	for (const char *p = list; p; p = strchr(p, '|')) {
		if (*p == '|')
			p++;
		if (!strncmp(p, value, n) && (p[n] == '|' || !p[n]))
			return 1;
	}
	return 0;
}

static int check_value(const struct oracle_knob *k, const char *value, char *err, size_t errlen)
{
	char *end;
	unsigned long long v;

	if (k->values) {
		if (one_of(k->values, value))
			return 0;
		snprintf(err, errlen, "%s: '%s' is not one of %s", k->key, value, k->values);
		return -EINVAL;
	}
	errno = 0;
	v = strtoull(value, &end, 10);
	if (!isdigit((unsigned char)value[0]) || *end || errno || v > k->max) {
		snprintf(err, errlen, "%s: '%s' is not an integer 0..%llu", k->key, value,
			 (unsigned long long)k->max);
		return -EINVAL;
	}
	return 0;
}

void oracle_settings_init(struct oracle_settings *s)
{
	memset(s, 0, sizeof(*s));
}

const char *oracle_settings_get(const struct oracle_settings *s, const char *key)
{
	for (int i = 0; i < s->n; i++)
		if (!strcmp(s->s[i].knob->key, key))
			return s->s[i].value;
	return NULL;
}

int oracle_settings_set(struct oracle_settings *s, const char *key, const char *value,
			enum oracle_origin origin, char *err, size_t errlen)
{
	const struct oracle_knob *k = oracle_knob_find(key);
	int rc;

	if (!k) {
		snprintf(err, errlen,
			 "unknown setting '%s' (accepted: enabled, defrag, use_zero_page, "
			 "shrink_underused, shmem_enabled, hugepages-SIZEkB and "
			 "hugepages-SIZEkB/shmem_enabled (16kB..2048kB), tmpfs.huge, "
			 "khugepaged/KNOB, vm.SYSCTL, kernel.randomize_va_space; see thpemu "
			 "oracle --help)",
			 key);
		return -EINVAL;
	}
	rc = check_value(k, value, err, errlen);
	if (rc)
		return rc;
	if (oracle_settings_get(s, key)) {
		snprintf(err, errlen, "%s given twice", key);
		return -EINVAL;
	}
	if (s->n == ORACLE_MAX_SETTINGS || strlen(value) >= sizeof(s->s[0].value)) {
		snprintf(err, errlen, "%s: too many settings or value too long", key);
		return -E2BIG;
	}
	s->s[s->n].knob = k;
	s->s[s->n].origin = origin;
	snprintf(s->s[s->n].value, sizeof(s->s[0].value), "%s", value);
	s->n++;
	return 0;
}

int oracle_settings_parse(struct oracle_settings *s, const char *list, char *err, size_t errlen)
{
	char buf[1024], *save = NULL;
	int rc = 0;

	if (snprintf(buf, sizeof(buf), "%s", list) >= (int)sizeof(buf)) {
		snprintf(err, errlen, "list too long");
		return -E2BIG;
	}
	for (char *kv = strtok_r(buf, ",", &save); kv && !rc; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');

		if (!eq || eq == kv || !eq[1]) {
			snprintf(err, errlen, "'%s' is not KEY=VALUE", kv);
			return -EINVAL;
		}
		*eq = '\0';
		rc = oracle_settings_set(s, kv, eq + 1, ORACLE_ORIGIN_USER, err, errlen);
	}
	return rc;
}

/* What the pinned mode sets unless the user did: no proactive compaction by kcompactd, no
 * watermark boosting, no address-space randomisation (each removed a source of boot-to-boot
 * variation that repeated boots of one setting showed). */
void oracle_settings_pin(struct oracle_settings *s)
{
	static const char *const pinned[][2] = {
	    {"vm.compaction_proactiveness", "0"},
	    {"vm.watermark_boost_factor", "0"},
	    {"kernel.randomize_va_space", "0"},
	};
	char err[128];

	for (size_t i = 0; i < sizeof(pinned) / sizeof(pinned[0]); i++)
		if (!oracle_settings_get(s, pinned[i][0]))
			oracle_settings_set(s, pinned[i][0], pinned[i][1], ORACLE_ORIGIN_PINNED,
					    err, sizeof(err));
}

int oracle_settings_encode(const struct oracle_settings *s, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int cls = 0; cls < ORACLE_KNOB_CLASSES; cls++)
		for (int i = 0; i < s->n; i++) {
			int n;

			if ((int)s->s[i].knob->cls != cls)
				continue;
			n = snprintf(buf + used, len - used, "%s%s:%s", used ? "," : "",
				     s->s[i].knob->key, s->s[i].value);
			if (n < 0 || (size_t)n >= len - used)
				return -E2BIG;
			used += (size_t)n;
		}
	return 0;
}

const char *oracle_origin_name(enum oracle_origin o)
{
	return o == ORACLE_ORIGIN_PINNED ? "pinned" : "user";
}

/* Knobs thpemu's policies model, and their keys (core/mm/policy.c; core/policy/host.c reads the
 * host's THP files through the same keys). The per-size enables keep their name; a per-size
 * shmem_enabled is shmem-hugepages-SIZEkB. */
static const struct {
	const char *setting, *key;
	bool ms; /* the setting is in milliseconds, the key a duration */
} policy_keys[] = {
    {"shrink_underused", "shrink-underused", false},
    {"shmem_enabled", "shmem-enabled", false},
    {"tmpfs.huge", "tmpfs-huge", false},
    {"khugepaged/defrag", "khugepaged-defrag", false},
    {"khugepaged/pages_to_scan", "pages-to-scan", false},
    {"khugepaged/scan_sleep_millisecs", "scan-sleep", true},
    {"khugepaged/alloc_sleep_millisecs", "alloc-sleep", true},
    {"khugepaged/max_ptes_none", "max-ptes-none", false},
    {"khugepaged/max_ptes_swap", "max-ptes-swap", false},
    {"khugepaged/max_ptes_shared", "max-ptes-shared", false},
    {"vm.compaction_proactiveness", "proactiveness", false},
    {"vm.compact_unevictable_allowed", "compact-unevictable-allowed", false},
};

int oracle_setting_policy(const char *key, const char *value, char *buf, size_t len)
{
	const char *slash = strchr(key, '/');
	int n = -1;

	if (!strncmp(key, "hugepages-", 10) && !slash)
		n = snprintf(buf, len, "%s=%s", key, value);
	else if (slash && !strncmp(key, "hugepages-", 10) && !strcmp(slash, "/shmem_enabled"))
		n = snprintf(buf, len, "shmem-%.*s=%s", (int)(slash - key), key, value);
	for (size_t i = 0; n < 0 && i < sizeof(policy_keys) / sizeof(policy_keys[0]); i++)
		if (!strcmp(key, policy_keys[i].setting))
			n = snprintf(buf, len, "%s=%s%s", policy_keys[i].key, value,
				     policy_keys[i].ms ? "ms" : "");
	if (n < 0)
		return -ENOENT;
	return (size_t)n >= len ? -ENAMETOOLONG : 0;
}

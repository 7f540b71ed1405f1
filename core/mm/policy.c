/* Policy profiles as data, and the spec-string language that overrides them.
 *
 * Each named profile is a filled struct mm_policy describing one kernel era's THP fault path
 * (__alloc_pages_slowpath of mm/page_alloc.c in each kernel named): linux-3.1 (mainline 3.1.0),
 * linux-3.1+nostall (Mel Gorman's "mm: Do not stall in synchronous compaction for THP
 * allocations", linux-mm 10 Nov 2011, <20111110100616.GD3083@suse.de>, on 3.1, as Fedora
 * carried it), linux-3.2 and linux-3.2+nostall (mainline 3.2, the kernel the patch was written
 * and queued in -mm against), linux-3.3 (sync-light), linux-6.1 (Debian 12's LTS kernel with
 * Debian's defaults), and 6.12 with each transparent_hugepage/defrag mode. A spec
 * "NAME:key=value,..." starts from a profile and overrides fields; mm_policy_format() prints the
 * canonical spec (only the fields that differ from the profile), which parses back to the same
 * policy. A profile built from outside (the host's own settings, core/policy/host.c) comes in
 * through mm_policy_parse_ext: like all of core/mm, this file reads nothing but its arguments.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "mm/mm_policy.h"
#include "mm/internal.h"
#include "util/units.h"

/* khugepaged of 3.1-3.3 (mm/huge_memory.c): the defaults of khugepaged_init and the sysfs
 * knobs; no max_ptes_swap / max_ptes_shared (a swap entry aborts, page_count must be 1), no
 * deferred split queue (split_huge_page at once), no MADV_COLLAPSE. khugepaged's compaction
 * after reclaim runs in the fault's mode: its gfp is the fault's GFP_TRANSHUGE (3.1/3.2 SYNC;
 * 3.3 SYNC_LIGHT; Mel Gorman's nostall patch keys sync_migration on __GFP_NO_KSWAPD, which
 * khugepaged's mask carries too, so +nostall makes it ASYNC as well). */
#define KHUGEPAGED_3X(mode)                                                                        \
	.khugepaged = true, .pages_to_scan = 4096, .scan_sleep_ns = 10000000000ULL,                \
	.alloc_sleep_ns = 60000000000ULL, .max_ptes_none = 511, .max_ptes_swap = 0,                \
	.max_ptes_shared = 0, .khugepaged_defrag = true, .khugepaged_mode = (mode),                \
	.deferred_split = false, .shrink_underused = false, .madv_collapse = false

/* The per-size settings as 6.12 boots them (mm/huge_memory.c hugepage_init_sysfs: the PMD size
 * inherits transparent_hugepage/enabled, every other size is never). The 3.x eras carry the
 * same values, which their mechanism ignores (there is no mTHP before 6.8). */
#define THP_SIZES_DEFAULT                                                                          \
	.hugepages = {[MM_POLICY_PMD_ORDER] = MM_THP_SIZE_INHERIT}, .defrag_mode = 0, SHMEM_DEFAULT

/* Shared memory THP as 6.1 and 6.12 boot (mm/shmem.c: shmem_huge = SHMEM_HUGE_NEVER, which
 * shmem_init gives the internal mount; huge_shmem_orders_inherit = BIT(HPAGE_PMD_ORDER), every
 * other size never) and /dev/shm mounted without huge= (never). 3.x has none of it (shmem THP
 * came in 4.8, Kirill Shutemov's "shmem: add huge pages support", 800d8c63b2e9): the same
 * values, which policy_check holds it to. */
#define SHMEM_DEFAULT                                                                              \
	.shmem_enabled = MM_SHMEM_HUGE_NEVER,                                                      \
	.shmem_hugepages = {[MM_POLICY_PMD_ORDER] = MM_SHMEM_SIZE_INHERIT},                        \
	.tmpfs_huge = MM_SHMEM_HUGE_NEVER

static const struct mm_policy base_3_1 = {
    .name = "linux-3.1",
    .era = MM_ERA_3_1,
    .enabled = MM_THP_ALWAYS,
    .defrag = MM_DEFRAG_ALWAYS,
    .second_mode = MM_MIGRATE_SYNC,
    .async_failure_defers = true,
    .deferred_skips_reclaim = false,
    .reclaim_waits_writeback = true,
    .reclaim_writeout = true,
    .numa_two_pass = false,
    .sync_wait_from_pass = 3,
    .migrate_passes = 10,
    .wb_wait_max_ns = 0,
    .kswapd = true,
    .kcompactd = false,
    .proactiveness = 0,
    .compact_unevictable_allowed = false,
    .reclaim_skip = MM_RECLAIM_SKIP_NONE,
    KHUGEPAGED_3X(MM_MIGRATE_SYNC),
    .fs = MM_FS_VFAT,
    .kswapd_write = MM_KSWAPD_WRITE_ALWAYS,
    .reclaim_throttles = true,
    .iosched = MM_IOSCHED_CFQ,
    THP_SIZES_DEFAULT,
};

/* Mainline 3.2 (3.2-rc1, 7 Nov 2011, was current when Mel Gorman measured the stalls and posted
 * the nostall patch; -mm queued it on 3.2-rc). What changed from 3.1 for this path:
 *  - direct reclaim never writes filesystem pages (ee72886d8ed5, "mm: vmscan: do not writeback
 *    filesystem pages in direct reclaim"): a dirty file page is kept;
 *  - shrink_zones skips a zone for a costly order when compaction_suitable() ||
 *    compaction_deferred() (the || Andrea Arcangeli called a bug);
 *  - async compaction isolates clean pages only (ISOLATE_CLEAN, 39deaf8585152 "mm: compaction:
 *    make isolate_lru_page() filter-aware").
 * The synchronous reclaim pass, full SYNC compaction and "every failure defers" are as in 3.1. */
static const struct mm_policy base_3_2 = {
    .name = "linux-3.2",
    .era = MM_ERA_3_2,
    .enabled = MM_THP_ALWAYS,
    .defrag = MM_DEFRAG_ALWAYS,
    .second_mode = MM_MIGRATE_SYNC,
    .async_failure_defers = true,
    .deferred_skips_reclaim = false,
    .reclaim_waits_writeback = true,
    .reclaim_writeout = false,
    .numa_two_pass = false,
    .sync_wait_from_pass = 3,
    .migrate_passes = 10,
    .wb_wait_max_ns = 0,
    .kswapd = true,
    .kcompactd = false,
    .proactiveness = 0,
    .compact_unevictable_allowed = false,
    .reclaim_skip = MM_RECLAIM_SKIP_SUITABLE_OR_DEFERRED,
    KHUGEPAGED_3X(MM_MIGRATE_SYNC),
    .fs = MM_FS_VFAT,
    .kswapd_write = MM_KSWAPD_WRITE_PRESSURE,
    .reclaim_throttles = true,
    .iosched = MM_IOSCHED_CFQ,
    THP_SIZES_DEFAULT,
};

static const struct mm_policy base_3_3 = {
    .name = "linux-3.3",
    .era = MM_ERA_3_3,
    .enabled = MM_THP_ALWAYS,
    .defrag = MM_DEFRAG_ALWAYS,
    .second_mode = MM_MIGRATE_SYNC_LIGHT,
    .async_failure_defers = false,
    .deferred_skips_reclaim = true,
    .reclaim_waits_writeback = true, /* until 3.5 (commit 41ac199) */
    .reclaim_writeout = false,	     /* 3.2: only kswapd writes filesystem pages */
    .numa_two_pass = false,
    .sync_wait_from_pass = 3,
    .migrate_passes = 10,
    .wb_wait_max_ns = 0,
    .kswapd = true,
    .kcompactd = false,
    .proactiveness = 0,
    .compact_unevictable_allowed = false,
    .reclaim_skip = MM_RECLAIM_SKIP_READY,
    KHUGEPAGED_3X(MM_MIGRATE_SYNC_LIGHT),
    .fs = MM_FS_VFAT,
    .kswapd_write = MM_KSWAPD_WRITE_PRESSURE,
    .reclaim_throttles = true,
    .iosched = MM_IOSCHED_CFQ,
    THP_SIZES_DEFAULT,
};

static const struct mm_policy base_modern = {
    .name = "thp-always/madvise",
    .era = MM_ERA_MODERN,
    .enabled = MM_THP_ALWAYS,
    .defrag = MM_DEFRAG_MADVISE,
    .second_mode = MM_MIGRATE_SYNC_LIGHT,
    .async_failure_defers = false,
    .deferred_skips_reclaim = false,
    .reclaim_waits_writeback = false,
    .reclaim_writeout = false,
    .numa_two_pass = true,
    .sync_wait_from_pass = 0,
    .migrate_passes = 10,
    .wb_wait_max_ns = 0,
    .kswapd = true,
    .kcompactd = true,
    .proactiveness = 20,
    /* 6.12 mm/compaction.c sysctl_compact_unevictable_allowed = CONFIG_COMPACT_UNEVICTABLE_
     * DEFAULT (1 unless PREEMPT_RT; 6.1 the same) */
    .compact_unevictable_allowed = true,
    .reclaim_skip = MM_RECLAIM_SKIP_READY,
    /* 6.12 mm/khugepaged.c khugepaged_init (max_ptes_swap HPAGE_PMD_NR / 8, max_ptes_shared
     * HPAGE_PMD_NR / 2), khugepaged/defrag 1 (GFP_TRANSHUGE: compaction up to SYNC_LIGHT),
     * the deferred split queue, transparent_hugepage/shrink_underused 1, MADV_COLLAPSE */
    .khugepaged = true,
    .pages_to_scan = 4096,
    .scan_sleep_ns = 10000000000ULL,
    .alloc_sleep_ns = 60000000000ULL,
    .max_ptes_none = 511,
    .max_ptes_swap = 64,
    .max_ptes_shared = 256,
    .khugepaged_defrag = true,
    .khugepaged_mode = MM_MIGRATE_SYNC_LIGHT,
    .deferred_split = true,
    .shrink_underused = true,
    .madv_collapse = true,
    .fs = MM_FS_VFAT,
    .kswapd_write = MM_KSWAPD_WRITE_NEVER,
    .reclaim_throttles = true,
    .iosched = MM_IOSCHED_DEADLINE,
    THP_SIZES_DEFAULT,
};

/* Linux 6.1 as Debian 12 ships it (linux-image-6.1.0-*-cloud-amd64): CONFIG_TRANSPARENT_HUGEPAGE_
 * ALWAYS=y, and 6.1 mm/huge_memory.c transparent_hugepage_flags boots defrag=madvise
 * (DEFRAG_REQ_MADV_FLAG) with khugepaged/defrag 1. The tunables are 6.12's: 6.1
 * mm/khugepaged.c khugepaged_init (max_ptes_swap HPAGE_PMD_NR / 8, max_ptes_shared
 * HPAGE_PMD_NR / 2), mm/compaction.c sysctl_compaction_proactiveness 20 and
 * sysctl_extfrag_threshold 500, mm/page_alloc.c watermark_boost_factor 15000 and
 * watermark_scale_factor 10; MADV_COLLAPSE came in 6.1 (7d8faaf15545). What 6.1 lacks: the
 * underused-THP split of the shrinker (6.12, dafff3f4c850; 6.1's deferred split queue holds only
 * partly unmapped THPs, mm/rmap.c page_remove_rmap -> deferred_split_huge_page), multi-size THP
 * (6.8) and vm.defrag_mode (6.15); its fault also takes the NUMA two-pass path (6.1
 * mm/mempolicy.c vma_alloc_folio with hugepage: THISNODE|NORETRY first). So linux-6.1 is
 * thp-always/madvise with era 6.1 and no shrink_underused (policy_profile); the era's mechanism
 * differences are in core/mm/README.md. */

/* The modern profiles are named by their sysfs pair, "thp-ENABLED/DEFRAG", spelled as
 * /sys/kernel/mm/transparent_hugepage/{enabled,defrag} spell the values. '/' separates the two
 * because no value of either file contains it, it is not special to the shell, and the spec
 * syntax NAME[:KEY=VALUE,...] splits only on ':', ',' and '=' (a ':' would end the name).
 * Under enabled=never the defrag mode does not matter for PMD faults (no huge fault is tried),
 * nor for khugepaged (which does not run: hugepage_pmd_enabled() in 6.12 mm/huge_memory.c,
 * and uses khugepaged/defrag anyway: alloc_hugepage_khugepaged_gfpmask) nor MADV_COLLAPSE
 * (GFP_TRANSHUGE, mm/khugepaged.c alloc_charge_folio); it still sets the gfp of mTHP faults
 * of sizes enabled on their own (vma_thp_gfp_mask, called by alloc_anon_folio in mm/memory.c),
 * so all 15 pairs are kept. */
#define PAIR(e, d) "thp-" e "/" d
#define PAIRS(e)                                                                                   \
	PAIR(e, "always"), PAIR(e, "defer"), PAIR(e, "defer+madvise"), PAIR(e, "madvise"),         \
	    PAIR(e, "never")

static const char *const profile_names[] = {
    "linux-3.1", "linux-3.1+nostall", "linux-3.2",	"linux-3.2+nostall", "linux-3.3",
    "linux-6.1", PAIRS("always"),     PAIRS("madvise"), PAIRS("never"),	     NULL,
};

/* Yesterday's names, kept: "modern-X" was enabled=always with defrag=X (modern-never:
 * enabled=never, defrag at its default madvise). */
static const char *const alias_names[][2] = {
    {"modern-always", PAIR("always", "always")},
    {"modern-defer", PAIR("always", "defer")},
    {"modern-defer+madvise", PAIR("always", "defer+madvise")},
    {"modern-madvise", PAIR("always", "madvise")},
    {"modern-never", PAIR("never", "madvise")},
};

#define NALIASES (sizeof(alias_names) / sizeof(alias_names[0]))

const char *const *mm_policy_names(void)
{
	return profile_names;
}

size_t mm_policy_alias_count(void)
{
	return NALIASES;
}

const char *mm_policy_alias(size_t i, const char **canonical)
{
	if (i >= NALIASES)
		return NULL;
	if (canonical)
		*canonical = alias_names[i][1];
	return alias_names[i][0];
}

static void set_name(struct mm_policy *p, const char *name)
{
	snprintf(p->name, sizeof(p->name), "%s", name);
}

static const char *const enabled_values[] = {"always", "madvise", "never", NULL};
static const char *const defrag_values[] = {"always",  "defer", "defer+madvise",
					    "madvise", "never", NULL};

/* Fill p with a named profile (an alias yields its canonical name). Returns 0 or -EINVAL. */
static int policy_profile(const char *name, struct mm_policy *p)
{
	const char *slash;

	for (size_t i = 0; i < NALIASES; i++)
		if (!strcmp(name, alias_names[i][0]))
			name = alias_names[i][1];
	if (!strcmp(name, "linux-3.1") || !strcmp(name, "linux-3.1+nostall")) {
		*p = base_3_1;
		if (strchr(name, '+'))
			p->second_mode = p->khugepaged_mode = MM_MIGRATE_ASYNC;
		set_name(p, name);
		return 0;
	}
	if (!strcmp(name, "linux-3.2") || !strcmp(name, "linux-3.2+nostall")) {
		*p = base_3_2;
		if (strchr(name, '+'))
			p->second_mode = p->khugepaged_mode = MM_MIGRATE_ASYNC;
		set_name(p, name);
		return 0;
	}
	if (!strcmp(name, "linux-3.3")) {
		*p = base_3_3;
		return 0;
	}
	if (!strcmp(name, "linux-6.1")) {
		*p = base_modern;
		p->era = MM_ERA_6_1;
		p->shrink_underused = false;
		set_name(p, name);
		return 0;
	}
	if (strncmp(name, "thp-", 4) || !(slash = strchr(name, '/')))
		return -EINVAL;
	for (int e = 0; enabled_values[e]; e++) {
		if (strlen(enabled_values[e]) != (size_t)(slash - name - 4) ||
		    strncmp(name + 4, enabled_values[e], (size_t)(slash - name - 4)))
			continue;
		for (int d = 0; defrag_values[d]; d++) {
			if (strcmp(slash + 1, defrag_values[d]))
				continue;
			*p = base_modern;
			p->enabled = (enum mm_thp_enabled)e;
			p->defrag = (enum mm_defrag)d;
			set_name(p, name);
			return 0;
		}
	}
	return -EINVAL;
}

/* ---- Keys ------------------------------------------------------------------------------------ */

enum key_kind { K_ENUM, K_BOOL, K_UINT, K_DURATION };

struct key {
	const char *name;
	enum key_kind kind;
	size_t off;		   /* offset of the field in struct mm_policy */
	const char *const *values; /* K_ENUM: accepted spellings, index = value (+ enum_base) */
	int enum_base;		   /* K_ENUM: value of values[0] (second-compaction: -1) */
	unsigned max;		   /* K_UINT: inclusive bounds */
	unsigned min;
	const char *help;
};

static const char *const era_values[] = {"3.1", "3.2", "3.3", "6.1", "modern", NULL};
static const char *const mode_values[] = {"none", "async", "sync-light", "sync", NULL};
static const char *const skip_values[] = {"none", "suitable-or-deferred", "compaction-ready", NULL};
static const char *const fs_values[] = {"vfat", "ext4", "tmpfs", NULL};
static const char *const iosched_values[] = {"deadline", "cfq", NULL};
static const char *const kswapd_write_values[] = {"never", "always", "pressure", NULL};
static const char *const thp_size_values[] = {"never", "always", "madvise", "inherit", NULL};
/* mm/shmem.c shmem_parse_huge / thpsize_shmem_enabled_store spellings (6.12) */
static const char *const shmem_huge_values[] = {"never", "always", "within_size", "advise",
						"deny",	 "force",  NULL};
static const char *const tmpfs_huge_values[] = {"never", "always", "within_size", "advise", NULL};
static const char *const shmem_size_values[] = {"never",  "always",  "within_size",
						"advise", "inherit", NULL};

#define F(field) offsetof(struct mm_policy, field)

static const struct key keys[] = {
    {"era", K_ENUM, F(era), era_values, 0, 0, 0,
     "kernel era of the mechanism: scanners, isolation and migrate rules, watermarks "
     "(modern: 6.12)"},
    {"enabled", K_ENUM, F(enabled), enabled_values, 0, 0, 0, "transparent_hugepage/enabled"},
    {"defrag", K_ENUM, F(defrag), defrag_values, 0, 0, 0,
     "transparent_hugepage/defrag (defer modes need era=6.1 or modern)"},
    {"second-compaction", K_ENUM, F(second_mode), mode_values, -1, 0, 0,
     "migrate mode of the direct compaction after reclaim"},
    {"async-failure-defers", K_BOOL, F(async_failure_defers), NULL, 0, 0, 0,
     "an async compaction failure defers compaction (3.1)"},
    {"deferred-skips-reclaim", K_BOOL, F(deferred_skips_reclaim), NULL, 0, 0, 0,
     "a THP fault finding compaction deferred skips direct reclaim (3.3)"},
    {"reclaim-waits-writeback", K_BOOL, F(reclaim_waits_writeback), NULL, 0, 0, 0,
     "costly-order direct reclaim's synchronous pass waits on writeback (3.1-3.4)"},
    {"reclaim-writeout", K_BOOL, F(reclaim_writeout), NULL, 0, 0, 0,
     "direct reclaim writes dirty page cache out itself (3.1)"},
    {"reclaim-skip", K_ENUM, F(reclaim_skip), skip_values, 0, 0, 0,
     "zones direct reclaim skips for a costly order (3.2: suitable-or-deferred)"},
    {"numa-two-pass", K_BOOL, F(numa_two_pass), NULL, 0, 0, 0,
     "THISNODE|NORETRY attempt before the full slow path (modern NUMA)"},
    {"sync-wait-from-pass", K_UINT, F(sync_wait_from_pass), NULL, 0, 9, 0,
     "first migrate pass (from 0) in which SYNC waits on writeback"},
    {"migrate-passes", K_UINT, F(migrate_passes), NULL, 0, 10, 1, "migrate_pages passes"},
    {"wb-wait-max", K_DURATION, F(wb_wait_max_ns), NULL, 0, 0, 0,
     "bound on one writeback wait in compaction (0 = unbounded)"},
    {"kswapd", K_BOOL, F(kswapd), NULL, 0, 0, 0, "background reclaim thread"},
    {"kcompactd", K_BOOL, F(kcompactd), NULL, 0, 0, 0, "background compaction thread"},
    {"proactiveness", K_UINT, F(proactiveness), NULL, 0, 100, 0,
     "vm.compaction_proactiveness (0 = off)"},
    {"compact-unevictable-allowed", K_BOOL, F(compact_unevictable_allowed), NULL, 0, 0, 0,
     "vm.compact_unevictable_allowed: compaction migrates mlocked pages (4.1+: yes)"},
    {"khugepaged", K_BOOL, F(khugepaged), NULL, 0, 0, 0,
     "khugepaged collapses 4 KiB ranges into huge pages in the background"},
    {"pages-to-scan", K_UINT, F(pages_to_scan), NULL, 0, 4194304, 1,
     "khugepaged/pages_to_scan: scan progress per wake (4096)"},
    {"scan-sleep", K_DURATION, F(scan_sleep_ns), NULL, 0, 0, 0,
     "khugepaged/scan_sleep_millisecs: between wakes (10s)"},
    {"alloc-sleep", K_DURATION, F(alloc_sleep_ns), NULL, 0, 0, 0,
     "khugepaged/alloc_sleep_millisecs: after a failed allocation (60s)"},
    {"max-ptes-none", K_UINT, F(max_ptes_none), NULL, 0, 511, 0,
     "khugepaged/max_ptes_none: holes a collapse may fill (511)"},
    {"max-ptes-swap", K_UINT, F(max_ptes_swap), NULL, 0, 511, 0,
     "khugepaged/max_ptes_swap (6.12 64; 3.x none allowed)"},
    {"max-ptes-shared", K_UINT, F(max_ptes_shared), NULL, 0, 511, 0,
     "khugepaged/max_ptes_shared (6.12 256; 3.x none allowed)"},
    {"khugepaged-defrag", K_BOOL, F(khugepaged_defrag), NULL, 0, 0, 0,
     "khugepaged/defrag: its allocation may reclaim and compact"},
    {"khugepaged-compaction", K_ENUM, F(khugepaged_mode), mode_values, -1, 0, 0,
     "migrate mode of khugepaged's compaction after reclaim (3.16: sync-light)"},
    {"deferred-split", K_BOOL, F(deferred_split), NULL, 0, 0, 0,
     "a partly unmapped THP waits on the split queue for the shrinker (4.5+)"},
    {"shrink-underused", K_BOOL, F(shrink_underused), NULL, 0, 0, 0,
     "transparent_hugepage/shrink_underused: the shrinker splits underused THPs (6.12)"},
    {"madv-collapse", K_BOOL, F(madv_collapse), NULL, 0, 0, 0, "MADV_COLLAPSE exists (6.1+)"},
    {"fs", K_ENUM, F(fs), fs_values, 0, 0, 0,
     "file system of the device's files: vfat (no ->migratepage), ext4 (delalloc) or tmpfs "
     "(no swap: never dirty, never reclaimed)"},
    {"kswapd-writepage", K_ENUM, F(kswapd_write), kswapd_write_values, 0, 0, 0,
     "dirty pages kswapd writes itself (3.1 always, 3.2/3.3 pressure: priority < 10)"},
    {"throttle", K_BOOL, F(reclaim_throttles), NULL, 0, 0, 0,
     "reclaim/compaction naps: congestion_wait, wait_iff_congested, too_many_isolated"},
    {"iosched", K_ENUM, F(iosched), iosched_values, 0, 0, 0,
     "the device's I/O scheduler in the simulator (3.x default cfq; 6.12 mq-deadline)"},
#define THP_SIZE_KEY(kb, order)                                                                    \
	{                                                                                          \
		"hugepages-" #kb "kB", K_ENUM, F(hugepages[order]), thp_size_values, 0, 0, 0,      \
		    "transparent_hugepage/hugepages-" #kb "kB/enabled: order-" #order              \
		    " anon THP faults (6.8+)"                                                      \
	}
    THP_SIZE_KEY(16, 2),
    THP_SIZE_KEY(32, 3),
    THP_SIZE_KEY(64, 4),
    THP_SIZE_KEY(128, 5),
    THP_SIZE_KEY(256, 6),
    THP_SIZE_KEY(512, 7),
    THP_SIZE_KEY(1024, 8),
    THP_SIZE_KEY(2048, 9),
    {"defrag-mode", K_UINT, F(defrag_mode), NULL, 0, 1, 0,
     "vm.defrag_mode (6.15): 1 = no fallback steals before reclaim and compaction ran"},
    {"shmem-enabled", K_ENUM, F(shmem_enabled), shmem_huge_values, 0, 0, 0,
     "transparent_hugepage/shmem_enabled: THP for MAP_SHARED anonymous, memfd and SysV shm "
     "(4.8+; deny/force: every tmpfs mount too)"},
#define SHMEM_SIZE_KEY(kb, order)                                                                  \
	{                                                                                          \
		"shmem-hugepages-" #kb "kB", K_ENUM, F(shmem_hugepages[order]), shmem_size_values, \
		    0, 0, 0,                                                                       \
		    "transparent_hugepage/hugepages-" #kb "kB/shmem_enabled: order-" #order        \
		    " anonymous shmem folios (6.12)"                                               \
	}
    SHMEM_SIZE_KEY(16, 2),
    SHMEM_SIZE_KEY(32, 3),
    SHMEM_SIZE_KEY(64, 4),
    SHMEM_SIZE_KEY(128, 5),
    SHMEM_SIZE_KEY(256, 6),
    SHMEM_SIZE_KEY(512, 7),
    SHMEM_SIZE_KEY(1024, 8),
    SHMEM_SIZE_KEY(2048, 9),
    {"tmpfs-huge", K_ENUM, F(tmpfs_huge), tmpfs_huge_values, 0, 0, 0,
     "huge= of the tmpfs mount POSIX shm files live on (/dev/shm; 4.8+)"},
};

/* Keys of 6.8+ (mTHP) and 6.15 (defrag_mode): the 3.x and 6.1 eras have nothing they could
 * mean. */
static bool key_is_modern_only(const struct key *k)
{
	return k->off >= F(hugepages) && k->off <= F(defrag_mode);
}

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static int key_get(const struct mm_policy *p, const struct key *k)
{
	const char *base = (const char *)p + k->off;

	switch (k->kind) {
	case K_BOOL:
		return *(const bool *)base;
	case K_ENUM:
		if (k->enum_base)
			return *(const int *)base;
		return (int)*(const unsigned *)base;
	default:
		return (int)*(const unsigned *)base;
	}
}

static void key_set_int(struct mm_policy *p, const struct key *k, int v)
{
	char *base = (char *)p + k->off;

	if (k->kind == K_BOOL)
		*(bool *)base = v != 0;
	else if (k->kind == K_ENUM && k->enum_base)
		*(int *)base = v;
	else
		*(unsigned *)base = (unsigned)v;
}

static void seterr(char *err, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

static void list_values(const char *const *v, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (; *v && used < len; v++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? "|" : "", *v);
}

static int parse_bool(const char *v, bool *out)
{
	static const char *const yes[] = {"yes", "true", "on", "1"};
	static const char *const no[] = {"no", "false", "off", "0"};

	for (int i = 0; i < 4; i++) {
		if (!strcasecmp(v, yes[i]))
			return *out = true, 0;
		if (!strcasecmp(v, no[i]))
			return *out = false, 0;
	}
	return -EINVAL;
}

static int key_parse(struct mm_policy *p, const struct key *k, const char *v, char *err,
		     size_t errlen)
{
	char accepted[160];
	uint64_t u;
	bool b;

	switch (k->kind) {
	case K_ENUM:
		for (int i = 0; k->values[i]; i++) {
			if (!strcmp(v, k->values[i])) {
				key_set_int(p, k, i + k->enum_base);
				return 0;
			}
		}
		list_values(k->values, accepted, sizeof(accepted));
		seterr(err, errlen, "policy key '%s': got '%s', accepted: %s", k->name, v,
		       accepted);
		return -EINVAL;
	case K_BOOL:
		if (parse_bool(v, &b)) {
			seterr(err, errlen, "policy key '%s': got '%s', accepted: yes|no", k->name,
			       v);
			return -EINVAL;
		}
		key_set_int(p, k, b);
		return 0;
	case K_UINT:
		if (units_parse_uint(v, k->max, &u) || u < k->min) {
			seterr(err, errlen,
			       "policy key '%s': got '%s', accepted: an integer %u..%u", k->name, v,
			       k->min, k->max);
			return -EINVAL;
		}
		key_set_int(p, k, (int)u);
		return 0;
	case K_DURATION:
		if (units_parse_duration(v, &u)) {
			seterr(
			    err, errlen,
			    "policy key '%s': got '%s', accepted: a duration such as 50ms, 2s or 0",
			    k->name, v);
			return -EINVAL;
		}
		*(uint64_t *)((char *)p + k->off) = u;
		return 0;
	}
	return -EINVAL;
}

static const struct key *find_key(const char *name, size_t len)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (strlen(keys[i].name) == len && !strncmp(keys[i].name, name, len))
			return &keys[i];
	return NULL;
}

static void key_names(char *buf, size_t len)
{
	size_t used = 0;

	for (size_t i = 0; i < NKEYS && used < len; i++)
		used +=
		    (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", keys[i].name);
}

/* Combinations no kernel had and the mechanism cannot give a meaning to. */
static int policy_check(const struct mm_policy *p, char *err, size_t errlen)
{
	if (p->era < MM_ERA_6_1 &&
	    (p->defrag == MM_DEFRAG_DEFER || p->defrag == MM_DEFRAG_DEFER_MADVISE)) {
		seterr(err, errlen,
		       "policy key 'defrag': '%s' needs era=modern or era=6.1 (3.x had "
		       "always|madvise|never)",
		       defrag_values[p->defrag]);
		return -EINVAL;
	}
	/* transparent_hugepage/shrink_underused and the fully mapped THPs it queues at fault came
	 * in 6.12 (dafff3f4c850): 6.1's sysfs has no such file. */
	if (p->era == MM_ERA_6_1 && p->shrink_underused) {
		seterr(err, errlen,
		       "policy key 'shrink-underused': yes needs era=modern (it came in 6.12; the "
		       "thp-* profiles turn it on): for 6.1 start from linux-6.1, e.g. "
		       "linux-6.1:enabled=always,defrag=madvise, or add shrink-underused=no");
		return -EINVAL;
	}
	if (p->era != MM_ERA_MODERN) {
		for (unsigned o = MM_POLICY_MTHP_MIN_ORDER; o <= MM_POLICY_PMD_ORDER; o++) {
			unsigned want =
			    o == MM_POLICY_PMD_ORDER ? MM_THP_SIZE_INHERIT : MM_THP_SIZE_NEVER;

			if (p->hugepages[o] != want) {
				seterr(err, errlen,
				       "policy key 'hugepages-%lukB': multi-size THP needs "
				       "era=modern (it came in 6.8; era %s has only "
				       "transparent_hugepage/enabled)",
				       (4UL << o), era_values[p->era]);
				return -EINVAL;
			}
		}
		if (p->defrag_mode) {
			seterr(err, errlen,
			       "policy key 'defrag-mode': needs era=modern (vm.defrag_mode came in "
			       "6.15)");
			return -EINVAL;
		}
		/* 6.1 mm/shmem.c has shmem_enabled and huge= but no per-size shmem_enabled */
		for (unsigned o = MM_POLICY_MTHP_MIN_ORDER; o <= MM_POLICY_PMD_ORDER; o++) {
			unsigned want =
			    o == MM_POLICY_PMD_ORDER ? MM_SHMEM_SIZE_INHERIT : MM_SHMEM_SIZE_NEVER;

			if (p->shmem_hugepages[o] != want) {
				seterr(
				    err, errlen,
				    "policy key 'shmem-hugepages-%lukB': per-size shmem THP needs "
				    "era=modern (6.1 has only transparent_hugepage/shmem_enabled)",
				    (4UL << o));
				return -EINVAL;
			}
		}
	}
	if (p->era < MM_ERA_6_1 &&
	    (p->shmem_enabled != MM_SHMEM_HUGE_NEVER || p->tmpfs_huge != MM_SHMEM_HUGE_NEVER)) {
		seterr(err, errlen,
		       "policy key '%s': needs era=6.1 or modern (shmem THP came in 4.8; era %s "
		       "gives shared memory 4 KiB pages only)",
		       p->shmem_enabled != MM_SHMEM_HUGE_NEVER ? "shmem-enabled" : "tmpfs-huge",
		       era_values[p->era]);
		return -EINVAL;
	}
	/* 6.12 shmem_enabled_store / thpsize_shmem_enabled_store: "force" may not override the
	 * huge allocation policy with non-PMD sizes, so force and a smaller inherit size exclude
	 * each other */
	if (p->shmem_enabled == MM_SHMEM_HUGE_FORCE) {
		for (unsigned o = MM_POLICY_MTHP_MIN_ORDER; o < MM_POLICY_PMD_ORDER; o++) {
			if (p->shmem_hugepages[o] == MM_SHMEM_SIZE_INHERIT) {
				seterr(err, errlen,
				       "policy key 'shmem-enabled': force refuses an inherit size "
				       "below 2048kB (shmem-hugepages-%lukB=inherit), as "
				       "shmem_enabled_store does",
				       (4UL << o));
				return -EINVAL;
			}
		}
	}
	return 0;
}

static int parse_assignment(struct mm_policy *p, const char *item, size_t len, char *err,
			    size_t errlen, const struct key **modern_key)
{
	const char *eq = memchr(item, '=', len);
	const struct key *k;
	char value[64], names[800];
	size_t vlen;

	if (!eq) {
		seterr(err, errlen, "policy: '%.*s' is not KEY=VALUE", (int)len, item);
		return -EINVAL;
	}
	if ((size_t)(eq - item) == 6 && !memcmp(item, "plugin", 6)) {
		vlen = len - 7;
		if (vlen == 0 || vlen >= sizeof(p->plugin)) {
			seterr(err, errlen,
			       "policy key 'plugin': missing or overlong path (a shared object, "
			       "at most %zu bytes)",
			       sizeof(p->plugin) - 1);
			return -EINVAL;
		}
		memcpy(p->plugin, eq + 1, vlen);
		p->plugin[vlen] = '\0';
		return 0;
	}
	k = find_key(item, (size_t)(eq - item));
	if (!k) {
		key_names(names, sizeof(names));
		seterr(err, errlen, "policy: unknown key '%.*s' (accepted: %s)", (int)(eq - item),
		       item, names);
		return -EINVAL;
	}
	vlen = len - (size_t)(eq - item) - 1;
	if (vlen == 0 || vlen >= sizeof(value)) {
		seterr(err, errlen, "policy key '%s': missing or overlong value", k->name);
		return -EINVAL;
	}
	memcpy(value, eq + 1, vlen);
	value[vlen] = '\0';
	if (key_is_modern_only(k))
		*modern_key = k;
	return key_parse(p, k, value, err, errlen);
}

/* One KEY=VALUE of the spec language on p (the grammar's own check, no cross-key rule). */
int mm_policy_set(struct mm_policy *p, const char *key, const char *value, char *err, size_t errlen)
{
	const struct key *k = find_key(key, strlen(key));
	char names[800];

	if (!k) {
		key_names(names, sizeof(names));
		seterr(err, errlen, "policy: unknown key '%s' (accepted: %s)", key, names);
		return -EINVAL;
	}
	return key_parse(p, k, value, err, errlen);
}

int mm_policy_parse_ext(const char *spec, const struct mm_policy_profile *extra,
			struct mm_policy *out, char *err, size_t errlen)
{
	char name[64], accepted[1024];
	const struct key *modern_key = NULL;
	const char *colon, *item;
	struct mm_policy p;
	size_t nlen;
	int ret;

	if (!spec)
		spec = "";
	colon = strchr(spec, ':');
	nlen = colon ? (size_t)(colon - spec) : strlen(spec);
	if (extra && strlen(extra->name) == nlen && !strncmp(spec, extra->name, nlen)) {
		ret = extra->fill(extra->arg, &p, err, errlen);
		if (ret)
			return ret;
	} else if (nlen >= sizeof(name) ||
		   (memcpy(name, spec, nlen), name[nlen] = '\0', policy_profile(name, &p))) {
		/* the 15 sysfs pairs as one pattern and the aliases by their prefix: the whole
		 * list would not fit a caller's 256-byte message (thpemu policies lists them) */
		accepted[0] = '\0';
		for (size_t i = 0; profile_names[i]; i++) {
			if (!strncmp(profile_names[i], "thp-", 4))
				continue;
			strncat(accepted, profile_names[i],
				sizeof(accepted) - strlen(accepted) - 2);
			strcat(accepted, "|");
		}
		strncat(accepted, "thp-ENABLED/DEFRAG", sizeof(accepted) - strlen(accepted) - 1);
		if (extra) {
			strncat(accepted, "|", sizeof(accepted) - strlen(accepted) - 1);
			strncat(accepted, extra->name, sizeof(accepted) - strlen(accepted) - 1);
		}
		strncat(accepted, " and the modern-* aliases: thpemu policies lists them",
			sizeof(accepted) - strlen(accepted) - 1);
		seterr(err, errlen, "policy: unknown profile '%.*s' (accepted: %s)", (int)nlen,
		       spec, accepted);
		return -EINVAL;
	}
	for (item = colon ? colon + 1 : NULL; item;) {
		const char *end = strchr(item, ',');
		size_t len = end ? (size_t)(end - item) : strlen(item);

		if (!len) { /* "linux-3.1:", "a=1,": a typo, not a default */
			seterr(err, errlen,
			       "policy: an empty item (a ':' or ',' with no KEY=VALUE after it)");
			return -EINVAL;
		}
		ret = parse_assignment(&p, item, len, err, errlen, &modern_key);
		if (ret)
			return ret;
		item = end ? end + 1 : NULL;
	}
	if (modern_key && p.era != MM_ERA_MODERN) {
		seterr(err, errlen, "policy key '%s': needs era=modern (%s)", modern_key->name,
		       modern_key->off == F(defrag_mode)
			   ? "vm.defrag_mode came in 6.15"
			   : (p.era == MM_ERA_6_1 ? "multi-size THP came in 6.8; 6.1 has only "
						    "transparent_hugepage/enabled"
						  : "multi-size THP came in 6.8; 3.x has only "
						    "transparent_hugepage/enabled"));
		return -EINVAL;
	}
	ret = policy_check(&p, err, errlen);
	if (ret)
		return ret;
	*out = p;
	return 0;
}

int mm_policy_parse(const char *spec, struct mm_policy *out, char *err, size_t errlen)
{
	return mm_policy_parse_ext(spec, NULL, out, err, errlen);
}

static void format_duration(uint64_t ns, char *buf, size_t len)
{
	if (ns == 0)
		snprintf(buf, len, "0");
	else if (ns % 1000000000ULL == 0)
		snprintf(buf, len, "%llus", (unsigned long long)(ns / 1000000000ULL));
	else if (ns % 1000000ULL == 0)
		snprintf(buf, len, "%llums", (unsigned long long)(ns / 1000000ULL));
	else if (ns % 1000ULL == 0)
		snprintf(buf, len, "%lluus", (unsigned long long)(ns / 1000ULL));
	else
		snprintf(buf, len, "%lluns", (unsigned long long)ns);
}

static void format_value(const struct mm_policy *p, const struct key *k, char *buf, size_t len)
{
	switch (k->kind) {
	case K_ENUM:
		snprintf(buf, len, "%s", k->values[key_get(p, k) - k->enum_base]);
		break;
	case K_BOOL:
		snprintf(buf, len, "%s", key_get(p, k) ? "yes" : "no");
		break;
	case K_UINT:
		snprintf(buf, len, "%d", key_get(p, k));
		break;
	case K_DURATION:
		format_duration(*(const uint64_t *)((const char *)p + k->off), buf, len);
		break;
	}
}

const char *mm_policy_key(size_t i, const struct mm_policy *p, char *buf, size_t len, bool *number)
{
	if (i >= NKEYS)
		return NULL;
	format_value(p, &keys[i], buf, len);
	if (number)
		*number = keys[i].kind == K_UINT;
	return keys[i].name;
}

void mm_policy_format(const struct mm_policy *p, char *buf, size_t len)
{
	const char *name = p->name;
	struct mm_policy base;
	size_t used;
	int n = 0;

	if (!len)
		return;
	if (policy_profile(name, &base)) {
		/* not built by mm_policy_parse: spell out what differs from linux-3.1 */
		name = "linux-3.1";
		base = base_3_1;
	}
	used = (size_t)snprintf(buf, len, "%s", name);
	for (size_t i = 0; i < NKEYS && used < len; i++) {
		const struct key *k = &keys[i];
		char a[32], b[32];

		format_value(p, k, a, sizeof(a));
		format_value(&base, k, b, sizeof(b));
		if (!strcmp(a, b))
			continue;
		used += (size_t)snprintf(buf + used, len - used, "%c%s=%s", n++ ? ',' : ':',
					 k->name, a);
	}
	if (p->plugin[0] && used < len)
		snprintf(buf + used, len - used, "%cplugin=%s", n ? ',' : ':', p->plugin);
}

const char *mm_policy_key_doc(size_t i, char *accepted, size_t len, const char **help)
{
	const struct key *k;

	if (i >= NKEYS)
		return NULL;
	k = &keys[i];
	switch (k->kind) {
	case K_ENUM:
		list_values(k->values, accepted, len);
		break;
	case K_BOOL:
		snprintf(accepted, len, "yes|no");
		break;
	case K_UINT:
		snprintf(accepted, len, "%u..%u", k->min, k->max);
		break;
	case K_DURATION:
		snprintf(accepted, len, "DURATION");
		break;
	}
	if (help)
		*help = k->help;
	return k->name;
}

/* For mm_create: reject a hand-built policy the mechanism cannot run. */
int mm_policy_validate(const struct mm_policy *p, char *err, size_t errlen)
{
	if ((unsigned)p->era > MM_ERA_MODERN || (unsigned)p->enabled > MM_THP_NEVER ||
	    (unsigned)p->defrag > MM_DEFRAG_NEVER || p->second_mode < -1 ||
	    p->second_mode > MM_MIGRATE_SYNC || p->migrate_passes < 1 || p->migrate_passes > 10 ||
	    p->proactiveness > 100 || (unsigned)p->reclaim_skip > MM_RECLAIM_SKIP_READY ||
	    p->khugepaged_mode < -1 || p->khugepaged_mode > MM_MIGRATE_SYNC ||
	    p->max_ptes_none > 511 || p->max_ptes_swap > 511 || p->max_ptes_shared > 511 ||
	    p->defrag_mode > 1 || p->shmem_enabled > MM_SHMEM_HUGE_FORCE ||
	    p->tmpfs_huge > MM_SHMEM_HUGE_ADVISE) {
		seterr(err, errlen, "policy: a field is out of range");
		return -EINVAL;
	}
	for (unsigned o = 0; o <= MM_POLICY_PMD_ORDER; o++) {
		if (p->hugepages[o] > MM_THP_SIZE_INHERIT ||
		    (o < MM_POLICY_MTHP_MIN_ORDER && p->hugepages[o] != MM_THP_SIZE_NEVER) ||
		    p->shmem_hugepages[o] > MM_SHMEM_SIZE_INHERIT ||
		    (o < MM_POLICY_MTHP_MIN_ORDER &&
		     p->shmem_hugepages[o] != MM_SHMEM_SIZE_NEVER)) {
			seterr(err, errlen, "policy: a field is out of range");
			return -EINVAL;
		}
	}
	return policy_check(p, err, errlen);
}

/* thp_vma_allowable_orders for anonymous faults (6.12 mm/huge_memory.c
 * __thp_vma_allowable_orders with the masks of hugepage_init_sysfs / anon_enabled_store): the
 * always mask, the madvise mask under MADV_HUGEPAGE, the inherit mask when the top-level
 * setting allows the VMA; nothing under MADV_NOHUGEPAGE. 3.x: the PMD order when
 * transparent_hugepage/enabled allows it (hugepage_vma_check). */
uint16_t mm_thp_allowable_orders(const struct mm_policy *p, enum mm_vma_advice advice)
{
	bool madvised = advice == MM_VMA_HUGEPAGE;
	bool global = p->enabled == MM_THP_ALWAYS || (p->enabled == MM_THP_MADVISE && madvised);
	uint16_t orders = 0;

	if (advice == MM_VMA_NOHUGEPAGE)
		return 0;
	if (p->era != MM_ERA_MODERN)
		return global ? (uint16_t)(1U << MM_HPAGE_ORDER) : 0;
	for (unsigned o = MM_POLICY_MTHP_MIN_ORDER; o <= MM_POLICY_PMD_ORDER; o++) {
		switch (p->hugepages[o]) {
		case MM_THP_SIZE_ALWAYS:
			orders |= (uint16_t)(1U << o);
			break;
		case MM_THP_SIZE_MADVISE:
			orders |= madvised ? (uint16_t)(1U << o) : 0;
			break;
		case MM_THP_SIZE_INHERIT:
			orders |= global ? (uint16_t)(1U << o) : 0;
			break;
		default:
			break;
		}
	}
	return orders;
}

/* ---- prctl(PR_SET_THP_DISABLE) --------------------------------------------------------------- */

#define PR_THP_DISABLE_EXCEPT_ADVISED_ (1UL << 1) /* include/uapi/linux/prctl.h, 6.18 */

/* 6.18 include/linux/huge_mm.h vma_thp_disabled (commit 9dc21bbd62ed "prctl: extend
 * PR_SET_THP_DISABLE to optionally exclude VM_HUGEPAGE", and 21c94e7e73e4 for MADV_COLLAPSE's
 * forced_collapse): VM_NOHUGEPAGE, then MMF_DISABLE_THP_COMPLETELY, then VM_HUGEPAGE allows,
 * then a forced collapse allows, then MMF_DISABLE_THP_EXCEPT_ADVISED. */
bool mm_vma_thp_disabled(enum mm_vma_advice advice, enum mm_thp_disable d, bool forced_collapse)
{
	if (advice == MM_VMA_NOHUGEPAGE || d == MM_THP_DISABLE_COMPLETELY)
		return true;
	if (advice == MM_VMA_HUGEPAGE || forced_collapse)
		return false;
	return d == MM_THP_DISABLE_EXCEPT_ADVISED;
}

/* 6.18 kernel/sys.c prctl_set_thp_disable: flags only when disabling, one flag known; the call
 * sets one MMF flag and clears the other, or clears both. PR_SET_THP_DISABLE itself came with
 * Linux 3.15 (a0715cc22601), after every 3.x profile. */
int mm_prctl_set_thp_disable(const struct mm_policy *p, unsigned long thp_disable,
			     unsigned long flags, unsigned long a4, unsigned long a5,
			     enum mm_thp_disable *d)
{
	if (p->era < MM_ERA_6_1)
		return -ENOSYS;
	if (a4 || a5)
		return -EINVAL;
	if ((!thp_disable && flags) || (flags & ~PR_THP_DISABLE_EXCEPT_ADVISED_))
		return -EINVAL;
	if (!thp_disable)
		*d = MM_THP_DISABLE_NONE;
	else if (flags & PR_THP_DISABLE_EXCEPT_ADVISED_)
		*d = MM_THP_DISABLE_EXCEPT_ADVISED;
	else
		*d = MM_THP_DISABLE_COMPLETELY;
	return 0;
}

/* 6.18 kernel/sys.c prctl_get_thp_disable: "1 | flags" when disabled. */
int mm_prctl_get_thp_disable(enum mm_thp_disable d)
{
	switch (d) {
	case MM_THP_DISABLE_COMPLETELY:
		return 1;
	case MM_THP_DISABLE_EXCEPT_ADVISED:
		return 1 | (int)PR_THP_DISABLE_EXCEPT_ADVISED_;
	default:
		return 0;
	}
}

enum mm_thp_disable mm_thp_disable_from_prctl(long v)
{
	if (v == 1)
		return MM_THP_DISABLE_COMPLETELY;
	if (v == (1 | (long)PR_THP_DISABLE_EXCEPT_ADVISED_))
		return MM_THP_DISABLE_EXCEPT_ADVISED;
	return MM_THP_DISABLE_NONE;
}

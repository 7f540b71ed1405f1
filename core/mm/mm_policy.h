/* Policy profiles: what a kernel era does on a THP fault, as data.
 *
 * A profile says which slow-path steps run, in which migrate mode, which failures defer
 * compaction, whether a deferred THP fault skips reclaim, how compaction scanners behave in that
 * era, and what background threads do. Mechanism (the core/mm sources) reads the table; nothing in
 * the mechanism tests a profile's name.
 *
 * Named profiles (mm_policy_names()):
 *   linux-3.1            mainline 3.1.0: async compaction, reclaim (which writes dirty pages out
 *                        itself), then full SYNC compaction (waits on writeback from pass 3,
 *                        writes dirty pages out)
 *   linux-3.1+nostall    Mel Gorman's Nov 2011 patch on 3.1 (Fedora 3.1.x): second compaction async
 *   linux-3.2            mainline 3.2 (3.2-rc1 was current when the 2011 stalls were measured):
 *                        as 3.1, but direct reclaim no longer writes filesystem pages, skips the
 *                        zone for a costly order when compaction is suitable or deferred, and
 *                        async compaction isolates clean pages only
 *   linux-3.2+nostall    Mel's patch as queued in -mm on 3.2-rc: second compaction async
 *   linux-3.3            sync-light second compaction, only sync failures defer, a deferred
 *                        THP fault skips direct reclaim
 *   linux-6.1            Debian 12's 6.1 LTS with Debian's defaults (enabled=always,
 *                        defrag=madvise): the 6.x mechanism without what came after 6.1 (no
 *                        mTHP, no underused-THP shrinker, no batched migration, 6.1's fallback
 *                        stealing and async compaction failure rule). Any sysfs pair on 6.1 is
 *                        linux-6.1:enabled=ENABLED,defrag=DEFRAG
 *   thp-ENABLED/DEFRAG   6.12 with transparent_hugepage/enabled=ENABLED (always|madvise|never)
 *                        and defrag=DEFRAG (always|defer|defer+madvise|madvise|never), all 15
 *                        pairs (gfp table of vma_thp_gfp_mask); enabled=madvise gives huge pages
 *                        only to MADV_HUGEPAGE ranges (mm_thp_allowable_orders)
 *   modern-always, modern-defer, modern-defer+madvise, modern-madvise
 *                        aliases of thp-always/DEFRAG (enabled=always!); modern-never is an
 *                        alias of thp-never/madvise (mm_policy_alias())
 *
 * A profile mm cannot know, such as `host` (this machine's sysfs values: core/policy/host.c),
 * is filled by the caller and named to mm_policy_parse_ext (struct mm_policy_profile): mm
 * reads nothing but its arguments (mm.h).
 *
 * Multi-size THP (6.8+): keys hugepages-16kB .. hugepages-2048kB (always|inherit|madvise|never,
 * the sysfs files transparent_hugepage/hugepages-<size>kB/enabled) choose the fault orders of
 * the modern profiles; defrag-mode=0|1 is vm.defrag_mode (6.15). The 3.x and 6.1 eras reject
 * them, and 6.1 rejects shrink-underused=yes (6.12).
 *
 * Shared memory THP (4.8+): shmem-enabled=always|within_size|advise|never|deny|force
 * (transparent_hugepage/shmem_enabled), shmem-hugepages-16kB .. -2048kB (6.12's per-size
 * shmem_enabled, anonymous shmem only) and tmpfs-huge (the huge= option of /dev/shm's tmpfs).
 * The 3.x eras reject them (no shmem THP before 4.8), 6.1 the per-size keys.
 *
 * Policy plugin: key plugin=PATH[?ARGS] names a shared object with the thpemu_policy.h ABI
 * that chooses fault orders in place of the built-in rules (loaded above mm, core/policy).
 *
 * Spec strings: NAME[:KEY=VALUE[,KEY=VALUE...]] start from a named profile and override fields
 * (for example "linux-3.1:wb-wait-max=50ms"). mm_policy_key_doc() documents the keys
 * (core/policy's policy_help prints them).
 */
#ifndef THPEMU_MM_POLICY_H
#define THPEMU_MM_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum mm_era {
	MM_ERA_3_1,    /* 3.1: bool sync migration, restart-from-scratch scanners, async
			* compaction isolates every LRU page */
	MM_ERA_3_2,    /* 3.2: as 3.1, async compaction isolates clean pages only (ISOLATE_CLEAN) */
	MM_ERA_3_3,    /* 3.3: enum migrate_mode with SYNC_LIGHT, still restart-from-scratch */
	MM_ERA_6_1,    /* 6.1: the 6.x mechanism (cached scanner positions, skip bits,
			* compaction priorities) as 6.1 had it: see core/mm/README.md */
	MM_ERA_MODERN, /* 6.12: cached scanner positions, skip bits, compaction priorities */
};

enum mm_thp_enabled { MM_THP_ALWAYS, MM_THP_MADVISE, MM_THP_NEVER };

/* transparent_hugepage/hugepages-<size>kB/enabled (multi-size THP, 6.8+): per anon order 2..9.
 * Zero is never, so a policy built without mm_policy_parse has no mTHP sizes. */
enum mm_thp_size {
	MM_THP_SIZE_NEVER,
	MM_THP_SIZE_ALWAYS,
	MM_THP_SIZE_MADVISE,
	MM_THP_SIZE_INHERIT, /* follow transparent_hugepage/enabled */
};
#define MM_POLICY_MTHP_MIN_ORDER 2 /* hugepages-16kB: order 1 is shmem-only (8kB) */

/* Shared memory THP (shmem, tmpfs): /sys/kernel/mm/transparent_hugepage/shmem_enabled and the
 * tmpfs huge= mount option (mm/shmem.c SHMEM_HUGE_*; 4.8+). Zero is never, so a policy built
 * without mm_policy_parse has no shmem THP. DENY and FORCE exist in shmem_enabled only. */
enum mm_shmem_huge {
	MM_SHMEM_HUGE_NEVER,
	MM_SHMEM_HUGE_ALWAYS,
	MM_SHMEM_HUGE_WITHIN_SIZE,
	MM_SHMEM_HUGE_ADVISE,
	MM_SHMEM_HUGE_DENY,  /* shmem_enabled only: off for every mount, for emergency use */
	MM_SHMEM_HUGE_FORCE, /* shmem_enabled only: on for every mount, for testing */
};
/* transparent_hugepage/hugepages-<size>kB/shmem_enabled (6.12): per order 2..9, anonymous
 * shmem (MAP_SHARED|MAP_ANONYMOUS) only. Zero is never. */
enum mm_shmem_size {
	MM_SHMEM_SIZE_NEVER,
	MM_SHMEM_SIZE_ALWAYS,
	MM_SHMEM_SIZE_WITHIN_SIZE,
	MM_SHMEM_SIZE_ADVISE,
	MM_SHMEM_SIZE_INHERIT, /* follow shmem_enabled */
};
#define MM_POLICY_PMD_ORDER 9 /* hugepages-2048kB */
enum mm_defrag {
	MM_DEFRAG_ALWAYS,
	MM_DEFRAG_DEFER,
	MM_DEFRAG_DEFER_MADVISE,
	MM_DEFRAG_MADVISE,
	MM_DEFRAG_NEVER,
};

/* Which zones direct reclaim for a costly order skips because compaction could run instead. */
enum mm_reclaim_skip {
	MM_RECLAIM_SKIP_NONE,		      /* 3.1: reclaim every zone */
	MM_RECLAIM_SKIP_SUITABLE_OR_DEFERRED, /* 3.2: compaction_suitable() || compaction_deferred()
					       */
	MM_RECLAIM_SKIP_READY, /* 3.3+: compaction_ready() (free >= high + gap, suitable) */
};

/* The file system of the device's files (3.1/3.2 address_space_operations). */
enum mm_fs {
	MM_FS_VFAT,  /* fs/fat/inode.c fat_aops: no ->migratepage, so mm/migrate.c
		      * fallback_migrate_page writes a dirty page out (writeout) before migrating
		      * it; fat_writepage (block_write_full_page) writes from reclaim */
	MM_FS_EXT4,  /* fs/ext4/inode.c ext4_da_aops: ->migratepage = buffer_migrate_page (a dirty
		      * page migrates without writeout); ext4_da_writepage redirties a page with
		      * delayed-allocation buffers (ext4_bh_delay_or_unwritten): ->writepage from
		      * reclaim writes nothing */
	MM_FS_TMPFS, /* tmpfs without swap (mm/shmem.c, 6.1 and 6.12): shmem_aops.dirty_folio =
		      * noop_dirty_folio, so a page is never accounted dirty nor written back;
		      * shmem folios are swap-backed, on the anon LRU (folio_is_file_lru), which
		      * reclaim does not scan without swap (mm/vmscan.c get_scan_count: SCAN_FILE
		      * when !can_reclaim_anon_pages): off the LRU here, never reclaimed;
		      * shmem_aops.migrate_folio = migrate_folio: compaction moves it in any
		      * mode */
};

/* The device queue's I/O scheduler (the simulator's block layer, core/io/iosched.h; the live
 * engine has no scheduler of its own). */
enum mm_iosched {
	MM_IOSCHED_DEADLINE, /* deadline (3.x block/deadline-iosched.c) / mq-deadline: 6.12's
			      * default for a single-hardware-queue device (block/elevator.c
			      * elevator_get_default) */
	MM_IOSCHED_CFQ,	     /* cfq: 3.x CONFIG_DEFAULT_IOSCHED (block/Kconfig.iosched) */
};

/* Which dirty page-cache pages kswapd writes itself (mm/vmscan.c shrink_page_list). */
enum mm_kswapd_write {
	MM_KSWAPD_WRITE_NEVER,	/* 6.12 (the flusher writes; see core/mm/README.md) */
	MM_KSWAPD_WRITE_ALWAYS, /* 3.1: PF_SWAPWRITE, pageout() of every unreferenced dirty page */
	MM_KSWAPD_WRITE_PRESSURE, /* 3.2/3.3: only at priority < DEF_PRIORITY - 2 */
};

struct mm_policy {
	char name[64]; /* the named profile it started from */
	enum mm_era era;
	enum mm_thp_enabled enabled;  /* transparent_hugepage/enabled */
	enum mm_defrag defrag;	      /* transparent_hugepage/defrag */
	int second_mode;	      /* enum mm_migrate_mode of the second direct compaction, or
				       * -1 for none */
	bool async_failure_defers;    /* 3.1: every compaction failure defers; 3.3+: only sync */
	bool deferred_skips_reclaim;  /* 3.3: deferred THP fault goes to nopage without reclaim */
	bool reclaim_waits_writeback; /* 3.1-3.4 order>3 reclaim may wait on writeback (2nd pass) */
	bool reclaim_writeout;	      /* 3.1: direct reclaim writes dirty page cache out itself */
	bool numa_two_pass;	      /* modern: THISNODE|NORETRY pass before the full slow path */
	unsigned sync_wait_from_pass; /* SYNC waits on writeback from this migrate pass, counted
				       * from 0 (3.1: 3, the kernel's force = pass > 2) */
	unsigned migrate_passes;      /* migrate_pages passes (10) */
	uint64_t wb_wait_max_ns;      /* bound on one writeback wait in SYNC mode; 0 = unbounded.
				       * A wait that times out fails that page for the rest of
				       * its migrate_pages call */
	bool kswapd;		      /* background reclaim thread model */
	bool kcompactd;		      /* background compaction thread model (modern) */
	unsigned proactiveness;	      /* vm.compaction_proactiveness (0 = off) */
	bool compact_unevictable_allowed;  /* vm.compact_unevictable_allowed: compaction isolates
					    * pages of the unevictable LRU (4.1+: 1; 3.x never) */
	enum mm_reclaim_skip reclaim_skip; /* shrink_zones' costly-order skip rule */
	/* A THP over time (mm/khugepaged.c, mm/huge_memory.c): */
	bool khugepaged;	  /* the thread runs (and only while enabled != never) */
	unsigned pages_to_scan;	  /* khugepaged/pages_to_scan (4096) */
	uint64_t scan_sleep_ns;	  /* khugepaged/scan_sleep_millisecs (10 s) */
	uint64_t alloc_sleep_ns;  /* khugepaged/alloc_sleep_millisecs (60 s) */
	unsigned max_ptes_none;	  /* khugepaged/max_ptes_none (511) */
	unsigned max_ptes_swap;	  /* 6.12 64; 3.x: any swap entry aborts (0) */
	unsigned max_ptes_shared; /* 6.12 256; 3.x: page_count must be 1 (0) */
	bool khugepaged_defrag;	  /* khugepaged/defrag (1): direct reclaim and compaction */
	int khugepaged_mode;	  /* enum mm_migrate_mode of khugepaged's compaction after
				   * reclaim, -1 none (3.1/3.2 SYNC, +nostall ASYNC: the patch
				   * keys on __GFP_NO_KSWAPD, which khugepaged's mask carries;
				   * 3.3 SYNC_LIGHT; 3.16 kept SYNC_LIGHT for kernel threads) */
	bool deferred_split;	  /* a partly unmapped THP waits on the split queue (4.5+) */
	bool shrink_underused;	  /* transparent_hugepage/shrink_underused (6.12) */
	bool madv_collapse;	  /* MADV_COLLAPSE exists (6.1+) */
	/* 3.x reclaim and the device's file system: */
	enum mm_fs fs;			   /* fs=vfat|ext4|tmpfs (machine setting: --fs) */
	enum mm_kswapd_write kswapd_write; /* kswapd-writepage=never|always|pressure */
	bool reclaim_throttles;		   /* 3.x congestion_wait / wait_iff_congested /
					    * too_many_isolated naps (throttle=yes|no) */
	enum mm_iosched iosched;	   /* iosched=deadline|cfq (machine setting) */
	/* Multi-size THP and vm.defrag_mode (modern era only): */
	unsigned hugepages[MM_POLICY_PMD_ORDER + 1]; /* enum mm_thp_size per order 2..9 (keys
						      * hugepages-16kB .. -2048kB); 0, 1
						      * unused. 6.12 defaults: never, PMD
						      * inherit. The 3.x eras ignore it. */
	unsigned defrag_mode;			     /* vm.defrag_mode (6.15): 0 or 1 */
	/* Shared memory THP (4.8+; keys shmem-enabled, shmem-hugepages-<size>kB, tmpfs-huge):
	 * enum mm_shmem_huge of transparent_hugepage/shmem_enabled (default never, as 6.1 and
	 * 6.12 boot), enum mm_shmem_size per order 2..9 (6.12 defaults: never, PMD inherit;
	 * 6.1 has no per-size files), and the huge= option of the tmpfs mount that POSIX shm
	 * files live on (/dev/shm: never, as mounted without the option). 3.x: all never. */
	unsigned shmem_enabled;
	unsigned shmem_hugepages[MM_POLICY_PMD_ORDER + 1];
	unsigned tmpfs_huge;
	/* Policy plugin (thpemu_policy.h; key plugin=PATH[?ARGS], no ',' in it): a shared object
	 * that chooses each anonymous fault's orders. mm only carries the path: the driver loads
	 * it (core/policy/plugin.c) and installs it with mm_set_policy_hook. "" = none. */
	char plugin[192];
};

/* NULL-terminated list of the named profiles. */
const char *const *mm_policy_names(void);
/* Aliases: yesterday's names ("modern-madvise" ...), each with the canonical profile it means.
 * mm_policy_alias(i, &canonical) returns the alias, or NULL when i >= mm_policy_alias_count(). */
size_t mm_policy_alias_count(void);
const char *mm_policy_alias(size_t i, const char **canonical);
/* Every key as mm_policy_format spells it: the name of key i (NULL past the last) and its value
 * in p written to buf; *number says the value is a plain number (for JSON). */
const char *mm_policy_key(size_t i, const struct mm_policy *p, char *buf, size_t len, bool *number);
/* Parse NAME[:KEY=VALUE,...]. Returns 0, or -EINVAL with a one-line reason in err. */
int mm_policy_parse(const char *spec, struct mm_policy *out, char *err, size_t errlen);
/* A profile the caller fills (core/policy: host): fill() writes the whole policy, named by one
 * of the named profiles' names (what mm_policy_format starts from), or returns -errno with a
 * one-line reason in err. */
struct mm_policy_profile {
	const char *name; /* as spelled in a spec ("host") */
	int (*fill)(void *arg, struct mm_policy *p, char *err, size_t errlen);
	void *arg;
};
/* mm_policy_parse, with one more profile (NULL: none); the keys apply to it as to any. */
int mm_policy_parse_ext(const char *spec, const struct mm_policy_profile *extra,
			struct mm_policy *out, char *err, size_t errlen);
/* One KEY=VALUE of the spec language on p, as in a spec, without the checks across keys that
 * mm_policy_parse makes at the end. 0, or -EINVAL with a one-line reason in err. */
int mm_policy_set(struct mm_policy *p, const char *key, const char *value, char *err,
		  size_t errlen);
/* Canonical spec string of a policy (name plus every field differing from that name's
 * defaults); what reports record so that a run can be repeated. */
void mm_policy_format(const struct mm_policy *p, char *buf, size_t len);
/* Key i's documentation: its name (NULL past the last), what it accepts written to accepted,
 * and its one-line help in *help (may be NULL). */
const char *mm_policy_key_doc(size_t i, char *accepted, size_t len, const char **help);

#endif

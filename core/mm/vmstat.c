/* Names: vmstat counters (mm/vmstat.c's vmstat_text, 6.12 spelling), slow-path steps,
 * compaction results (include/trace/events/mmflags.h's COMPACTION_STATUS), and the cause
 * chains that stall reports print.
 */
#include "mm/internal.h"

const char *const mm_stat_names[MM_STAT_NR] = {
    [MM_STAT_THP_FAULT_ALLOC] = "thp_fault_alloc",
    [MM_STAT_THP_FAULT_FALLBACK] = "thp_fault_fallback",
    [MM_STAT_COMPACT_STALL] = "compact_stall",
    [MM_STAT_COMPACT_SUCCESS] = "compact_success",
    [MM_STAT_COMPACT_FAIL] = "compact_fail",
    [MM_STAT_COMPACT_MIGRATE_SCANNED] = "compact_migrate_scanned",
    [MM_STAT_COMPACT_FREE_SCANNED] = "compact_free_scanned",
    [MM_STAT_COMPACT_ISOLATED] = "compact_isolated",
    [MM_STAT_COMPACT_DEFERRED] = "compact_deferred",
    [MM_STAT_COMPACT_DAEMON_WAKE] = "compact_daemon_wake",
    [MM_STAT_COMPACT_DAEMON_MIGRATE_SCANNED] = "compact_daemon_migrate_scanned",
    [MM_STAT_COMPACT_DAEMON_FREE_SCANNED] = "compact_daemon_free_scanned",
    [MM_STAT_PGMIGRATE_SUCCESS] = "pgmigrate_success",
    [MM_STAT_PGMIGRATE_FAIL] = "pgmigrate_fail",
    [MM_STAT_ALLOCSTALL] = "allocstall_normal",
    [MM_STAT_PGSCAN_DIRECT] = "pgscan_direct",
    [MM_STAT_PGSTEAL_DIRECT] = "pgsteal_direct",
    [MM_STAT_PGSCAN_KSWAPD] = "pgscan_kswapd",
    [MM_STAT_PGSTEAL_KSWAPD] = "pgsteal_kswapd",
    [MM_STAT_KSWAPD_WAKE] = "kswapd_wake",
    [MM_STAT_PGALLOC] = "pgalloc_normal",
    [MM_STAT_PGFREE] = "pgfree",
    [MM_STAT_EXTFRAG_STEAL] = "extfrag_fallback",
    [MM_STAT_COMPACT_WB_WAIT] = "compact_writeback_wait",
    [MM_STAT_COMPACT_WRITEOUT] = "compact_writeout",
    [MM_STAT_RECLAIM_WB_WAIT] = "reclaim_writeback_wait",
    [MM_STAT_NOMEM_FALLBACK] = "nomem_fallback",
    [MM_STAT_THP_SPLIT_PAGE] = "thp_split_page",
    [MM_STAT_COMPACT_BLOCKS_MOVED] = "compact_blocks_moved",
    [MM_STAT_PGSCAN_DIRECT_THROTTLE] = "pgscan_direct_throttle",
    [MM_STAT_PGWB_ERROR] = "writeback_error",
    [MM_STAT_NR_VMSCAN_WRITE] = "nr_vmscan_write",
    [MM_STAT_THP_COLLAPSE_ALLOC] = "thp_collapse_alloc",
    [MM_STAT_THP_COLLAPSE_ALLOC_FAILED] = "thp_collapse_alloc_failed",
    [MM_STAT_KHUGEPAGED_PAGES_COLLAPSED] = "khugepaged_pages_collapsed",
    [MM_STAT_KHUGEPAGED_FULL_SCANS] = "khugepaged_full_scans",
    [MM_STAT_KHUGEPAGED_PAGES_SCANNED] = "khugepaged_pages_scanned",
    [MM_STAT_THP_SCAN_EXCEED_NONE_PTE] = "thp_scan_exceed_none_pte",
    [MM_STAT_THP_SCAN_EXCEED_SHARED_PTE] = "thp_scan_exceed_share_pte",
    [MM_STAT_THP_SCAN_EXCEED_SWAP_PTE] = "thp_scan_exceed_swap_pte",
    [MM_STAT_THP_SPLIT_PMD] = "thp_split_pmd",
    [MM_STAT_THP_DEFERRED_SPLIT_PAGE] = "thp_deferred_split_page",
    [MM_STAT_THP_UNDERUSED_SPLIT_PAGE] = "thp_underused_split_page",
    [MM_STAT_THP_SPLIT_PAGE_FAILED] = "thp_split_page_failed",
    [MM_STAT_MADV_COLLAPSE] = "madv_collapse",
    [MM_STAT_KSWAPD_WRITE] = "kswapd_writepage",
    [MM_STAT_NR_VMSCAN_IMMEDIATE] = "nr_vmscan_immediate_reclaim",
    [MM_STAT_PLUGIN_CALLS] = "plugin_calls",
    [MM_STAT_PLUGIN_ERRORS] = "plugin_errors",
    [MM_STAT_PLUGIN_OVERTIME] = "plugin_overtime",
    [MM_STAT_THP_ZERO_PAGE_ALLOC] = "thp_zero_page_alloc",
    [MM_STAT_THP_ZERO_PAGE_ALLOC_FAILED] = "thp_zero_page_alloc_failed",
    [MM_STAT_PGROTATED] = "pgrotated",
    [MM_STAT_THROTTLE_CONGESTION] = "throttle_congestion_wait",
    [MM_STAT_THROTTLE_ISOLATED] = "throttle_too_many_isolated",
    [MM_STAT_ZONE_CONGESTED] = "zone_congested",
    [MM_STAT_THP_FILE_ALLOC] = "thp_file_alloc",
    [MM_STAT_THP_FILE_FALLBACK] = "thp_file_fallback",
    [MM_STAT_THP_FILE_FALLBACK_CHARGE] = "thp_file_fallback_charge",
    [MM_STAT_THP_FILE_MAPPED] = "thp_file_mapped",
};

const char *mm_step_name(enum mm_step s)
{
	static const char *const names[MM_STEP_NR] = {
	    [MM_STEP_FREELIST_LOW] = "freelist_low",
	    [MM_STEP_FREELIST_MIN] = "freelist_min",
	    [MM_STEP_WAKE_KSWAPD] = "wake_kswapd",
	    [MM_STEP_COMPACT_ASYNC] = "compact_async",
	    [MM_STEP_COMPACT_SYNC_LIGHT] = "compact_sync_light",
	    [MM_STEP_COMPACT_SYNC] = "compact_sync",
	    [MM_STEP_COMPACT_DEFERRED] = "compact_deferred",
	    [MM_STEP_RECLAIM] = "direct_reclaim",
	    [MM_STEP_FALLBACK] = "fallback",
	};

	return (unsigned)s < MM_STEP_NR ? names[s] : "?";
}

const char *mm_compact_result_name(enum mm_compact_result r)
{
	static const char *const names[MM_COMPACT_NR] = {
	    [MM_COMPACT_NOT_SUITABLE_ZONE] = "not_suitable_zone",
	    [MM_COMPACT_SKIPPED] = "skipped",
	    [MM_COMPACT_DEFERRED] = "deferred",
	    [MM_COMPACT_NO_SUITABLE_PAGE] = "no_suitable_page",
	    [MM_COMPACT_CONTINUE] = "continue",
	    [MM_COMPACT_COMPLETE] = "complete",
	    [MM_COMPACT_PARTIAL_SKIPPED] = "partial_skipped",
	    [MM_COMPACT_CONTENDED] = "contended",
	    [MM_COMPACT_SUCCESS] = "success",
	};

	return (unsigned)r < MM_COMPACT_NR ? names[r] : "?";
}

const char *mm_wait_function(enum mm_wait_kind k)
{
	static const char *const fn[MM_WAIT_NR] = {
	    [MM_WAIT_COMPACT_WRITEBACK] = "sleep_on_page",
	    /* a ->writepage sleeps for a request (3.x block/blk-core.c blk_queue_bio) */
	    [MM_WAIT_COMPACT_WRITEOUT] = "get_request_wait",
	    [MM_WAIT_COMPACT_ISOLATED] = "congestion_wait",
	    [MM_WAIT_RECLAIM_WRITEBACK] = "sleep_on_page",
	    [MM_WAIT_RECLAIM_WRITEOUT] = "get_request_wait",
	    [MM_WAIT_RECLAIM_ISOLATED] = "congestion_wait",
	    [MM_WAIT_RECLAIM_CONGESTED] = "congestion_wait",
	};

	return (unsigned)k < MM_WAIT_NR ? fn[k] : "?";
}

const char *mm_wait_name(enum mm_wait_kind k)
{
	static const char *const names[MM_WAIT_NR] = {
	    [MM_WAIT_COMPACT_WRITEBACK] = "compact-writeback",
	    [MM_WAIT_COMPACT_WRITEOUT] = "compact-writeout",
	    [MM_WAIT_COMPACT_ISOLATED] = "compact-isolated",
	    [MM_WAIT_RECLAIM_WRITEBACK] = "reclaim-writeback",
	    [MM_WAIT_RECLAIM_WRITEOUT] = "reclaim-writeout",
	    [MM_WAIT_RECLAIM_ISOLATED] = "reclaim-isolated",
	    [MM_WAIT_RECLAIM_CONGESTED] = "reclaim-congested",
	};

	return (unsigned)k < MM_WAIT_NR ? names[k] : "?";
}

const char *mm_cause_chain(enum mm_cause c)
{
	static const char *const chains[MM_CAUSE_NR] = {
	    [MM_CAUSE_NONE] = "fault",
	    [MM_CAUSE_COMPACT_ASYNC] = "fault > async compaction",
	    [MM_CAUSE_COMPACT_SYNC_LIGHT] = "fault > sync-light compaction",
	    [MM_CAUSE_COMPACT_SYNC] = "fault > sync compaction",
	    [MM_CAUSE_COMPACT_WB_WAIT] = "fault > sync compaction > migrate > wait on writeback",
	    [MM_CAUSE_COMPACT_WRITEOUT] = "fault > sync compaction > migrate > writeout",
	    [MM_CAUSE_COMPACT_MIGRATE] = "fault > compaction > migrate > copy",
	    [MM_CAUSE_RECLAIM] = "fault > direct reclaim",
	    [MM_CAUSE_RECLAIM_WB_WAIT] = "fault > direct reclaim > wait on writeback",
	    [MM_CAUSE_ZEROING] = "fault > clear huge page",
	    [MM_CAUSE_COMPACT_THROTTLE] = "fault > sync compaction > too many isolated > nap",
	    [MM_CAUSE_RECLAIM_THROTTLE] = "fault > direct reclaim > congestion wait",
	};

	return (unsigned)c < MM_CAUSE_NR ? chains[c] : "?";
}

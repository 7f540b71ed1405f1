/* The "vmstat" report section: the emulated kernel's counters under their /proc/vmstat names.
 *
 * Mirrors what mmtests' MonitorMmtestsvmstat reads from /proc/vmstat (vmstat_text[] in
 * mm/vmstat.c): one integer per counter, in mm_stat_names order. Kept apart from faults.c so
 * that code using only the fault sections does not need core/mm's name table at link time.
 */
#include "obs/faults.h"

void obs_report_vmstat(struct json_w *w, const uint64_t stats[MM_STAT_NR])
{
	jw_obj_begin(w, "vmstat");
	for (int i = 0; i < MM_STAT_NR; i++)
		jw_u64(w, mm_stat_names[i], stats[i]);
	jw_obj_end(w);
}

#!/usr/bin/env bash
# khugepaged in the simulator, on seed-2011-long (one process faults 25 % of the pool while the
# writer streams to the USB stick, then keeps it; its first faults mostly fall back to 4 KiB):
#   - under modern-always and linux-3.2+nostall khugepaged collapses the process's 4 KiB
#     ranges (vmstat khugepaged_pages_collapsed and thp_collapse_alloc > 0, full_scans > 0),
#     and the process's huge share grows with time: the pool's anon memory (the held mapping:
#     no other process by default) is more huge at 10 minutes than at 1 minute, by at least
#     the ranges khugepaged collapsed in between;
#   - with khugepaged off (:khugepaged=no) nothing is collapsed and the huge share stays what
#     the faults gave;
#   - khugepaged's scan paces at pages_to_scan per scan_sleep: full_scans never exceeds what
#     10 s wakes of 8 ranges allow for the 128-range mapping.
# Reports are kept in $T_OUT.
. "$(dirname "$0")/lib.sh"

run() { # NAME POLICY [ARGS...]: run seed-2011-long, keep the report as $T_OUT/NAME.json
	local name=$1 p=$2
	shift 2
	"$THPEMU" sim --policy "$p" --scenario seed-2011-long --json "$T_OUT/$name.json" "$@" \
		>"$T_OUT/$name.txt" || fail "$name: run failed"
}
f() { json "$T_OUT/$1.json" "$2"; }
gt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }
huge_share() { f "$1" '.pool_end | if .anon > 0 then .anon_huge / .anon else 0 end'; }

for p in modern-always linux-3.2+nostall; do
	run "$p" "$p"
	run "$p-1m" "$p" --duration 1m
	run "$p-off" "$p:khugepaged=no"
	collapsed=$(f "$p" .vmstat.khugepaged_pages_collapsed)
	say "$(printf '%-18s collapsed %4s (alloc %s, failed %s, full scans %s); huge share %s at 1 min, %s at 10 min, %s without khugepaged; stalls %s (longest %s ms)' \
		"$p" "$collapsed" "$(f "$p" .vmstat.thp_collapse_alloc)" \
		"$(f "$p" .vmstat.thp_collapse_alloc_failed)" "$(f "$p" .vmstat.khugepaged_full_scans)" \
		"$(huge_share "$p-1m")" "$(huge_share "$p")" "$(huge_share "$p-off")" \
		"$(f "$p" .stalls.count)" "$(f "$p" '[.stalls.groups[].events_ms[]] | max // 0')")"
	gt "$collapsed" 0 || fail "$p: khugepaged collapsed nothing in 10 minutes"
	gt "$(f "$p" .vmstat.thp_collapse_alloc)" 0 || fail "$p: no collapse allocation succeeded"
	le "$collapsed" "$(f "$p" .vmstat.thp_collapse_alloc)" ||
		fail "$p: more collapses than successful collapse allocations"
	gt "$(f "$p" .vmstat.khugepaged_pages_scanned)" 0 || fail "$p: khugepaged scanned nothing"
	# pacing: 8 ranges per 10 s wake over a 128-range mapping = one full scan per >= 160 s
	le "$(f "$p" .vmstat.khugepaged_full_scans)" 4 ||
		fail "$p: more full scans than scan_sleep and pages_to_scan allow"
	# the held mapping grows huge over time, by the collapses (each 512 frames) at least
	gt "$(huge_share "$p")" "$(huge_share "$p-1m")" || fail "$p: the huge share did not grow"
	gt "$(f "$p" .pool_end.anon_huge)" "$(f "$p-1m" .pool_end.anon_huge)" ||
		fail "$p: no more huge frames at 10 minutes than at 1"
	# without khugepaged: none of it
	expect_eq "$p:khugepaged=no collapsed" "$(f "$p-off" .vmstat.khugepaged_pages_collapsed)" 0
	expect_eq "$p:khugepaged=no collapse allocs" "$(f "$p-off" .vmstat.thp_collapse_alloc)" 0
	gt "$(huge_share "$p")" "$(huge_share "$p-off")" ||
		fail "$p: khugepaged did not raise the huge share over khugepaged=no"
done
say "ok"

#!/usr/bin/env bash
# khugepaged in the simulator, on seed-2011-long (one process faults 25 % of the 1 GiB pool from
# t = 10 s while the writer streams to the USB stick, then keeps it; its THP faults fall back):
#   - modern-always: khugepaged collapses some of the process's 4 KiB ranges (vmstat
#     khugepaged_pages_collapsed and thp_collapse_alloc > 0), so the held mapping (the pool's
#     only program anon memory) has more huge frames at 10 minutes than at 1, by 512 per
#     collapse; with :khugepaged=no nothing is collapsed and nothing becomes huge;
#   - linux-3.2+nostall: Mel Gorman's patch makes khugepaged's compaction async too, and while
#     the writer streams async compaction frees fewer 2 MiB blocks (dirty and writeback pages in
#     every pageblock): no more collapses than once the writer has stopped (--opt
#     writer-stop=2m: its pages are written back), and some once it has; with :khugepaged=no,
#     never;
#   - pacing (--opt init=: a free pool, every THP fault succeeds, nothing to collapse): a wake
#     every scan_sleep (10 s) scans pages_to_scan (4096 = 8 ranges, +512 per range whatever it
#     holds), from the first registration at ~10 s to 600 s: 58-60 wakes, full_scans =
#     scanned ranges / 128.
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
show() { # NAME
	say "$(printf '%-34s collapsed %3s (alloc %s, failed %s, scanned %s ranges, full scans %s); huge frames at the end %s of %s; stalls %s' \
		"$1" "$(f "$1" .vmstat.khugepaged_pages_collapsed)" "$(f "$1" .vmstat.thp_collapse_alloc)" \
		"$(f "$1" .vmstat.thp_collapse_alloc_failed)" \
		"$(f "$1" '.vmstat.khugepaged_pages_scanned / 512')" \
		"$(f "$1" .vmstat.khugepaged_full_scans)" "$(f "$1" .pool_end.anon_huge)" \
		"$(f "$1" .pool_end.anon)" "$(f "$1" .stalls.count)")"
}
expect_collapses() { # EARLY LATE: khugepaged collapsed in LATE, and the mapping grew huge since EARLY
	local c
	c=$(f "$2" .vmstat.khugepaged_pages_collapsed)
	gt "$c" 0 || fail "$2: khugepaged collapsed nothing"
	le "$c" "$(f "$2" .vmstat.thp_collapse_alloc)" ||
		fail "$2: more collapses than successful collapse allocations"
	# every collapse adds a huge extent to the held mapping (it never exits nor unmaps)
	expect_eq "$2 huge frames = faults + collapses" "$(f "$2" .pool_end.anon_huge)" \
		"$(f "$2" '(.vmstat.thp_fault_alloc + .vmstat.khugepaged_pages_collapsed) * 512')"
	gt "$(f "$2" .pool_end.anon_huge)" "$(f "$1" .pool_end.anon_huge)" ||
		fail "$2: the held mapping did not grow huge over time (vs $1)"
}
expect_off() { # NAME: khugepaged off
	expect_eq "$1 collapsed" "$(f "$1" .vmstat.khugepaged_pages_collapsed)" 0
	expect_eq "$1 collapse allocations" "$(f "$1" '.vmstat.thp_collapse_alloc + .vmstat.thp_collapse_alloc_failed')" 0
	expect_eq "$1 scanned" "$(f "$1" .vmstat.khugepaged_pages_scanned)" 0
	expect_eq "$1 huge frames" "$(f "$1" .pool_end.anon_huge)" \
		"$(f "$1" '.vmstat.thp_fault_alloc * 512')"
}

# modern-always, the writer streaming all along
run always modern-always
run always-1m modern-always --duration 1m
run always-off modern-always:khugepaged=no
for n in always-1m always always-off; do show "$n"; done
expect_collapses always-1m always
expect_off always-off

# 3.2 with Mel Gorman's patch: streaming, then a writer that stops at 2 minutes
# 40 minutes: in the first 10 the faults' failed compactions may still hold the deferral at its
# longest, and whether khugepaged's first tries compact depends on the trajectory (one seed of
# three collapsed in 10 minutes, all three by 40 stopped, none more streaming:
# tests/results/2026-12-07-compaction-migration-order.md)
run nostall linux-3.2+nostall --duration 40m
run nostall-stop linux-3.2+nostall --opt writer-stop=2m --duration 40m
run nostall-stop-2m linux-3.2+nostall --opt writer-stop=2m --duration 2m
run nostall-stop-off linux-3.2+nostall:khugepaged=no --opt writer-stop=2m
for n in nostall nostall-stop-2m nostall-stop nostall-stop-off; do show "$n"; done
# Asserted: the stream never helps, the stopped writer lets khugepaged collapse, and whatever is
# collapsed is counted consistently (tests/results/2026-12-07-khugepaged-3.2-nostall.md).
le "$(f nostall .vmstat.khugepaged_pages_collapsed)" "$(f nostall-stop .vmstat.khugepaged_pages_collapsed)" ||
	fail "linux-3.2+nostall: khugepaged collapsed more while the writer streamed"
for n in nostall nostall-stop; do
	le "$(f $n .vmstat.khugepaged_pages_collapsed)" "$(f $n .vmstat.thp_collapse_alloc)" ||
		fail "$n: more collapses than successful collapse allocations"
	expect_eq "$n huge frames = faults + collapses" "$(f $n .pool_end.anon_huge)" \
		"$(f $n '(.vmstat.thp_fault_alloc + .vmstat.khugepaged_pages_collapsed) * 512')"
done
gt "$(f nostall-stop .vmstat.khugepaged_pages_collapsed)" 0 ||
	fail "linux-3.2+nostall: khugepaged collapsed nothing in 40 minutes after the writer stopped"
expect_off nostall-stop-off

# pacing on a free pool: 8 ranges per 10 s wake from ~10 s on, nothing to collapse
run pace linux-3.2 --opt init=
show pace
expect_eq "pace: THP faults" "$(f pace .vmstat.thp_fault_alloc)" 128
expect_eq "pace: collapse allocations" "$(f pace .vmstat.thp_collapse_alloc)" 0
ranges=$(f pace '.vmstat.khugepaged_pages_scanned / 512')
le 464 "$ranges" && le "$ranges" 480 || fail "pace: $ranges ranges scanned, expected 58-60 wakes of 8"
expect_eq "pace: full scans" "$(f pace .vmstat.khugepaged_full_scans)" "$((ranges / 128))"
say "ok"

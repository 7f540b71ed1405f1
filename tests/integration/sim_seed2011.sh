#!/usr/bin/env bash
# The 2011 seed scenario reproduces the report at the default 10 minutes:
#   - linux-3.1: THP faults wait on writeback inside sync compaction (vmstat
#     compact_writeback_wait and the simulator's own count agree) and stall for seconds;
#   - linux-3.1+nostall (Mel Gorman's patch) and linux-3.3 (sync-light): no writeback wait in
#     compaction at all;
#   - per attempt, 3.1's second (sync) compaction succeeds at least as often as nostall's
#     second (async) one: the reason Andrea measured lower THP success with nostall.
# Waits in direct reclaim (3.1-era reclaim's synchronous pass, the same in all 3.1 profiles)
# are reported separately and not asserted. The aggregate huge-page percentages are printed
# for the README: in this workload they do not follow the per-attempt order (core/sim/README.md
# explains why). Reports are kept in $T_OUT.
. "$(dirname "$0")/lib.sh"

declare -A cw vmw st smax second
for p in linux-3.1 linux-3.1+nostall linux-3.3; do
	out="$T_OUT/seed-2011-$p.json"
	start=$(date +%s%N)
	"$THPEMU" sim --policy "$p" --scenario seed-2011 --json "$out" \
		>"$T_OUT/seed-2011-$p.txt" || fail "$p: run failed"
	wall_ms=$((($(date +%s%N) - start) / 1000000))
	cw[$p]=$(json "$out" .writeback_waits_by_path.compaction.count)
	vmw[$p]=$(json "$out" .vmstat.compact_writeback_wait)
	st[$p]=$(json "$out" .stalls.count)
	smax[$p]=$(json "$out" '[.stalls.groups[].events_ms[]] | max // 0')
	second[$p]=$(json "$out" .direct_compaction.second.success_pct)
	say "$(printf '%-18s huge: %6s%% of faults, %6s%% of extents; compaction wb waits %5s (max %s ms); reclaim wb waits %5s; stalls %4s (longest %s ms); 2nd compaction success %s%%; %s ms wall' \
		"$p" "$(json "$out" .faults.huge_pct)" "$(json "$out" .extents.huge_pct)" \
		"${cw[$p]}" "$(json "$out" .writeback_waits_by_path.compaction.max_ms)" \
		"$(json "$out" .writeback_waits_by_path.reclaim.count)" "${st[$p]}" "${smax[$p]}" \
		"${second[$p]}" "$wall_ms")"
done

gt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }

gt "${cw[linux-3.1]}" 0 || fail "linux-3.1: no writeback waits in compaction"
for p in linux-3.1 linux-3.1+nostall linux-3.3; do
	out="$T_OUT/seed-2011-$p.json"
	# the simulator's own counts agree with mm's vmstat, and its faults-only breakdown adds up
	expect_eq "$p compaction waits vs vmstat" "${vmw[$p]}" "${cw[$p]}"
	expect_eq "$p reclaim waits vs vmstat" "$(json "$out" .vmstat.reclaim_writeback_wait)" \
		"$(json "$out" .writeback_waits_by_path.reclaim.count)"
	expect_eq "$p waits in faults" "$(json "$out" .writeback_waits.count)" \
		"$(json "$out" '.writeback_waits_by_path.in_faults | .compaction.count + .reclaim.count')"
done
gt "${st[linux-3.1]}" 0 || fail "linux-3.1: no stalls over the 1 s threshold"
gt "${smax[linux-3.1]}" 2000 || fail "linux-3.1: longest stall ${smax[linux-3.1]} ms, not multi-second"
json "$T_OUT/seed-2011-linux-3.1.json" '.stalls.groups[].cause' |
	grep -q 'sync compaction > migrate > wait on writeback' ||
	fail "linux-3.1: no stall group caused by waiting on writeback in sync compaction"
for p in linux-3.1+nostall linux-3.3; do
	expect_eq "$p compaction writeback waits" "${cw[$p]}" 0
	expect_eq "$p vmstat compact_writeback_wait" "${vmw[$p]}" 0
done
ge "${second[linux-3.1]}" "${second[linux-3.1+nostall]}" ||
	fail "3.1's sync second compaction succeeds less often (${second[linux-3.1]}%) than nostall's async one (${second[linux-3.1+nostall]}%)"
say "ok"

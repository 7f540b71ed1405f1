#!/usr/bin/env bash
# Mel Gorman's writebackCP (mmtests thpavail, Nov 2011) in the simulator, for linux-3.1,
# linux-3.2 and linux-3.3 (the sync-light series), scaled for CI: --pool 256M (1/8 of the
# 2 GiB machine: memory and alloc's mapping shrink, the stick and the reader's disk do not)
# and 2 iterations instead of 5 (WCP_POOL, WCP_ITER override). Published, per iteration:
# 3.1 1189.8 s, 3.2-rc2 589.5 s, sync-light 73.4 s; ratios 0.50 and 0.06.
#
# Asserted (what the model justifies, tests/results/2026-12-04-sim-writeback-cp.md,
# 2026-12-06-kswapd-3x.md, 2026-12-06-reclaim-31.md, 2026-12-07-wbcp-bdev-unmovable.md):
#   - every kernel finishes every iteration, and alloc's faults are counted per iteration;
#   - the published ordering: 3.1 slowest, by more than a factor of two over both others, and
#     3.3 (sync-light) not slower than 3.2;
#   - 3.3's compaction never waits on writeback.
# Printed, not asserted (the model does not meet them; those result files say why): the
# factor-of-two bands of both ratios, 3.2/3.1 in 0.25-1.0 (0.040-0.055 over seeds 1-3 at 256M:
# no swap, so alloc fills the pool and every 3.x THP compaction is skipped at the watermark,
# 2026-12-07-wbcp-order0-retry.md) and 3.3/3.1 in 0.03-0.12 (0.042-0.050 there), 3.3 faster than
# 3.2, and 3.1's and 3.2's compaction writeback waits.
. "$(dirname "$0")/lib.sh"
need_cmd jq

POOL=${WCP_POOL:-256M}
ITER=${WCP_ITER:-2}

run() { # POLICY: run the scenario, print its per-iteration line
	local p=$1 out="$T_OUT/writeback-cp-$1.json" start wall_ms
	start=$(date +%s%N)
	"$THPEMU" sim --policy "$p" --scenario writeback-cp --pool "$POOL" \
		--opt iterations="$ITER" --json "$out" >"$T_OUT/writeback-cp-$p.txt" ||
		fail "$p: run failed"
	wall_ms=$((($(date +%s%N) - start) / 1000000))
	expect_eq "$p iterations" "$(json "$out" '.iteration_stats | length')" "$ITER"
	expect_eq "$p finished" "$(json "$out" .iterations)" "$ITER"
	say "$(printf '%-10s elapsed per iteration %s s (mean %s s); thp_fault_alloc %s fallback %s; compaction wb waits %s, reclaim wb waits %s, kswapd writepage %s; %s ms wall' \
		"$p" "$(json "$out" '[.iteration_stats[].elapsed_s] | join(" ")')" \
		"$(json "$out" .iteration_totals.elapsed_mean_s)" \
		"$(json "$out" .iteration_totals.thp_fault_alloc)" \
		"$(json "$out" .iteration_totals.thp_fault_fallback)" \
		"$(json "$out" .vmstat.compact_writeback_wait)" \
		"$(json "$out" .vmstat.reclaim_writeback_wait)" \
		"$(json "$out" .vmstat.kswapd_writepage)" "$wall_ms")"
	# every 2 MiB extent of the mapping is tried huge at least once per iteration
	[ "$(json "$out" '.iteration_stats | all(.thp_fault_alloc + .thp_fault_fallback > 0)')" = true ] ||
		fail "$p: an iteration without THP faults"
}

mean() { json "$T_OUT/writeback-cp-$1.json" .iteration_totals.elapsed_mean_s; }
# in A B LO HI: is A/B within [LO, HI]?
in_band() { awk -v a="$1" -v b="$2" -v lo="$3" -v hi="$4" 'BEGIN { r = a / b; exit !(r >= lo && r <= hi) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

for p in linux-3.1 linux-3.2 linux-3.3; do
	run "$p"
done
t31=$(mean linux-3.1)
t32=$(mean linux-3.2)
t33=$(mean linux-3.3)
r32=$(ratio "$t32" "$t31")
r33=$(ratio "$t33" "$t31")
say "ratios: 3.2/3.1 = $r32 (published 0.50, band 0.25-1.0), 3.3/3.1 = $r33 (published 0.06, band 0.03-0.12)"

in_band "$t32" "$t31" 0 0.5 || fail "3.1 is not the slowest by 2x over 3.2 ($t31 s vs $t32 s)"
in_band "$t33" "$t31" 0 0.5 || fail "3.1 is not the slowest by 2x over 3.3 ($t31 s vs $t33 s)"
# 3.3 is not slower than 3.2. With balance_pgdat's loop_again kswapd no longer writes pages
# itself in 3.2 at this size, so 3.2's sync compaction meets no page under writeback and the two
# runs coincide: Mel Gorman's 3.3/3.2 (0.125) is a gap of the model, reported below.
awk -v a="$t33" -v b="$t32" 'BEGIN { exit !(a <= b) }' ||
	fail "3.3 ($t33 s) is slower than 3.2 ($t32 s)"
expect_eq "3.3 compaction writeback waits" \
	"$(json "$T_OUT/writeback-cp-linux-3.3.json" .vmstat.compact_writeback_wait)" 0
for p in linux-3.1 linux-3.2; do
	say "$p: compaction writeback waits $(json "$T_OUT/writeback-cp-$p.json" .vmstat.compact_writeback_wait)"
done
if awk -v a="$t33" -v b="$t32" 'BEGIN { exit !(a < b) }'; then
	say "3.3 is faster than 3.2"
else
	say "NOT MET (not asserted): 3.3 ($t33 s) is not faster than 3.2 ($t32 s)"
fi
# known gaps of the model, reported so that a change to them is seen
if in_band "$t32" "$t31" 0.25 1.0; then
	say "3.2/3.1 is within its band"
else
	say "NOT MET (not asserted): 3.2/3.1 = $r32 outside 0.25-1.0"
fi
if in_band "$t33" "$t31" 0.03 0.12; then
	say "3.3/3.1 is within its band"
else
	say "NOT MET (not asserted): 3.3/3.1 = $r33 outside 0.03-0.12"
fi
say "ok"

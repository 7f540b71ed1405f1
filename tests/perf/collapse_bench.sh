#!/usr/bin/env bash
# What a collapse costs the program, under thpemu run against the host kernel, in one run
# (tests/perf/collapse_bench.c): writer threads keep writing to the 2 MiB range that
# MADV_COLLAPSE is collapsing, and the longest write during the collapse is its program-visible
# hold (the kernel's collapse_huge_page holds the range from the PMD's flush to its set). Two
# loads: one writer (the collapsing thread and the writer each have a CPU of these two: an idle
# machine) and two writers (the two-writer load). Native and managed alternate round after
# round, so that load from elsewhere hits both alike.
# Per load: the hold's p50 and max over the extents, natively and managed, their ratio, the
# noise floor (the longest write of a window without a collapse, median), MADV_COLLAPSE's own
# time (p50), and thpemu's own count of the wait (host.collapse_copy_ns per collapse, the
# longest). thpemu runs modern-always with khugepaged off, so that every extent is collapsed by
# the call being timed. Nothing about speed is asserted: only that every figure was measured,
# every extent collapsed and no write was lost (the program checks its counters).
# THPEMU_PERF_QUICK=1: one round of few extents (a smoke test for CI). Headline rows for
# tests/perf/all.sh (perf_lib.sh): the managed hold's p50 per load, goals 1 ms with one writer
# (idle) and 3 ms with two, beside the native hold; and the longest hold (no goal).
. "$THPEMU_SOURCE_DIR/tests/integration/lib.sh"
. "$THPEMU_SOURCE_DIR/tests/perf/perf_lib.sh"
need_root
need_uffd
need_cmd jq
BENCH="$THPEMU_BUILD_DIR/tests/perf/collapse_bench"
if [ "${THPEMU_PERF_QUICK:-0}" = 1 ]; then
	reps=1 n=4
else
	reps=3 n=16
fi
[ "$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)" != "" ] ||
	skip "no /sys/kernel/mm/transparent_hugepage: the host kernel has no THP to compare with"

# the figures are read from all rounds' files: none may be left from an earlier run with more rounds
rm -f "$T_OUT"/native-* "$T_OUT"/managed-*
# pct P < FILE: the P-th percentile of a column of numbers
pct() { sort -g | awk -v p="$1" '{ v[NR] = $1 } END { if (!NR) { print 0; exit }
	i = int(NR * p / 100 + 0.5); if (i < 1) i = 1; if (i > NR) i = NR; print v[i] }'; }
# one WHERE WRITERS REP: a run, its lines in $T_OUT/WHERE-WRITERS-REP.txt
one() {
	local out="$T_OUT/$1-$2-$3"
	if [ "$1" = native ]; then
		"$BENCH" "$n" "$2" >"$out.txt" 2>"$out.err" || fail "native run: $(tail -2 "$out.err" "$out.txt")"
	else
		"$THPEMU" run --quiet --policy modern-always:khugepaged=no --report "$out.json" -- \
			"$BENCH" "$n" "$2" >"$out.txt" 2>"$out.err" ||
			fail "managed run: $(tail -2 "$out.err" "$out.txt")"
	fi
	grep -q "^summary .* lost=0$" "$out.txt" || fail "$1, $2 writers: $(tail -1 "$out.txt")"
	expect_eq "$1, $2 writers: extents collapsed" "$(awk '$1 == "extent" && $4 != 0' "$out.txt" | wc -l)" 0
}
col() { # col WHERE WRITERS FIELD: that field of every extent line of every round
	cat "$T_OUT/$1-$2-"*.txt | awk -v f="$3" '$1 == "extent" { for (i = 2; i < NF; i++) if ($i == f) print $(i + 1) }'
}
for w in 1 2; do
	for ((r = 1; r <= reps; r++)); do
		one native $w $r
		one managed $w $r
	done
	nh50=$(col native $w hold_us | pct 50) nhmax=$(col native $w hold_us | pct 100)
	mh50=$(col managed $w hold_us | pct 50) mhmax=$(col managed $w hold_us | pct 100)
	nq=$(col native $w quiet_us | pct 50) mq=$(col managed $w quiet_us | pct 50)
	nc=$(col native $w call_us | pct 50) mc=$(col managed $w call_us | pct 50)
	own=$(cat "$T_OUT/managed-$w-"*.json | jq -s '[.[].host] | (map(.collapse_copy_ns) | add) /
		(map(.collapses) | add) / 1000 | floor')
	ownmax=$(cat "$T_OUT/managed-$w-"*.json | jq -s '[.[].host.collapse_copy_max_ns] | max / 1000 | floor')
	[ "$own" -gt 0 ] 2>/dev/null || fail "$w writers: no collapse wait counted by thpemu ($own)"
	say "$w writer(s), $((reps * n)) collapses each: hold p50 native ${nh50} us, managed ${mh50} us" \
		"(x$(ratio "$mh50" "$nh50")); max native ${nhmax} us, managed ${mhmax} us" \
		"(x$(ratio "$mhmax" "$nhmax")); noise floor p50 native ${nq} us, managed ${mq} us;" \
		"MADV_COLLAPSE p50 native ${nc} us, managed ${mc} us; thpemu's own count: mean ${own} us," \
		"longest ${ownmax} us"
	load=$([ $w = 1 ] && echo "idle, 1 writer" || echo "2 writers") goal=$([ $w = 1 ] && echo 1000 || echo 3000)
	perf_row "collapse hold per 2 MiB, $load, p50 us / native" "$mh50" "$nh50" "$(ratio "$mh50" "$nh50")" \
		"<= $goal us" "$(at_most "$mh50" "$goal")"
	perf_row "collapse hold per 2 MiB, $load, max us / native" "$mhmax" "$nhmax" "$(ratio "$mhmax" "$nhmax")" - -
done
say "ok"

#!/usr/bin/env bash
# Shared-machine benchmark: does one machine for many processes make a fault dearer?
# For 1, 2 and 4 processes faulting at once (live_bench touch4k / touch2m, each timing its own
# first touches from the faulting thread), it measures in the same run, round after round:
#   - on one machine: the processes under one `thpemu run` (one pool, one robust lock, one host);
#   - each with a pool of its own: the same processes with LD_PRELOAD set by hand (what every
#     process got before machines: a private pool and lock, its own kernel threads);
# and prints the machine's p50/p99 as ratios to the own-pool figures. Contention shows as the
# ratio growing with the number of processes. THPEMU_PERF_QUICK=1: short run.
. "$THPEMU_SOURCE_DIR/tests/integration/lib.sh"
need_root
need_uffd
BENCH="$THPEMU_BUILD_DIR/tests/perf/live_bench"
if [ "${THPEMU_PERF_QUICK:-0}" = 1 ]; then
	n4=2000 n2=16 reps=1
else
	n4=20000 n2=48 reps=3
fi

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

# procs N MODE COUNT OUT: N live_bench processes at once; each appends its line to OUT
procs() {
	local i
	for i in $(seq "$1"); do
		"$BENCH" "$2" "$3" >>"$4" &
	done
	wait
}
export -f procs
export BENCH

# run_machine N MODE COUNT POLICY OUT / run_own N MODE COUNT POLICY OUT
run_machine() {
	"$THPEMU" run --quiet --policy "$4" --pool 4G --staging 32 -- \
		bash -c 'procs "$@"' _ "$1" "$2" "$3" "$5" || fail "$2 x$1 on one machine"
}
run_own() {
	env LD_PRELOAD="$LIBTHPEMU" THPEMU_POLICY="$4" THPEMU_POOL=4G THPEMU_STAGING=32 \
		THPEMU_ALLOCATOR=none bash -c 'procs "$@"' _ "$1" "$2" "$3" "$5" ||
		fail "$2 x$1 with pools of their own"
}

for r in $(seq $reps); do
	for n in 1 2 4; do
		run_machine $n touch4k $n4 modern-never "$T_TMP/m4.$n"
		run_own $n touch4k $n4 modern-never "$T_TMP/o4.$n"
		run_machine $n touch2m $n2 modern-always "$T_TMP/m2.$n"
		run_own $n touch2m $n2 modern-always "$T_TMP/o2.$n"
	done
done
# fig FILE KEY: the median over every process and round of KEY (p50_us or p99_us)
fig() {
	sed -n "s/.*$2=\([0-9.]*\).*/\1/p" "$1" | sort -n |
		awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print 0 }'
}
printf '%-34s %9s %9s %9s %9s %7s %7s\n' "first touch, per process ($reps rounds)" \
	"mach p50" "own p50" "mach p99" "own p99" "x p50" "x p99"
for sz in 4 2; do
	for n in 1 2 4; do
		[ -s "$T_TMP/m$sz.$n" ] && [ -s "$T_TMP/o$sz.$n" ] || fail "no figures for $sz x$n"
		mp50=$(fig "$T_TMP/m$sz.$n" p50_us) op50=$(fig "$T_TMP/o$sz.$n" p50_us)
		mp99=$(fig "$T_TMP/m$sz.$n" p99_us) op99=$(fig "$T_TMP/o$sz.$n" p99_us)
		printf '%-34s %9s %9s %9s %9s %7s %7s\n' \
			"$([ $sz = 4 ] && echo "4 KiB (modern-never)" || echo "2 MiB (modern-always)"), $n process$([ $n = 1 ] || echo es)" \
			"$mp50" "$op50" "$mp99" "$op99" "$(ratio "$mp50" "$op50")" "$(ratio "$mp99" "$op99")"
	done
done

#!/usr/bin/env bash
# thpemu's own work takes no emulated fault. Its exit work (the reports: symbolising stall stacks
# with libdw, which inflates debug sections with libz, into the program's allocator's managed
# memory): once the exit hook runs, its thread's faults are served outside the emulated kernel
# (host.exit_faults), never counted as the program's, never stalled, never delaying the exit. Its
# own threads' faults (the background thread's pthread_create, the watchdog's libunwind, ...), at
# any time: served outside too (host.own_faults). exit_work prints the emulator's fault count at
# its last instruction and the pages it touched; a 1 us stall threshold makes every fault a stall
# event, so the exit hook has stacks to symbolise (and the watchdog is made at start).
#  1. modern-always, no device, three runs: the report's faults are exactly those the program
#     counted (before, 3 of 5 such runs counted 2 to 686 faults of the exit hook's too, and every
#     run 6 to 10 of thpemu's own threads' before the exit hook).
#  2. modern-never, ten runs of a program that touches 256 pages: 256 faults reported, each run.
#  3. linux-3.2 with the slow stick and a writer (the 2011 demo's world, where such exit faults
#     waited seconds on writeback): the same, no stall event marked thpemu_exit (before: 8-27),
#     and the exit (its last instruction to its reaping) well inside a generous bound.
# Whether thpemu's work faults at all depends on what the allocator has at hand: the runs
# together must have served some exit work and some of thpemu's threads' faults outside.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
PROG="$THPEMU_BUILD_DIR/tests/programs/exit_work"
EXIT_BOUND_S=20 # generous: symbolising and writing the reports on a loaded 2-vCPU machine

# check NAME REPORT OUTPUT: the program's own line against its process's record in the report
check() {
	local name=$1 rep=$2 out=$3 own counted exitf ownf marked
	own=$(sed -n 's/^faults=\([0-9]*\) .*/\1/p' "$out")
	[ -n "$own" ] || fail "$name: no line from exit_work: $(head -3 "$out")"
	counted=$(json "$rep" '[.processes[] | select(.comm == "exit_work") | .faults.total] | add')
	# the program's own and nothing else: not the exit hook's (thousands), nor thpemu's threads'
	expect_eq "$name: faults of exit_work in the report (its own count at its last instruction)" \
		"$counted" "$own"
	exitf=$(json "$rep" .host.exit_faults)
	ownf=$(json "$rep" .host.own_faults)
	exit_faults=$((exit_faults + exitf))
	own_faults=$((own_faults + ownf))
	marked=$(json "$rep" '[(.stalls.groups[]?, .stalls.waits.groups[]?) | select(.thpemu_exit // false) | .count] | add // 0')
	expect_eq "$name: stall events marked thpemu_exit" "$marked" 0
	say "$name: $own faults, $counted in the report; $exitf served outside for the exit work," \
		"$ownf for thpemu's threads"
}

exit_faults=0
own_faults=0
# 1. no device
for i in 1 2 3; do
	"$THPEMU" run --quiet --policy modern-always --stall-threshold 1us \
		--report "$T_OUT/always.$i.json" --stall-report "$T_OUT/always.$i.txt" -- \
		"$PROG" 8 >"$T_OUT/always.$i.out" || fail "thpemu run (modern-always) failed"
	check "modern-always run $i" "$T_OUT/always.$i.json" "$T_OUT/always.$i.out"
	[ "$(json "$T_OUT/always.$i.json" .stalls.count)" -ge 1 ] ||
		fail "modern-always run $i: no stall event"
done

# 2. the program's faults are what it touched (1 MiB: below 2 MiB, 4 KiB pages under any policy)
for i in $(seq 10); do
	"$THPEMU" run --quiet --policy modern-never --report "$T_OUT/never.$i.json" -- \
		"$PROG" 1 >"$T_OUT/never.$i.out" || fail "thpemu run (modern-never) failed"
	check "modern-never run $i" "$T_OUT/never.$i.json" "$T_OUT/never.$i.out"
	touched=$(sed -n 's/.* touched=\([0-9]*\)$/\1/p' "$T_OUT/never.$i.out")
	expect_eq "modern-never run $i: faults reported for the $touched pages it touched" \
		"$(json "$T_OUT/never.$i.json" .faults.total)" "$touched"
done
say "modern-never: 10 of 10 runs reported exactly the pages the program touched"

# 3. linux-3.2, the slow stick, a writer
if [ -e /dev/fuse ]; then
	"$THPEMU" run --quiet --policy linux-3.2 --pool 64M --fragment anon:50%,pagecache:25% \
		--device usb2-stick-2011 --dirty total=48M,file=2M --stall-threshold 1us \
		--report "$T_OUT/3.2.json" --stall-report "$T_OUT/3.2.txt" -- \
		bash -c '"$1" 16; date +%s.%N' exit_work "$PROG" >"$T_OUT/3.2.out" ||
		fail "thpemu run (linux-3.2) failed"
	check linux-3.2 "$T_OUT/3.2.json" "$T_OUT/3.2.out"
	delay=$(awk '/^faults=/ { split($2, a, "="); e = a[2] } /^[0-9]/ { d = $1 }
		END { printf "%.2f", d - e }' "$T_OUT/3.2.out")
	awk -v d="$delay" -v b=$EXIT_BOUND_S 'BEGIN { exit !(d >= 0 && d < b) }' ||
		fail "linux-3.2: exit_work's exit took $delay s (bound $EXIT_BOUND_S s)"
	say "linux-3.2: exit in $delay s"
else
	say "no /dev/fuse: the slow-device part skipped"
fi
[ "$exit_faults" -ge 1 ] || fail "no exit work was served outside the emulated kernel (host.exit_faults 0 in every run)"
[ "$own_faults" -ge 1 ] || fail "no fault of thpemu's threads was served outside the emulated kernel (host.own_faults 0 in every run)"
say "PASS ($exit_faults faults of exit work, $own_faults of thpemu's threads served outside the emulated kernel)"

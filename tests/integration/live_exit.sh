#!/usr/bin/env bash
# Programs that leave without exit handlers (_exit, abort, SIGSEGV) still get a report, built
# from the statistics they kept in the run directory, with every fault they took; the status is
# theirs (128+signal if killed).
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
PROG="$THPEMU_BUILD_DIR/tests/programs/early_exit"

check() { # MODE EXPECTED_STATUS ARGS...
	local mode=$1 want=$2 rc rep="$T_OUT/exit.$1.json"
	shift 2
	"$THPEMU" run --quiet --policy modern-always --report "$rep" -- "$PROG" "$@" 2>/dev/null
	rc=$?
	expect_eq "$mode status" "$rc" "$want"
	[ -s "$rep" ] || fail "$mode: no report"
	expect_eq "$mode exit_status in report" "$(json "$rep" .program.exit_status)" "$want"
	# a handler counts a fault before it wakes the program, so a process that dies right after
	# its last touch loses no fault; the crash path of SIGSEGV may fault in one extent of other
	# managed memory (the allocator's) before the process is gone: CI saw 17 huge and 2 base
	# faults once
	n=$(json "$rep" .faults.huge)
	local most=16
	[ "$mode" = segv ] && most=17
	[ "$n" -ge 16 ] && [ "$n" -le $most ] ||
		fail "$mode: $n huge faults recorded, expected 16-$most"
	expect_eq "$mode no_clean_exit" "$(json "$rep" .program.no_clean_exit)" 1
	say "$mode: status $rc, report with $(json "$rep" .faults.total) faults"
}
check _exit 5 x 5
check abort 134 abort
check segv 139 segv
# _exit right after the last fault, again and again: every fault is in the report (counted after
# the wake, a fault was lost in 4 of 50 such runs)
for i in $(seq 20); do
	"$THPEMU" run --quiet --policy modern-always --report "$T_TMP/loop.json" -- "$PROG" x 0 2>/dev/null ||
		fail "_exit run $i: status $?"
	expect_eq "_exit run $i: huge faults" "$(json "$T_TMP/loop.json" .faults.huge)" 16
done
say "_exit at once after the last fault: 20 of 20 runs reported all 16 huge faults"

# without the launcher: THPEMU_REPORT (%p = pid) is written at a normal exit
THPEMU_REPORT="$T_TMP/self.%p.json" LD_PRELOAD="$LIBTHPEMU" "$USEMEM" --size 16M --quiet >/dev/null
n=$(ls "$T_TMP"/self.*.json 2>/dev/null | wc -l)
expect_eq "per-process reports" "$n" 1
expect_eq "its huge faults" "$(json "$T_TMP"/self.*.json .faults.huge)" 8

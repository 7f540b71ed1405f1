#!/usr/bin/env bash
# The public API seen from a program: inactive natively, active under the emulator with its own
# counters, and able to write its report on demand.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
PROG="$THPEMU_BUILD_DIR/tests/programs/api_probe"

expect_eq "native" "$("$PROG")" "api: active=0"
out=$("$THPEMU" run --quiet --policy modern-always -- "$PROG" "$T_TMP/self.json") ||
	fail "api_probe failed under thpemu"
say "$out"
grep -q "active=1 version=$("$THPEMU" --version | cut -d' ' -f2) managed=1 stack_managed=0" <<<"$out" ||
	fail "unexpected: $out"
huge=$(sed -n 's/.* huge=\([0-9]*\).*/\1/p' <<<"$out")
[ "$huge" -ge 3 ] || fail "the program saw $huge huge faults of its 8 MiB"
# the emulated machine's vmstat, in /proc/vmstat's form: its THP faults are the program's
grep -q "vmstat: len_ok=1 thp_fault_alloc=[1-9][0-9]* small=-1" <<<"$out" ||
	fail "thpemu_vmstat: unexpected: $out"
grep -q "vmstat gauges: first=nr_free_pages writeback=1" <<<"$out" ||
	fail "thpemu_vmstat: no gauges nr_free_pages .. nr_writeback first: $out"
[ -s "$T_TMP/self.json" ] || fail "thpemu_write_report wrote nothing"
expect_eq "report kind" "$(json "$T_TMP/self.json" .kind)" run
[ "$(json "$T_TMP/self.json" .faults.huge)" -ge 3 ] || fail "the written report lacks the faults"

# a command that cannot be run: the shell's status (127), a report all the same
"$THPEMU" run --quiet --report "$T_TMP/none.json" -- "$T_TMP/does-not-exist" 2>"$T_TMP/err"
expect_eq "missing program status" "$?" 127
grep -q "cannot execute" "$T_TMP/err" || fail "no message for a missing program"
expect_eq "missing program processes" "$(json "$T_TMP/none.json" .program.processes)" 0

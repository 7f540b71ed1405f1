#!/usr/bin/env bash
# A process ends when its last thread ends, as natively: the emulator's own threads never keep it
# alive.
#   1. main() leaves with pthread_exit and a worker finishes later (under thpemu run, and with
#      the library preloaded by hand);
#   2. a thread forks, and in the child that thread - the only one - returns from its routine;
#   3. CPython's own test_threading (whose test_3_join_in_forked_from_thread is case 2) passes.
# Each run has a time limit: before, every one of them ran until killed.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
PROG="$THPEMU_BUILD_DIR/tests/programs/thread_exit"

for mode in main fork; do
	"$PROG" $mode >"$T_TMP/native.$mode" || fail "$mode: native run failed"
	timeout -s KILL 60 "$THPEMU" run --quiet --report "$T_OUT/$mode.json" -- "$PROG" $mode \
		>"$T_TMP/emu.$mode"
	rc=$?
	[ $rc = 137 ] && fail "$mode: still running after 60 s (killed)"
	expect_eq "$mode: exit status" "$rc" 0
	cmp -s "$T_TMP/native.$mode" "$T_TMP/emu.$mode" ||
		fail "$mode: output differs: $(cat "$T_TMP/emu.$mode")"
	[ "$(json "$T_OUT/$mode.json" .faults.total)" -ge 1 ] || fail "$mode: nothing managed"
	say "$mode: ended as natively ($(tr '\n' ';' <"$T_TMP/emu.$mode"))"
done

LD_PRELOAD="$LIBTHPEMU" timeout -s KILL 60 "$PROG" main >"$T_TMP/bare.main"
expect_eq "main, library preloaded by hand: exit status" "$?" 0
cmp -s "$T_TMP/native.main" "$T_TMP/bare.main" || fail "main, preloaded by hand: output differs"

PY=/usr/bin/python3
"$PY" -c 'import test.test_threading' 2>/dev/null ||
	skip "CPython's test suite is not installed (package libpython3.11-testsuite)"
timeout -s KILL 600 "$THPEMU" run --report "$T_OUT/test_threading.json" -- \
	"$PY" -m test test_threading >"$T_OUT/test_threading.out" 2>&1
rc=$?
[ $rc = 137 ] && fail "test_threading: still running after 600 s (killed)"
expect_eq "test_threading: exit status" "$rc" 0
grep -q "Tests result: SUCCESS" "$T_OUT/test_threading.out" ||
	fail "test_threading: $(grep -v '^thpemu:' "$T_OUT/test_threading.out" | tail -5)"
say "test_threading: SUCCESS under thpemu run, $(json "$T_OUT/test_threading.json" .program.processes) processes"

#!/usr/bin/env bash
# Programs run under a debugger or valgrind, which cannot let a userfaultfd handler serve them:
# the library says so in one line and leaves the program unmanaged, and the tool works as
# natively.
#   valgrind: it runs every thread on one lock, so a thread waiting for a handler kept the
#             handlers from running (the run hung);
#   gdb:      its reads of memory (/proc/PID/mem, ptrace) cannot wait for a handler: a managed
#             page never touched read as "Cannot access memory" and could not be set.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
need_cmd valgrind
need_cmd gdb
PROG="$THPEMU_BUILD_DIR/tests/programs/thread_exit"
DEBUGGEE="$THPEMU_BUILD_DIR/tests/programs/debuggee"

valgrind -q --error-exitcode=3 "$PROG" main >"$T_TMP/vg.native" 2>&1 || fail "valgrind natively"
timeout -s KILL 120 "$THPEMU" run --quiet --report "$T_OUT/valgrind.json" -- \
	valgrind -q --error-exitcode=3 "$PROG" main >"$T_TMP/vg.out" 2>"$T_TMP/vg.err"
rc=$?
[ $rc = 137 ] && fail "valgrind: still running after 120 s"
expect_eq "valgrind: exit status" $rc 0
cmp -s "$T_TMP/vg.native" "$T_TMP/vg.out" || fail "valgrind: output differs: $(cat "$T_TMP/vg.out")"
grep -q "^thpemu: running under valgrind.*; running unmanaged$" "$T_TMP/vg.err" ||
	fail "valgrind: no line saying why: $(cat "$T_TMP/vg.err")"
[ "$(json "$T_OUT/valgrind.json" .program.unmanaged_processes)" -ge 1 ] ||
	fail "valgrind: the report counts no unmanaged process"
say "valgrind: ran as natively, the program unmanaged"

cat >"$T_TMP/gdb.cmds" <<'CMDS'
break stop_here
run
print *(unsigned long *)$rdi
set var *(unsigned long *)$rdi = 42
continue
CMDS
gdb -q -batch -x "$T_TMP/gdb.cmds" "$DEBUGGEE" >"$T_TMP/gdb.native" 2>&1
expect_eq "gdb natively: exit status" $? 0
timeout -s KILL 120 "$THPEMU" run --quiet -- gdb -q -batch -x "$T_TMP/gdb.cmds" "$DEBUGGEE" \
	>"$T_TMP/gdb.out" 2>&1
rc=$?
[ $rc = 137 ] && fail "gdb: still running after 120 s"
expect_eq "gdb: exit status" $rc 0
for want in '^\$1 = 0$' '^value at p: 42$' 'exited normally'; do
	grep -q "$want" "$T_TMP/gdb.native" || fail "gdb natively lacks '$want': $(cat "$T_TMP/gdb.native")"
	grep -q "$want" "$T_TMP/gdb.out" || fail "gdb under thpemu lacks '$want': $(cat "$T_TMP/gdb.out")"
done
grep -q "^thpemu: traced by the debugger gdb" "$T_TMP/gdb.out" ||
	fail "gdb: no line saying why the program runs unmanaged: $(cat "$T_TMP/gdb.out")"
say "gdb: read 0 from, wrote 42 to a page never touched, as natively"

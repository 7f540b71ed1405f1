#!/usr/bin/env bash
# A bad THPEMU_* value: exactly one line on stderr naming the variable, the program runs
# unmanaged and its exit status is unchanged; `thpemu run` reports the process as unmanaged.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
PROG="$THPEMU_BUILD_DIR/tests/programs/early_exit"

check() { # VAR VALUE
	local rc lines
	env "$1=$2" LD_PRELOAD="$LIBTHPEMU" "$PROG" x 3 2>"$T_TMP/err"
	rc=$?
	expect_eq "$1=$2 exit status" "$rc" 3
	lines=$(wc -l <"$T_TMP/err")
	expect_eq "$1=$2 stderr lines" "$lines" 1
	grep -q "$1" "$T_TMP/err" || fail "$1=$2: message does not name the variable: $(cat "$T_TMP/err")"
	grep -q "unmanaged" "$T_TMP/err" || fail "$1=$2: message does not say unmanaged"
	say "$1=$2: $(cat "$T_TMP/err")"
}
check THPEMU_POOL 12X
check THPEMU_POLICY linux-2.4
check THPEMU_HANDLERS 0
check THPEMU_STALL_THRESHOLD soon
check THPEMU_LOG loud
check THPEMU_POOL 100G
# output paths: checked before anything starts, never followed through someone else's link
echo keep >"$T_TMP/victim"
ln -s "$T_TMP/victim" "$T_TMP/link"
check THPEMU_REPORT "$T_TMP/link"
check THPEMU_TRACE "$T_TMP/link"
check THPEMU_REPORT /nonexistent/dir/r.json
check THPEMU_TRACE /nonexistent/dir/t
expect_eq "the link's target" "$(cat "$T_TMP/victim")" keep

THPEMU_POOL=bogus "$THPEMU" run --quiet --report "$T_TMP/r.json" -- "$PROG" x 4 2>"$T_TMP/err"
expect_eq "thpemu run exit status" "$?" 4
expect_eq "unmanaged processes" "$(json "$T_TMP/r.json" .program.unmanaged_processes)" 1
expect_eq "managed processes" "$(json "$T_TMP/r.json" .program.processes)" 0
grep -q THPEMU_POOL "$T_TMP/err" || fail "no message from the library"

# bad launcher options: exit 2 and one line naming the option
"$THPEMU" run --pool 12X -- true 2>"$T_TMP/err"
expect_eq "--pool 12X status" "$?" 2
expect_eq "--pool 12X lines" "$(wc -l <"$T_TMP/err")" 1
grep -q -- "--pool" "$T_TMP/err" || fail "message does not name --pool"
"$THPEMU" run --allocator tcmalloc -- true 2>"$T_TMP/err"
expect_eq "--allocator status" "$?" 2
grep -q "jemalloc or none" "$T_TMP/err" || fail "--allocator: accepted values not listed"
"$THPEMU" run --policy modern-always 2>"$T_TMP/err"
expect_eq "missing command status" "$?" 2

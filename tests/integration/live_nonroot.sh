#!/usr/bin/env bash
# Without the privilege to trap kernel-mode faults (non-root, vm.unprivileged_userfaultfd=0,
# /dev/userfaultfd root-only): one clear line, the program runs unmanaged, status unchanged.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd setpriv
need_cmd jq
PROG="$THPEMU_BUILD_DIR/tests/programs/early_exit"
[ "$(cat /proc/sys/vm/unprivileged_userfaultfd)" = 0 ] ||
	skip "vm.unprivileged_userfaultfd=1: a non-root user may use userfaultfd here"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
as_nobody true || skip "cannot switch to uid 65534"
as_nobody test -r "$LIBTHPEMU" || skip "$LIBTHPEMU is not readable by nobody"

as_nobody env LD_PRELOAD="$LIBTHPEMU" "$PROG" x 6 2>"$T_TMP/err"
expect_eq "exit status" "$?" 6
expect_eq "stderr lines" "$(wc -l <"$T_TMP/err")" 1
grep -q "userfaultfd unavailable" "$T_TMP/err" || fail "unclear message: $(cat "$T_TMP/err")"
grep -q "running unmanaged" "$T_TMP/err" || fail "message does not say unmanaged"
say "nobody: $(cat "$T_TMP/err")"

pub=$(mktemp -d /tmp/thpemu-nonroot.XXXXXX) # $T_TMP is private to root
at_exit "rm -rf '$pub'"
chmod 1777 "$pub" # sticky, as /tmp: thpemu refuses to write where anyone may replace its files
as_nobody "$THPEMU" run --quiet --report "$pub/r.json" -- "$PROG" x 7 2>"$T_TMP/err"
expect_eq "thpemu run as nobody: status" "$?" 7
expect_eq "unmanaged processes" "$(json "$pub/r.json" .program.unmanaged_processes)" 1
json "$pub/r.json" .host.note | grep -q "userfaultfd unavailable" || fail "the report does not say why"

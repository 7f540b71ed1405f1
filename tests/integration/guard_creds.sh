#!/usr/bin/env bash
# Programs that change credentials run as natively under the emulator (they used to abort with
# SIGABRT: glibc's set*id broadcast reached the emulator's threads, whose per-thread capability
# state the program had not changed, and their setresgid failed):
#   1. setpriv --reuid/--regid/--clear-groups, the issue's reproducer;
#   2. a threaded program that keeps capabilities across setresuid (PR_SET_KEEPCAPS), raises
#      CAP_SETGID again (capset), setresgid, setgroups, drops every capability - and then every
#      thread of the process, the emulator's included, holds exactly its credentials - also
#      with the page cache's writer and flusher threads running (--dirty).
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd setpriv
PROG="$THPEMU_BUILD_DIR/tests/programs/setid_threads"

cmd='setpriv --reuid=65534 --regid=65534 --clear-groups /bin/echo hi; echo rc=$?'
sh -c "$cmd" >"$T_TMP/native" 2>/dev/null
"$THPEMU" run --quiet -- sh -c "$cmd" >"$T_TMP/emu" 2>"$T_TMP/emu.err" ||
	fail "setpriv under thpemu: $(cat "$T_TMP/emu.err")"
diff -u "$T_TMP/native" "$T_TMP/emu" >&2 || fail "setpriv output differs"
expect_eq "setpriv" "$(tr '\n' ' ' <"$T_TMP/emu")" "hi rc=0 "

"$PROG" >"$T_TMP/native" || fail "setid_threads natively: $(cat "$T_TMP/native")"
expect_eq "native" "$(head -1 "$T_TMP/native")" "dropped: uid=65534 gid=65534 threads=3 agree=3"
"$THPEMU" run --quiet --report "$T_OUT/setid.json" -- "$PROG" >"$T_TMP/emu" 2>"$T_TMP/emu.err" ||
	fail "setid_threads under thpemu: $(cat "$T_TMP/emu" "$T_TMP/emu.err")"
read -r _ uid gid threads agree < <(head -1 "$T_TMP/emu" | tr '=' ' ' |
	awk '{print $1, $3, $5, $7, $9}')
expect_eq "uid" "$uid" 65534
expect_eq "gid" "$gid" 65534
[ "$threads" -gt 3 ] || fail "only $threads threads: the emulator's are not there"
expect_eq "threads agreeing with the program's credentials (of $threads)" "$agree" "$threads"
grep -qx "memory: ok" "$T_TMP/emu" || fail "memory after dropping root: $(cat "$T_TMP/emu")"
[ "$(json "$T_OUT/setid.json" .host.cred_changes)" -ge 3 ] ||
	fail "the credential changes were not replicated (cred_changes)"
# with the page cache's writer and flusher threads (they used to miss the changes: abort)
"$THPEMU" run --quiet --device none --dirty total=64M -- "$PROG" >"$T_TMP/emu" 2>"$T_TMP/emu.err" ||
	fail "setid_threads with a writer under thpemu: $(cat "$T_TMP/emu" "$T_TMP/emu.err")"
read -r _ uid _ threads agree < <(head -1 "$T_TMP/emu" | tr '=' ' ' | awk '{print $1, $3, $5, $7, $9}')
expect_eq "uid with a writer" "$uid" 65534
expect_eq "threads agreeing, with a writer (of $threads)" "$agree" "$threads"
say "setpriv: as natively; setid_threads: $threads threads hold uid $uid gid $gid alike"

#!/usr/bin/env bash
# Calls that cannot work with the emulator's threads present, or whose sandbox could refuse the
# emulator's own system calls: the emulator steps aside (its memory goes back to the kernel with
# the program's data, its threads end, one line says why, the report too) and the call then
# behaves exactly as natively:
#   1. a program installs a seccomp filter after filling 64 MiB of managed memory: its data is
#      intact afterwards and new memory works;
#   2. unshare -r (a user namespace: single-threaded processes only);
#   3. nsenter -U into another process's user namespace (setns: single-threaded only).
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd unshare
need_cmd nsenter
need_cmd jq
SECCOMP="$THPEMU_BUILD_DIR/tests/programs/seccomp_exec"

# one_line FILE: exactly one thpemu line, which says the emulator stepped aside
one_line() {
	expect_eq "thpemu lines in $(cat "$1")" "$(grep -c '^thpemu: ' "$1" || true)" 1
	grep -q 'stepped aside' "$1" || fail "no step-aside line: $(cat "$1")"
}

"$THPEMU" run --quiet --report "$T_OUT/seccomp.json" -- "$SECCOMP" --in-process \
	>"$T_TMP/out" 2>"$T_TMP/err" || fail "seccomp program: $(cat "$T_TMP/out" "$T_TMP/err")"
expect_eq "seccomp program" "$(cat "$T_TMP/out")" "filtered: 0 bad bytes"
one_line "$T_TMP/err"
expect_eq "stepped_aside" "$(json "$T_OUT/seccomp.json" .host.stepped_aside)" 1
[ "$(json "$T_OUT/seccomp.json" .faults.total)" -ge 32 ] ||
	fail "the memory filled before the filter was not managed"
json "$T_OUT/seccomp.json" .host.note | grep -q seccomp || fail "the report does not say why"
say "seccomp: data intact, $(json "$T_OUT/seccomp.json" .faults.total) faults served before"

native=$(unshare -r id -u 2>&1)
emu=$("$THPEMU" run --quiet --report "$T_OUT/unshare.json" -- unshare -r id -u 2>"$T_TMP/err") ||
	fail "unshare -r: $emu"
expect_eq "unshare -r id -u" "$emu" "$native"
one_line "$T_TMP/err"
# unshare then exec'd id: the record of the program before the exec still says why
expect_eq "unshare: stepped_aside" "$(json "$T_OUT/unshare.json" .host.stepped_aside)" 1
expect_eq "unshare: processes" "$(json "$T_OUT/unshare.json" .program.processes)" 1

unshare -r sleep 30 &
holder=$!
at_exit "kill $holder"
for _ in $(seq 50); do
	[ "$(readlink /proc/$holder/ns/user)" != "$(readlink /proc/self/ns/user)" ] && break
	sleep 0.1
done
native=$(nsenter -t $holder -U --preserve-credentials id -u 2>&1)
emu=$("$THPEMU" run --quiet -- nsenter -t $holder -U --preserve-credentials id -u 2>"$T_TMP/err") ||
	fail "nsenter -U: $emu $(cat "$T_TMP/err")"
expect_eq "nsenter -U id -u" "$emu" "$native"
one_line "$T_TMP/err"
say ok

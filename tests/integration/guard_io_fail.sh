#!/usr/bin/env bash
# A part of the emulator that cannot start is one line on stderr and a program that runs with
# that part off, exactly as natively otherwise (it used to die with SIGSEGV, nothing printed):
# a device directory that cannot be used (/proc), a device that does not exist (the library
# alone, THPEMU_DEVICE=/nonexistent), io_uring refused by a seccomp filter (as Docker's default
# profile does).
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_fuse
SECCOMP="$THPEMU_BUILD_DIR/tests/programs/seccomp_exec"
prog=(sh -c 'echo hi; exit 3')

# check NAME: $T_TMP/out has the program's output, $T_TMP/err its stderr, $rc its status
check() {
	expect_eq "$1: exit status" "$rc" 3
	expect_eq "$1: output" "$(cat "$T_TMP/out")" hi
	lines=$(grep -c '^thpemu: ' "$T_TMP/err" || true)
	expect_eq "$1: thpemu lines on stderr ($(cat "$T_TMP/err"))" "$lines" 1
	other=$(grep -v '^thpemu: ' "$T_TMP/err" || true)
	[ -z "$other" ] || fail "$1: stray stderr: $other"
	say "$1: $(cat "$T_TMP/err")"
}

rc=0
"$THPEMU" run --quiet --device /proc --dirty total=4M -- "${prog[@]}" >"$T_TMP/out" 2>"$T_TMP/err" || rc=$?
check "--device /proc"

rc=0
LD_PRELOAD="$LIBTHPEMU" THPEMU_DEVICE=/nonexistent THPEMU_DIRTY=total=4M "${prog[@]}" \
	>"$T_TMP/out" 2>"$T_TMP/err" || rc=$?
check "THPEMU_DEVICE=/nonexistent"

rc=0
"$SECCOMP" --no-uring "$THPEMU" run --quiet --device usb2-stick-2011 --dirty total=4M -- \
	"${prog[@]}" >"$T_TMP/out" 2>"$T_TMP/err" || rc=$?
check "io_uring refused by seccomp"
grep -q 'io_uring' "$T_TMP/err" || fail "the line does not say io_uring was refused"
say ok

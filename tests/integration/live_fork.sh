#!/usr/bin/env bash
# fork (the child joins the run's machine and sees the parent's data), vfork+exec and posix_spawn (the
# new programs manage their own memory) under the emulator.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
PROG="$THPEMU_BUILD_DIR/tests/programs/forker"
rep="$T_OUT/forker.json"

"$THPEMU" run --quiet --report "$rep" -- "$PROG" >"$T_TMP/out" 2>&1 ||
	fail "forker failed: $(cat "$T_TMP/out")"
cat "$T_TMP/out"
for want in "parent: managed=1" "fork: ok" "vfork+exec: ok" "posix_spawn: ok" "parent: data intact"; do
	grep -qx "$want" "$T_TMP/out" || fail "missing '$want'"
done
expect_eq "spawned children managed" "$(grep -c 'spawned: ok managed=1' "$T_TMP/out")" 2
expect_eq "managed processes (the fork child too: one machine)" "$(json "$rep" .program.processes)" 4
expect_eq "uffd errors" "$(json "$rep" .host.uffd_errors)" 0

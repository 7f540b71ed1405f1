#!/usr/bin/env bash
# Process-level behaviour is the program's own under the emulator: signal dispositions and
# handlers of every signal, masks and pending signals, vfork, clone(CLONE_VM|CLONE_VFORK), a
# child made by a raw clone (no atfork handler: the emulator recognises it and stays out of its
# way), prctl, rlimits. host_calls prints what it saw; natively and under thpemu must agree.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
PROG="$THPEMU_BUILD_DIR/tests/programs/host_calls"

"$PROG" >"$T_TMP/native" 2>&1 || fail "host_calls natively: $(tail -3 "$T_TMP/native")"
for policy in modern-always linux-3.2; do
	"$THPEMU" run --quiet --policy "$policy" --report "$T_OUT/$policy.json" -- "$PROG" \
		>"$T_TMP/emu" 2>&1 || fail "host_calls under $policy: $(tail -3 "$T_TMP/emu")"
	diff -u "$T_TMP/native" "$T_TMP/emu" >&2 || fail "host_calls under $policy differs"
	expect_eq "$policy: uffd errors" "$(json "$T_OUT/$policy.json" .host.uffd_errors)" 0
done
say "$(wc -l <"$T_TMP/native") lines as natively"

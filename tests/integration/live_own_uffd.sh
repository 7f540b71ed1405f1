#!/usr/bin/env bash
# A program with a userfaultfd of its own (CRIU's lazy restore and QEMU's postcopy have one):
# its UFFDIO_REGISTER on memory it mapped failed with EBUSY, the range being registered with the
# emulator's. The emulator now hands such memory back first; the program serves its own faults.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
PROG="$THPEMU_BUILD_DIR/tests/programs/own_uffd"

"$PROG" >"$T_TMP/native" || fail "native run failed: $(cat "$T_TMP/native")"
for policy in modern-always linux-3.1; do
	timeout -s KILL 60 "$THPEMU" run --quiet --policy $policy --report "$T_OUT/$policy.json" -- \
		"$PROG" >"$T_TMP/$policy"
	expect_eq "$policy: exit status" $? 0
	cmp -s "$T_TMP/native" "$T_TMP/$policy" || fail "$policy: output differs: $(cat "$T_TMP/$policy")"
	expect_eq "$policy: ranges given back" "$(json "$T_OUT/$policy.json" .host.ranges_released)" 1
	expect_eq "$policy: uffd errors" "$(json "$T_OUT/$policy.json" .host.uffd_errors)" 0
done
say "own userfaultfd: registered and served by the program, as natively"

#!/usr/bin/env bash
# The emulator never takes an address the program could have had: a fork child maps again, at
# the same address (MAP_FIXED_NOREPLACE), a buffer its parent kept out of children
# (MADV_DONTFORK). The child's emulator, joining the machine in the atfork handler, used to place
# its own tables and stacks in that hole (EEXIST in every child); its memory now comes from the
# arena its parent reserved (core/inprocess/vm.c).
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
PROG="$THPEMU_BUILD_DIR/tests/programs/dontfork"

"$PROG" 8 >"$T_TMP/native" || fail "native run failed: $(cat "$T_TMP/native")"
for policy in modern-always linux-3.1; do
	"$THPEMU" run --quiet --policy $policy -- "$PROG" 8 >"$T_TMP/$policy"
	expect_eq "$policy: exit status ($(cat "$T_TMP/$policy"))" $? 0
	cmp -s "$T_TMP/native" "$T_TMP/$policy" || fail "$policy: $(cat "$T_TMP/$policy")"
done
LD_PRELOAD="$LIBTHPEMU" "$PROG" 8 >"$T_TMP/bare" || fail "preloaded by hand: $(cat "$T_TMP/bare")"
say "every fork child mapped its buffer again where its parent had it: $(cat "$T_TMP/native")"

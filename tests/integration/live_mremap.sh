#!/usr/bin/env bash
# mremap on managed memory behaves as natively: the same calls fail with the same errors (a
# resize or MREMAP_DONTUNMAP across VMAs that the program's advice made, which the host does not
# have because advice on managed memory is emulated), data stays intact, and a refused call
# leaves the mapping managed (it used to un-manage the whole region).
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
PROG="$THPEMU_BUILD_DIR/tests/programs/mremap_cases"

"$PROG" >"$T_TMP/native" || fail "mremap_cases natively"
"$THPEMU" run --quiet -- "$PROG" >"$T_TMP/emu" || fail "mremap_cases under thpemu"
diff -u "$T_TMP/native" "$T_TMP/emu" >&2 || fail "mremap outcomes differ from native"
grep -q DATA-LOST "$T_TMP/emu" && fail "data lost"

rep="$T_OUT/refused.json"
"$THPEMU" run --quiet --policy modern-always --report "$rep" -- "$PROG" refused >"$T_TMP/emu" ||
	fail "mremap_cases refused under thpemu"
expect_eq "refused calls" "$(cat "$T_TMP/emu")" "refused 4 of 4, then touched 8 MiB"
pages=$(jq '.faults.huge * 512 + .faults.base' "$rep")
[ "$pages" -ge 2048 ] || fail "after refused mremaps only $pages of 2048 pages faulted through thpemu"
expect_eq "mremap_unmanaged" "$(json "$rep" .host.mremap_unmanaged)" 0
say "$(wc -l <"$T_TMP/native") mremap cases as natively; after 4 refused calls $pages pages managed"

#!/usr/bin/env bash
# A multi-threaded C program (malloc/realloc/free through jemalloc, its own mmaps, MADV_DONTNEED,
# munmap) prints the same checksums natively and under the emulator, for 4 KiB and huge policies
# and a 3.1-era one.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
PROG="$THPEMU_BUILD_DIR/tests/programs/mt_checksum"

"$PROG" 4 64 >"$T_TMP/native" || fail "native run failed"
for policy in modern-never modern-always linux-3.1; do
	rep="$T_OUT/mt_checksum.$policy.json"
	"$THPEMU" run --quiet --policy "$policy" --report "$rep" -- "$PROG" 4 64 >"$T_TMP/$policy" ||
		fail "$policy: emulated run failed or found corrupted data"
	cmp -s "$T_TMP/native" "$T_TMP/$policy" || fail "$policy: checksums differ from the native run"
	faults=$(json "$rep" .faults.total)
	[ "$faults" -ge 1000 ] || fail "$policy: only $faults managed faults"
	expect_eq "$policy uffd errors" "$(json "$rep" .host.uffd_errors)" 0
	say "$policy: identical checksums, $faults faults, $(json "$rep" .host.pages_freed) pages freed"
done

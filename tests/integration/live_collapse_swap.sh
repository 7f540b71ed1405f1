#!/usr/bin/env bash
# A collapse over pages the host swapped out keeps their data. mincore says 0 for a page on the
# swap and out of the swap cache, as for a hole; a collapse that took it for one mapped zeros in
# its place (the swap entry moved out with the others and dropped). The test swaps to zram
# (synchronous: MADV_PAGEOUT's folio leaves the swap cache at once; on a swap file it stays
# there, and mincore sees it) - /dev/zram0 when it is unused, set up here and reset at the end.
# collapse_check pages out every 4th page of its 4 MiB with MADV_PAGEOUT (left alone by its
# writers), then MADV_COLLAPSE the range: 0, both extents huge, every page holding what was last
# written, and host.collapse_swapped counting the collapses that met such pages.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
need_cmd mkswap
need_cmd swapon
PROG="$THPEMU_BUILD_DIR/tests/programs/collapse_check"
Z=/sys/block/zram0

[ -e $Z ] || modprobe zram 2>/dev/null || true
[ -e $Z ] || skip "no zram device (/sys/block/zram0; modprobe zram failed)"
# a run of this test killed before its cleanup left its swap on: priority 32767 and 64 MiB
if [ "$(cat $Z/disksize)" = 67108864 ] &&
	swapon --show=NAME,PRIO --noheadings | grep -qx '/dev/zram0 *32767'; then
	say "a swap this test left on /dev/zram0: taken down first"
	swapoff /dev/zram0 && echo 1 >$Z/reset
fi
[ "$(cat $Z/disksize)" = 0 ] || skip "/dev/zram0 is in use (disksize $(cat $Z/disksize))"
echo 64M >$Z/disksize || skip "cannot size /dev/zram0"
at_exit "echo 1 >$Z/reset"
mkswap -q /dev/zram0 >/dev/null || fail "mkswap /dev/zram0"
swapon -p 32767 /dev/zram0 2>"$T_TMP/swapon.err" || skip "swapon /dev/zram0: $(cat "$T_TMP/swapon.err")"
at_exit "swapoff /dev/zram0"

# natively first: the program's own check of a collapse after a page-out
"$PROG" madv-swap >"$T_TMP/native.out" 2>&1 || fail "native: $(cat "$T_TMP/native.out")"
say "native: $(tr '\n' ' ' <"$T_TMP/native.out")"

rep="$T_OUT/swap.json"
"$THPEMU" run --quiet --policy modern-always:enabled=madvise --report "$rep" -- "$PROG" madv-swap \
	>"$T_TMP/out" 2>"$T_TMP/err" || fail "under thpemu: $(cat "$T_TMP/out") $(head -3 "$T_TMP/err")"
grep -q '^swapped [1-9][0-9]* gone [1-9]' "$T_TMP/out" ||
	fail "no page left memory for the swap: $(cat "$T_TMP/out")"
grep -q '^madvise 0 errno 0$' "$T_TMP/out" || fail "MADV_COLLAPSE: $(cat "$T_TMP/out")"
grep -q '^huge_kb 4096 ' "$T_TMP/out" || fail "not huge: $(cat "$T_TMP/out")"
[ "$(json "$rep" .host.collapses)" -ge 2 ] || fail "collapses: $(json "$rep" .host.collapses)"
[ "$(json "$rep" .host.collapse_swapped)" -ge 1 ] ||
	fail "collapse_swapped: $(json "$rep" .host.collapse_swapped)"
expect_eq "uffd errors" "$(json "$rep" .host.uffd_errors)" 0
say "under thpemu: $(tr '\n' ' ' <"$T_TMP/out")collapse_swapped $(json "$rep" .host.collapse_swapped)"

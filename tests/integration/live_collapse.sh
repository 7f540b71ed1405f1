#!/usr/bin/env bash
# Collapse for real. A 4 MiB mapping populated with 4 KiB pages (enabled=madvise, no
# MADV_HUGEPAGE at fault time) becomes two real PMD mappings while two threads keep writing and
# reading back their pages; every page must hold what its thread last wrote:
#   - khugepaged, after the program's MADV_HUGEPAGE, with the scan sleep shortened to 100 ms
#     (modern-always:enabled=madvise,scan-sleep=100ms: the same scan, 100x faster), on a shared
#     machine (thpemu run: the host's khugepaged visits the process through its mailbox) and
#     with LD_PRELOAD alone (a pool of its own: khugepaged is a thread of the process);
#   - MADV_COLLAPSE from the program: 0 on the populated range (also where pages were only
#     read: zero-page PTEs, which the host kernel's own collapse would refuse); with holes (the emulated VMA is
#     not uffd-armed, so holes are allowed) 0 for the half-populated extent and EINVAL for a
#     range including a never-touched extent; EINVAL under linux-3.2 (no such advice);
#   - --host-thp 0: the emulated collapse happens, the host maps 4 KiB pages
#     (host.collapse_host_small).
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
PROG="$THPEMU_BUILD_DIR/tests/programs/collapse_check"
KHD=modern-always:enabled=madvise,scan-sleep=100ms
# The runs whose writers must meet a collapse in progress (counted at the end) keep each range
# out of the mapping 2 ms longer: a collapse takes 0.4-0.7 ms, and on 2 busy vCPUs a writer was
# once not scheduled at all during any of the five (a CI run)
GAP() { THPEMU_TEST_MIGRATE_GAP=2ms "$@"; }
# Run collapse_check (any command line ending in it); its stdout is the result. Under the default
# --host-fault thp the managed VMA is MADV_HUGEPAGE on the host, so the host's own khugepaged
# (every 10 s, 16 MiB a pass) may collapse the freshly populated range before the program looks
# (most likely what a CI run met: "the range is huge before any collapse", no emulated collapse
# having run yet): that run is repeated once. An emulator that made the range huge early would
# do it again.
prog() {
	local rc
	"$@" >"$T_TMP/prog.out" 2>"$T_TMP/prog.err"
	rc=$?
	if [ $rc -ne 0 ] && grep -q "huge before any collapse" "$T_TMP/prog.err"; then
		say "the host's khugepaged collapsed the range first ($(cat "$T_TMP/prog.err")): once more" >&2
		"$@" >"$T_TMP/prog.out" 2>"$T_TMP/prog.err"
		rc=$?
	fi
	cat "$T_TMP/prog.err" >&2
	cat "$T_TMP/prog.out"
	return $rc
}

check_report() { # NAME REPORT MIN_COLLAPSES
	local c small
	c=$(json "$2" .host.collapses)
	[ "$c" -ge "$3" ] || fail "$1: $c collapses, expected at least $3"
	expect_eq "$1 uffd errors" "$(json "$2" .host.uffd_errors)" 0
	[ "$(json "$2" .vmstat.thp_collapse_alloc)" -ge "$3" ] || fail "$1: thp_collapse_alloc too low"
	small=$(json "$2" .host.collapse_host_small)
	say "$1: $c collapses ($small host-small), longest wait $(($(json "$2" .host.collapse_copy_max_ns) / 1000)) us"
}

# khugepaged on the machine
rep="$T_OUT/khugepaged.machine.json"
out=$(prog GAP "$THPEMU" run --quiet --policy "$KHD" --report "$rep" -- "$PROG" khugepaged 20) ||
	fail "khugepaged (machine): $out"
echo "$out" | grep -q '^huge_kb 4096 smaps_kb 4096$' || fail "khugepaged (machine): not huge: $out"
check_report "khugepaged (machine)" "$rep" 2
[ "$(json "$rep" .vmstat.khugepaged_pages_collapsed)" -ge 2 ] || fail "pages_collapsed < 2"
expect_eq "machine check" "$(json "$rep" .program.machine.check)" ok

# khugepaged in a process with a pool of its own
out=$(prog env THPEMU_POLICY=$KHD THPEMU_REPORT="$T_OUT/khugepaged.own.%p.json" \
	LD_PRELOAD="$LIBTHPEMU" "$PROG" khugepaged 20) || fail "khugepaged (own pool): $out"
echo "$out" | grep -q '^huge_kb 4096 smaps_kb 4096$' || fail "khugepaged (own pool): not huge: $out"
check_report "khugepaged (own pool)" "$(ls -t "$T_OUT"/khugepaged.own.*.json | head -1)" 2
rm -f "$T_OUT"/khugepaged.own.*.json

# MADV_COLLAPSE
rep="$T_OUT/madv.json"
out=$(prog GAP "$THPEMU" run --quiet --policy modern-always:enabled=madvise --report "$rep" -- "$PROG" madv) ||
	fail "MADV_COLLAPSE: $out"
echo "$out" | grep -q '^madvise 0 errno 0$' || fail "MADV_COLLAPSE: $out"
echo "$out" | grep -q '^huge_kb 4096 smaps_kb 4096$' || fail "MADV_COLLAPSE: not huge: $out"
check_report "MADV_COLLAPSE" "$rep" 2
expect_eq "madv_collapse calls" "$(json "$rep" .host.madv_collapse_calls)" 1

# pages only read before (the zero page: the host kernel's own collapse counts them as holes
# and refuses a userfaultfd-armed range with any) collapse all the same
rep="$T_OUT/madv-zero.json"
out=$(prog "$THPEMU" run --quiet --policy modern-always:enabled=madvise --report "$rep" -- "$PROG" \
	madv-zero) || fail "MADV_COLLAPSE over zero-page PTEs: $out"
echo "$out" | grep -q '^madvise 0 errno 0$' || fail "zero pages: $out"
echo "$out" | grep -q '^huge_kb 4096 smaps_kb 4096$' || fail "zero pages: not huge: $out"
check_report "MADV_COLLAPSE over zero-page PTEs" "$rep" 2
expect_eq "zero pages: host-small collapses" "$(json "$rep" .host.collapse_host_small)" 0

rep="$T_OUT/madv-holes.json"
out=$(prog GAP "$THPEMU" run --quiet --policy modern-never --report "$rep" -- "$PROG" madv-holes) ||
	fail "MADV_COLLAPSE with holes (modern-never): $out"
echo "$out" | grep -q '^whole -1 errno 22$' || fail "holes: whole range: $out"
echo "$out" | grep -q '^extent0 0 errno 0$' || fail "holes: extent 0: $out"
echo "$out" | grep -q '^huge_kb 2048 ' || fail "holes: extent 0 not huge: $out"
check_report "MADV_COLLAPSE with holes under enabled=never" "$rep" 1

out=$("$THPEMU" run --quiet --policy linux-3.2:enabled=madvise -- "$PROG" madv-einval) ||
	fail "MADV_COLLAPSE under linux-3.2: $out"
echo "$out" | grep -q '^madvise -1 errno 22$' || fail "linux-3.2: $out"
say "MADV_COLLAPSE: EINVAL under linux-3.2"

# the writers really met collapsing ranges: their faults waited for the collapse's hold, and
# their writes during its copy were let through (write-protect faults, the pages copied again:
# the program checked every page's data)
waits=0 wp=0
for f in "$T_OUT"/khugepaged.machine.json "$T_OUT"/madv.json "$T_OUT"/madv-holes.json; do
	waits=$((waits + $(json "$f" .host.migrating_waits)))
	wp=$((wp + $(json "$f" .host.collapse_wp_writes)))
done
[ "$waits" -ge 1 ] || fail "no access of the writers waited for a collapse"
[ "$wp" -ge 1 ] || fail "no write of the writers was let through a collapse's copy"
say "$waits accesses waited for a collapse in progress, $wp writes went on during its copy"

# no THP from the host: the emulated collapse happens, the mapping stays small
rep="$T_OUT/madv.nothp.json"
out=$(prog "$THPEMU" run --quiet --host-thp 0 --policy modern-always:enabled=madvise --report "$rep" \
	-- "$PROG" madv) || fail "MADV_COLLAPSE --host-thp 0: $out"
echo "$out" | grep -q '^madvise 0 errno 0$' || fail "--host-thp 0: $out"
echo "$out" | grep -q '^huge_kb 0 ' || fail "--host-thp 0: a real PMD appeared: $out"
check_report "MADV_COLLAPSE --host-thp 0" "$rep" 2
expect_eq "host-small collapses" "$(json "$rep" .host.collapse_host_small)" 2

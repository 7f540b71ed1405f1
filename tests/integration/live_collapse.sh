#!/usr/bin/env bash
# khugepaged and MADV_COLLAPSE, live: a range of 4 KiB pages becomes a real PMD mapping
# (AnonHugePages of the program's range grows) with its data intact while two threads read and
# rewrite it; every process of a machine is scanned; a host that gives no THP leaves the emulated
# collapse standing and says so; MADV_COLLAPSE returns what the kernel returns natively.
# khugepaged's sleep is shortened (scan-sleep=100ms, the README's named quick variant).
# The host's own khugepaged may collapse a fully populated range before ours (a known limit,
# core/uffd/README.md): the programs hold their memory a while after it is huge, so ours passes
# over every range too, and counts are lower bounds where other regions (jemalloc's, sh's) may
# be collapsed as well (max_ptes_none 511 collapses any range with one page).
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
PROG="$THPEMU_BUILD_DIR/tests/programs/collapse"
quick="scan-sleep=100ms"
field() { sed -n "s/.*$2=\([0-9.]*\).*/\1/p" "$1" | tail -1; }

# 1. khugepaged collapses a 4 KiB-populated range under modern-always, data intact
rep="$T_OUT/collapse.modern.json"
"$THPEMU" run --quiet --policy "modern-always:$quick" --pool 256M --report "$rep" -- \
	"$PROG" wait 32 60 1 >"$T_TMP/modern" || fail "collapse wait: data corrupted or run failed"
cat "$T_TMP/modern"
expect_eq "AnonHugePages of the range (kB)" "$(field "$T_TMP/modern" anonhuge_kb)" 32768
expect_eq "bad words" "$(field "$T_TMP/modern" bad)" 0
n=$(json "$rep" .vmstat.khugepaged_pages_collapsed)
[ "$n" -ge 16 ] || fail "khugepaged_pages_collapsed $n < 16"
expect_eq "host.collapses" "$(json "$rep" .host.collapses)" "$n"
expect_eq "host.collapse_host_small" "$(json "$rep" .host.collapse_host_small)" 0
[ "$(json "$rep" .faults.huge)" -eq 0 ] || fail "faults took huge pages: nothing to collapse"
[ "$(json "$rep" .vmstat.thp_collapse_alloc)" -ge 16 ] || fail "thp_collapse_alloc < 16"
[ "$(field "$T_TMP/modern" rewrites)" -ge 1 ] || fail "the writer never ran during the scan"
say "modern-always: 16 ranges collapsed into real PMDs while rewritten, 0 bad words"

# 2. khugepaged off: nothing collapses in the emulated machine (the real AnonHugePages may
# still grow: the host's own khugepaged, woken by every new process that advises THP, may
# collapse a fully populated range; the emulated coverage does not see it)
rep="$T_OUT/collapse.off.json"
"$THPEMU" run --quiet --policy "modern-always:$quick,khugepaged=no" --pool 256M \
	--report "$rep" -- "$PROG" wait 8 2 >"$T_TMP/off" || fail "khugepaged=no: run failed"
expect_eq "khugepaged=no collapses" "$(json "$rep" .vmstat.khugepaged_pages_collapsed)" 0
expect_eq "khugepaged=no host.collapses" "$(json "$rep" .host.collapses)" 0
expect_eq "khugepaged=no emulated coverage" "$(json "$rep" .coverage.end_pct)" 0

# 3. two processes on one machine: khugepaged visits both
rep="$T_OUT/collapse.two.json"
"$THPEMU" run --quiet --policy "modern-always:$quick" --pool 256M --report "$rep" -- \
	sh -c "'$PROG' wait 8 60 1 & '$PROG' wait 8 60 1; wait" >"$T_TMP/two" ||
	fail "two processes: run failed or data corrupted"
[ "$(grep -c 'anonhuge_kb=8192 ' "$T_TMP/two")" -eq 2 ] || {
	cat "$T_TMP/two"
	fail "not both processes got their range collapsed"
}
n=$(json "$rep" .vmstat.khugepaged_pages_collapsed)
[ "$n" -ge 8 ] || fail "two processes: $n collapses < 8"

# 4. a host without THP (--host-thp 0): the emulated collapse stands, the mapping stays small
rep="$T_OUT/collapse.nohostthp.json"
"$THPEMU" run --quiet --host-thp 0 --policy "linux-3.2:$quick" --pool 256M --report "$rep" -- \
	"$PROG" wait 8 3 >"$T_TMP/small" || fail "--host-thp 0: run failed or data corrupted"
expect_eq "--host-thp 0 AnonHugePages" "$(field "$T_TMP/small" anonhuge_kb)" 0
n=$(json "$rep" .host.collapses)
[ "$n" -ge 4 ] || fail "--host-thp 0: $n collapses < 4"
expect_eq "--host-thp 0 collapse_host_small" "$(json "$rep" .host.collapse_host_small)" "$n"
awk -v p="$(json "$rep" .coverage.end_pct)" 'BEGIN { exit !(p >= 99) }' ||
	fail "the emulated coverage did not reach 99 % ($(json "$rep" .coverage.end_pct))"
say "--host-thp 0: 4 emulated collapses, AnonHugePages 0, host.collapse_host_small 4"

# 5. MADV_COLLAPSE: the same results natively and under a 6.12 profile; EINVAL under 3.2
"$PROG" madv >"$T_TMP/madv.native" || fail "madv: native run failed"
"$THPEMU" run --quiet --policy modern-never --pool 256M --report "$T_OUT/madv.json" -- \
	"$PROG" madv >"$T_TMP/madv.emu" || fail "madv: emulated run failed"
cat "$T_TMP/madv.emu"
cmp -s "$T_TMP/madv.native" "$T_TMP/madv.emu" || {
	diff "$T_TMP/madv.native" "$T_TMP/madv.emu"
	fail "MADV_COLLAPSE results differ from the native run"
}
grep -q '^madv full rc=0 errno=0 anonhuge_kb=2048' "$T_TMP/madv.emu" ||
	fail "MADV_COLLAPSE of a full range did not give a huge page"
expect_eq "madv: emulated MADV_COLLAPSE ranges" "$(json "$T_OUT/madv.json" .vmstat.madv_collapse)" 3
expect_eq "madv: thp_collapse_alloc" "$(json "$T_OUT/madv.json" .vmstat.thp_collapse_alloc)" 2
expect_eq "madv: pages_collapsed (khugepaged's only)" \
	"$(json "$T_OUT/madv.json" .vmstat.khugepaged_pages_collapsed)" 0
"$THPEMU" run --quiet --policy linux-3.2 --pool 256M -- "$PROG" madv >"$T_TMP/madv.32" ||
	fail "madv under linux-3.2: run failed"
grep -q '^madv full rc=-1 errno=22 ' "$T_TMP/madv.32" || fail "linux-3.2 has no MADV_COLLAPSE"
say "MADV_COLLAPSE: native and emulated results identical; EINVAL under linux-3.2"

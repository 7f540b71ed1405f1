#!/usr/bin/env bash
# Shared memory collapsed by the emulated kernel (core/mm shmem.c shmem_collapse_range, 6.12 and
# 6.1 mm/khugepaged.c hpage_collapse_scan_file / collapse_file): a memfd or a MAP_SHARED
# anonymous mapping of 8 MiB written page by page under shmem-enabled=advise without
# MADV_HUGEPAGE (4 KiB folios, one hole per 2 MiB), then
#   - MADV_COLLAPSE from the program: 0, one thp_collapse_alloc per 2 MiB, the object's frames
#     in PMD-size folios (holes included); EINVAL under linux-3.2 (no such advice);
#   - MADV_HUGEPAGE and khugepaged (scan-sleep=100ms): the same collapses, counted in
#     khugepaged_pages_collapsed (6.12 counts a huge range again at every visit, 6.1 does not);
#     none under shmem-enabled=never (the VMA check);
# and a fork child then reads every page back (written ones as written, holes zero): the
# host's pages stay where they were.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
P="$THPEMU_BUILD_DIR/tests/programs/shmem_collapse"

run() { # NAME POLICY ARGS...: the program under thpemu (lib.sh's run_report)
	run_report "$1" "$2" --pool 256M -- "$P" "${@:3}"
	grep -q "^ok " "$T_OUT/$1.out" || fail "$1: $(cat "$T_OUT/$1.out")"
}
r() { jq -r "$2" "$T_OUT/$1.json"; }

# natively first: the program's own checks hold without thpemu
for m in madv khugepaged; do
	"$P" "$m" memfd 8 100 >"$T_TMP/out" || fail "native $m: $(cat "$T_TMP/out")"
done

ADVISE="thp-madvise/madvise:shmem-enabled=advise,scan-sleep=100ms"

run madv-anon "$ADVISE" madv anon 8
grep -q "rc=0 " "$T_OUT/madv-anon.out" || fail "madv anon: $(cat "$T_OUT/madv-anon.out")"
expect_eq "madv anon: 4 KiB faults first" "$(r madv-anon .vmstat.thp_file_alloc)" 0
expect_eq "madv anon: 4 KiB folios" "$(r madv-anon .host.shmem_base)" 2044
expect_eq "madv anon: thp_collapse_alloc" "$(r madv-anon .vmstat.thp_collapse_alloc)" 4
expect_eq "madv anon: thp_collapse_alloc_failed" "$(r madv-anon .vmstat.thp_collapse_alloc_failed)" 0
expect_eq "madv anon: khugepaged_pages_collapsed" "$(r madv-anon .vmstat.khugepaged_pages_collapsed)" 0
# the holes are in the folios: the child's reads of them find the object's pages cached
expect_eq "madv anon: holes cached" "$(r madv-anon .host.shmem_cached)" 4
expect_eq "madv anon: shmem frames at the end (the object went)" "$(r madv-anon .host.pool.shmem)" 0
expect_eq "madv anon: uffd errors" "$(r madv-anon .host.uffd_errors)" 0
"$THPEMU" report "$T_OUT/madv-anon.json" >"$T_TMP/report.txt" || fail "thpemu report"
grep -q "collapse: thp_collapse_alloc 4 thp_collapse_alloc_failed 0 khugepaged_pages_collapsed 0" \
	"$T_TMP/report.txt" || fail "thpemu report: no collapse line: $(grep -i collapse "$T_TMP/report.txt")"

run madv-memfd "$ADVISE" madv memfd 8
grep -q "rc=0 " "$T_OUT/madv-memfd.out" || fail "madv memfd: $(cat "$T_OUT/madv-memfd.out")"
expect_eq "madv memfd: thp_collapse_alloc" "$(r madv-memfd .vmstat.thp_collapse_alloc)" 4
# a file outlives its mappings: its frames stay, now in PMD-size folios
expect_eq "madv memfd: shmem frames at the end" "$(r madv-memfd .host.pool.shmem)" 2048
expect_eq "madv memfd: in PMD-size folios" "$(r madv-memfd .host.pool.shmem_huge)" 2048
"$THPEMU" report "$T_OUT/madv-memfd.json" >"$T_TMP/report.txt" || fail "thpemu report"
grep -q "shmem frames at the end 2048, 2048 of them in PMD-size folios" "$T_TMP/report.txt" ||
	fail "thpemu report: no PMD-size folio count: $(grep -i shmem "$T_TMP/report.txt")"

run madv-32 "linux-3.2" madv memfd 8
grep -q "rc=-22 " "$T_OUT/madv-32.out" || fail "3.2: $(cat "$T_OUT/madv-32.out")"
expect_eq "3.2: thp_collapse_alloc" "$(r madv-32 .vmstat.thp_collapse_alloc)" 0

run khd "$ADVISE" khugepaged memfd 8 3000
expect_eq "khugepaged: thp_collapse_alloc" "$(r khd .vmstat.thp_collapse_alloc)" 4
expect_eq "khugepaged: in PMD-size folios" "$(r khd .host.pool.shmem_huge)" 2048
n=$(r khd .vmstat.khugepaged_pages_collapsed)
[ "$n" -ge 4 ] || fail "khugepaged (6.12): khugepaged_pages_collapsed $n, expected at least 4"
say "6.12 khugepaged: khugepaged_pages_collapsed $n in 3 s (the huge ranges counted at every visit)"

run khd-61 "linux-6.1:enabled=madvise,shmem-enabled=advise,scan-sleep=100ms" khugepaged memfd 8 3000
expect_eq "6.1 khugepaged: thp_collapse_alloc" "$(r khd-61 .vmstat.thp_collapse_alloc)" 4
expect_eq "6.1 khugepaged: khugepaged_pages_collapsed" \
	"$(r khd-61 .vmstat.khugepaged_pages_collapsed)" 4
expect_eq "6.1 khugepaged: in PMD-size folios" "$(r khd-61 .host.pool.shmem_huge)" 2048

run khd-never "thp-madvise/madvise:scan-sleep=100ms" khugepaged memfd 8 1000
expect_eq "shmem-enabled=never: no collapse" "$(r khd-never .vmstat.thp_collapse_alloc)" 0
expect_eq "shmem-enabled=never: no PMD-size folio" "$(r khd-never .host.pool.shmem_huge)" 0
say "ok"

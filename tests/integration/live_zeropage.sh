#!/usr/bin/env bash
# Zero pages live (core/live/README.md, "Read faults and the zero page"): a read first touch
# takes no frame, its first write is seen (a write-protect message) and takes one.
#  (a) counts, one thread over 8 MiB (4 extents) read then written: modern-always maps the huge
#      zero page once per extent (allocated once: thp_zero_page_alloc 1), answers the other
#      2044 reads without mm, and each first write splits or takes 4 KiB (thp_split_pmd 4,
#      2048 write-protect faults); modern-never maps 2048 4 KiB zero pages; linux-3.2 (no huge
#      zero page before 3.8) allocates THPs for the reads; --zero-page 0 decides reads as writes.
#      khugepaged is off in the modern-always counts: a fresh process is the first on its
#      machine's khugepaged list, which wakes khugepaged at once (6.12 mm/khugepaged.c
#      khugepaged_wait_work waits on an empty list, __khugepaged_enter wakes it), and its pass
#      collapses split extents while the program still writes them, taking their writes away
#      from the count;
#  (b) data: 4 threads whose reads and writes of each page race, a freed range read again, a
#      fork child after a read-only touch, an mremap of read-only pages, a collapse of a split
#      huge zero page (programs/zeropage.c checks every word), under three profiles;
#  (c) usemem (writes first) is untouched: no zero page, no write-protect fault;
#  (d) a bad --zero-page value is refused with one line naming the option.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
PROG="$THPEMU_BUILD_DIR/tests/programs/zeropage"
USEMEM="$THPEMU_BUILD_DIR/usemem"
[ -x "$PROG" ] || fail "$PROG not built"
[ -x "$USEMEM" ] || fail "$USEMEM not built"

# run NAME POLICY [OPTIONS...] -- CMD...: report in $T_OUT/NAME.json
run() {
	local name=$1 policy=$2
	shift 2
	"$THPEMU" run --policy "$policy" --quiet --report "$T_OUT/$name.json" "$@" \
		>"$T_TMP/$name.out" 2>"$T_TMP/$name.err" || {
		cat "$T_TMP/$name.out" "$T_TMP/$name.err" >&2
		fail "$name: the program failed (wrong data?)"
	}
}
j() { json "$T_OUT/$1.json" "$2"; }
ge() { [ "$2" -ge "$3" ] || fail "$1: $2 < $3"; }
le() { [ "$2" -le "$3" ] || fail "$1: $2 > $3"; }
# within NAME VALUE LO HI
within() {
	ge "$1" "$2" "$3"
	le "$1" "$2" "$4"
}

# (a) counts. The program's own 2048 pages; the allocator's few small mappings add a handful.
run always modern-always:khugepaged=no -- "$PROG" 8 1 count
expect_eq "always: huge zero faults" "$(j always .host.huge_zero_faults)" 4
expect_eq "always: reads without mm" "$(j always .host.zero_reads)" 2044
within "always: write-protect faults" "$(j always .host.zero_wp_faults)" 2048 2100
expect_eq "always: thp_zero_page_alloc" "$(j always .vmstat.thp_zero_page_alloc)" 1
expect_eq "always: thp_zero_page_alloc_failed" "$(j always .vmstat.thp_zero_page_alloc_failed)" 0
expect_eq "always: thp_split_pmd" "$(j always .vmstat.thp_split_pmd)" 4
expect_eq "always: no THP allocated" "$(j always .vmstat.thp_fault_alloc)" 0
le "always: 4 KiB zero faults" "$(j always .host.zero_faults)" 50
expect_eq "always: uffd errors" "$(j always .host.uffd_errors)" 0
expect_eq "always: config.zero_page" "$(j always .config.zero_page)" true
say "modern-always: $(j always .host.huge_zero_faults) huge zero, $(j always .host.zero_reads)" \
	"reads without a fault, $(j always .host.zero_wp_faults) first writes"

run never modern-never -- "$PROG" 8 1 count
within "never: zero faults" "$(j never .host.zero_faults)" 2048 2100
expect_eq "never: huge zero faults" "$(j never .host.huge_zero_faults)" 0
expect_eq "never: reads without mm" "$(j never .host.zero_reads)" 0
expect_eq "never: write-protect faults = zero faults" "$(j never .host.zero_wp_faults)" \
	"$(j never .host.zero_faults)"
expect_eq "never: thp_zero_page_alloc" "$(j never .vmstat.thp_zero_page_alloc)" 0
# a read and a write fault per page: twice the faults of a write-only run
within "never: faults" "$(j never .faults.total)" 4096 4200

run old linux-3.2 -- "$PROG" 8 1 count
expect_eq "3.2: huge zero faults" "$(j old .host.huge_zero_faults)" 0
ge "3.2: THPs for the reads" "$(j old .vmstat.thp_fault_alloc)" 4
le "3.2: write-protect faults" "$(j old .host.zero_wp_faults)" 50

run off modern-always:khugepaged=no --zero-page 0 -- "$PROG" 8 1 count
expect_eq "off: config.zero_page" "$(j off .config.zero_page)" false
for c in zero_faults huge_zero_faults zero_reads zero_wp_faults; do
	expect_eq "off: $c" "$(j off ".host.$c")" 0
done
ge "off: THPs for the reads" "$(j off .faults.huge)" 4
say "linux-3.2: $(j old .vmstat.thp_fault_alloc) THPs; --zero-page 0: $(j off .faults.huge) THPs"

# (b) data, races, fork, mremap, collapse
for pol in modern-always modern-never linux-3.2; do
	run "all-$pol" "$pol" -- "$PROG" 16 4 all
	grep -q 'bad=0' "$T_TMP/all-$pol.out" || fail "$pol: $(cat "$T_TMP/all-$pol.out")"
	expect_eq "$pol: uffd errors" "$(j "all-$pol" .host.uffd_errors)" 0
done
ge "modern-always: the split huge zero page collapsed" "$(j all-modern-always .host.collapses)" 1
ge "modern-never: zero pages unmapped by mremap read again" \
	"$(j all-modern-never .host.zero_reads)" 4096
say "4 threads, fork, mremap, collapse: every word as written under three profiles"

# (c) a program that writes first never meets a zero page
run usemem modern-always -- "$USEMEM" --size 16M --quiet
le "usemem: write-protect faults" "$(j usemem .host.zero_wp_faults)" 50
ge "usemem: THPs" "$(j usemem .faults.huge)" 8

# (d) a bad value
bad_usage "--zero-page" run --zero-page maybe -- true
say ok

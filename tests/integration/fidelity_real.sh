#!/usr/bin/env bash
# One small real comparison of thpemu with Debian's 6.12 (core/oracle/README.md, "Fidelity"):
# 512 MiB, pinned, 2 boots and 2 thpemu runs per setting, each run from a boot's memory
# snapshot taken where the workload's phase begins. Asserts only what holds on every boot and
# every run, whatever thpemu's fidelity:
#   fragmented, defrag=always and never   every boot left a whole snapshot, every thpemu run
#                                         started from one and ran; defrag=never: no
#                                         compaction stall on either side
#   no fragmentation, defrag=always       every extent huge on both sides, no stall; read
#                                         again with --real-from: the same real side; with a
#                                         setting changed: refused
#   an mlocked filler, defrag=always, vm.compact_unevictable_allowed=0 (--set: both sides)
#                                         compaction stalls and fails on both sides
#   shared memory, shmem_enabled=always (--set: both sides), no fragmentation
#                                         every extent's first touch huge on both sides, every
#                                         extent a PMD-size folio in the guest (kpageflags),
#                                         thp_file_alloc one per extent on both sides, no
#                                         anonymous THP fault
# and thpemu inside the goal (core/oracle/README.md, "Verdicts": huge % within 5 points of the
# real median or inside its range where bimodal, a counter within 25 % of the real median or
# inside its range) on the rows where it was inside on every pinned boot measured
# (tests/results/2026-12-06-fidelity-suite.md): defrag=never's and no fragmentation's every row,
# defrag=always's huge %, thp_fault_alloc, thp_fault_fallback and pgmigrate_success, the mlocked
# filler's thp_fault_alloc (its huge % is not: thpemu is 2-3 THPs short, 6-8 points of this 64M
# region; its stalls and failures are 20-28 % over the real ones, at the bound).
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not installed (qemu-system-x86)"
[ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 ||
	skip "/bin/busybox is not a static busybox (busybox-static)"
command -v apt-get >/dev/null || skip "apt-get not available: Debian's kernels cannot be fetched"

t0=$SECONDS
"$THPEMU" oracle --fetch-only --kernel 6.12 >"$T_OUT/fetch.txt" 2>&1 ||
	fail "fetching 6.12: $(tail -1 "$T_OUT/fetch.txt")"

# fid NAME ARGS...: one comparison, its table in $T_OUT/NAME.txt and JSON in $T_OUT/NAME.json
fid() {
	local name=$1 t=$SECONDS
	shift
	mkdir -p "$T_OUT/$name"
	"$THPEMU" fidelity --offline --kernel 6.12 --mem 512M --timeout 300s --boots 2 \
		--json "$T_OUT/$name.json" --html "$T_OUT/$name.html" --keep "$T_OUT/$name" "$@" \
		>"$T_OUT/$name.txt" 2>"$T_OUT/$name.err" || fail "$name: exit $?: $(tail -5 "$T_OUT/$name.err")"
	say "$name in $((SECONDS - t)) s: $(tail -1 "$T_OUT/$name.txt")"
}
# setting NAME K FILTER: FILTER on setting K of NAME's JSON
setting() { json "$T_OUT/$1.json" ".settings[$2] | $3"; }
# within NAME K ROW...: each ROW of setting K is inside the goal (verdict close or in range)
within() {
	local name=$1 k=$2 row v
	shift 2
	for row in "$@"; do
		v=$(setting "$name" "$k" ".table.$row.verdict")
		[ "$v" = close ] || [ "$v" = "in range" ] ||
			fail "$name: setting $k: $row is $v: $(setting "$name" "$k" ".table.$row | tojson")"
	done
}
rows=(huge_fault_pct huge_final_pct thp_fault_alloc thp_fault_fallback compact_stall
	compact_success compact_fail pgmigrate_success compact_migrate_scanned compact_free_scanned)

fid frag --defrag always,never --workload fragfault --fill 90% --region 64M
for k in 0 1; do
	expect_eq "frag: setting $k boots" "$(setting frag $k '[.real[] | select(.status == "ok" and .note == null)] | length')" 2
	expect_eq "frag: setting $k runs" "$(setting frag $k '[.thpemu[] | select(.status == "ok")] | length')" 2
	expect_eq "frag: setting $k snapshots" "$(ls "$T_OUT"/frag/$((k + 1))-*/real/boot-*.snap | wc -l)" 2
	expect_eq "frag: setting $k extents measured" "$(setting frag $k '[.real[], .thpemu[] | .values.huge_fault_pct | select(. != null)] | length')" 4
done
expect_eq "frag: never is setting 1" "$(setting frag 1 .name)" "enabled=always defrag=never"
expect_eq "frag: defrag=never, real compact_stall" "$(setting frag 1 '.table.compact_stall.real.max')" 0
expect_eq "frag: defrag=never, thpemu compact_stall" "$(setting frag 1 '.table.compact_stall.thpemu.max')" 0
within frag 0 huge_fault_pct huge_final_pct thp_fault_alloc thp_fault_fallback pgmigrate_success
within frag 1 "${rows[@]}"
grep -q "^thpemu:   thpemu run --policy thp-always/always:proactiveness=0 --fragment snapshot:BOOT.snap" \
	"$T_OUT/frag.txt" || fail "frag: the table does not say how thpemu ran: $(sed -n 3p "$T_OUT/frag.txt")"
grep -q -- "thpemu-wl fragfault --fill 0 --region 64M$" "$T_OUT/frag.txt" ||
	fail "frag: thpemu's side did not run from the snapshot's filler: $(sed -n 3p "$T_OUT/frag.txt")"

grep -q "^<tr class=\"[a-z]*\"><td title=\"real: fault lines" "$T_OUT/frag.html" ||
	fail "frag: no table in the HTML page"

fid nofrag --defrag always --workload fragfault --fill 0 --region 32M
expect_eq "nofrag: real huge % at first touch" "$(setting nofrag 0 '.table.huge_fault_pct.real.min')" 100
expect_eq "nofrag: thpemu huge % at first touch" "$(setting nofrag 0 '.table.huge_fault_pct.thpemu.min')" 100
expect_eq "nofrag: real thp_fault_alloc" "$(setting nofrag 0 '.table.thp_fault_alloc.real.min')" 16
expect_eq "nofrag: thpemu thp_fault_alloc" "$(setting nofrag 0 '.table.thp_fault_alloc.thpemu.min')" 16
expect_eq "nofrag: real compact_stall" "$(setting nofrag 0 '.table.compact_stall.real.max')" 0
expect_eq "nofrag: thpemu compact_stall" "$(setting nofrag 0 '.table.compact_stall.thpemu.max')" 0
within nofrag 0 "${rows[@]}"
# --real-from: the kept real side read again and thpemu's side run anew, nothing booted (no
# qemu); the same request with one setting changed is refused before anything runs
again=(fidelity --offline --kernel 6.12 --mem 512M --boots 2 --qemu /nonexistent/qemu
	--real-from "$T_OUT/nofrag" --defrag always)
"$THPEMU" "${again[@]}" --json "$T_OUT/again.json" --workload fragfault --fill 0 --region 32M \
	>"$T_OUT/again.txt" 2>"$T_OUT/again.err" || fail "again: exit $?: $(tail -3 "$T_OUT/again.err")"
expect_eq "again: the kept boots" "$(json "$T_OUT/again.json" '.settings[0].real | tojson')" \
	"$(setting nofrag 0 '.real | tojson')"
expect_eq "again: runs" "$(json "$T_OUT/again.json" '[.settings[0].thpemu[] | select(.status == "ok")] | length')" 2
bad_usage "(--seed 1 there, 3 here): its real side is not this one's" \
	"${again[@]}" --seed 3 --workload fragfault --fill 0 --region 32M
bad_usage "(the workload's arguments --fill 0 --region 32M there, --fill 0 --region 64M here)" \
	"${again[@]}" --workload fragfault --fill 0 --region 64M
# the same comparison as a cell of thpemu matrix (the form a suite takes to a Slurm array): its
# result is the fidelity JSON with the cell's facts, its table in the cell's log; a cell whose
# options thpemu fidelity refuses is refused before any cell is written
"$THPEMU" matrix --fidelity "nofrag=${again[*]:1} --workload fragfault --fill 0 --region 32M" \
	--out "$T_OUT/matrix" >"$T_OUT/matrix.txt" 2>&1 || fail "matrix: exit $?: $(tail -3 "$T_OUT/matrix.txt")"
expect_eq "matrix: the cell's kept boots" "$(jq -S -c '.settings[0].real' "$T_OUT/matrix/results/0000.json")" \
	"$(jq -S -c '.settings[0].real' "$T_OUT/nofrag.json")"
expect_eq "matrix: the cell's name" "$(json "$T_OUT/matrix/results/0000.json" .matrix.fidelity.name)" nofrag
grep -q "^  huge % at first touch " "$T_OUT/matrix/logs/0000.out" ||
	fail "matrix: no table in the cell's log: $(tail -3 "$T_OUT/matrix/logs/0000.out")"
bad_usage "thpemu matrix: fidelity cell 'x': --defrag:" matrix --out "$T_OUT/matrix2" \
	--fidelity "x=--offline --defrag sometimes --workload fragfault"
[ ! -e "$T_OUT/matrix2/cells" ] || fail "matrix: a refused cell was written"
bad_usage "thpemu report: '$T_OUT/matrix' is a matrix of thpemu fidelity cells" report "$T_OUT/matrix"
mkdir -p "$T_OUT/unev"
fid unev --defrag always --set vm.compact_unevictable_allowed=0 --workload unevictable --region 64M
expect_eq "unev: boots" "$(setting unev 0 '[.real[] | select(.status == "ok")] | length')" 2
expect_eq "unev: runs" "$(setting unev 0 '[.thpemu[] | select(.status == "ok")] | length')" 2
grep -q -- "--policy thp-always/always:proactiveness=0,compact-unevictable-allowed=0 " \
	"$T_OUT/unev.txt" || fail "unev: thpemu did not run with the setting: $(sed -n 4p "$T_OUT/unev.txt")"
for side in real thpemu; do # as oracle_pinned: (nearly) every compaction fails
	stall=$(setting unev 0 ".table.compact_stall.$side.min")
	cfail=$(setting unev 0 ".table.compact_fail.$side.min")
	[ "$stall" -gt 0 ] || fail "unev: $side: no compaction stall"
	[ $((stall - cfail)) -le $((stall / 10)) ] ||
		fail "unev: $side: compaction succeeded too often ($cfail of $stall failed)"
done
within unev 0 thp_fault_alloc

fid shmem --defrag always --set shmem_enabled=always --workload shmem --region 32M
grep -q -- "--policy thp-always/always:proactiveness=0,shmem-enabled=always " "$T_OUT/shmem.txt" ||
	fail "shmem: thpemu did not run with the setting: $(sed -n 4p "$T_OUT/shmem.txt")"
expect_eq "shmem: boots" "$(setting shmem 0 '[.real[] | select(.status == "ok")] | length')" 2
expect_eq "shmem: runs" "$(setting shmem 0 '[.thpemu[] | select(.status == "ok")] | length')" 2
for side in real thpemu; do
	expect_eq "shmem: $side huge % at first touch" "$(setting shmem 0 ".table.huge_fault_pct.$side.min")" 100
	expect_eq "shmem: $side thp_file_alloc" "$(setting shmem 0 ".table.thp_file_alloc.$side.min")" 16
	expect_eq "shmem: $side thp_file_alloc max" "$(setting shmem 0 ".table.thp_file_alloc.$side.max")" 16
	expect_eq "shmem: $side thp_fault_alloc" "$(setting shmem 0 ".table.thp_fault_alloc.$side.max")" 0
done
expect_eq "shmem: real huge % at the end" "$(setting shmem 0 '.table.huge_final_pct.real.min')" 100
grep -q "^  thp_file_alloc " "$T_OUT/shmem.txt" || fail "shmem: no thp_file_alloc row in the table"
say "ok in $((SECONDS - t0)) s"

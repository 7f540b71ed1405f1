#!/usr/bin/env bash
# A program of your own against the real kernel, one command (core/oracle/README.md, "A program
# of your own"): demo/fragtouch built static for the guest and dynamic for thpemu, one pinned
# 6.12 boot and one thpemu run from its memory, snapshot taken by /init at the program's start.
# Unfragmented memory and defrag=never, so what holds on every boot: the program's 16 THP
# faults counted on both sides (the counters over the whole program: /init's program-begin/-end,
# the run report's vmstat), no compaction on either, no huge % (fragtouch prints no fault lines).
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not installed (qemu-system-x86)"
[ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 ||
	skip "/bin/busybox is not a static busybox (busybox-static)"
command -v apt-get >/dev/null || skip "apt-get not available: Debian's kernels cannot be fetched"

"$THPEMU" oracle --fetch-only --kernel 6.12 >"$T_OUT/fetch.txt" 2>&1 ||
	fail "fetching 6.12: $(tail -1 "$T_OUT/fetch.txt")"
FT="$THPEMU_BUILD_DIR/fragtouch"
t=$SECONDS
"$THPEMU" fidelity --offline --kernel 6.12 --mem 512M --timeout 300s --boots 1 --defrag never \
	--json "$T_OUT/p.json" --keep "$T_OUT/p" --dynamic "$FT" --workload "$FT-static" 64 32 \
	>"$T_OUT/p.txt" 2>"$T_OUT/p.err" || fail "exit $?: $(tail -5 "$T_OUT/p.err")"
say "one boot and one run in $((SECONDS - t)) s"
row() { json "$T_OUT/p.json" ".settings[0].table.$1.$2"; }
expect_eq "boot" "$(json "$T_OUT/p.json" '.settings[0].real[0].status')" ok
expect_eq "run" "$(json "$T_OUT/p.json" '.settings[0].thpemu[0].status')" ok
[ -s "$T_OUT/p/1-never/real/boot-1.snap" ] || fail "no snapshot from /init at the program's start"
for side in real thpemu; do
	expect_eq "$side thp_fault_alloc" "$(row thp_fault_alloc "$side.min")" 16
	expect_eq "$side compact_stall" "$(row compact_stall "$side.max")" 0
	expect_eq "$side huge %" "$(row huge_fault_pct "$side.n")" 0
done
grep -q "^workload: $FT-static 64 32$" "$T_OUT/p.txt" || fail "workload line: $(sed -n 3p "$T_OUT/p.txt")"
grep -q -- "--report RUN.json -- $FT 64 32$" "$T_OUT/p.txt" ||
	fail "thpemu's side did not run the dynamic build: $(sed -n 4p "$T_OUT/p.txt")"
say "ok"

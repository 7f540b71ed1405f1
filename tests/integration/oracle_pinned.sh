#!/usr/bin/env bash
# The pinned CI subset of the oracle: Debian's 6.12 and 6.1 kernels booted under qemu (TCG),
# 512 MiB, three settings each, and only invariants that hold on every boot, pinned or not
# (core/oracle/README.md, "Modes": a pinned boot freezes one trajectory; anything else is
# compared as a distribution over seeds):
#   no fragmentation, defrag=always        every extent huge, no compaction stall
#   fragmented, defrag=never               no compaction stall (faults never compact)
#   an mlocked filler, compact_unevictable_allowed=0, defrag=always
#                                          compaction stalls and (nearly) always fails, some
#                                          faults fall back
# and a pinned boot repeated with its seed, beside another (--jobs 2), gives the same counters.
# Kernels are fetched into $THPEMU_ORACLE_CACHE (default ~/.cache/thpemu/oracle) once; later
# runs use the cache.
. "$(dirname "$0")/lib.sh"
need_cmd jq
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not installed (qemu-system-x86)"
[ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 ||
	skip "/bin/busybox is not a static busybox (busybox-static)"
command -v apt-get >/dev/null || skip "apt-get not available: Debian's kernels cannot be fetched"

t0=$SECONDS
for k in 6.12 6.1; do
	"$THPEMU" oracle --fetch-only --kernel $k >"$T_OUT/fetch-$k.txt" 2>&1 ||
		fail "fetching $k: $(tail -1 "$T_OUT/fetch-$k.txt")"
done
say "kernels ready in $((SECONDS - t0)) s"

# boot NAME KERNEL ORACLE-ARGS...: one pinned boot, its JSON in $T_OUT/NAME.json
boot() {
	local name=$1 k=$2 t=$SECONDS
	shift 2
	"$THPEMU" oracle --offline --kernel "$k" --mem 512M --timeout 300s --json "$T_OUT/$name.json" \
		--keep "$T_OUT/$name" "$@" >"$T_OUT/$name.txt" 2>&1 ||
		fail "$name: $(cat "$T_OUT/$name.txt")"
	say "$name: $(json "$T_OUT/$name.json" '.boots[0].status') in $((SECONDS - t)) s," \
		"$(json "$T_OUT/$name.json" '.boots[0].counts | "\(.fault_huge)/\(.extents) huge"'),"\
		"$(json "$T_OUT/$name.json" '.boots[0].vmstat | "compact_stall \(.compact_stall) fail \(.compact_fail)"')"
}
v() { json "$T_OUT/$1.json" ".boots[0].$2"; }
# a 512M guest boots with THP off (Linux turns it off below 512 MiB of RAM): set it all
thp=(--set khugepaged/defrag=1)

for k in 6.12 6.1; do
	mkdir -p "$T_OUT/nofrag-$k" "$T_OUT/never-$k" "$T_OUT/unevictable-$k"
	boot "nofrag-$k" $k --enabled always --defrag always "${thp[@]}" \
		--workload fragfault --fill 0 --region 32M
	expect_eq "nofrag-$k: huge at first touch" "$(v "nofrag-$k" counts.fault_huge)" 16
	expect_eq "nofrag-$k: huge at the end" "$(v "nofrag-$k" counts.final.huge)" 16
	expect_eq "nofrag-$k: thp_fault_alloc" "$(v "nofrag-$k" vmstat.thp_fault_alloc)" 16
	expect_eq "nofrag-$k: compact_stall" "$(v "nofrag-$k" vmstat.compact_stall)" 0
	expect_eq "nofrag-$k: scope" "$(v "nofrag-$k" counters_scope)" phase

	boot "never-$k" $k --enabled always --defrag never "${thp[@]}" \
		--workload fragfault --fill 90% --region 64M
	expect_eq "never-$k: compact_stall" "$(v "never-$k" vmstat.compact_stall)" 0
	expect_eq "never-$k: extents" "$(v "never-$k" counts.extents)" 32

	boot "unevictable-$k" $k --enabled always --defrag always "${thp[@]}" \
		--set vm.compact_unevictable_allowed=0 --workload unevictable --region 64M
	stall=$(v "unevictable-$k" vmstat.compact_stall)
	cfail=$(v "unevictable-$k" vmstat.compact_fail)
	fallback=$(v "unevictable-$k" vmstat.thp_fault_fallback)
	[ "$stall" -gt 0 ] || fail "unevictable-$k: no compaction stall"
	[ $((stall - cfail)) -le $((stall / 10)) ] ||
		fail "unevictable-$k: compaction succeeded too often ($cfail of $stall failed)"
	[ "$fallback" -gt 0 ] || fail "unevictable-$k: no fault fell back"
	expect_eq "unevictable-$k: setting applied" \
		"$(v "unevictable-$k" 'settings_applied["vm.compact_unevictable_allowed"]')" ok
done

# determinism: the same pinned boot again, byte for byte in its counters and outcomes, this
# time beside another boot (seed 2, --jobs 2: a pinned guest counts instructions, not host time)
mkdir -p "$T_OUT/nofrag-6.1-again"
boot "nofrag-6.1-again" 6.1 --boots 2 --jobs 2 --enabled always --defrag always "${thp[@]}" \
	--workload fragfault --fill 0 --region 32M
for f in vmstat vmstat_program extents summary; do
	expect_eq "pinned 6.1 repeated beside another: $f" "$(v nofrag-6.1-again "$f" | md5sum)" \
		"$(v nofrag-6.1 "$f" | md5sum)"
done
expect_eq "--jobs 2: the boots in order" "$(json "$T_OUT/nofrag-6.1-again.json" '[.boots[].seed] | join(",")')" "1,2"
say "ok in $((SECONDS - t0)) s"

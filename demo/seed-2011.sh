#!/usr/bin/env bash
# seed-2011.sh: the experiment behind Mel Gorman's "mm: Do not stall in synchronous compaction
# for THP allocations" (linux-mm, 10 Nov 2011), on one command.
#
# A writer streams files through the (emulated) page cache to a slow USB stick, while usemem,
# in the same process, maps anonymous memory with MADV_HUGEPAGE, touches it extent by extent
# and unmaps it, over and over. The run is repeated under three kernels -- the one that stalls,
# the one with Mel's patch, and 3.3's sync-light -- and for each the 2011-format stall report is
# printed (per-wait events, as Mel's monitor counted them, then the per-fault view), then a
# side-by-side table with both stall metrics.
#
# Usage: demo/seed-2011.sh [--quick] [--out DIR] [--kernel 3.2|3.1] [--only POLICY]
#                          [--pool SIZE] [--device SPEC] [--seed N] [--build DIR]
# See demo/README.md for what to expect and how to read it.
set -u

usage() {
	cat <<'EOF'
usage: seed-2011.sh [--quick] [--out DIR] [--kernel 3.2|3.1] [--only POLICY]
                    [--pool SIZE] [--device SPEC] [--seed N] [--build DIR]
  --quick         a short run (under two minutes on 2 cores) instead of the faithful one
  --out DIR       keep each run's JSON report as DIR/<policy>.json, its stall report as
                  DIR/<policy>.stalls.txt and usemem's output as DIR/<policy>.usemem.txt
  --kernel K      3.2 (default: linux-3.2, linux-3.2+nostall, linux-3.3 -- the kernel the
                  2011 experiment ran) or 3.1 (linux-3.1, linux-3.1+nostall, linux-3.3)
  --only POLICY   run only this one of the kernel's three policies
  --pool SIZE     the emulated pool (default 128M with --quick, else 256M)
  --device SPEC   the slow device (default usb2-stick-2011; see thpemu run --help)
  --seed N        seed of the initial pool state, the device model and the data (default 1)
  --build DIR     where thpemu and usemem are (default: $THPEMU_BUILD_DIR, else ./build)
EOF
}

die_usage() {
	echo "seed-2011.sh: $*" >&2
	exit 2
}

quick=0 out="" kernel=3.2 device=usb2-stick-2011 seed=1 only="" pool_opt=""
build=${THPEMU_BUILD_DIR:-}
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1 ;;
	--out | --kernel | --only | --pool | --device | --seed | --build)
		[ $# -ge 2 ] || die_usage "$1 needs a value"
		case $1 in
		--out) out=$2 ;;
		--kernel) kernel=$2 ;;
		--only) only=$2 ;;
		--pool) pool_opt=$2 ;;
		--device) device=$2 ;;
		--seed) seed=$2 ;;
		--build) build=$2 ;;
		esac
		shift
		;;
	-h | --help)
		usage
		exit 0
		;;
	*) die_usage "unknown option '$1' (accepted: --quick, --out, --kernel, --only, --pool, --device, --seed, --build, --help)" ;;
	esac
	shift
done
case $kernel in
3.2) policies=(linux-3.2 linux-3.2+nostall linux-3.3) ;;
3.1) policies=(linux-3.1 linux-3.1+nostall linux-3.3) ;;
*) die_usage "--kernel: '$kernel' is not accepted (accepted: 3.2, 3.1)" ;;
esac
if [ -n "$only" ]; then
	case " ${policies[*]} " in
	*" $only "*) policies=("$only") ;;
	*) die_usage "--only: '$only' is not one of --kernel $kernel's policies (accepted: ${policies[*]})" ;;
	esac
fi
case $seed in '' | *[!0-9]*) die_usage "--seed: '$seed' is not a non-negative integer" ;; esac
if [ -z "$build" ]; then
	build=$(cd "$(dirname "$0")/.." && pwd)/build
fi
THPEMU=$build/thpemu
USEMEM=$build/usemem
[ -x "$THPEMU" ] && [ -x "$USEMEM" ] ||
	die_usage "--build: no thpemu and usemem in '$build' (build first: cmake -S . -B build && cmake --build build)"
command -v jq >/dev/null || {
	echo "seed-2011.sh: jq is needed to read the reports (apt-get install jq)" >&2
	exit 1
}

# The scenario. The pool starts as a machine that has been up for a while: movable anonymous
# memory of other processes and clean page cache scattered through it (so a dirtied page lands
# in almost every pageblock). The writer copies files to the stick through the page cache at
# whatever rate the dirty limits allow; usemem waits until the writer has filled its share, then
# maps, touches and unmaps anonymous memory in a loop.
if [ $quick = 1 ]; then
	pool=128M
	dirty=total=16M,file=2M,dirty-ratio=40%,background-ratio=20%
	usemem=(--delay 1s --size 8M --loops 15 --hold 100ms)
else
	pool=256M
	dirty=stream,file=4M
	usemem=(--delay 10s --size 16M --loops 60 --hold 500ms)
fi
[ -n "$pool_opt" ] && pool=$pool_opt
recipe=anon:50%,pagecache:25%

if [ -n "$out" ]; then
	mkdir -p "$out" || die_usage "--out: cannot create '$out'"
	dir=$out
else
	dir=$(mktemp -d /tmp/seed-2011.XXXXXX)
	trap 'rm -rf "$dir"' EXIT
fi

echo "seed-2011: pool $pool ($recipe), writer --dirty $dirty to --device $device,"
echo "           usemem ${usemem[*]}; kernels: ${policies[*]}"
# usemem's own summary counts 2 MiB extents (one timed first touch + memset each), not faults
usemem_explain() { # usemem_explain FILE: usemem's key=value summary, said in words
	sed -n 's/^usemem: extents=\([0-9]*\) huge=\([0-9]*\) huge_pct=\([0-9.]*\) .*p50_us=\([0-9.]*\) p99_us=\([0-9.]*\).*/  usemem, per 2 MiB extent: huge % of 2 MiB extents \3 (\2 of \1); extent touch latency p50 \4 us, p99 \5 us/p' "$1" 2>/dev/null | tail -1
}
for p in "${policies[@]}"; do
	echo
	echo "=== $p"
	start=$(date +%s)
	"$THPEMU" run --quiet --policy "$p" --pool "$pool" --fragment "$recipe" --seed "$seed" \
		--device "$device" --dirty "$dirty" --report "$dir/$p.json" \
		--stall-report "$dir/$p.stalls.txt" -- "$USEMEM" "${usemem[@]}" --quiet \
		>"$dir/$p.usemem.txt"
	rc=$?
	cat "$dir/$p.usemem.txt"
	usemem_explain "$dir/$p.usemem.txt"
	[ $rc = 0 ] || echo "seed-2011: thpemu run under $p exited $rc" >&2
	echo "($(($(date +%s) - start)) s)"
	[ -s "$dir/$p.stalls.txt" ] && cat "$dir/$p.stalls.txt"
done


# The side-by-side table. usemem's rows count 2 MiB extents; thpemu's count faults (a 2 MiB extent
# served with base pages is 512 faults, one served huge is 1).
col() { # col POLICY JQ-FILTER
	[ -s "$dir/$1.json" ] && jq -r "$2" "$dir/$1.json" 2>/dev/null || echo "-"
}
usemem_p50_ms() {
	sed -n 's/.*p50_us=\([0-9.]*\).*/\1/p' "$dir/$1.usemem.txt" 2>/dev/null | tail -1 |
		awk '{ printf "%.3f", $1 / 1000 }'
}
usemem_pct() {
	sed -n 's/.*huge_pct=\([0-9.]*\).*/\1/p' "$dir/$1.usemem.txt" 2>/dev/null | tail -1
}
row() { # row LABEL JQ-FILTER
	printf '%-38s' "$1"
	for p in "${policies[@]}"; do printf '%20s' "$(col "$p" "$2")"; done
	printf '\n'
}
echo
printf '%-38s' ""
for p in "${policies[@]}"; do printf '%20s' "$p"; done
printf '\n'
printf '%-38s' "huge % of 2 MiB extents (usemem)"
for p in "${policies[@]}"; do printf '%20s' "$(usemem_pct "$p")"; done
printf '\n'
printf '%-38s' "extent touch p50 per 2 MiB extent, ms"
for p in "${policies[@]}"; do printf '%20s' "$(usemem_p50_ms "$p")"; done
printf '\n'
row "faults" '.faults.total'
row "huge % of faults" '.faults.huge_pct'
row "fault latency p50 per fault, ms" '(.latency_us.both.p50 / 1000 * 1000 | round) / 1000'
row "fault latency p99 per fault, ms" '(.latency_us.both.p99 / 1000 * 1000 | round) / 1000'
row "fault latency max per fault, ms" '(.latency_us.both.max / 1000 * 1000 | round) / 1000'
# Two stall metrics. Mel Gorman's 2011 monitor logged every single sleep in D state of at least
# a second (a fault that waits ten times is ten events): per-wait events, .stalls.waits (reports
# without them show "-"). thpemu's per-fault view counts a fault whose whole service took that
# long, however many waits it held: .stalls.count.
row "per-wait events >= threshold (count)" '.stalls.waits.count // "-"'
row "  their total s" 'if .stalls.waits then (.stalls.waits.total_ms / 100 | round) / 10 else "-" end'
row "  longest s" 'if .stalls.waits then (.stalls.waits.max_ms / 100 | round) / 10 else "-" end'
row "  share in 1-5 s %" \
	'if .stalls.waits then ([.stalls.waits.groups[].events_ms[]] as $e | if ($e | length) == 0 then "-" else ([$e[] | select(. >= 1000 and . <= 5000)] | length) * 1000 / ($e | length) | round / 10 end) else "-" end'
row "  of them kswapd's" '.stalls.waits.background // "-"'
row "per-fault stalls >= threshold (count)" '.stalls.count'
row "  their total s" '(.stalls.total_ms / 100 | round) / 10'
row "  longest s" 'if .stalls.faults then (.stalls.faults.max_ms / 100 | round) / 10 else "-" end'
row "  of them in compaction on writeback" \
	'[.stalls.groups[] | select(.cause | test("compaction.*writeback")) | .count] | add // 0'
row "  of them in reclaim on writeback" \
	'[.stalls.groups[] | select(.cause | test("reclaim.*writeback")) | .count] | add // 0'
row "writeback waits in compaction" '.vmstat.compact_writeback_wait'
row "writeback waits in direct reclaim" '.vmstat.reclaim_writeback_wait'
row "longest writeback wait ms" '.writeback_waits.max_ms | round'
row "pages written out by compaction" '.vmstat.compact_writeout'
row "MiB written to the device" '(.io.bytes_written / 1048576 * 10 | round) / 10'
row "device" 'if .io.in_process_fallback then "model (no FUSE)" else .io.preset end'
[ -n "$out" ] && echo && echo "reports kept in $out"
exit 0

#!/usr/bin/env bash
# seed-2011.sh: the experiment behind Mel Gorman's "mm: Do not stall in synchronous compaction
# for THP allocations" (linux-mm, 10 Nov 2011), on one command.
#
# A writer streams files through the (emulated) page cache to a slow USB stick, while usemem
# processes on the same emulated machine map anonymous memory with MADV_HUGEPAGE, touch it
# extent by extent and unmap it, over and over. The run is repeated under three kernels -- the one that stalls,
# the one with Mel's patch, and 3.3's sync-light -- and for each the 2011-format stall report is
# printed (per-wait events, as Mel's monitor counted them, then the per-fault view), then a
# side-by-side table with both stall metrics.
#
# Usage: demo/seed-2011.sh [--quick] [--out DIR] [--kernel 3.2|3.1] [--only LIST]
#                          [--pool SIZE] [--device SPEC] [--seed N] [--build DIR]
# See demo/README.md for what to expect and how to read it.
set -u
. "$(dirname "$0")/lib.sh"

usage() {
	cat <<'EOF'
usage: seed-2011.sh [--quick] [--out DIR] [--kernel 3.2|3.1] [--only LIST]
                    [--pool SIZE] [--device SPEC] [--seed N] [--build DIR]
  --quick         a short run (about three minutes on 2 cores) instead of the faithful one
  --out DIR       keep each run's JSON report as DIR/<policy>.json, its stall report as
                  DIR/<policy>.stalls.txt and usemem's output as DIR/<policy>.usemem.txt
  --kernel K      3.2 (default: linux-3.2, linux-3.2+nostall, linux-3.3 -- the kernel the
                  2011 experiment ran) or 3.1 (linux-3.1, linux-3.1+nostall, linux-3.3)
  --only LIST     run only these of the kernel's three policies (comma-separated)
  --pool SIZE     the emulated pool (default 128M with --quick, else 256M)
  --device SPEC   the slow device (default usb2-stick-2011; see thpemu run --help)
  --seed N        seed of the initial pool state, the device model and the data (default 1)
  --build DIR     where thpemu and usemem are (default: $THPEMU_BUILD_DIR, else ./build)
EOF
}

quick=0 out="" kernel=3.2 device=usb2-stick-2011 seed=1 only="" pool_opt=""
build=${THPEMU_BUILD_DIR:-}
demo_options --quick --out=out --kernel=kernel --only=only --pool=pool_opt --device=device \
	--seed=seed --build=build -- "$@"
case $kernel in
3.2) policies=(linux-3.2 linux-3.2+nostall linux-3.3) ;;
3.1) policies=(linux-3.1 linux-3.1+nostall linux-3.3) ;;
*) die_usage "--kernel: '$kernel' is not accepted (accepted: 3.2, 3.1)" ;;
esac
if [ -n "$only" ]; then
	chosen=()
	for p in "${policies[@]}"; do # the kernel's order, whatever the list's
		case ",$only," in *",$p,"*) chosen+=("$p") ;; esac
	done
	IFS=, read -ra wanted <<<"$only"
	for p in "${wanted[@]}"; do
		case " ${policies[*]} " in
		*" $p "*) ;;
		*) die_usage "--only: '$p' is not one of --kernel $kernel's policies (accepted: ${policies[*]})" ;;
		esac
	done
	[ ${#chosen[@]} -gt 0 ] || die_usage "--only: no policy given (accepted: ${policies[*]})"
	policies=("${chosen[@]}")
fi
case $seed in '' | *[!0-9]*) die_usage "--seed: '$seed' is not a non-negative integer" ;; esac
demo_need_build "$DEMO_BUILD_HINT"
demo_need jq "to read the reports"

# The scenario. The pool starts as a machine that has been up for a while: movable anonymous
# memory of other processes and clean page cache scattered through it (so a dirtied page lands
# in almost every pageblock). The writer copies files to the stick through the page cache at
# whatever rate the dirty limits allow; usemem waits until the writer has filled its share, then
# maps, touches and unmaps anonymous memory in a loop.
# --quick: the writer copies 96 MiB, more than the block layer's request list holds (128
# requests of 120 KiB, 15 MiB), so the list fills and stays full; four usemem processes (as the
# simulator's seed-2011 scenario runs) start once the writer's first flusher pass is under
# writeback (--wait-writeback: the machine's nr_writeback), not after a fixed delay, and run 24
# loops of 8 MiB. Each number comes from the mechanism (demo/README.md): the start from 3.2's
# dirty thresholds (below); the number of faults from 3.2's compaction deferral (3.2
# mm/compaction.c defer_compaction / compaction_deferred, COMPACT_MAX_DEFER_SHIFT 6), which once
# compaction fails lets one call in 2^defer_shift (up to 64) run, and a fault makes two calls
# (async, then sync after reclaim) or three, so a sync compaction runs only when the count's
# limit falls on a sync call: 128 extents (8 loops) ended with none in 3 of 12 runs, and the
# slowest run measured reached its first one after 210 extents fell back; the copy's size so
# that it is still under writeback then (96 MiB: the last 20 % of dirtyable memory stays dirty,
# the rest takes 30 s or more at the stick's pace).
recipe=anon:50%,pagecache:25%
if [ $quick = 1 ]; then
	pool=128M
	dirty_pct=40 background_pct=20
	dirty=total=96M,file=2M,dirty-ratio=$dirty_pct%,background-ratio=$background_pct%
	nproc=4
	usemem=(--size 8M --loops 24 --hold 100ms)
else
	pool=256M
	dirty=stream,file=4M
	nproc=1
	usemem=(--delay 10s --size 16M --loops 60 --hold 500ms)
fi
[ -n "$pool_opt" ] && pool=$pool_opt
# --quick's start, from the mechanism (demo/README.md). 3.2's balance_dirty_pages
# (mm/page-writeback.c, 3.2) lets the writer run free until its dirty + writeback pages reach the
# freerun ceiling (dirty_freerun_ceiling: (thresh + bg_thresh) / 2 of dirtyable memory, which
# determine_dirtyable_memory counts as free and reclaimable pages: free + file in the model,
# core/io/dirtier.c), then throttles it around the setpoint ((freerun + limit) / 2), and
# background writeback (wb_writeback while over_bground_thresh, fs/fs-writeback.c, 3.2) puts
# every dirty page above bg_thresh under writeback (the request list, 15 MiB, does not bound it
# here). So while the copy is throttled, at least (thresh - bg_thresh) / 2 of dirtyable memory
# is under writeback, and how much more depends on the writer's bandwidth estimate; dirtyable
# memory is at most the pool outside the recipe's anonymous share. usemem waits for half that
# floor: pool x (100 - anon) % x (dirty - background) % / 2 / 2 (3.2 MiB at 128 MiB), which the
# first flusher pass reaches. The fixed 8 MiB of the earlier demo lay inside what the copy keeps
# under writeback (7.1-11.6 MiB measured with the writer alone): a run whose writer settled low
# waited for it until kupdate wrote the copy's last dirty pages, 39 s, and missed the stall.
if [ $quick = 1 ]; then
	case $pool in
	*[Gg]) pool_kib=$((${pool%[Gg]} * 1048576)) ;;
	*[Mm]) pool_kib=$((${pool%[Mm]} * 1024)) ;;
	*[Kk]) pool_kib=${pool%[Kk]} ;;
	*[!0-9]* | '') die_usage "--pool: '$pool' is not a size this demo reads (N, NK, NM or NG)" ;;
	*) pool_kib=$((pool / 1024)) ;;
	esac
	anon_pct=${recipe#anon:}
	anon_pct=${anon_pct%%%*}
	wbwait_kib=$((pool_kib * (100 - anon_pct) / 100 * (dirty_pct - background_pct) / 200 / 2))
	usemem=(--wait-writeback "${wbwait_kib}K" "${usemem[@]}")
fi

demo_out_dir

echo "seed-2011: pool $pool ($recipe), writer --dirty $dirty to --device $device,"
echo "           $nproc x usemem ${usemem[*]}; kernels: ${policies[*]}"

# usemem's per-extent lines of every process as one summary line in its own format (the
# table, demo_usemem_explain and the tests read it), after the longest of the processes' waits
# for writeback: extents, huge, AnonHugePages summed, the latency percentiles over all extents
# (nearest rank, as usemem computes them).
usemem_merge() { # usemem_merge OUT FILES...
	local out=$1 kb
	shift
	kb=$(sed -n 's/^usemem: extents=.* anonhuge_kb=\([0-9]*\) .*/\1/p' "$@" | awk '{ s += $1 } END { print s + 0 }')
	{
		grep -h '^usemem: waited' "$@" | sort -g -k3,3 | tail -1
		awk '$1 == "fault" { print $4, ($3 == "huge") }' "$@" | sort -n | awk -v kb="$kb" '
			{ lat[++n] = $1; h += $2 }
			END {
				if (!n) exit
				p50 = lat[int(0.5 * n + 0.999999)]; p99 = lat[int(0.99 * n + 0.999999)]
				printf "usemem: extents=%d huge=%d huge_pct=%.1f anonhuge_kb=%d p50_us=%.0f p99_us=%.0f max_us=%.0f\n",
					n, h, 100 * h / n, kb, p50, p99, lat[n]
			}'
	} >"$out"
}
for p in "${policies[@]}"; do
	echo
	echo "=== $p"
	start=$(date +%s)
	# usemem's processes are children of one shell, which thpemu run starts: one machine (one
	# pool, page cache and writeback; the shell holds the writer)
	"$THPEMU" run --quiet --policy "$p" --pool "$pool" --fragment "$recipe" --seed "$seed" \
		--device "$device" --dirty "$dirty" --report "$dir/$p.json" \
		--stall-report "$dir/$p.stalls.txt" -- bash -c 'out=$1 n=$2; shift 2
			for i in $(seq 1 "$n"); do "$@" >"$out.$i" & done; wait' usemem \
		"$dir/$p.usemem" "$nproc" "$USEMEM" "${usemem[@]}"
	rc=$?
	usemem_merge "$dir/$p.usemem.txt" "$dir/$p.usemem".[0-9]*
	rm -f "$dir/$p.usemem".[0-9]*
	cat "$dir/$p.usemem.txt"
	demo_usemem_explain "$dir/$p.usemem.txt"
	[ $rc = 0 ] || echo "seed-2011: thpemu run under $p exited $rc" >&2
	echo "($(($(date +%s) - start)) s)"
	[ -s "$dir/$p.stalls.txt" ] && cat "$dir/$p.stalls.txt"
done


# The side-by-side table. usemem's rows count 2 MiB extents; thpemu's count faults (a 2 MiB extent
# served with base pages is 512 faults, one served huge is 1).
DEMO_LABEL_W=38 DEMO_CELL_W=20
usemem_p50_ms() {
	sed -n 's/.*p50_us=\([0-9.]*\).*/\1/p' "$dir/$1.usemem.txt" 2>/dev/null | tail -1 |
		awk '{ printf "%.3f", $1 / 1000 }'
}
usemem_pct() {
	sed -n 's/.*huge_pct=\([0-9.]*\).*/\1/p' "$dir/$1.usemem.txt" 2>/dev/null | tail -1
}
echo
demo_cells "" echo
demo_cells "huge % of 2 MiB extents (usemem)" usemem_pct
demo_cells "extent touch p50 per 2 MiB extent, ms" usemem_p50_ms
demo_row "faults" '.faults.total'
demo_row "huge % of faults" '.faults.huge_pct'
demo_row "fault latency p50 per fault, ms" '(.latency_us.both.p50 / 1000 * 1000 | round) / 1000'
demo_row "fault latency p99 per fault, ms" '(.latency_us.both.p99 / 1000 * 1000 | round) / 1000'
demo_row "fault latency max per fault, ms" '(.latency_us.both.max / 1000 * 1000 | round) / 1000'
# Two stall metrics. Mel Gorman's 2011 monitor logged every single sleep in D state of at least
# a second (a fault that waits ten times is ten events): per-wait events, .stalls.waits (reports
# without them show "-"). thpemu's per-fault view counts a fault whose whole service took that
# long, however many waits it held: .stalls.count.
demo_row "per-wait events >= threshold (count)" '.stalls.waits.count // "-"'
demo_row "  their total s" 'if .stalls.waits then (.stalls.waits.total_ms / 100 | round) / 10 else "-" end'
demo_row "  longest s" 'if .stalls.waits then (.stalls.waits.max_ms / 100 | round) / 10 else "-" end'
demo_row "  share in 1-5 s %" \
	'if .stalls.waits then ([.stalls.waits.groups[].events_ms[]] as $e | if ($e | length) == 0 then "-" else ([$e[] | select(. >= 1000 and . <= 5000)] | length) * 1000 / ($e | length) | round / 10 end) else "-" end'
demo_row "  of them kswapd's" '.stalls.waits.background // "-"'
demo_row "per-fault stalls >= threshold (count)" '.stalls.count'
demo_row "  their total s" '(.stalls.total_ms / 100 | round) / 10'
demo_row "  longest s" 'if .stalls.faults then (.stalls.faults.max_ms / 100 | round) / 10 else "-" end'
demo_row "  of them in compaction on writeback" \
	'[.stalls.groups[] | select(.cause | test("compaction.*writeback")) | .count] | add // 0'
demo_row "  of them in reclaim on writeback" \
	'[.stalls.groups[] | select(.cause | test("reclaim.*writeback")) | .count] | add // 0'
demo_row "writeback waits in compaction" '.vmstat.compact_writeback_wait'
demo_row "writeback waits in direct reclaim" '.vmstat.reclaim_writeback_wait'
demo_row "longest writeback wait ms" '.writeback_waits.max_ms | round'
demo_row "pages written out by compaction" '.vmstat.compact_writeout'
demo_row "MiB written to the device" '(.io.bytes_written / 1048576 * 10 | round) / 10'
demo_row "device" 'if .io.in_process_fallback then "model (no FUSE)" else .io.preset end'

# What the run shows, in Mel Gorman's unit: each single sleep of at least a second is one
# event (a fault that waits ten times is ten), as his monitor counted (20 events, 1.2-4.8 s).
echo
for p in "${policies[@]}"; do
	jq -r --arg p "$p" '(.stalls.waits.threshold_ms // 1000) as $t |
		[.stalls.waits.groups[]? | select(.kind == "compact-writeback") | .events_ms[] | select(. >= $t)] as $c |
		"\($p): \(.stalls.waits.count // 0) stalls of >= \($t / 1000) s as Mel Gorman counted them (each single wait of at least that long one event), \($c | length) of them in sync compaction waiting on writeback" +
		(if ($c | length) > 0 then ", \($c | min / 100 | round / 10)-\($c | max / 100 | round / 10) s" else "" end)' \
		"$dir/$p.json" 2>/dev/null || echo "$p: no report"
done
[ -n "$out" ] && echo && echo "reports kept in $out"
exit 0

#!/usr/bin/env bash
# The 2011 article on one command, with real programs: a real `rsync -a` of a generated tree to
# a slow USB stick (thpemu-fusedev, usb2-stick-2011) and a real foreground program (usemem, which
# maps and touches memory in loops, asking for huge pages) run as two process trees of ONE
# emulated machine (one `thpemu run`: one pool, one page cache, one writeback engine). rsync's
# writes go through the machine's page cache (dirty, then under writeback until the stick
# answers); when the foreground program's huge-page faults run sync compaction, it may wait on
# rsync's pages under writeback. Under linux-3.2, linux-3.2+nostall (Mel Gorman's patch) and
# linux-3.3 it prints the foreground program's stall report (both stacks, whose page it waited
# on), rsync's throughput, and the side-by-side table.
#
#   demo/rsync-2011.sh [--quick] [--out DIR] [--build DIR]
set -u
. "$(dirname "$0")/lib.sh"

usage() {
	cat <<'EOF'
usage: rsync-2011.sh [--quick] [--out DIR] [--build DIR]
  --quick       a short run (under two minutes on 2 cores)
  --out DIR     keep each run's JSON report, stall report and outputs in DIR
  --build DIR   where thpemu and usemem are (default: $THPEMU_BUILD_DIR, else ./build)
EOF
}

quick=0 out="" build=${THPEMU_BUILD_DIR:-}
demo_options --quick --out=out --build=build -- "$@"
demo_need_build "$DEMO_BUILD_HINT"
for c in jq rsync python3; do demo_need $c; done
policies=(linux-3.2 linux-3.2+nostall linux-3.3)
if [ $quick = 1 ]; then
	pool=128M tree_mb=48 files=24
	usemem=(--delay 2s --size 8M --loops 12 --hold 100ms)
else
	pool=256M tree_mb=192 files=48
	usemem=(--delay 5s --size 16M --loops 40 --hold 500ms)
fi
recipe=anon:50%,pagecache:25%
device=usb2-stick-2011

demo_out_dir
src=$(mktemp -d /tmp/rsync-2011-src.XXXXXX)
trap 'rm -rf "$src"; [ -n "$out" ] || rm -rf "$dir"' EXIT
python3 - "$src" "$tree_mb" "$files" <<'PY'
import os, random, sys
root, mb, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
r = random.Random(2011)
for i in range(n):
    d = os.path.join(root, "d%d" % (i % 4))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%03d.bin" % i), "wb") as f:
        f.write(r.randbytes(mb * 1048576 // n))
PY

# What runs on the machine: rsync to the stick in the background, usemem in the foreground;
# the tree read back from the stick must equal the source.
cat >"$dir/job.sh" <<'EOF'
src=$1 out=$2
shift 2
t0=$(date +%s.%N)
(rsync -a "$src/" "$THPEMU_DEVICE_DIR/tree/" && date +%s.%N >"$out.rsync_end") &
rs=$!
"$@" --quiet >"$out.usemem.txt"
wait $rs || exit 1
echo "$t0" >"$out.rsync_start"
diff -r "$src" "$THPEMU_DEVICE_DIR/tree" >/dev/null || { echo "rsync-2011: the tree on the stick differs" >&2; exit 1; }
EOF

echo "rsync-2011: one machine: pool $pool ($recipe), device $device;"
echo "            rsync -a of $tree_mb MiB ($files files) + usemem ${usemem[*]}"
for p in "${policies[@]}"; do
	echo
	echo "=== $p"
	start=$(date +%s)
	"$THPEMU" run --quiet --policy "$p" --pool "$pool" --fragment "$recipe" --device "$device" \
		--report "$dir/$p.json" --stall-report "$dir/$p.stalls.txt" -- \
		bash "$dir/job.sh" "$src" "$dir/$p" "$USEMEM" "${usemem[@]}"
	rc=$?
	[ $rc = 0 ] || echo "rsync-2011: the run under $p exited $rc" >&2
	cat "$dir/$p.usemem.txt" 2>/dev/null | tail -2
	demo_usemem_explain "$dir/$p.usemem.txt"
	if [ -s "$dir/$p.rsync_end" ]; then
		awk -v a="$(cat "$dir/$p.rsync_start")" -v b="$(cat "$dir/$p.rsync_end")" -v mb="$tree_mb" \
			'BEGIN { printf "rsync: %d MiB in %.1f s (%.1f MB/s into the page cache)\n", mb, b - a, mb * 1.048576 / (b - a) }' |
			tee "$dir/$p.rsync.txt"
	fi
	echo "($(($(date +%s) - start)) s)"
	# the stall report (of the processes that stalled): the first event group
	[ -s "$dir/$p.stalls.txt" ] &&
		awk '/^Time stalled/ { g++ } g <= 1' "$dir/$p.stalls.txt" | head -30
done

DEMO_LABEL_W=40 DEMO_CELL_W=19
rsync_mbs() { sed -n 's/.*(\([0-9.]*\) MB\/s.*/\1/p' "$dir/$1.rsync.txt" 2>/dev/null; }
echo
demo_cells "" echo
demo_row "processes on the machine" '.program.processes'
demo_row "huge % of faults" '.faults.huge_pct'
demo_row "stalls >= 1 s (per fault)" '.stalls.count'
demo_row "longest fault ms" '(.latency_us.both.max / 1000 | round)'
demo_row "stalls on rsync's pages" '[.stalls.groups[] | select((.waited_on // "") | test("rsync")) | .count] | add // 0'
demo_row "writeback waits in compaction" '.vmstat.compact_writeback_wait'
demo_row "pages rsync dirtied (machine)" '.program.machine.writers.pages_dirtied'
demo_row "most pages under writeback" '.program.machine.writers.writeback_max'
demo_cells "rsync MB/s into the page cache" rsync_mbs
[ -n "$out" ] && echo && echo "reports kept in $out"
exit 0

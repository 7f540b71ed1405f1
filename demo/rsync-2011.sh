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

usage() {
	cat <<'EOF'
usage: rsync-2011.sh [--quick] [--out DIR] [--build DIR]
  --quick       a short run (under two minutes on 2 cores)
  --out DIR     keep each run's JSON report, stall report and outputs in DIR
  --build DIR   where thpemu and usemem are (default: $THPEMU_BUILD_DIR, else ./build)
EOF
}

die_usage() {
	echo "rsync-2011.sh: $*" >&2
	exit 2
}

quick=0 out="" build=${THPEMU_BUILD_DIR:-}
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1 ;;
	--out | --build)
		[ $# -ge 2 ] || die_usage "$1 needs a value"
		case $1 in
		--out) out=$2 ;;
		--build) build=$2 ;;
		esac
		shift
		;;
	-h | --help)
		usage
		exit 0
		;;
	*) die_usage "unknown option '$1' (accepted: --quick, --out, --build, --help)" ;;
	esac
	shift
done
[ -n "$build" ] || build=$(cd "$(dirname "$0")/.." && pwd)/build
THPEMU=$build/thpemu
USEMEM=$build/usemem
[ -x "$THPEMU" ] && [ -x "$USEMEM" ] ||
	die_usage "--build: no thpemu and usemem in '$build' (build first: cmake -S . -B build && cmake --build build)"
for c in jq rsync python3; do
	command -v $c >/dev/null || {
		echo "rsync-2011.sh: $c is needed (apt-get install $c)" >&2
		exit 1
	}
done
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

if [ -n "$out" ]; then
	mkdir -p "$out" || die_usage "--out: cannot create '$out'"
	dir=$out
else
	dir=$(mktemp -d /tmp/rsync-2011.XXXXXX)
	trap 'rm -rf "$dir"' EXIT
fi
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
# usemem's own summary counts 2 MiB extents (one timed first touch + memset each), not faults
usemem_explain() { # usemem_explain FILE: usemem's key=value summary, said in words
	sed -n 's/^usemem: extents=\([0-9]*\) huge=\([0-9]*\) huge_pct=\([0-9.]*\) .*p50_us=\([0-9.]*\) p99_us=\([0-9.]*\).*/  usemem, per 2 MiB extent: huge % of 2 MiB extents \3 (\2 of \1); extent touch latency p50 \4 us, p99 \5 us/p' "$1" 2>/dev/null | tail -1
}
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
	usemem_explain "$dir/$p.usemem.txt"
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

col() { [ -s "$dir/$1.json" ] && jq -r "$2" "$dir/$1.json" 2>/dev/null || echo "-"; }
row() {
	printf '%-40s' "$1"
	for p in "${policies[@]}"; do printf '%19s' "$(col "$p" "$2")"; done
	printf '\n'
}
echo
printf '%-40s' ""
for p in "${policies[@]}"; do printf '%19s' "$p"; done
printf '\n'
row "processes on the machine" '.program.processes'
row "huge % of faults" '.faults.huge_pct'
row "stalls >= 1 s (per fault)" '.stalls.count'
row "longest fault ms" '(.latency_us.both.max / 1000 | round)'
row "stalls on rsync's pages" '[.stalls.groups[] | select((.waited_on // "") | test("rsync")) | .count] | add // 0'
row "writeback waits in compaction" '.vmstat.compact_writeback_wait'
row "pages rsync dirtied (machine)" '.program.machine.writers.pages_dirtied'
row "most pages under writeback" '.program.machine.writers.writeback_max'
printf '%-40s' "rsync MB/s into the page cache"
for p in "${policies[@]}"; do printf '%19s' "$(sed -n 's/.*(\([0-9.]*\) MB\/s.*/\1/p' "$dir/$p.rsync.txt" 2>/dev/null)"; done
printf '\n'
[ -n "$out" ] && echo && echo "reports kept in $out"
exit 0

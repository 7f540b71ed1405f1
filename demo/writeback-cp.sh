#!/usr/bin/env bash
# Mel Gorman's writebackCP (mmtests thpavail, Nov 2011) live, scaled down: on one emulated
# machine per kernel (one `thpemu run`: one pool, one page cache, one writeback engine, the
# usb2-stick-2011 stick mounted by thpemu-fusedev), a reader streams clean page cache, a real
# `dd if=/dev/zero` writes a file to the stick (its WRITEs become the machine's dirty pages, held
# under writeback at the stick's pace), and once the page cache has filled memory a real
# `usemem` faults a private anonymous mapping the size of memory without MADV_HUGEPAGE (THP
# enabled=always, as 3.x shipped). Per kernel (linux-3.1, linux-3.2, linux-3.3 = the sync-light
# series) it prints alloc's elapsed time and the machine's thp_fault_alloc / thp_fault_fallback,
# then the ratios against 3.1 (published: 3.2-rc2 0.50, sync-light 0.06).
#
# Scaling (demo/README.md): memory 2 GiB -> --pool 256M (--quick 128M), so alloc's mapping
# shrinks by 8 (16); the stick keeps its 2011 speed; 5 iterations -> 1 (--iterations N);
# the reader is the machine's own reader thread (--dirty stream,read: real reads of a FUSE file
# do not enter the emulated page cache, writes do), standing in for cp /dev/sda /dev/null;
# thpavail's "MemFree < MemTotal/6" becomes a fixed fill time.
#
#   demo/writeback-cp.sh [--quick] [--iterations N] [--out DIR] [--build DIR]
set -u
. "$(dirname "$0")/lib.sh"

usage() {
	cat <<'EOF'
usage: writeback-cp.sh [--quick] [--iterations N] [--out DIR] [--build DIR]
  --quick         a short run (128M; about 70 s on 2 cores)
  --iterations N  alloc runs per kernel (default 1)
  --out DIR       keep each run's JSON report and outputs in DIR
  --build DIR     where thpemu and usemem are (default: $THPEMU_BUILD_DIR, else ./build)
EOF
}

demo_check_value() { # an option's value, as it is read
	case $1 in
	--iterations)
		case $2 in
		[1-9] | [1-9][0-9]) ;;
		*) die_usage "--iterations: '$2' is not accepted (1..99)" ;;
		esac
		;;
	esac
}

quick=0 out="" build=${THPEMU_BUILD_DIR:-} iters=1
demo_options --quick --iterations=iters --out=out --build=build -- "$@"
demo_need_build "$DEMO_BUILD_HINT"
demo_need jq
policies=(linux-3.1 linux-3.2 linux-3.3)
if [ $quick = 1 ]; then
	pool=128M fill=10 limit=60
else
	pool=256M fill=15 limit=300
fi
device=usb2-stick-2011
reader=stream,read,file=16M

demo_out_dir

# On the machine: dd to the stick in a loop (cp /dev/zero mnt, restarted), after the fill time
# usemem maps the pool's size and touches it once; alloc's elapsed goes to $out.elapsed. A run
# longer than the limit is cut (usemem killed) and reported as at least the limit.
cat >"$dir/job.sh" <<'EOF'
out=$1 fill=$2 limit=$3 size=$4 usemem=$5
(while :; do dd if=/dev/zero of="$THPEMU_DEVICE_DIR/zero" bs=1M count=64 2>/dev/null; done) &
writer=$!
sleep "$fill"
t0=$(date +%s.%N)
timeout "$limit" "$usemem" --size "$size" --no-madvise --quiet >"$out.usemem.txt"
rc=$?
t1=$(date +%s.%N)
kill "$writer" 2>/dev/null
pkill -P "$writer" dd 2>/dev/null
wait "$writer" 2>/dev/null
awk -v a="$t0" -v b="$t1" -v rc="$rc" 'BEGIN { printf "%.2f%s\n", b - a, rc == 124 ? "+" : "" }' >"$out.elapsed"
EOF

echo "writeback-cp: one machine per kernel: pool $pool, device $device, reader $reader,"
echo "              dd if=/dev/zero to the stick, usemem --size $pool --no-madvise after ${fill} s"
declare -A el al fb
for p in "${policies[@]}"; do
	for ((i = 1; i <= iters; i++)); do
		r="$dir/$p.$i"
		"$THPEMU" run --quiet --policy "$p" --pool "$pool" --device "$device" --dirty "$reader" \
			--report "$r.json" -- bash "$dir/job.sh" "$r" "$fill" "$limit" "$pool" "$USEMEM" ||
			echo "writeback-cp: the run under $p exited $?" >&2
		e=$(cat "$r.elapsed" 2>/dev/null || echo "-")
		a=$(jq -r '.vmstat.thp_fault_alloc // "-"' "$r.json" 2>/dev/null || echo "-")
		f=$(jq -r '.vmstat.thp_fault_fallback // "-"' "$r.json" 2>/dev/null || echo "-")
		printf '%-10s iteration %d: elapsed %8s s  thp_fault_alloc %5s  thp_fault_fallback %5s\n' \
			"$p" "$i" "$e" "$a" "$f"
		el[$p]="${el[$p]:-} ${e%+}"
	done
done
mean() { echo "$1" | awk '{ s = 0; for (i = 1; i <= NF; i++) s += $i; printf "%.2f", NF ? s / NF : 0 }'; }
echo
printf '%-10s %12s %10s %10s\n' kernel "elapsed (s)" "/ 3.1" published
m31=$(mean "${el[linux-3.1]}")
for p in "${policies[@]}"; do
	m=$(mean "${el[$p]}")
	case $p in linux-3.1) pub=1.00 ;; linux-3.2) pub=0.50 ;; linux-3.3) pub=0.06 ;; esac
	printf '%-10s %12s %10s %10s\n' "$p" "$m" "$(awk -v a="$m" -v b="$m31" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')" "$pub"
done
grep -q '+' "$dir"/*.elapsed 2>/dev/null && echo "(a '+' elapsed hit the ${limit} s limit: the ratio is a bound)"
[ -n "$out" ] && echo && echo "reports kept in $out"
exit 0

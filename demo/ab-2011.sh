#!/usr/bin/env bash
# ab-2011.sh: Mel Gorman's patch A/B-tested the way a kernel developer would — the 2011
# experiment of seed-2011.sh --quick (a slow stick, a writer through the page cache, usemem),
# the stalling kernel against the patched one, N runs each, alternating, with statistics and an
# HTML report.
#
# Usage: demo/ab-2011.sh [--runs N] [--kernel 3.2|3.1] [--out DIR] [--build DIR]
#   --runs N     runs per side (default 3)
#   --kernel K   3.2 (default; the kernel the patch was measured on) or 3.1 (mainline 3.1.0,
#                whose direct reclaim stalls on writeback too: the patch changes little there)
#   --out DIR    where ab.json, ab.html and ab.txt go (default ./ab-2011)
#   --build DIR  where thpemu and usemem are (default: $THPEMU_BUILD_DIR, else ./build)
set -u
runs=3 kernel=3.2 out=ab-2011 build=${THPEMU_BUILD_DIR:-}
die_usage() {
	echo "ab-2011.sh: $*" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case $1 in
	--runs | --kernel | --out | --build)
		[ $# -ge 2 ] || die_usage "$1 needs a value"
		case $1 in
		--runs) runs=$2 ;;
		--kernel) kernel=$2 ;;
		--out) out=$2 ;;
		--build) build=$2 ;;
		esac
		shift
		;;
	-h | --help)
		sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*) die_usage "unknown option '$1' (accepted: --runs, --kernel, --out, --build, --help)" ;;
	esac
	shift
done
case $kernel in 3.2 | 3.1) ;; *) die_usage "--kernel: '$kernel' is not accepted (3.2, 3.1)" ;; esac
[ -n "$build" ] || build=$(cd "$(dirname "$0")/.." && pwd)/build
[ -x "$build/thpemu" ] && [ -x "$build/usemem" ] || die_usage "--build: no thpemu and usemem in '$build'"
mkdir -p "$out" || die_usage "--out: cannot create '$out'"

spec="pool=128M,fragment=anon:50%,pagecache:25%,device=usb2-stick-2011"
spec="$spec,dirty=total=16M,file=2M,dirty-ratio=40%,background-ratio=20%"
"$build/thpemu" ab --a "policy=linux-$kernel,$spec" --b "policy=linux-$kernel+nostall,$spec" \
	--runs "$runs" --json "$out/ab.json" --html "$out/ab.html" -- \
	"$build/usemem" --delay 1s --size 8M --loops 15 --hold 100ms --quiet | tee "$out/ab.txt"
rc=${PIPESTATUS[0]}
echo
echo "report: $out/ab.html (open it in a browser), data: $out/ab.json"
exit "$rc"

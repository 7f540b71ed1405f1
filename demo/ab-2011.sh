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
. "$(dirname "$0")/lib.sh"

usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; } # the lines above

runs=3 kernel=3.2 out=ab-2011 build=${THPEMU_BUILD_DIR:-}
demo_options --runs=runs --kernel=kernel --out=out --build=build -- "$@"
case $kernel in 3.2 | 3.1) ;; *) die_usage "--kernel: '$kernel' is not accepted (3.2, 3.1)" ;; esac
demo_need_build
demo_make_out

spec="pool=128M,fragment=anon:50%,pagecache:25%,device=usb2-stick-2011"
spec="$spec,dirty=total=16M,file=2M,dirty-ratio=40%,background-ratio=20%"
"$THPEMU" ab --a "policy=linux-$kernel,$spec" --b "policy=linux-$kernel+nostall,$spec" \
	--runs "$runs" --json "$out/ab.json" --html "$out/ab.html" -- \
	"$USEMEM" --delay 1s --size 8M --loops 15 --hold 100ms --quiet | tee "$out/ab.txt"
rc=${PIPESTATUS[0]}
echo
echo "report: $out/ab.html (open it in a browser), data: $out/ab.json"
exit "$rc"

#!/usr/bin/env bash
# The whole fidelity suite in one command: every cell (a `thpemu fidelity` comparison of one
# workload and its settings) on each kernel and guest size asked for, each cell's JSON kept,
# and the rows per cell and in total: close / in range / OFF / n/a, the share inside the goal
# (close or in range, of every row shown; core/oracle/README.md, "Verdicts") and the wall time.
#
#   tests/perf/fidelity_suite.sh [OPTIONS]
#     --kernels LIST  6.12 and/or 6.1, comma-separated (default 6.12,6.1)
#     --mem LIST      guest sizes, 256M..4G, comma-separated (default 512M,1G)
#     --boots N       boots per setting, 1..32 (default 5); thpemu runs as many (--runs N)
#     --jobs N        boots side by side, passed to thpemu fidelity (default: its own, the
#                     online CPUs in pinned mode)
#     --cells LIST    cells to run, comma-separated (default all; --list shows them)
#     --out DIR       where each cell's JSON, table and stderr go (default: a new directory
#                     fidelity-suite.DATE in the current one); summary.tsv the per-cell rows
#     --timeout DUR   per boot, passed to thpemu fidelity (default 30m)
#     --offline       passed to thpemu fidelity (the cached kernels only)
#     --tally DIR     run nothing: the per-cell rows and totals of an earlier --out DIR
#     --slurm         run the cells as a Slurm job array, one task a cell, through thpemu
#                     matrix (its fidelity cells in DIR/matrix; DIR and the build must be at
#                     the same paths on the nodes); waits for the array, then the rows
#     --sbatch-args ARGS  more sbatch options for --slurm (thpemu matrix --sbatch-args)
#     --dry-run       print each cell's command, run nothing
#     --list          the cells, the kernels each runs on and their options
# A cell runs on the kernels of its own that are asked for (mthp, shrinker and writer: 6.12).
# Here the cells run one after the other, each printing its row as it ends; with --slurm each is
# a cell of a thpemu matrix (DIR/matrix/cells.txt the cells, DIR/NAME.json a link to its result),
# and an interrupted or partly failed array resumes when the same command runs again.
# Exit status: 0 every cell ran and ended well; 1 a cell failed (its rows count as what its
# JSON holds, none without one); 2 bad usage (one line naming the option), before any work.
# Environment: THPEMU_BUILD_DIR (default: build/ of the source tree): thpemu, and fragtouch and
# fragtouch-static for the program cell. Needs what thpemu fidelity needs: root, userfaultfd,
# qemu-system-x86_64, a static busybox, apt for the kernels (or --offline); and jq.
set -u
me=fidelity_suite.sh
usage_error() {
	echo "$me: $*" >&2
	exit 2
}
here=$(cd "$(dirname "$0")" && pwd)
: "${THPEMU_SOURCE_DIR:=$(cd "$here/../.." && pwd)}"
: "${THPEMU_BUILD_DIR:=$THPEMU_SOURCE_DIR/build}"
B=$THPEMU_BUILD_DIR

# name|kernels|options: the cells of tests/results/2026-12-06-fidelity-suite.md and
# -fidelity-suite-2.md; FRAGTOUCH stands for the build's demo/fragtouch.
CELLS=(
	"fragfault|6.12,6.1|--enabled always --defrag always,madvise,never,defer --workload fragfault"
	"fragfault-madvise|6.12|--enabled madvise --defrag always,madvise --workload fragfault"
	"unevictable|6.12,6.1|--enabled always --defrag always --set vm.compact_unevictable_allowed=0 --workload unevictable"
	"thpscale|6.12,6.1|--at start --enabled always --defrag always --workload thpscale --anon 90%"
	"mthp|6.12|--enabled never --defrag madvise --set hugepages-64kB=always --workload mthp"
	"khugepaged|6.12,6.1|--at start --enabled always --defrag never --set khugepaged/scan_sleep_millisecs=100,khugepaged/alloc_sleep_millisecs=100 --workload khugepaged"
	"shrinker|6.12|--at start --enabled always --defrag madvise --set khugepaged/max_ptes_none=409 --workload shrinker --pressure 100%"
	"thpcompact|6.12,6.1|--at start --defrag always,never --workload thpcompact --anon 70%"
	"writer|6.12|--at start --defrag always,never --disk 1G --disk-write-rate 40MB/s --workload writer --write 400M --region 128M --delay 8s"
	"program|6.12,6.1|--defrag always,never --dynamic FRAGTOUCH --workload FRAGTOUCH-static 400 128"
)
cell_names() { local c; for c in "${CELLS[@]}"; do printf '%s\n' "${c%%|*}"; done; }
cell_field() { # cell_field NAME 2|3
	local c
	for c in "${CELLS[@]}"; do
		[ "${c%%|*}" = "$1" ] && { printf '%s\n' "$c" | cut -d'|' -f"$2"; return 0; }
	done
	return 1
}
# in_list WORD LIST: is WORD one of LIST's comma-separated words?
in_list() { case ",$2," in *",$1,"*) return 0 ;; esac; return 1; }

kernels=6.12,6.1 mems=512M,1G boots=5 jobs='' cells='' out='' timeout=30m offline='' tally='' dry=0
slurm=0 sbatch_args=''
need() { [ $# -ge 2 ] && [ -n "$2" ] || usage_error "$1 needs a value (see $me --help)"; }
while [ $# -gt 0 ]; do
	case $1 in
	--kernels) need "$@"; kernels=$2; shift ;;
	--mem) need "$@"; mems=$2; shift ;;
	--boots) need "$@"; boots=$2; shift ;;
	--jobs) need "$@"; jobs=$2; shift ;;
	--cells) need "$@"; cells=$2; shift ;;
	--out) need "$@"; out=$2; shift ;;
	--timeout) need "$@"; timeout=$2; shift ;;
	--tally) need "$@"; tally=$2; shift ;;
	--sbatch-args) need "$@"; sbatch_args=$2; shift ;;
	--slurm) slurm=1 ;;
	--offline) offline=--offline ;;
	--dry-run) dry=1 ;;
	--list)
		for c in "${CELLS[@]}"; do
			printf '%-18s %-9s %s\n' "${c%%|*}" "$(echo "$c" | cut -d'|' -f2)" "$(echo "$c" | cut -d'|' -f3)"
		done
		exit 0
		;;
	-h | --help)
		sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*) usage_error "unknown option '$1' (see $me --help)" ;;
	esac
	shift
done

IFS=, read -ra K <<<"$kernels"
for k in "${K[@]}"; do
	[ "$k" = 6.12 ] || [ "$k" = 6.1 ] || usage_error "--kernels: '$k' is not 6.12 or 6.1"
done
[ ${#K[@]} -gt 0 ] || usage_error "--kernels: '' is not 6.12 or 6.1"
IFS=, read -ra M <<<"$mems"
for m in "${M[@]}"; do
	mib=$(awk -v s="$m" 'BEGIN { if (s ~ /^[0-9]+M$/) print s + 0; else if (s ~ /^[0-9]+G$/) print (s + 0) * 1024; else print -1 }')
	[ "$mib" -ge 256 ] && [ "$mib" -le 4096 ] || usage_error "--mem: '$m' is not a size 256M..4G (e.g. 512M,1G)"
done
[ ${#M[@]} -gt 0 ] || usage_error "--mem: '' is not a size 256M..4G (e.g. 512M,1G)"
[[ $boots =~ ^[0-9]+$ ]] && [ "$boots" -ge 1 ] && [ "$boots" -le 32 ] ||
	usage_error "--boots: '$boots' is not an integer 1..32"
[ -z "$jobs" ] || { [[ $jobs =~ ^[0-9]+$ ]] && [ "$jobs" -ge 1 ] && [ "$jobs" -le 64 ]; } ||
	usage_error "--jobs: '$jobs' is not an integer 1..64"
[ -n "$cells" ] || cells=$(cell_names | paste -sd,)
IFS=, read -ra C <<<"$cells"
for c in "${C[@]}"; do
	cell_field "$c" 2 >/dev/null || usage_error "--cells: '$c' is not a cell ($(cell_names | paste -sd' '))"
done
[ -z "$tally" ] || [ -d "$tally" ] || usage_error "--tally: '$tally' is not a directory (an earlier --out DIR)"
[ -z "$sbatch_args" ] || [ "$slurm" = 1 ] || usage_error "--sbatch-args goes with --slurm"
[ -z "$tally" ] || [ "$slurm" = 0 ] || usage_error "--tally runs nothing: it does not go with --slurm"

# The cells to run, in order: size, kernel, cell.
runs=()
for m in "${M[@]}"; do
	for k in "${K[@]}"; do
		for c in "${C[@]}"; do
			in_list "$k" "$(cell_field "$c" 2)" && runs+=("$m|$k|$c")
		done
	done
done
[ ${#runs[@]} -gt 0 ] || usage_error "--cells: none of '$cells' runs on --kernels $kernels"
[ "$slurm" = 0 ] || [ ${#runs[@]} -le 256 ] ||
	usage_error "--slurm: ${#runs[@]} cells, a matrix holds at most 256 (fewer --mem, --kernels or --cells)"

if [ -n "$tally" ]; then
	out=$tally
else
	[ -n "$out" ] || out=fidelity-suite.$(date -u +%Y%m%dT%H%M%SZ)
	if [ "$dry" = 0 ]; then
		command -v jq >/dev/null || { echo "$me: jq not installed" >&2; exit 1; }
		[ -x "$B/thpemu" ] || { echo "$me: $B/thpemu not built (cmake --build)" >&2; exit 1; }
		mkdir -p "$out" || exit 1
	fi
fi

# opts SIZE KERNEL CELL [JSON]: the cell's thpemu fidelity options, one word a line
opts() {
	local o
	o=$(cell_field "$3" 3)
	o=${o//FRAGTOUCH/$B/fragtouch}
	# shellcheck disable=SC2086 # the cell's options split into words (no glob in any)
	printf '%s\n' $offline --kernel "$2" --mem "$1" --boots "$boots" --runs "$boots" \
		${jobs:+--jobs "$jobs"} --timeout "$timeout" ${4:+--json "$4"} $o
}
# cmd SIZE KERNEL CELL: the cell's thpemu fidelity command, one word a line
cmd() {
	printf '%s\n' "$B/thpemu" fidelity
	opts "$@" "$out/$1-$2-$3.json"
}
# wall SECONDS: 1h02m03s
wall() { printf '%dh%02dm%02ds' $(($1 / 3600)) $(($1 % 3600 / 60)) $(($1 % 60)); }
# share INSIDE ALL: a percentage, one decimal
share() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f %%", 100 * a / b; else print "n/a" }'; }

# --slurm: the cells as a thpemu matrix of fidelity cells, run as a job array (sbatch --wait).
# Each cell's JSON is then a link to its result, or, for a comparison that ended with a failed
# boot or run (no result), to the table the matrix kept in its log; the rows are made below as
# here. The cells file is written aside and kept only once thpemu matrix has taken it.
declare -A sstatus=()
if [ "$slurm" = 1 ]; then
	mkdir -p "$out" || exit 1 # --dry-run too: thpemu matrix --dry-run writes the cells
	cf=$(mktemp) || exit 1
	for r in "${runs[@]}"; do
		IFS='|' read -r m k c <<<"$r"
		echo "$m-$k-$c=$(opts "$m" "$k" "$c" | paste -sd' ')"
	done >"$cf"
	margs=(matrix --fidelity-cells "$cf" --out "$out/matrix" --slurm)
	if [ "$dry" = 1 ]; then margs+=(--dry-run); else margs+=(--wait); fi
	[ -z "$sbatch_args" ] || margs+=(--sbatch-args "$sbatch_args")
	t_slurm=$SECONDS
	"$B/thpemu" "${margs[@]}"
	mrc=$?
	if [ $mrc = 2 ]; then # a cell refused (its line said why), before anything was written
		rm -f "$cf"
		exit 2
	fi
	mv "$cf" "$out/matrix/cells.txt" || exit 1
	[ "$dry" = 0 ] || exit "$mrc"
	i=0
	for r in "${runs[@]}"; do
		IFS='|' read -r m k c <<<"$r"
		n=$(printf %04d $i) i=$((i + 1))
		if [ -e "$out/matrix/results/$n.json" ]; then
			ln -sfn "matrix/results/$n.json" "$out/$m-$k-$c.json"
			sstatus[$m-$k-$c]=ok
		elif [ -s "$out/matrix/logs/$n.fidelity.json" ]; then
			ln -sfn "matrix/logs/$n.fidelity.json" "$out/$m-$k-$c.json"
			sstatus[$m-$k-$c]="failed (matrix/logs/$n.out)"
		else
			rm -f "$out/$m-$k-$c.json"
			sstatus[$m-$k-$c]="no result (matrix/logs/$n.out)"
		fi
	done
	echo "$me: the array ended after $(wall $((SECONDS - t_slurm))) (thpemu matrix exit $mrc)"
fi

[ "$dry" = 1 ] ||
	printf '%-32s %6s %9s %5s %5s %8s %10s  %s\n' cell close "in range" OFF n/a inside wall status
tc=0 ti=0 to=0 tn=0 failed=0 shown=0 t_all=$SECONDS stop=0
# thpemu fidelity ends an interrupted cell with status 1, not by the signal, so bash would go on
# to the next cell: an interrupt ends the suite after the cell it came in
trap 'stop=1' INT TERM
[ -n "$tally" ] || [ "$dry" = 1 ] || : >"$out/summary.tsv"
for r in "${runs[@]}"; do
	IFS='|' read -r m k c <<<"$r"
	name=$m-$k-$c json=$out/$m-$k-$c.json t0=$SECONDS status=ok
	if [ "$dry" = 1 ]; then
		cmd "$m" "$k" "$c" | paste -sd' '
		continue
	fi
	if [ "$slurm" = 1 ]; then
		status=${sstatus[$name]} secs=0 # the array's tasks ran side by side: no time of one
	elif [ -z "$tally" ]; then
		rm -f "$json"
		mapfile -t argv < <(cmd "$m" "$k" "$c")
		"${argv[@]}" >"$out/$name.txt" 2>"$out/$name.err" || status="exit $?"
		secs=$((SECONDS - t0))
		if [ "$stop" = 1 ]; then
			echo "$me: interrupted in $name; the cells before it are in $out" >&2
			exit 130
		fi
	else
		# an earlier run's cell: its status and time from summary.tsv; one it did not run
		# (no JSON, no row) is not listed
		row=$(awk -F'\t' -v n="$name" '$1 == n { print $6 "\t" $7 }' "$out/summary.tsv" 2>/dev/null)
		[ -n "$row" ] || [ -e "$json" ] || continue
		status=${row%%$'\t'*} secs=${row##*$'\t'}
		[ -n "$row" ] || status=ok secs=0
		shown=$((shown + 1))
	fi
	read -r vc vi vo vn < <(jq -r '.verdicts // {} | "\(.close // 0) \(."in range" // 0) \(.OFF // 0) \(."n/a" // 0)"' \
		"$json" 2>/dev/null || echo "0 0 0 0")
	[ -s "$json" ] || [ "$status" != ok ] || status="no JSON"
	[ "$status" = ok ] || failed=$((failed + 1))
	tc=$((tc + vc)) ti=$((ti + vi)) to=$((to + vo)) tn=$((tn + vn))
	printf '%-32s %6d %9d %5d %5d %8s %10s  %s\n' "$name" "$vc" "$vi" "$vo" "$vn" \
		"$(share $((vc + vi)) $((vc + vi + vo + vn)))" \
		"$([ "$slurm" = 1 ] && echo - || wall "$secs")" "$status"
	[ -n "$tally" ] || printf '%s\t%d\t%d\t%d\t%d\t%s\t%d\n' "$name" "$vc" "$vi" "$vo" "$vn" \
		"$status" "$secs" >>"$out/summary.tsv"
done
[ "$dry" = 0 ] || exit 0
tw=$((SECONDS - t_all))
[ -z "$tally" ] || tw=$(awk -F'\t' '{ s += $7 } END { print s + 0 }' "$out/summary.tsv" 2>/dev/null)
[ "$slurm" = 0 ] || tw=$((SECONDS - t_slurm)) # the array's, its tasks side by side
printf '%-32s %6d %9d %5d %5d %8s %10s  %s\n' all "$tc" "$ti" "$to" "$tn" \
	"$(share $((tc + ti)) $((tc + ti + to + tn)))" "$(wall "$tw")" \
	"$([ $failed = 0 ] && echo ok || echo "$failed failed")"
[ -z "$tally" ] || [ $shown -gt 0 ] || { echo "$me: --tally: no cell's JSON or row in '$out'" >&2; exit 1; }
[ -n "$tally" ] || shown=${#runs[@]}
echo "$me: $shown cell$([ "$shown" = 1 ] || echo s), $((tc + ti)) of $((tc + ti + to + tn)) rows inside the goal" \
	"($(share $((tc + ti)) $((tc + ti + to + tn)))); wall $(wall "$tw"); load $(cut -d' ' -f1-3 /proc/loadavg);" \
	"JSON in $out"
[ $failed = 0 ]

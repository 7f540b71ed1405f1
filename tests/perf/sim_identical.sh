#!/usr/bin/env bash
# Byte-identity check for simulator speed work: record the JSON reports of every built-in
# scenario under a few policies and seeds with one thpemu binary, then compare another binary's
# reports with them. Sizes and durations are cut so that the whole matrix finishes in minutes.
#   tests/perf/sim_identical.sh record THPEMU DIR     # reference reports into DIR
#   tests/perf/sim_identical.sh compare THPEMU DIR    # same runs, diff against DIR; exit 1 on any
# SIM_IDENTICAL_SEEDS (default "1 2") and SIM_IDENTICAL_POLICIES override the matrix.
set -euo pipefail
mode=${1:?record|compare}
bin=${2:?thpemu binary}
dir=${3:?directory}
seeds=${SIM_IDENTICAL_SEEDS:-1 2}
policies=${SIM_IDENTICAL_POLICIES:-linux-3.1 linux-3.2 linux-3.3 modern-always thp-madvise/madvise}
case $mode in record | compare) ;; *)
	echo "sim_identical.sh: mode must be record or compare" >&2
	exit 2
	;;
esac
mkdir -p "$dir"
# scenario and its cut-down options
runs=(
	"thpcompact|--duration 3s"
	"thpchallenge-fio|--duration 8s"
	"seed-2011|--duration 60s"
	"seed-2011-long|--duration 60s --opt hold-start=5s"
	"writeback-cp|--pool 128M --opt iterations=2"
)
fail=0 n=0
for r in "${runs[@]}"; do
	scen=${r%%|*} opts=${r#*|}
	for pol in $policies; do
		for seed in $seeds; do
			name="$scen.${pol//\//_}.$seed.json"
			out="$dir/$name"
			[ "$mode" = compare ] && out="$dir/new.$name"
			# shellcheck disable=SC2086
			"$bin" sim --policy "$pol" --scenario "$scen" --seed "$seed" $opts --json "$out" >/dev/null
			n=$((n + 1))
			if [ "$mode" = compare ]; then
				if cmp -s "$dir/$name" "$out"; then
					rm -f "$out"
				else
					echo "DIFFERS: $scen $pol seed $seed ($dir/$name vs $out)"
					fail=1
				fi
			fi
		done
	done
done
echo "sim_identical: $mode: $n runs$([ "$mode" = compare ] && { [ $fail = 0 ] && echo ", all identical" || echo ", some differ"; })"
exit $fail

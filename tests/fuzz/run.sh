#!/usr/bin/env bash
# Run the fuzz targets of a -DTHPEMU_FUZZ=ON build: each over its seed corpus and the
# regression inputs (tests/fuzz/corpus/T, tests/fuzz/regress/T), then RUNS new inputs.
#
#   tests/fuzz/run.sh BUILD_DIR [RUNS] [TARGET...]     (RUNS default 2000; all targets)
#
# FUZZ_MAX_TIME=S stops each target after S seconds even if RUNS are not done (CI's smoke);
# FUZZ_TIMEOUT=S is the time one input may take (default 2).
#
# CI runs a few thousand per target (.ci/test); by hand, 1000000 (tests/fuzz/README.md). Inputs
# that add coverage go to BUILD_DIR/fuzz/work/T (never into the committed corpus); a crash,
# leak, timeout (-timeout, default 2 s per input) or slow input is written to
# BUILD_DIR/fuzz/artifacts/T and fails the run. Prints one line per target: executions, time.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: run.sh BUILD_DIR [RUNS] [TARGET...]}
runs=${2:-2000}
shift $(($# < 2 ? $# : 2))
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
	for d in "$here"/corpus/*/; do targets+=("$(basename "$d")"); done
fi
timeout_s=${FUZZ_TIMEOUT:-2}
limit=()
[ -n "${FUZZ_MAX_TIME:-}" ] && limit=(-max_total_time="$FUZZ_MAX_TIME")
rc=0
for t in "${targets[@]}"; do
	bin="$build/fuzz/$t"
	[ -x "$bin" ] || { echo "fuzz: $bin missing (cmake --build $build --target fuzz)" >&2; exit 2; }
	work="$build/fuzz/work/$t" art="$build/fuzz/artifacts/$t"
	mkdir -p "$work" "$art"
	dirs=("$work" "$here/corpus/$t")
	[ -d "$here/regress/$t" ] && dirs+=("$here/regress/$t")
	log="$build/fuzz/$t.log"
	start=$(date +%s)
	"$bin" -runs="$runs" -timeout="$timeout_s" -report_slow_units="$timeout_s" \
		-rss_limit_mb=2048 -close_fd_mask=3 -print_final_stats=1 \
		-artifact_prefix="$art/" "${limit[@]}" "${dirs[@]}" >"$log" 2>&1
	st=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	slow=$(grep -c "Slowest unit\|slow-unit-" "$log")
	if [ $st -ne 0 ] || [ "$slow" != 0 ]; then
		echo "fuzz: $t FAILED (exit $st, $slow slow units) after ${execs:-?} runs; see $log and $art" >&2
		grep -m5 -E "ERROR|SUMMARY|Test unit written|Slowest" "$log" >&2
		rc=1
	else
		echo "fuzz: $t ok: ${execs:-?} executions in $(($(date +%s) - start)) s"
	fi
done
exit $rc

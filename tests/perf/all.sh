#!/usr/bin/env bash
# Every ratio the cost of a managed process is judged by, in one run and one table:
#   measure | thpemu | floor or native | ratio | goal | met?
# It runs the existing benchmarks (each prints its own tables into a log) and collects the
# headline rows they record (tests/perf/perf_lib.sh, perf_row):
#   - first touches (bench.sh, BENCH_PARTS=touch), 1, 2 and 4 faulting threads, p50:
#     4 KiB under modern-never against a bare userfaultfd handler thread blocked in read()
#     answering with UFFDIO_COPY of a zero page (goal <= 1.15x); 2 MiB under modern-always
#     against (a) the same bare handler answering with a memset of a prefaulted host THP and one
#     UFFDIO_MOVE of it, faulting region MADV_HUGEPAGE (live_bench bare2m; goal <= 1.15x), and
#     (b) the host kernel's own THP fault: the same program natively on a MADV_HUGEPAGE mapping,
#     checked by /proc/vmstat thp_fault_alloc (live_bench touch2m; goal <= 1.5x);
#   - per process (proc_bench.sh), p50, from a parent with 8 MiB of touched heap: fork + _exit
#     (goal <= 1.5x native), fork + exec + exit and posix_spawn of /bin/true (goal <= 1 ms above
#     native); a bash loop of 500 `echo | sha1sum` and (full mode) a cmake configure of this
#     project into a fresh build directory, managed against native (goal <= 1.3x), the outputs
#     checked identical;
#   - start-up of a managed /bin/true at --pool 1G, 16G, 64G (startup_bench.sh; goal <= 8 ms);
#   - the program-visible hold of MADV_COLLAPSE per 2 MiB, p50, idle (one writer) and with two
#     writers (collapse_bench.sh; goals <= 1 ms, <= 3 ms), beside the host's own collapse;
#   - the simulator's speed per scenario and policy (sim_bench): virtual seconds and modelled
#     faults per CPU second of the simulator, and its cost per event against the bare engine's.
# Goals are printed, never asserted (the machine may be shared: timings are noisy; read the
# load averages printed with the table). It fails only if a benchmark fails (a figure missing, a
# managed output different from the native one).
#
#   tests/perf/all.sh [--quick] [--json FILE]
#     --quick      THPEMU_PERF_QUICK=1 for every benchmark (short; no cmake configure; the
#                  simulator's scenarios cut short), as the perf/* ctest entries run in CI
#     --json FILE  also write the rows, the mode and the load averages as JSON to FILE
# Environment: THPEMU_BUILD_DIR (default: build/ of the source tree). Needs root and
# userfaultfd, as the benchmarks it runs. A full run is long, mostly proc_bench's three rounds of
# the loop and the configure (PROC_BENCH_REPS=1: one round); the benchmarks' logs are kept in
# $THPEMU_BUILD_DIR/test-output/all/.
quick=0 json=
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1 ;;
	--json)
		[ $# -ge 2 ] && [ -n "$2" ] || {
			echo "all.sh: --json needs a FILE" >&2
			exit 2
		}
		json=$2
		shift
		;;
	-h | --help)
		sed -n '2,/^quick=0/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "all.sh: unknown option '$1' (accepted: --quick, --json FILE, --help)" >&2
		exit 2
		;;
	esac
	shift
done
here=$(cd "$(dirname "$0")" && pwd)
: "${THPEMU_SOURCE_DIR:=$(cd "$here/../.." && pwd)}"
: "${THPEMU_BUILD_DIR:=$THPEMU_SOURCE_DIR/build}"
export THPEMU_SOURCE_DIR THPEMU_BUILD_DIR
. "$THPEMU_SOURCE_DIR/tests/integration/lib.sh"
. "$THPEMU_SOURCE_DIR/tests/perf/perf_lib.sh"
need_root
need_uffd
need_cmd jq
for b in thpemu tests/perf/live_bench tests/perf/proc_bench tests/perf/collapse_bench tests/sim_bench; do
	[ -x "$THPEMU_BUILD_DIR/$b" ] || fail "$THPEMU_BUILD_DIR/$b not built (cmake --build)"
done
export THPEMU_PERF_ROWS="$T_TMP/rows"
: >"$THPEMU_PERF_ROWS"
if [ $quick = 1 ]; then export THPEMU_PERF_QUICK=1; else unset THPEMU_PERF_QUICK; fi
load() { cut -d' ' -f1-3 /proc/loadavg; }
load0=$(load) t_all=$SECONDS

# part NAME CMD...: one benchmark, its output in $T_OUT/NAME.log; a skip skips the whole run
part() {
	local name=$1 t0=$SECONDS rc l0
	shift
	l0=$(load)
	"$@" >"$T_OUT/$name.log" 2>&1
	rc=$?
	[ $rc = 77 ] && skip "$name: $(tail -1 "$T_OUT/$name.log")"
	[ $rc = 0 ] || fail "$name (exit $rc): $(tail -5 "$T_OUT/$name.log")"
	say "$name: $((SECONDS - t0)) s, load $l0 -> $(load) (log: $T_OUT/$name.log)"
}
part bench env BENCH_PARTS=touch bash "$here/bench.sh"
if [ $quick = 1 ]; then
	part proc env PROC_BENCH_CMAKE=0 bash "$here/proc_bench.sh"
else
	part proc env PROC_BENCH_CMAKE=1 PROC_BENCH_CMAKE_SRC="$THPEMU_SOURCE_DIR" PROC_BENCH_LOOP=500 \
		bash "$here/proc_bench.sh"
fi
part startup bash "$here/startup_bench.sh"
part collapse bash "$here/collapse_bench.sh"
# the simulator: every scenario and policy sim_bench runs, but writeback-cp under linux-3.1 (an
# iteration lasts over an hour of virtual time: minutes of CPU); quick: every run cut short
if [ $quick = 1 ]; then
	part sim "$THPEMU_BUILD_DIR/tests/sim_bench"
else
	runs=()
	for s in thpcompact thpchallenge-fio seed-2011 seed-2011-long writeback-cp:256M; do
		for p in linux-3.1 linux-3.3 modern-always; do
			[ "$s.$p" = writeback-cp:256M.linux-3.1 ] && continue
			case $s in *:*) runs+=("$s:$p") ;; *) runs+=("$s:0:$p") ;; esac
		done
	done
	part sim "$THPEMU_BUILD_DIR/tests/sim_bench" "${runs[@]}"
fi
floor=$(sed -n 's/^floor: .* \([0-9.]*\) CPU ns\/event$/\1/p' "$T_OUT/sim.log")
[ -n "$floor" ] || fail "sim: no floor line in $T_OUT/sim.log"
# scenario pool policy virtual_s cpu_s wall_s virt/cpu faults faults/s ns/fault events x floor
awk 'NF == 12 && $1 != "scenario"' "$T_OUT/sim.log" >"$T_TMP/sim"
[ -s "$T_TMP/sim" ] || fail "sim: no scenario row in $T_OUT/sim.log"
while read -r scen pool pol _ _ _ vpc _ fps _ _ xf; do
	perf_row "sim $scen $pool $pol: virtual s / CPU s; faults / CPU s" "$vpc; $fps" \
		"engine $floor ns/event" "x$xf per event" - -
done <"$T_TMP/sim"
load1=$(load)

echo
echo "thpemu benchmarks, $([ $quick = 1 ] && echo quick || echo full) run, $(date -u '+%Y-%m-%d %H:%M UTC'), $((SECONDS - t_all)) s;" \
	"load average $load0 before, $load1 after ($(nproc) CPUs)"
line() { printf '%-76s | %-16s | %-21s | %-16s | %-10s | %s\n' "$@"; }
line measure thpemu "floor / native" ratio goal met?
line "" "" "" "" "" "" | tr ' |' '-+'
while IFS=$'\t' read -r m e f r g ok; do
	line "$m" "$e" "$f" "$r" "$g" "$ok"
done <"$THPEMU_PERF_ROWS"
echo "floors: 4 KiB - a bare userfaultfd handler (one thread blocked in read()) answering with"
echo "  UFFDIO_COPY of a zero page; 2 MiB uffd - the same handler memsets a prefaulted host THP and"
echo "  answers with one UFFDIO_MOVE (faulting region MADV_HUGEPAGE); 2 MiB host - the host kernel's"
echo "  own THP fault on a MADV_HUGEPAGE mapping (THP $(perf_host_thp)); the rest: the same command"
echo "  natively, alternated with the managed one round after round. Logs: $T_OUT/"
met=$(awk -F'\t' '$6 == "yes"' "$THPEMU_PERF_ROWS" | wc -l)
missed=$(awk -F'\t' '$6 == "no"' "$THPEMU_PERF_ROWS" | wc -l)
echo "goals met: $met, missed: $missed"
if [ -n "$json" ]; then
	jq -R -s --arg load0 "$load0" --arg load1 "$load1" --argjson quick $quick \
		--arg date "$(date -u +%FT%TZ)" --argjson cpus "$(nproc)" '
		{date: $date, quick: ($quick == 1), cpus: $cpus, load_before: $load0, load_after: $load1,
		 rows: [split("\n")[] | select(length > 0) | split("\t") |
			{measure: .[0], thpemu: .[1], floor: .[2], ratio: .[3], goal: .[4], met: .[5]}]}' \
		"$THPEMU_PERF_ROWS" >"$json" || fail "--json $json: not written"
	say "rows written to $json"
fi

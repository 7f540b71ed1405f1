#!/usr/bin/env bash
# What a process costs under thpemu run, against the same natively, in one run:
#   - fork + _exit, fork + exec + exit, vfork + exec + exit and posix_spawn, timed per process
#     from a parent holding 8 MiB of touched heap (tests/perf/proc_bench.c; under thpemu run the
#     parent and every exec'd child are managed processes of one machine), p50 and mean;
#   - a managed /bin/true: `thpemu run --quiet -- /bin/true` against /bin/true (wall time of the
#     whole command, launcher and machine included), median;
#   - a shell loop of short processes (`echo | sha1sum`, two processes an iteration, and the
#     command substitution of the loop's list), under thpemu run against natively, median; its
#     output (one digest a line) must be the same managed as native;
#   - full mode only, if cmake is installed: configuring a small C project (the compiler checks
#     are a few hundred short processes), or the project PROC_BENCH_CMAKE_SRC names (all.sh:
#     this one), into a fresh build directory each time, median; its output (durations taken
#     out) must be the same managed as native.
# Native and managed alternate round after round, so that load from elsewhere hits both alike;
# the figures are ratios (and differences) to the native floor measured in the same run. The
# machine may be shared: read ratios, not times. Nothing about speed is asserted: only that every
# figure was measured (and a generous sanity bound: a managed process under 50x native).
# THPEMU_PERF_QUICK=1: few rounds and short loops (a smoke test for CI). PROC_BENCH_REPS,
# PROC_BENCH_N, PROC_BENCH_LOOP and PROC_BENCH_CMAKE (0/1) override the rounds, the processes per
# figure, the loop's iterations and the cmake configure (a loaded machine makes a full run long).
# Headline rows for tests/perf/all.sh (perf_lib.sh): p50s, goals fork + exit <= 1.5x native,
# fork + exec and posix_spawn <= 1 ms above native, the loop and the configure <= 1.3x native.
. "$THPEMU_SOURCE_DIR/tests/integration/lib.sh"
. "$THPEMU_SOURCE_DIR/tests/perf/perf_lib.sh"
need_root
need_uffd
BENCH="$THPEMU_BUILD_DIR/tests/perf/proc_bench"
TRUE=$(command -v true)
[ "${TRUE#/}" != "$TRUE" ] || TRUE=/bin/true
if [ "${THPEMU_PERF_QUICK:-0}" = 1 ]; then
	reps=2 nproc=40 nloop=50 ntrue=5 cmake_too=0
else
	reps=3 nproc=50 nloop=500 ntrue=10 cmake_too=1
fi
reps=${PROC_BENCH_REPS:-$reps} nproc=${PROC_BENCH_N:-$nproc} nloop=${PROC_BENCH_LOOP:-$nloop}
cmake_too=${PROC_BENCH_CMAKE:-$cmake_too}
cmake_src=${PROC_BENCH_CMAKE_SRC:-$T_TMP/cm}
cm_name="a small C project"
[ -z "${PROC_BENCH_CMAKE_SRC:-}" ] || cm_name=$(basename "$(cd "$cmake_src" 2>/dev/null && pwd)")
[ "${PROC_BENCH_CMAKE_SRC:-}" != "$THPEMU_SOURCE_DIR" ] || cm_name="this project"
[ -z "${PROC_BENCH_CMAKE_SRC:-}" ] || [ -f "$cmake_src/CMakeLists.txt" ] ||
	fail "PROC_BENCH_CMAKE_SRC: no CMakeLists.txt in '$cmake_src'"
command -v cmake >/dev/null && command -v cc >/dev/null || cmake_too=0

run() { "$THPEMU" run --quiet -- "$@"; }
LOOP="for i in \$(seq $nloop); do echo | sha1sum; done"
loop() { bash -c "$LOOP"; }
mkdir -p "$T_TMP/cm" "$T_TMP/out"
cat >"$T_TMP/cm/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.13)
project(probe C)
include(CheckIncludeFile)
include(CheckFunctionExists)
foreach(h stdio.h stdlib.h string.h unistd.h sys/mman.h pthread.h sys/epoll.h linux/userfaultfd.h)
	string(MAKE_C_IDENTIFIER "${h}" v)
	check_include_file(${h} HAVE_${v})
endforeach()
foreach(f mmap madvise mremap posix_spawn pipe2 memfd_create)
	check_function_exists(${f} HAVE_${f})
endforeach()
EOF
# configure [thpemu run --quiet --]: a fresh build directory, the same path native and managed
configure() { "$@" cmake -S "$cmake_src" -B "$T_TMP/cmb"; }
# same WHAT: the outputs of that command natively and managed ($T_TMP/out/{nat,emu}.WHAT) agree,
# durations such as "(0.4s)" taken out
same() {
	local n e
	n=$(sed 's/([0-9.]*s)//g' "$T_TMP/out/nat.$1") e=$(sed 's/([0-9.]*s)//g' "$T_TMP/out/emu.$1")
	[ -n "$n" ] || fail "$1: no output natively"
	[ "$n" = "$e" ] || fail "$1: output differs under thpemu run: $(diff <(echo "$n") <(echo "$e") | head -5)"
}

say "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq $reps); do
	for m in fork forkexec vforkexec spawn; do
		p=$([ $m = fork ] || echo "$TRUE")
		# shellcheck disable=SC2086 # p is empty for fork
		"$BENCH" $m $nproc $p >>"$T_TMP/nat.$m" || fail "proc_bench $m natively"
		# shellcheck disable=SC2086
		run "$BENCH" $m $nproc $p >>"$T_TMP/emu.$m" || fail "proc_bench $m under thpemu run"
	done
	for i in $(seq $ntrue); do
		us "$TRUE" >>"$T_TMP/nat.true" || fail "$TRUE natively"
		us run "$TRUE" >>"$T_TMP/emu.true" || fail "thpemu run -- $TRUE"
	done
	: >"$T_TMP/out/nat.loop" && : >"$T_TMP/out/emu.loop"
	US_OUT=$T_TMP/out/nat.loop us loop >>"$T_TMP/nat.loop" || fail "the shell loop natively"
	US_OUT=$T_TMP/out/emu.loop us run bash -c "$LOOP" >>"$T_TMP/emu.loop" ||
		fail "the shell loop under thpemu run"
	same loop
	if [ $cmake_too = 1 ]; then
		: >"$T_TMP/out/nat.cmake" && : >"$T_TMP/out/emu.cmake"
		rm -rf "$T_TMP/cmb"
		US_OUT=$T_TMP/out/nat.cmake us configure >>"$T_TMP/nat.cmake" || fail "cmake configure natively"
		rm -rf "$T_TMP/cmb"
		US_OUT=$T_TMP/out/emu.cmake us configure run >>"$T_TMP/emu.cmake" ||
			fail "cmake configure under thpemu run"
		same cmake
	fi
done
say "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

# fig FILE KEY: the median over the rounds of KEY
fig() { sed -n "s/.* $2=\([0-9.]*\).*/\1/p" "$1" | median; }
printf '%-40s %10s %10s %10s %8s\n' "per process ($reps rounds x $nproc)" native_us thpemu_us "+ms" "x nat"
for m in fork forkexec vforkexec spawn; do
	for k in p50_us mean_us; do
		n=$(fig "$T_TMP/nat.$m" $k) e=$(fig "$T_TMP/emu.$m" $k)
		[ -n "$n" ] && [ -n "$e" ] && [ "$n" != 0 ] || fail "no $k for $m"
		printf '%-40s %10s %10s %10s %8s\n' "$m ${k%_us}" "$n" "$e" "$(diff_ms "$e" "$n")" "$(ratio "$e" "$n")"
		case $m.$k in
		fork.p50_us) perf_ratio_row "fork + _exit, p50 us / native" "$e" "$n" 1.5 ;;
		forkexec.p50_us) perf_plus_row "fork + exec + exit, p50 us / native" "$e" "$n" 1 ;;
		spawn.p50_us) perf_plus_row "posix_spawn + exit, p50 us / native" "$e" "$n" 1 ;;
		esac
		awk -v a="$e" -v b="$n" 'BEGIN { exit !(a < 50 * b) }' ||
			fail "$m $k: $e us under thpemu against $n natively (over 50x: broken, not slow)"
	done
done
printf '%-40s %10s %10s %10s %8s\n' "whole commands (median)" native_ms thpemu_ms "+ms" "x nat"
for w in true loop cmake; do
	[ -s "$T_TMP/nat.$w" ] || continue
	n=$(median <"$T_TMP/nat.$w") e=$(median <"$T_TMP/emu.$w")
	case $w in
	true) label="$TRUE (thpemu run --quiet -- $TRUE)" ;;
	loop) label="shell loop, $nloop x echo | sha1sum" ;;
	cmake) label="cmake configure ($cm_name)" ;;
	esac
	printf '%-40s %10s %10s %10s %8s\n' "$label" "$(ms "$n")" "$(ms "$e")" "$(diff_ms "$e" "$n")" "$(ratio "$e" "$n")"
	case $w in
	loop) perf_ratio_row "bash loop, $nloop x echo | sha1sum, ms / native (same output)" "$(ms "$e")" "$(ms "$n")" 1.3 ;;
	cmake) perf_ratio_row "cmake configure of $cm_name, ms / native (same output)" "$(ms "$e")" "$(ms "$n")" 1.3 ;;
	esac
done
say "ok"

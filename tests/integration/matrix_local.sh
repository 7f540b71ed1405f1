#!/usr/bin/env bash
# thpemu matrix without a scheduler:
#  - bad options: one line naming the option and what is accepted, exit status 2, nothing made;
#  - --dry-run writes the cells (run-major order: every policy and workload of run 1 first) and
#    runs nothing;
#  - a local matrix runs every cell once, each result saying its policy, workload and run;
#  - run again it is resumed: cells with a result are skipped, a removed result is made again;
#  - while another holds the node lock, no cell runs;
#  - a directory of another matrix is refused; a failing workload leaves its cells without a
#    result, exit status 1, and thpemu report lists them;
#  - thpemu report DIR compares the policies per workload; --workload picks one for --html.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
export THPEMU_MATRIX_LOCK=$T_TMP/matrix.lock

W="w=$USEMEM --size 4M"
O=$T_TMP/bad
bad_usage "no policy given" matrix --workload "$W" --runs 1 --out "$O"
bad_usage "no workload given" matrix --policies modern-always --runs 1 --out "$O"
bad_usage "--runs N is required" matrix --policies modern-always --workload "$W" --out "$O"
bad_usage "--out DIR is required" matrix --policies modern-always --workload "$W" --runs 1
bad_usage "--runs: '0' is not an integer in 1..1000" matrix --policies modern-always --workload "$W" --runs 0 --out "$O"
bad_usage "--policies policy=: 'linux-9.9'" matrix --policies modern-always,linux-9.9 --workload "$W" --runs 1 --out "$O"
bad_usage "--policy: unknown key in 'colour=red'" matrix --policy policy=linux-3.1,colour=red --workload "$W" --runs 1 --out "$O"
bad_usage "two policies labelled 'linux-3.1'" matrix --policies linux-3.1,linux-3.1 --workload "$W" --runs 1 --out "$O"
bad_usage "is not NAME=CMD ARGS" matrix --policies linux-3.1 --workload "usemem --size 4M" --runs 1 --out "$O"
bad_usage "workload 'w' is given twice" matrix --policies linux-3.1 --workload "$W" --workload "$W" --runs 1 --out "$O"
bad_usage "cannot run 'no-such-program-x'" matrix --policies linux-3.1 --workload "w=no-such-program-x" --runs 1 --out "$O"
bad_usage "--workloads: cannot read" matrix --policies linux-3.1 --workloads "$T_TMP/none" --runs 1 --out "$O"
bad_usage "--wait goes with --slurm" matrix --policies linux-3.1 --workload "$W" --runs 1 --out "$O" --wait
bad_usage "unknown option '--colour'" matrix --colour red
bad_usage "--run-cell: no cell 7" matrix --run-cell "$T_TMP" 7
[ ! -e "$O" ] || fail "bad input created $O"
"$THPEMU" matrix --help | grep -q -- "--sbatch-args" || fail "matrix --help lacks --sbatch-args"

# --dry-run: the cells, run-major, nothing run
M=$T_TMP/m
printf '# two workloads\nsmall=%s --size 4M\n\nbig=%s --size 8M\n' "$USEMEM" "$USEMEM" >"$T_TMP/wl"
"$THPEMU" matrix --policy policy=modern-always,label=thp --policies modern-never \
	--workloads "$T_TMP/wl" --runs 2 --out "$M" --dry-run >"$T_TMP/dry" ||
	fail "dry run: $(cat "$T_TMP/dry")"
expect_eq "dry run: cells" "$(ls "$M/cells" | wc -l)" 8
expect_eq "dry run: results" "$(ls "$M/results" | wc -l)" 0
expect_eq "cell 5" "$(jq -c '[.run, .workload.name, .policy.label]' "$M/cells/0005.json")" \
	'[2,"small","modern-never"]'
expect_eq "cell 2: the seed as run option" "$(jq -c .run_args "$M/cells/0002.json")" \
	'["--policy","modern-always","--seed","1"]'

# the matrix: every cell once
"$THPEMU" matrix --policy policy=modern-always,label=thp --policies modern-never \
	--workloads "$T_TMP/wl" --runs 2 --out "$M" >"$T_TMP/run1" 2>&1 || fail "matrix: $(tail -3 "$T_TMP/run1")"
expect_eq "cells run" "$(grep -c 'matrix: cell ....: ' "$T_TMP/run1")" 8
grep -q "8 of 8 cells have a result" "$T_TMP/run1" || fail "matrix: $(tail -2 "$T_TMP/run1")"
expect_eq "result 6" "$(jq -c '[.matrix.run, .matrix.workload.name, .matrix.policy.label, .config.policy]' "$M/results/0006.json")" \
	'[2,"big","thp","thp-always/always"]'
# resumed: only the missing cell runs again
rm "$M/results/0003.json"
"$THPEMU" matrix --policy policy=modern-always,label=thp --policies modern-never \
	--workloads "$T_TMP/wl" --runs 2 --out "$M" >"$T_TMP/run2" 2>&1 || fail "resume: $(tail -3 "$T_TMP/run2")"
expect_eq "resumed: cells skipped" "$(grep -c 'has a result, skipped' "$T_TMP/run2")" 7
[ -f "$M/results/0003.json" ] || fail "resume: cell 3 not run again"
# the node lock: while another holds it, no cell runs; once it is released, the cell runs
if command -v flock >/dev/null; then
	rm "$M/results/0004.json"
	exec 9>"$THPEMU_MATRIX_LOCK"
	flock 9
	"$THPEMU" matrix --policy policy=modern-always,label=thp --policies modern-never \
		--workloads "$T_TMP/wl" --runs 2 --out "$M" >"$T_TMP/run4" 2>&1 9>&- &
	pid=$!
	for _ in $(seq 50); do grep -q "0003 has a result" "$T_TMP/run4" && break; sleep 0.1; done
	sleep 0.5
	[ ! -e "$M/results/0004.json" ] || fail "lock: a cell ran while another held the node lock"
	kill -0 $pid 2>/dev/null || fail "lock: matrix ended while the lock was held"
	exec 9>&-
	wait $pid || fail "lock: matrix failed: $(tail -2 "$T_TMP/run4")"
	[ -f "$M/results/0004.json" ] || fail "lock: cell 4 not run once the lock was free"
fi
# another matrix in the same directory
bad_usage "holds another matrix" matrix --policies linux-3.1 --workloads "$T_TMP/wl" --runs 2 --out "$M"

# the merged report: per workload, thp against modern-never
"$THPEMU" report "$M" >"$T_TMP/rep" 2>&1 || fail "report: $(tail -3 "$T_TMP/rep")"
for w in small big; do
	grep -q "workload $w: A = thp (2 runs), B = modern-never (2 runs)" "$T_TMP/rep" ||
		fail "report: no comparison for $w: $(head -5 "$T_TMP/rep")"
done
bad_usage "name one with --workload NAME" report "$M" --html "$T_TMP/r.html"
bad_usage "--workload: no runs of 'huge' (accepted: small, big)" report "$M" --workload huge
"$THPEMU" report "$M" --workload big --html "$T_OUT/big.html" >/dev/null 2>&1 || fail "report --html"
grep -q "thp vs modern-never" "$T_OUT/big.html" || fail "html: no comparison"

# plain run reports are not matrix results
"$THPEMU" run --quiet --report "$T_TMP/plain.json" -- "$USEMEM" --size 4M >/dev/null 2>&1 || fail "run"
bad_usage "--workload: no thpemu matrix results given" report --workload w "$T_TMP/plain.json"
bad_usage "matrix results and other reports given together" report "$M" "$T_TMP/plain.json"

# a failing workload: its cells have no result, status 1, the report lists them
F=$T_TMP/f
"$THPEMU" matrix --policies modern-never --workload "ok=$USEMEM --size 4M" \
	--workload "bad=sh -c exit\ 3" --runs 1 --out "$F" >"$T_TMP/run3" 2>&1
expect_eq "failing cell: status" $? 1
"$THPEMU" report "$F" >"$T_TMP/rep3" 2>&1
grep -q "cell 0001 has no result (policy modern-never, workload bad, run 1)" "$T_TMP/rep3" ||
	fail "report: missing cell not listed: $(head -3 "$T_TMP/rep3")"
grep -q "1 of 2 cells have a result" "$T_TMP/rep3" || fail "report: $(head -3 "$T_TMP/rep3")"
say ok

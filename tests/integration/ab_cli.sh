#!/usr/bin/env bash
# thpemu ab and thpemu report as commands, on quick workloads:
#  - bad options and specs: one line naming the option and what is accepted, exit status 2;
#  - specs whose values contain commas (dirty=..., fragment=...) split right;
#  - a failing run is reported and left out, the others are compared, the exit status is 1;
#    runs that all fail still give a JSON report;
#  - --order random is a seeded shuffle (the same seed, the same order), warm-up runs are not
#    compared, --keep keeps each run's files;
#  - a clear difference (modern-always vs modern-never on usemem) is marked significant in the
#    metrics and in the per-fault distributions;
#  - thpemu report renders run and sim reports, refuses what is not a report, and writes mmtests
#    lines from a report's histogram when there is no trace.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq

bad_usage "--a and --b are both required" ab --a policy=linux-3.1 -- true
bad_usage "no command given" ab --a policy=linux-3.1 --b policy=linux-3.3
bad_usage "unknown key in 'colour=red'" ab --a policy=linux-3.1,colour=red --b policy=linux-3.3 -- true
bad_usage "not KEY=VALUE with a known key" ab --a linux-3.1 --b policy=linux-3.3 -- true
bad_usage "pool" ab --a policy=linux-3.1,pool=3 --b policy=linux-3.3 -- true
bad_usage "--a policy=" ab --a policy=linux-9.9 --b policy=linux-3.3 -- true
bad_usage "--runs: '0' is out of range (accepted: 1..500)" ab --a policy=linux-3.1 --b policy=linux-3.3 --runs 0 -- true
bad_usage "--order: 'zigzag' is not accepted (alternate, random)" ab --a policy=linux-3.1 --b policy=linux-3.3 --order zigzag -- true
bad_usage "unknown option '--colour'" ab --colour --a policy=linux-3.1 --b policy=linux-3.3 -- true
bad_usage "--fs: 'ntfs' is not accepted (accepted: vfat, ext4 or tmpfs)" ab --fs ntfs --a policy=linux-3.1 --b policy=linux-3.3 -- true
bad_usage "--a fs=: 'ntfs' is not accepted" ab --a policy=linux-3.1,fs=ntfs --b policy=linux-3.3 -- true
bad_usage "unknown option '--pdf'" report --pdf x.json
bad_usage "no report given" report
bad_usage "not a readable JSON report" report /etc/hostname
bad_usage "no trace given" replay --policy linux-3.1

# found before the first run: nothing runs, no run directory is made, no output is
# created, a planted link's target is untouched
export TMPDIR=$T_TMP/tmp
mkdir -p "$TMPDIR" "$T_TMP/shared"
chmod 1777 "$T_TMP/shared"
MARK=$T_TMP/ran
printf 'precious\n' >"$T_TMP/victim"
ln -s "$T_TMP/victim" "$T_TMP/shared/ab.json"
chown -h 65534:65534 "$T_TMP/shared/ab.json"
ln -s "$T_TMP/keepdir" "$T_TMP/shared/keep"
early() { # early WANT AB-ARGS...: bad, and nothing happened
	local want=$1
	shift
	rm -f "$MARK"
	bad_usage "$want" ab "$@" -- touch "$MARK"
	[ ! -e "$MARK" ] || fail "ab $*: the command ran"
	[ -z "$(ls -A "$TMPDIR")" ] || fail "ab $*: left $(ls -A "$TMPDIR")"
	expect_eq "ab $*: the victim" "$(cat "$T_TMP/victim")" precious
}
AB=(--a policy=linux-3.2 --b policy=linux-3.3)
early "--a: 'policy' is given twice" --a policy=linux-3.2,policy=linux-3.3 --b policy=linux-3.1
early "--b: 'label' is given twice" "${AB[0]}" "${AB[1]}" --b label=x,policy=linux-3.3,label=y
early 'has a control character' --a "$(printf 'label=a\nb'),policy=linux-3.2" --b policy=linux-3.3
early "an empty label=" --a label=,policy=linux-3.2 --b policy=linux-3.3
early "--a policy=: 'defrag' is given twice" --a policy=linux-3.1:defrag=always,defrag=never --b policy=linux-3.3
early "--json: '/nonexistent/d/ab.json': the directory '/nonexistent/d' does not exist" \
	"${AB[@]}" --json /nonexistent/d/ab.json
early "--html: '/nonexistent/ab.html'" "${AB[@]}" --html /nonexistent/ab.html
early "--json: '$T_TMP/shared/ab.json': is a symbolic link" "${AB[@]}" --json "$T_TMP/shared/ab.json"
early "--json and --html name the same file" "${AB[@]}" --json "$T_TMP/o" --html "$T_TMP/./o"
early "--keep: '$T_TMP/shared/keep': is a symbolic link" "${AB[@]}" --keep "$T_TMP/shared/keep"
early "--runs: 'abc' is not a non-negative integer" "${AB[@]}" --runs abc
early "--runs: '501' is out of range" "${AB[@]}" --runs 501
early "--a device=: '/nonexistent/stick' is not a directory" --a device=/nonexistent/stick --b policy=linux-3.3
early "--b fragment=: 'bogus'" "${AB[0]}" "${AB[1]}" --b policy=linux-3.3,fragment=bogus
early "--a pool=: '100G' is out of range" --a pool=100G --b policy=linux-3.3
rm -f "$MARK"
bad_usage "cannot run '/nonexistent/program'" ab "${AB[@]}" -- /nonexistent/program
[ -z "$(ls -A "$TMPDIR")" ] || fail "ab with a missing command left $(ls -A "$TMPDIR")"
[ ! -e "$T_TMP/keepdir" ] || fail "a --keep link was followed"
mkdir -m 700 "$T_TMP/theirs"
chown 65534:65534 "$T_TMP/theirs"
early "--keep: '$T_TMP/theirs': is a directory of uid 65534, not ours" "${AB[@]}" --keep "$T_TMP/theirs"
bad_usage "--html and a report to read name the same file" report "$T_TMP/r.json" --html "$T_TMP/./r.json"
bad_usage "--html: '/nonexistent/x.html': the directory '/nonexistent' does not exist" report \
	"$T_TMP/r.json" --html /nonexistent/x.html
bad_usage "--a and --b name the same series" report "$T_TMP/r.json" --a x --b x
unset TMPDIR
say "bad input found before the first run"
"$THPEMU" ab --help | grep -q "dirty=total=16M,file=2M" || fail "ab --help lacks the spec example"
"$THPEMU" report --help | grep -q -- "--mmtests" || fail "report --help"
"$THPEMU" --help | grep -q "^  ab " || fail "thpemu --help does not list ab"

# a clear difference, with commas inside values, warm-up, random order, kept files
"$THPEMU" ab --a "label=thp,policy=modern-always,pool=256M,fragment=anon:10%,pagecache:5%" \
	--b "label=nothp,policy=modern-never,pool=256M" --runs 3 --warmup 1 --order random --seed 7 \
	--json "$T_OUT/clear.json" --keep "$T_TMP/keep" -- "$USEMEM" --size 32M --hold 100ms --quiet \
	>"$T_OUT/clear.txt" 2>"$T_TMP/clear.err" || fail "ab failed: $(tail -3 "$T_TMP/clear.err")"
J=$T_OUT/clear.json
expect_eq "labels" "$(json "$J" '.config.a.label + "/" + .config.b.label')" "thp/nothp"
expect_eq "A's fragment kept its comma" "$(json "$J" '.config.a.args | join(" ")')" \
	"--policy modern-always --pool 256M --fragment anon:10%,pagecache:5%"
expect_eq "runs" "$(json "$J" '.runs | length')" 8
expect_eq "warm-ups first" "$(json "$J" '[.runs[:2][] | .warmup] | all')" true
expect_eq "compared runs" "$(json "$J" '.comparison.runs_a + .comparison.runs_b')" 6
order=$(json "$J" '[.runs[2:][].side] | join("")')
say "random order (seed 7): $order"
[ "$order" != ABABAB ] || fail "--order random kept ABABAB"
[ "$(echo "$order" | tr -cd A | wc -c)" = 3 ] || fail "unbalanced order $order"
[ -s "$T_TMP/keep/A-run1.json" ] && [ -s "$T_TMP/keep/B-warmup1.out" ] || fail "--keep: $(ls "$T_TMP/keep")"
m() { json "$J" ".comparison.metrics[] | select(.name == \"$1\") | $2"; }
expect_eq "huge-pct significant" "$(m huge-pct .significant)" true
expect_eq "nothp huge-pct" "$(m huge-pct .b.mean)" 0
expect_eq "faults significant" "$(m faults .significant)" true
expect_eq "base faults compared per fault" "$(json "$J" .comparison.distributions.base.tested)" true
expect_eq "huge faults of B" "$(json "$J" .comparison.distributions.huge.b_faults)" 0
# AnonHugePages coverage per run (sampled while usemem holds its memory) and the pool's
# watermarks (modern, 256 MiB: the THP raise to 11 pageblocks is capped at 5 %: 3276 pages)
expect_eq "coverage-tw significant" "$(m coverage-tw .significant)" true
expect_eq "coverage-end significant" "$(m coverage-end .significant)" true
expect_eq "nothp coverage" "$(m coverage-tw .b.mean) $(m coverage-end .b.mean)" "0 0"
expect_eq "thp coverage above 50 %" "$(m coverage-tw '.a.values | map(. > 50) | all')" true
expect_eq "coverage is better when higher" "$(m coverage-tw .lower_is_better)" false
R=$T_TMP/keep/A-run1.json
expect_eq "run report: watermarks" "$(json "$R" '.host.pool | "\(.min_free_kbytes) \(.watermarks.min) \(.watermarks.low) \(.watermarks.high)"')" \
	"13104 3276 4095 4914"
expect_eq "run report: coverage samples in time order, huge <= anon" "$(json "$R" '.coverage.samples |
	(map(.[0]) as $t | [range(1; $t | length) | $t[.] > $t[. - 1]] | all) and (map(.[1] <= .[2]) | all)')" true
expect_eq "run report: coverage in 0..100" \
	"$(json "$R" '.coverage | [.end_pct, .time_weighted_pct] | map(. >= 0 and . <= 100) | all')" true
grep -q "^Amean     coverage-tw (% of anon memory)" "$T_OUT/clear.txt" || fail "no coverage-tw row: $(grep Amean "$T_OUT/clear.txt")"
grep -q "^Amean     huge-pct (% of faults)" "$T_OUT/clear.txt" || fail "no compare-kernels table: $(head "$T_OUT/clear.txt")"
grep -q "^ab: 8/8 all runs done" "$T_TMP/clear.err" || fail "no plain progress lines: $(cat "$T_TMP/clear.err")"
"$THPEMU" ab --a policy=modern-always,pool=256M --b policy=modern-never,pool=256M --runs 3 \
	--order random --seed 7 --json "$T_TMP/again.json" -- "$USEMEM" --size 8M --quiet >/dev/null 2>&1 ||
	fail "ab (seed 7 again) failed"
expect_eq "the same seed, the same order" "$(json "$T_TMP/again.json" '[.runs[].side] | join("")')" "$order"

# failing runs: B fails every time (its policy makes the command exit 3)
"$THPEMU" ab --a policy=modern-never --b policy=modern-always --runs 2 --json "$T_OUT/fail.json" -- \
	sh -c '"$0" --size 8M --quiet && test "$THPEMU_POLICY" = modern-never || exit 3' "$USEMEM" \
	>"$T_TMP/fail.txt" 2>"$T_TMP/fail.err"
rc=$?
expect_eq "exit status with failed runs" "$rc" 1
expect_eq "failed B runs" "$(json "$T_OUT/fail.json" .comparison.failed_b)" 2
expect_eq "A runs compared" "$(json "$T_OUT/fail.json" .comparison.runs_a)" 2
expect_eq "note" "$(json "$T_OUT/fail.json" '.runs[1].note | startswith("exit status 3")')" true
grep -q "^FAILED: B run 2: exit status 3" "$T_TMP/fail.txt" || fail "failed runs not listed: $(tail -3 "$T_TMP/fail.txt")"
"$THPEMU" ab --a policy=modern-never --b policy=linux-3.1 --runs 1 --json "$T_TMP/none.json" -- \
	false >/dev/null 2>&1
expect_eq "all runs failed: exit status" "$?" 1
expect_eq "all runs failed: still a report" "$(json "$T_TMP/none.json" '[.runs[].ok] | any')" false

# thpemu report on run and sim reports
"$THPEMU" run --quiet --policy linux-3.3 --pool 128M --report "$T_TMP/run.json" -- "$USEMEM" --size 16M --quiet >/dev/null ||
	fail "thpemu run"
"$THPEMU" sim --policy linux-3.3 --scenario thpcompact --pool 128M --duration 1s --json "$T_TMP/sim.json" >/dev/null ||
	fail "thpemu sim"
"$THPEMU" report "$T_TMP/run.json" "$T_TMP/sim.json" >"$T_TMP/rep.txt" || fail "report --text"
grep -q "run.json: linux-3.3, ok" "$T_TMP/rep.txt" && grep -q "sim.json: linux-3.3, ok" "$T_TMP/rep.txt" ||
	fail "report text: $(cat "$T_TMP/rep.txt")"
"$THPEMU" report "$T_TMP/sim.json" --html "$T_TMP/sim.html" || fail "report --html of a sim report"
grep -q '<svg class="plot' "$T_TMP/sim.html" || fail "no plots in the sim HTML"
grep -q '<title>AnonHugePages coverage: linux-3.3</title>' "$T_TMP/sim.html" || fail "no coverage plot in the sim HTML"
grep -q '<path class="series" [^>]*><title>[^<]*sim.json: end ' "$T_TMP/sim.html" || fail "no coverage line in the sim HTML"
# live reports carry latency net of the emulation (the start-up probe); sim reports do not
expect_eq "kernel_latency_us lines (run.json: both and base or huge)" \
	"$(grep -c '^       net of the emulation (kernel_latency_us): p50 [0-9.]* p99' "$T_TMP/rep.txt")" \
	"$(jq '[.kernel_latency_us[] | objects | select(.count > 0)] | length' "$T_TMP/run.json")"
[ "$(jq '.kernel_latency_us.both.p50 <= .latency_us.both.p50' "$T_TMP/run.json")" = true ] ||
	fail "kernel_latency_us above latency_us"
expect_eq "coverage lines in the text report" "$(grep -c '^  AnonHugePages coverage (% of managed anon memory): end [0-9.]* %, time-weighted [0-9.]* %$' "$T_TMP/rep.txt")" 2
"$THPEMU" report --mmtests "$T_TMP/run.json" >"$T_TMP/mm.txt" 2>"$T_TMP/mm.err" || fail "report --mmtests"
expect_eq "mmtests lines from the histogram" "$(grep -c '^fault 0 \(huge\|base\) [0-9]* 0.000000$' "$T_TMP/mm.txt")" \
	"$(json "$T_TMP/run.json" .faults.total)"
grep -q "no fault trace" "$T_TMP/mm.err" || fail "--mmtests did not say where the lines come from"
say "ok"

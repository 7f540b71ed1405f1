#!/usr/bin/env bash
# Policy plugins (thpemu_policy.h): the example plugins load in thpemu run and thpemu sim and
# change the huge/base decisions against the built-in policy; broken plugins are refused by
# the CLI with one line and exit 2, and under a bare LD_PRELOAD give one stderr line, the
# built-in policy and the program's output intact; nonsense answers are counted.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq

BIG="$THPEMU_BUILD_DIR/plugins/huge_big_regions.so"
FRAG="$THPEMU_BUILD_DIR/plugins/mthp_under_frag.so"
BAD="$THPEMU_BUILD_DIR/tests/plugins"
for f in "$BIG" "$FRAG" "$BAD/bad_nosym.so" "$BAD/bad_abi.so" "$BAD/bad_nonsense.so"; do
	[ -f "$f" ] || fail "$f not built"
done
printf 'not an ELF file\n' >"$T_TMP/text.so"

# expect_usage_error CMD WORDS -- ARGS...: exit 2, exactly one line, containing every word.
expect_usage_error() {
	local cmd=$1 words=() out rc w
	shift
	while [ "$1" != -- ]; do
		words+=("$1")
		shift
	done
	shift
	if [ "$cmd" = run ]; then
		out=$("$THPEMU" run "$@" -- true 2>&1 >/dev/null)
	else
		out=$("$THPEMU" sim --scenario thpcompact --duration 1s "$@" 2>&1 >/dev/null)
	fi
	rc=$?
	[ "$rc" = 2 ] || fail "$cmd $*: exit $rc, expected 2 ($out)"
	[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "$cmd $*: more than one line: $out"
	for w in "${words[@]}"; do
		case "$out" in *"$w"*) ;; *) fail "$cmd $*: message lacks '$w': $out" ;; esac
	done
}
for cmd in run sim; do
	expect_usage_error $cmd --policy-plugin "no such file" -- \
		--policy modern-always --policy-plugin /nonexistent/p.so
	expect_usage_error $cmd --policy-plugin "not a loadable shared object" -- \
		--policy modern-always --policy-plugin "$T_TMP/text.so"
	expect_usage_error $cmd --policy-plugin "no symbol thpemu_policy" -- \
		--policy modern-always --policy-plugin "$BAD/bad_nosym.so"
	expect_usage_error $cmd --policy-plugin "abi_version 99" -- \
		--policy modern-always --policy-plugin "$BAD/bad_abi.so"
	expect_usage_error $cmd "--policy" "no symbol thpemu_policy" -- \
		--policy "modern-always:plugin=$BAD/bad_nosym.so"
	expect_usage_error $cmd "init refused" -- \
		--policy modern-always --policy-plugin "$BIG?x"
done
help=$("$THPEMU" run --help) || fail "run --help exited $?"
case "$help" in *--policy-plugin*) ;; *) fail "run --help lacks --policy-plugin" ;; esac
help=$("$THPEMU" sim --help) || fail "sim --help exited $?"
case "$help" in *--policy-plugin*plugin=PATH*) ;; *) fail "sim --help lacks the plugin" ;; esac
say "broken plugins: one line, exit 2 (run, sim)"

# bare LD_PRELOAD: one line, the built-in policy (modern-always: huge), output intact
for bad in "$BAD/bad_nosym.so" "$BAD/bad_abi.so" /nonexistent/p.so; do
	THPEMU_POLICY=modern-always THPEMU_POOL=256M THPEMU_POLICY_PLUGIN="$bad" \
		LD_PRELOAD="$LIBTHPEMU" "$USEMEM" --size 16M >"$T_TMP/out" 2>"$T_TMP/err" ||
		fail "preload with $bad: usemem failed: $(cat "$T_TMP/err")"
	n=$(grep -c "thpemu: policy plugin .*; using the built-in policy" "$T_TMP/err")
	expect_eq "preload $bad: fallback lines" "$n" 1
	grep -q "huge=8 " "$T_TMP/out" || fail "preload $bad: not the built-in policy: $(cat "$T_TMP/out")"
done
say "bare preload with a broken plugin: one line, built-in policy, output intact"

# thpemu run: usemem maps 8 MiB and 48 MiB; huge_big_regions (N=32 MiB) leaves the small one
# base, the built-in modern-always makes both huge
run_usemem() { # REPORT ARGS...: two regions, sequentially
	local rep=$1
	shift
	"$THPEMU" run --quiet --pool 512M --report "$rep" "$@" -- \
		bash -c "'$USEMEM' --size 8M --quiet && '$USEMEM' --size 48M --quiet" \
		>"$T_TMP/run.out" || fail "run $*: failed"
}
run_usemem "$T_OUT/builtin.json" --policy modern-always
THPEMU_PLUGIN_MIN_MIB=32 run_usemem "$T_OUT/big.json" --policy modern-always \
	--policy-plugin "$BIG"
b_huge=$(json "$T_OUT/builtin.json" .faults.huge)
p_huge=$(json "$T_OUT/big.json" .faults.huge)
expect_eq "built-in huge faults" "$b_huge" 28
expect_eq "huge_big_regions huge faults" "$p_huge" 24
case "$(json "$T_OUT/big.json" .config.policy)" in
*plugin=*huge_big_regions.so*) ;;
*) fail "report policy does not name the plugin" ;;
esac
[ "$(json "$T_OUT/big.json" .vmstat.plugin_calls)" -ge 24 ] || fail "plugin_calls too low"
expect_eq "plugin_errors" "$(json "$T_OUT/big.json" .vmstat.plugin_errors)" 0
expect_eq "built-in plugin_calls" "$(json "$T_OUT/builtin.json" .vmstat.plugin_calls)" 0
# the same through the spec key with arguments (PATH?N:X): 64 MiB minimum, nothing huge
run_usemem "$T_OUT/key.json" --policy "modern-always:plugin=$BIG?64:0"
expect_eq "plugin=PATH?64:0 huge faults" "$(json "$T_OUT/key.json" .faults.huge)" 0
say "run: huge_big_regions huge=$p_huge vs built-in $b_huge"

# thpemu ab: a side's policy spec carries the plugin (policy=SPEC:plugin=PATH)
"$THPEMU" ab --a policy=modern-always --b "policy=modern-always:plugin=$BIG?64:0" --runs 1 \
	--json "$T_OUT/ab.json" -- "$USEMEM" --size 48M --quiet >"$T_TMP/ab.txt" 2>&1 ||
	fail "ab with a plugin side: $(tail -3 "$T_TMP/ab.txt")"
expect_eq "ab: the plugin side's huge faults" \
	"$(jq '[.runs[] | select(.side == "B") | .report.faults.huge] | add' "$T_OUT/ab.json")" 0
[ "$(jq '[.runs[] | select(.side == "A") | .report.faults.huge] | add' "$T_OUT/ab.json")" -gt 0 ] ||
	fail "ab: the built-in side made no huge fault"

# mthp_under_frag under a fragmented pool with no free order-9 block: no huge fault at all
# (the built-in policy still gets some through compaction); PMD on a clean pool
"$THPEMU" run --quiet --pool 256M --policy modern-always:defrag=always --fragment \
	unmovable:1% --report "$T_OUT/frag.json" --policy-plugin "$FRAG" -- \
	"$USEMEM" --size 16M --quiet >/dev/null 2>"$T_TMP/frag.err" || fail "frag run failed: $(cat "$T_TMP/frag.err")"
"$THPEMU" run --quiet --pool 256M --policy modern-always --report "$T_OUT/clean.json" \
	--policy-plugin "$FRAG" -- "$USEMEM" --size 16M --quiet >/dev/null || fail "clean run failed"
expect_eq "mthp_under_frag clean huge" "$(json "$T_OUT/clean.json" .faults.huge)" 8
[ "$(json "$T_OUT/frag.json" .vmstat.plugin_calls)" -gt 0 ] || fail "frag: plugin never called"
say "run: mthp_under_frag clean huge=8, fragmented huge=$(json "$T_OUT/frag.json" .faults.huge)"

# nonsense answers: the built-in decision, counted, reported once
"$THPEMU" run --pool 256M --policy modern-always --report "$T_OUT/nonsense.json" \
	--policy-plugin "$BAD/bad_nonsense.so" -- "$USEMEM" --size 16M --quiet \
	>"$T_TMP/ns.out" 2>"$T_TMP/ns.err" || fail "nonsense run failed"
expect_eq "nonsense: built-in huge" "$(json "$T_OUT/nonsense.json" .faults.huge)" 8
[ "$(json "$T_OUT/nonsense.json" .vmstat.plugin_errors)" -ge 8 ] || fail "plugin_errors not counted"
expect_eq "nonsense: one line" "$(grep -c 'select_orders chose order 1' "$T_TMP/ns.err")" 1

# thpemu sim: the same plugins change the simulated decisions
sim_huge() {
	"$THPEMU" sim --scenario seed-2011 --duration 60s --json "$T_TMP/sim.json" "$@" \
		>/dev/null || fail "sim $* failed"
	json "$T_TMP/sim.json" .extents.huge
}
s_b=$(sim_huge --policy modern-always)
s_p=$(THPEMU_PLUGIN_MIN_MIB=40 sim_huge --policy modern-always --policy-plugin "$BIG")
[ "$s_b" != "$s_p" ] || fail "sim: the plugin changed nothing ($s_b huge extents)"
[ "$(json "$T_TMP/sim.json" .vmstat.plugin_calls)" -gt 0 ] || fail "sim: plugin never called"
say "sim: huge extents built-in $s_b, huge_big_regions $s_p"

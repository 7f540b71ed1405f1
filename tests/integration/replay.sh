#!/usr/bin/env bash
# Fault traces end to end, on real faults:
#  - a trace recorded live without writeback pressure (usemem on a thpcompact-fragmented pool,
#    python3), single-threaded, where only the sequence decides, replays in the simulator under
#    the same policy to >= 99 % of the recorded huge/base decisions;
#  - where timing decides too, the agreement is reported, not asserted: with writeback pressure
#    (which page is under writeback when compaction reaches it) and with four threads faulting
#    at once (two compactions race for the same free pages: live migrations fail with -ENOMEM
#    that a replay, with other interleavings, does not meet);
#  - replays of one trace under two policies order as the policies do: modern-always gives more
#    huge faults than linux-3.3 on the fragmented pool, modern-never none, and a base replay of a
#    recorded huge extent touches its other pages too;
#  - thpemu replay acts the trace out live: under the recording's policy it reproduces the
#    recorded fault count and decisions closely, under modern-never no fault is huge;
#  - thpemu report reads the trace (text, one mmtests line per fault);
#  - zero pages: a program that reads its memory before writing it (programs/zeropage) is
#    recorded with its zero decisions and first writes (trace format 2), and both replays, with
#    zero pages on as recorded, give the live run's zero counters.
# Traces of thpemu before format 2 still load (tests/unit/obs_trace.c).
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
need_cmd python3

POOL=256M
FRAG=thpcompact

record() { # record NAME POLICY CMD...: a live run with --trace
	local name=$1 pol=$2
	shift 2
	"$THPEMU" run --quiet --policy "$pol" --pool $POOL --fragment $FRAG --trace "$T_OUT/$name.trace" \
		--report "$T_OUT/$name.json" -- "$@" >"$T_TMP/$name.out" 2>&1 ||
		fail "$name: the traced run failed: $(tail -3 "$T_TMP/$name.out")"
	[ -s "$T_OUT/$name.trace" ] || fail "$name: no trace written"
}
simreplay() { # simreplay NAME POLICY: replay in sim, JSON to $T_OUT/NAME.POLICY.sim.json
	"$THPEMU" sim --replay "$T_OUT/$1.trace" --policy "$2" --json "$T_OUT/$1.$2.sim.json" \
		>"$T_TMP/$1.$2.sim.txt" 2>&1 || fail "$1: sim --replay under $2 failed: $(tail -3 "$T_TMP/$1.$2.sim.txt")"
}
agreement() { json "$T_OUT/$1.$2.sim.json" .replay.agreement_pct; }
at_least() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }

# 1. same policy, no writeback pressure
record um1 linux-3.1 "$USEMEM" --size 96M --loops 3 --quiet
record um4 linux-3.1 "$USEMEM" --size 96M --threads 4 --loops 2 --quiet
record py linux-3.3 python3 -c '
import random
random.seed(1)
keep = [bytearray(random.randint(1 << 12, 3 << 20)) for _ in range(200)]
del keep[::2]
d = {i: str(i) * 40 for i in range(100000)}
print(len(d), sum(len(b) for b in keep))'
for t in um1:linux-3.1 py:linux-3.3; do
	name=${t%%:*} pol=${t#*:}
	simreplay "$name" "$pol"
	a=$(agreement "$name" "$pol")
	rec=$(json "$T_OUT/$name.json" .faults.total)
	cmp=$(json "$T_OUT/$name.$pol.sim.json" .replay.compared)
	say "$name ($pol): $rec faults live, $cmp compared in the replay, agreement $a %"
	at_least "$a" 99 || fail "$name: replay agreement $a % < 99 %"
	[ "$cmp" -ge $((rec * 95 / 100)) ] || fail "$name: only $cmp of $rec faults were compared"
	expect_eq "$name: complete trace" "$(json "$T_OUT/$name.$pol.sim.json" .replay.complete)" true
	expect_eq "$name: records dropped" "$(json "$T_OUT/$name.$pol.sim.json" .replay.dropped)" 0
done
simreplay um4 linux-3.1
[ "$(json "$T_OUT/um4.linux-3.1.sim.json" .replay.threads)" -ge 5 ] ||
	fail "um4: $(json "$T_OUT/um4.linux-3.1.sim.json" .replay.threads) threads replayed (usemem --threads 4 and main)"
say "um4 (4 threads, linux-3.1): agreement $(agreement um4 linux-3.1) %; live pgmigrate_fail" \
	"$(json "$T_OUT/um4.json" .vmstat.pgmigrate_fail), replayed" \
	"$(json "$T_OUT/um4.linux-3.1.sim.json" .vmstat.pgmigrate_fail) (concurrent compactions)"

# 2. with writeback pressure: reported and explained, not asserted
"$THPEMU" run --quiet --policy linux-3.2 --pool 96M --fragment anon:50%,pagecache:25% \
	--device usb2-stick-2011 --dirty total=8M,file=2M,dirty-ratio=40%,background-ratio=20% \
	--trace "$T_OUT/wb.trace" --report "$T_OUT/wb.json" -- \
	"$USEMEM" --delay 1s --size 8M --loops 6 --hold 100ms --quiet >"$T_TMP/wb.out" 2>&1 ||
	fail "the traced run with writeback pressure failed: $(tail -3 "$T_TMP/wb.out")"
simreplay wb linux-3.2
say "with writeback pressure (linux-3.2, a slow stick): agreement $(agreement wb linux-3.2) %" \
	"(huge->base $(json "$T_OUT/wb.linux-3.2.sim.json" .replay.huge_to_base)," \
	"base->huge $(json "$T_OUT/wb.linux-3.2.sim.json" .replay.base_to_huge)): a trace records the" \
	"program's memory, not the writer's page cache, so the replay runs without the writer's dirty" \
	"and writeback pages (and live, which pages were under writeback when compaction reached" \
	"them was timing)"

# 3. two policies on one trace: sync compaction gets at least the huge pages async does (the
#    2011 patch's cost, Andrea Arcangeli's objection), and enabled=never none
for pol in linux-3.1+nostall modern-never; do simreplay um1 $pol; done
h31=$(json "$T_OUT/um1.linux-3.1.sim.json" .extents.huge_pct)
hns=$(json "$T_OUT/um1.linux-3.1+nostall.sim.json" .extents.huge_pct)
hnev=$(json "$T_OUT/um1.modern-never.sim.json" .faults.huge)
say "um1 replayed: extents huge linux-3.1 $h31 %, linux-3.1+nostall $hns %, modern-never $hnev huge faults"
at_least "$h31" "$hns" || fail "linux-3.1 ($h31 %) below linux-3.1+nostall ($hns %) on the same trace"
expect_eq "modern-never huge faults" "$hnev" 0
implied=$(json "$T_OUT/um1.modern-never.sim.json" .replay.implied)
rhuge=$(json "$T_OUT/um1.modern-never.sim.json" .replay.huge_to_base)
[ "$implied" -ge $((rhuge * 500)) ] || fail "modern-never: $implied implied touches for $rhuge recorded huge extents"

# 4. live replay
"$THPEMU" replay --report "$T_OUT/um1.live-replay.json" "$T_OUT/um1.trace" >"$T_TMP/lr.out" 2>&1 ||
	fail "thpemu replay failed: $(tail -3 "$T_TMP/lr.out")"
grep -q "0 touches of missing memory" "$T_TMP/lr.out" || fail "the replayer touched missing memory: $(cat "$T_TMP/lr.out")"
lf=$(json "$T_OUT/um1.live-replay.json" .faults.total)
lh=$(json "$T_OUT/um1.live-replay.json" .faults.huge)
rf=$(json "$T_OUT/um1.json" .faults.total)
rh=$(json "$T_OUT/um1.json" .faults.huge)
expect_eq "live replay policy" "$(json "$T_OUT/um1.live-replay.json" .config.policy)" linux-3.1
say "live replay under linux-3.1: $lf faults ($lh huge); recorded $rf ($rh huge)"
# the replayer's own faults (its stack, libc) are unmanaged; the recording's early allocator
# pages were adopted, the replay's are first touches: allow a few percent
[ "$lh" -ge $((rh * 95 / 100)) ] && [ "$lh" -le $((rh + rh / 20 + 2)) ] ||
	fail "live replay: $lh huge faults, recorded $rh"
"$THPEMU" replay --quiet --policy modern-never --report "$T_OUT/um1.live-never.json" "$T_OUT/um1.trace" \
	>"$T_TMP/lr2.out" 2>&1 || fail "thpemu replay --policy modern-never failed"
expect_eq "live replay under modern-never: huge faults" "$(json "$T_OUT/um1.live-never.json" .faults.huge)" 0
[ "$(json "$T_OUT/um1.live-never.json" .faults.total)" -gt "$((rh * 500))" ] ||
	fail "modern-never live replay did not touch the recorded huge extents whole"

# 5. report reads traces
"$THPEMU" report --text "$T_OUT/um1.trace" >"$T_TMP/rt.txt" || fail "report --text on a trace"
grep -q "complete" "$T_TMP/rt.txt" || fail "trace summary: $(cat "$T_TMP/rt.txt")"
"$THPEMU" report --mmtests "$T_OUT/um1.trace" >"$T_TMP/mm.txt" || fail "report --mmtests on a trace"
n=$(grep -c '^fault [0-9]* \(huge\|base\) [0-9]* [0-9]*\.[0-9]\{6\}$' "$T_TMP/mm.txt")
nf=$(wc -l <"$T_TMP/mm.txt")
[ "$n" = "$nf" ] && [ "$n" -gt 0 ] || fail "mmtests lines: $n of $nf well-formed"
"$THPEMU" report --mmtests "$T_OUT/um1.json" >"$T_TMP/mm2.txt" 2>"$T_TMP/mm2.err" || fail "report --mmtests on a traced run report"
cmp -s "$T_TMP/mm.txt" "$T_TMP/mm2.txt" || fail "a run report with config.trace gives other lines than its trace"
say "mmtests: $n fault lines from the trace"

# 6. zero pages: 8 MiB read, then written, by one thread. Under 6.12's rules every extent's
#    read maps the huge zero page (allocated once), each first write splits it or copies a
#    4 KiB zero page. khugepaged is off: its collapses race the program's writes (as in
#    live_zeropage.sh), which a replay need not meet at the same moment.
ZP="$THPEMU_BUILD_DIR/tests/programs/zeropage"
[ -x "$ZP" ] || fail "$ZP not built"
ZPOL=modern-always:khugepaged=no
record zp "$ZPOL" "$ZP" 8 1 count
expect_eq "zp: recorded with zero pages" "$(json "$T_OUT/zp.json" .config.zero_page)" true
"$THPEMU" replay --quiet --report "$T_OUT/zp.live-replay.json" "$T_OUT/zp.trace" >"$T_TMP/zr.out" 2>&1 ||
	fail "thpemu replay of the zero-page trace failed: $(tail -3 "$T_TMP/zr.out")"
expect_eq "zp: live replay with zero pages" "$(json "$T_OUT/zp.live-replay.json" .config.zero_page)" true
simreplay zp "$ZPOL"
zs="$T_OUT/zp.$ZPOL.sim.json"
for k in vmstat.thp_zero_page_alloc vmstat.thp_split_pmd vmstat.thp_fault_alloc \
	host.huge_zero_faults host.zero_faults host.zero_wp_faults; do
	expect_eq "zp: live replay $k" "$(json "$T_OUT/zp.live-replay.json" ".$k")" "$(json "$T_OUT/zp.json" ".$k")"
done
[ "$(json "$T_OUT/zp.json" .host.huge_zero_faults)" -ge 4 ] ||
	fail "zp: $(json "$T_OUT/zp.json" .host.huge_zero_faults) huge zero faults recorded (4 extents read)"
for k in thp_zero_page_alloc thp_split_pmd thp_fault_alloc; do
	expect_eq "zp: sim replay vmstat.$k" "$(json "$zs" ".vmstat.$k")" "$(json "$T_OUT/zp.json" ".vmstat.$k")"
done
expect_eq "zp: sim replay huge zero faults" "$(json "$zs" .zero_pages.huge_zero_faults)" "$(json "$T_OUT/zp.json" .host.huge_zero_faults)"
expect_eq "zp: sim replay 4 KiB zero faults" "$(json "$zs" .zero_pages.zero_faults)" "$(json "$T_OUT/zp.json" .host.zero_faults)"
expect_eq "zp: sim replay first writes" "$(json "$zs" .zero_pages.zero_wp_faults)" "$(json "$T_OUT/zp.json" .host.zero_wp_faults)"
say "zp ($ZPOL): huge zero faults live $(json "$T_OUT/zp.json" .host.huge_zero_faults)," \
	"first writes $(json "$T_OUT/zp.json" .host.zero_wp_faults); replayed live and in the simulator alike"
# without zero pages the same trace's reads are decided as writes: each extent's read asks for
# a THP (the fragmented pool may refuse one: thp_fault_fallback), no zero page
"$THPEMU" sim --replay "$T_OUT/zp.trace" --zero-page 0 --json "$T_OUT/zp.nozero.sim.json" >/dev/null 2>&1 ||
	fail "sim --replay --zero-page 0 failed"
expect_eq "zp: sim replay --zero-page 0: thp_zero_page_alloc" "$(json "$T_OUT/zp.nozero.sim.json" .vmstat.thp_zero_page_alloc)" 0
expect_eq "zp: sim replay --zero-page 0: zero pages" "$(json "$T_OUT/zp.nozero.sim.json" .zero_pages)" null
asked=$(json "$T_OUT/zp.nozero.sim.json" '.vmstat.thp_fault_alloc + .vmstat.thp_fault_fallback')
[ "$asked" -ge 4 ] || fail "zp: sim replay --zero-page 0 asked for $asked THPs (4 extents read)"

# 7. bad input
"$THPEMU" sim --replay "$T_OUT/um1.json" --json - >/dev/null 2>"$T_TMP/e1"
rc=$?
expect_eq "sim --replay of a JSON file: exit status" "$rc" 2
grep -q "not a thpemu trace" "$T_TMP/e1" || fail "sim --replay error: $(cat "$T_TMP/e1")"
"$THPEMU" replay /nonexistent.trace >/dev/null 2>"$T_TMP/e2"
rc=$?
expect_eq "replay of a missing trace: exit status" "$rc" 2
say "ok"

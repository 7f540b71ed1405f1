#!/usr/bin/env bash
# With one run per side there is no run-to-run spread, so nothing may be called
# significant and no (zero-width) interval may be shown as if real. thpemu ab --runs 1 and
# thpemu report A.json B.json of two single runs must say why, once, in text, JSON and HTML.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq

"$THPEMU" ab --a label=thp,policy=modern-always,pool=128M --b label=nothp,policy=modern-never,pool=128M \
	--runs 1 --json "$T_OUT/single.json" --keep "$T_TMP/keep" -- "$USEMEM" --size 16M --quiet \
	>"$T_OUT/single.txt" 2>"$T_TMP/ab.err" || fail "ab failed: $(tail -3 "$T_TMP/ab.err")"
J=$T_OUT/single.json
WHY="significance needs >= 2 runs per side; A has 1, B has 1"
expect_eq "JSON: significance" "$(json "$J" '.comparison.significance')" null
expect_eq "JSON: why" "$(json "$J" '.comparison.why')" "$WHY"
expect_eq "JSON: no metric significant" "$(json "$J" '[.comparison.metrics[] | .significant, .cidiff_significant // false] | any')" false
expect_eq "JSON: no interval" "$(json "$J" '[.comparison.metrics[] | has("ci95")] | any')" false
expect_eq "JSON: no distribution significant" "$(json "$J" '[.comparison.distributions[] | .significant // false] | any')" false
# huge-pct differs (modern-always vs never) and would have been marked with a zero-width CI
expect_eq "huge-pct differs" "$(json "$J" '.comparison.metrics[] | select(.name == "huge-pct") | .diff != 0')" true
grep -qF "$WHY" "$T_OUT/single.txt" || fail "ab text lacks the reason"
grep -q '^Amean .*\*' "$T_OUT/single.txt" && fail "ab text marks a metric significant: $(grep '^Amean .*\*' "$T_OUT/single.txt")"
grep -q '^Amean     huge-pct.*n/a$' "$T_OUT/single.txt" || fail "ab text: huge-pct interval not n/a: $(grep huge-pct "$T_OUT/single.txt")"

# thpemu report of two single runs, text and HTML
"$THPEMU" report "$T_TMP/keep/A-run1.json" "$T_TMP/keep/B-run1.json" --html "$T_OUT/single.html" --text \
	>"$T_OUT/report.txt" 2>"$T_TMP/report.err" || fail "report failed: $(tail -3 "$T_TMP/report.err")"
grep -qF "$WHY" "$T_OUT/report.txt" || fail "report text lacks the reason"
grep -q ' \*$' "$T_OUT/report.txt" && fail "report text marks a latency class significant"
grep -qF "significance needs &gt;= 2 runs per side; A has 1, B has 1" "$T_OUT/single.html" || fail "HTML lacks the reason"
grep -q 'class="sig"' "$T_OUT/single.html" && fail "HTML marks a row significant"
grep -q '>significant<' "$T_OUT/single.html" && fail "HTML says significant"
say "one run per side: nothing significant, reason given in text, JSON and HTML"

# a number that is null (a hand-edited report) is refused with the file and the field named, as
# a histogram off the grid is, never rendered as "nan"
for field in .faults.total .latency_us.huge.p50 '.processes[0].latency_us.p99'; do
	jq "$field = null" "$T_TMP/keep/A-run1.json" >"$T_TMP/null.json"
	bad_usage "$T_TMP/null.json: ${field#.} is null, not a number" report "$T_TMP/null.json"
	grep -q nan "$T_TMP/out" && fail "report of a null $field: nan in $(cat "$T_TMP/out")"
done
say "null numbers: refused with the field named"

#!/usr/bin/env bash
# mTHP in thpemu report's comparison, text and HTML, from reports with the "mthp"
# keys (fixtures/add_mthp.jq adds them to real reports of this build: sim reports made here,
# and fixtures/run-modern-always-usemem-64M.json, a live `thpemu run` report):
#  - the comparison gains mthp-faults, mthp-coverage and, per size with activity on either
#    side, mthp-SIZE-alloc/-fallback/-p50, with the fixtures' means and significance marks;
#    a size without activity on both sides is not listed;
#  - reports without "mthp" (older eras and versions) compare and render without a word of it;
#  - the single-report text has the order-mix block (faults and pages per size, p50/p99 per
#    fault, per-PTE delivery said for a live report);
#  - the HTML has the order-mix section only when a report has mTHP (and draws it, when
#    chromium is installed).
# The "old" reports are of the 2011 eras (no "mthp"); the committed live report predates mTHP.
# Needs no root and no userfaultfd: thpemu sim and thpemu report only.
. "$(dirname "$0")/lib.sh"
need_cmd jq

FX="$THPEMU_SOURCE_DIR/tests/integration/fixtures"
cd "$T_TMP" || fail "cd $T_TMP"

# mthp FILE-IN FILE-OUT DELIVERY SIZES-JSON
mthp() { jq --arg delivery "$3" --argjson sizes "$4" -f "$FX/add_mthp.jq" "$1" >"$2" || fail "jq $1"; }

for s in 1 2 3; do
	for p in always madvise; do
		"$THPEMU" sim --policy modern-$p --scenario seed-2011 --duration 20s --seed $s \
			--json $p$s.json >/dev/null || fail "thpemu sim --policy modern-$p --seed $s"
	done
	# A: 64kB only; B: more 64kB faults, fewer fallbacks, slower, and 16kB; 32kB nowhere
	mthp always$s.json a$s.json model \
		"{\"64kB\": {\"faults\": $((100 + 10 * s)), \"fallback\": $((20 + 5 * s)), \"p50\": $((10 + s)), \"p99\": 40}}"
	mthp madvise$s.json b$s.json model \
		"{\"64kB\": {\"faults\": $((300 + 10 * s)), \"fallback\": $s, \"p50\": $((20 + s)), \"p99\": 80},
		  \"16kB\": {\"faults\": $((50 + 10 * s)), \"p50\": 7, \"p99\": 30}}"
done

# ---- the comparison -------------------------------------------------------------------------
"$THPEMU" report a1.json a2.json a3.json b1.json b2.json b3.json >cmp.txt || fail "report A/B"
mean() { jq -s "[.[] | $2] | add / length" $1 | xargs printf '%.2f'; }
# metric NAME UNIT-SUFFIX JQ-PATH: the line shows both sides' means and is marked significant
metric() {
	local name=$1 path=$3 line a b
	a=$(mean "a1.json a2.json a3.json" "$path")
	b=$(mean "b1.json b2.json b3.json" "$path")
	line=$(grep -E "^Amean +$name$2 " cmp.txt) || fail "no $name line: $(grep mthp cmp.txt)"
	echo "$line" | grep -qE " $a \( +0\.00%\) +$b \*" ||
		fail "$name: expected A $a, B $b, significant: '$line'"
}
metric mthp-faults "" .faults.mthp
metric mthp-coverage " \(% of anon memory\)" .mthp.coverage_pct
metric mthp-64kB-alloc "" '.mthp.sizes["64kB"].anon_fault_alloc'
metric mthp-64kB-fallback "" '.mthp.sizes["64kB"].anon_fault_fallback'
metric mthp-64kB-p50 " \(us per fault\)" '.mthp.sizes["64kB"].latency_us.p50'
metric mthp-16kB-alloc "" '.mthp.sizes["16kB"].anon_fault_alloc'
# B better on fallbacks (lower is better): a positive change; on p50 worse: negative
grep -E '^Amean +mthp-64kB-fallback ' cmp.txt | grep -qE '\* +[0-9.]+%\*' ||
	fail "fallback change sign: $(grep 64kB-fallback cmp.txt)"
grep -E '^Amean +mthp-64kB-p50 ' cmp.txt | grep -qE '\* *-[0-9.]+%\*' ||
	fail "p50 change sign: $(grep 64kB-p50 cmp.txt)"
# the 16kB p50 exists on B only: listed, without a change
grep -qE '^Amean +mthp-16kB-p50 \(us per fault\) +- ' cmp.txt || fail "16kB p50: $(grep 16kB cmp.txt)"
! grep -q 'mthp-32kB' cmp.txt || fail "32kB had no activity but is listed"
for sz in 128kB 256kB 512kB 1024kB; do
	! grep -q "mthp-$sz" cmp.txt || fail "$sz had no activity but is listed"
done
say "comparison: $(grep -cE '^Amean +mthp-' cmp.txt) mTHP metrics, $(grep -cE '^Amean +mthp-.*\*' cmp.txt) significant"

# ---- reports without mTHP: nothing about it -------------------------------------------------
# the 2011 eras have no mTHP: their reports have no "mthp" (the modern ones always do)
for p in linux-3.1 linux-3.3; do
	for s in 1 2; do
		"$THPEMU" sim --policy $p --scenario seed-2011 --duration 20s --seed $s \
			--json $p-$s.json >/dev/null || fail "thpemu sim --policy $p --seed $s"
		[ "$(json $p-$s.json 'has("mthp")')" = false ] || fail "a $p report has mthp"
	done
done
"$THPEMU" report linux-3.1-1.json linux-3.1-2.json linux-3.3-1.json linux-3.3-2.json >old.txt ||
	fail "report old"
grep -qE '^Amean +fault-both-p50' old.txt || fail "old reports: no comparison"
! grep -qi 'mthp\|order mix' old.txt || fail "old reports mention mTHP: $(grep -i 'mthp\|order mix' old.txt)"
"$THPEMU" report linux-3.1-1.json linux-3.3-1.json --html old.html || fail "report --html old"
! grep -qi 'order-mix\|order mix\|mthp' old.html || fail "old reports: the HTML has an order mix"

# ---- the order-mix block of a single report ---------------------------------------------------
mthp "$FX/run-modern-always-usemem-64M.json" live.json per-PTE \
	'{"64kB": {"faults": 40, "fallback": 3, "p50": 18.5, "p99": 60},
	  "16kB": {"faults": 8, "p50": 9, "p99": 20}}'
"$THPEMU" report live.json >live.txt || fail "report live.json"
grep -q '^  order mix: mTHP coverage [0-9.]* % of the anonymous pages faulted; latency per fault$' \
	live.txt || fail "no order-mix header: $(cat live.txt)"
grep -q 'mTHP delivery is per-PTE' live.txt || fail "per-PTE delivery not said"
row() { grep -E "^  $1 " live.txt | awk '{print $2, $3, $4, $6, $7}'; }
expect_eq "64kB row (order faults pages p50 p99)" "$(row 64kB)" "4 40 640 18.5 60.0"
expect_eq "16kB row" "$(row 16kB)" "2 8 32 9.0 20.0"
base=$(json live.json .faults.base)
huge=$(json live.json .faults.huge)
expect_eq "4kB row: the base faults" "$(row 4kB | cut -d' ' -f1-3)" "0 $base $base"
expect_eq "2048kB row: the huge faults" "$(row 2048kB | cut -d' ' -f1-3)" "9 $huge $((huge * 512))"
[ -z "$(row 32kB)" ] || fail "32kB row without activity"
# the share of faulted memory of 64kB, from the fixture
share=$(awk -v p=640 -v t=$((base + 32 + 640 + huge * 512)) 'BEGIN { printf "%.2f", 100 * p / t }')
expect_eq "64kB share of faulted memory" "$(grep -E '^  64kB ' live.txt | awk '{print $5}')" "$share"
# a sim report: delivery "model", no per-PTE note
"$THPEMU" report a1.json >a1.txt || fail "report a1.json"
grep -q '(mTHP delivery: model)' a1.txt || fail "sim report: delivery not said: $(cat a1.txt)"
! grep -q 'per-PTE' a1.txt || fail "sim report says per-PTE"
"$THPEMU" report linux-3.3-1.json >plain.txt || fail "report linux-3.3-1.json"
! grep -qi 'order mix\|mthp' plain.txt || fail "a report without mTHP has an order mix"

# ---- HTML ---------------------------------------------------------------------------------------
"$THPEMU" report a1.json a2.json a3.json b1.json b2.json b3.json --html cmp.html || fail "report --html"
grep -q '<h2 id="order-mix">' cmp.html || fail "no order-mix section"
grep -q '<title>order mix: faulted memory per folio size</title>' cmp.html || fail "no order-mix chart"
grep -q '<title>fault latency per folio size' cmp.html || fail "no per-size latency chart"
grep -q 'class="sig"><td>mthp-64kB-alloc</td>' cmp.html || fail "summary: mthp-64kB-alloc not marked"
! grep -q '>32kB<' cmp.html || fail "the HTML shows 32kB, which had no activity"
! grep -q 'per-PTE' cmp.html || fail "sim-only HTML speaks of per-PTE delivery"
"$THPEMU" report live.json --html live.html || fail "report --html live"
grep -q 'mTHP delivery is per-PTE' live.html || fail "live HTML: per-PTE delivery not said"
# one series: its means, the mTHP rows only for sizes with activity, none without mTHP
"$THPEMU" report a1.json --html one.html || fail "report --html a1.json"
grep -q '<tr><td>mthp-64kB-alloc</td>' one.html || fail "one series: no mthp-64kB-alloc row"
! grep -q 'mthp-32kB\|mthp-16kB' one.html || fail "one series: rows of sizes without activity"
"$THPEMU" report linux-3.3-1.json --html plain.html || fail "report --html linux-3.3-1.json"
! grep -qi 'order-mix\|mthp' plain.html || fail "one series without mTHP: the HTML mentions it"
cp cmp.html live.html "$T_OUT/"
if command -v chromium >/dev/null; then
	for h in cmp live old one; do
		timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run \
			--dump-dom "file://$T_TMP/$h.html" >dom.html 2>chrome.err ||
			fail "chromium --dump-dom $h.html: $(tail -3 chrome.err)"
		plots=$(grep -o '<svg class="plot' $h.html | wc -l)
		grep -q "data-rendered=\"ok:$plots/$plots\"" dom.html ||
			fail "$h.html: chromium rendered $(grep -o 'data-rendered="[^"]*"' dom.html) of $plots"
	done
	say "chromium drew every plot of the four pages"
else
	say "chromium not installed: the pages were not rendered"
fi
say "ok"

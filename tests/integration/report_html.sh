#!/usr/bin/env bash
# The HTML report as a newcomer sees it, rendered in headless Chromium:
#  - no text of any plot reaches outside its plot (tick labels at the right end were clipped):
#    the page's own check script measures every <text> against its <svg> box after layout and
#    writes the count into body[data-clipped], which --dump-dom hands back;
#  - a series without data in a plot is not in that plot's legend (modern-never has no huge
#    faults: the huge-fault plots list modern-always (thp-always/always, as reports name it) only);
#  - a screenshot of the page is kept in the test output directory.
# The reports are thpemu sim reports of this build (no root, no userfaultfd); their many faults
# put p99.9999 at the right end of the tail plots. 40 s of seed-2011: modern-always's first huge
# faults come after about 30 s, where compaction's trajectory puts them (at 20 s seed 1 had one
# huge fault, then none once 6.12's capture came a batch late).
. "$(dirname "$0")/lib.sh"
need_cmd chromium
cd "$T_TMP" || fail "cd $T_TMP"

for s in 1 2; do
	for p in always never; do
		"$THPEMU" sim --policy modern-$p --scenario seed-2011 --duration 40s --seed $s \
			--json $p$s.json >/dev/null || fail "thpemu sim --policy modern-$p --seed $s"
	done
done
H=$T_OUT/report.html
"$THPEMU" report always1.json always2.json never1.json never2.json --html "$H" || fail "report --html"
grep -q 'p99.9999' "$H" || fail "the tail plots do not reach p99.9999: no right-end label to check"

# legends: per plot (one <svg> per line), the series listed
legend() { # legend PLOT-TITLE: the legend's labels of that plot, space-separated
	grep -F "<title>$1</title>" "$H" | head -1 | grep -o 'class="leg">[^<]*' | sed 's/.*>//' | xargs
}
expect_eq "legend of the huge-fault CDF" "$(legend 'latency CDF: huge faults')" thp-always/always
expect_eq "legend of the huge-fault tail" "$(legend 'tail latency: huge faults')" thp-always/always
expect_eq "legend of the base-fault CDF" "$(legend 'latency CDF: base faults')" "thp-always/always thp-never/madvise"

chrome() {
	timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$T_TMP/chrome" "$@" "file://$H"
}
chrome --dump-dom >dom.html 2>chrome.err || fail "chromium --dump-dom: $(tail -3 chrome.err)"
plots=$(grep -o '<svg class="plot' "$H" | wc -l)
rendered=$(grep -o 'data-rendered="[^"]*"' dom.html | head -1)
clipped=$(grep -o 'data-clipped="[^"]*"' dom.html | head -1)
say "chromium: $rendered $clipped"
[ "$rendered" = "data-rendered=\"ok:$plots/$plots\"" ] || fail "chromium rendered $rendered of $plots plots"
[ "$clipped" = 'data-clipped="0"' ] ||
	fail "clipped text: $clipped: $(grep -o 'data-clipped-texts="[^"]*"' dom.html)"
chrome --window-size=1280,3000 --screenshot="$T_OUT/report.png" >/dev/null 2>>chrome.err ||
	fail "chromium --screenshot: $(tail -3 chrome.err)"
[ -s "$T_OUT/report.png" ] || fail "no screenshot"
say "no clipped text in $plots plots; screenshot $T_OUT/report.png"

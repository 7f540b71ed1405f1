#!/usr/bin/env bash
# The same inputs and seed give byte-identical JSON from separate processes; another seed gives
# another run. (A process started later, elsewhere in memory, must not change a byte.)
# seed-2011-long runs on its own 1G pool under modern-always, long enough for khugepaged to
# collapse (asserted, so that its part of the run is covered by the comparison); writeback-cp
# runs one whole iteration (--duration bounds the iterations started).
. "$(dirname "$0")/lib.sh"

for spec in seed-2011:20s:64M:linux-3.1 seed-2011-long:2m:1G:modern-always \
	thpcompact:2s:64M:linux-3.1 thpchallenge-fio:3s:64M:linux-3.1 writeback-cp:1s:128M:linux-3.3; do
	IFS=: read -r scen dur pool policy <<<"$spec"
	args=(--policy "$policy" --scenario "$scen" --pool "$pool" --duration "$dur")
	"$THPEMU" sim "${args[@]}" --seed 5 --json "$T_TMP/a.json" >/dev/null || fail "$scen run a"
	# perturb the address space layout of the second run (environment size)
	PADDING=$(head -c 5000 /dev/zero | tr '\0' x) \
		"$THPEMU" sim "${args[@]}" --seed 5 --json "$T_TMP/b.json" >/dev/null || fail "$scen run b"
	"$THPEMU" sim "${args[@]}" --seed 6 --json "$T_TMP/c.json" >/dev/null || fail "$scen run c"
	cmp -s "$T_TMP/a.json" "$T_TMP/b.json" || fail "$scen: same seed, different bytes"
	cmp -s "$T_TMP/a.json" "$T_TMP/c.json" && fail "$scen: seeds 5 and 6 gave identical reports"
	expect_eq "$scen seed" "$(json "$T_TMP/a.json" .seed)" 5
	if [ "$scen" = seed-2011-long ]; then
		[ "$(json "$T_TMP/a.json" .vmstat.khugepaged_pages_collapsed)" -gt 0 ] ||
			fail "$scen: khugepaged collapsed nothing (the comparison would not cover it)"
	fi
	cp "$T_TMP/a.json" "$T_OUT/$scen.json"
done
# stdout JSON equals file JSON
"$THPEMU" sim --policy linux-3.1 --scenario seed-2011 --pool 64M --duration 20s --seed 5 \
	--json - >"$T_TMP/stdout.json" || fail "--json - failed"
"$THPEMU" sim --policy linux-3.1 --scenario seed-2011 --pool 64M --duration 20s --seed 5 \
	--json "$T_TMP/file.json" >/dev/null || fail "--json FILE failed"
cmp -s "$T_TMP/stdout.json" "$T_TMP/file.json" || fail "--json - and --json FILE differ"
say "ok"

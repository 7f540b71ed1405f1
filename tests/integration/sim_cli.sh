#!/usr/bin/env bash
# thpemu sim rejects bad input with exit status 2 and one stderr line that names the option and
# the accepted values; --help lists policies, scenarios, cost keys and devices.
. "$(dirname "$0")/lib.sh"

# expect_usage_error WORDS -- ARGS...: exit 2, exactly one line, containing every word.
expect_usage_error() {
	local words=() out rc lines w
	while [ "$1" != -- ]; do
		words+=("$1")
		shift
	done
	shift
	out=$("$THPEMU" sim "$@" 2>&1 >/dev/null)
	rc=$?
	[ "$rc" = 2 ] || fail "sim $*: exit $rc, expected 2 ($out)"
	lines=$(printf '%s\n' "$out" | wc -l)
	[ "$lines" = 1 ] || fail "sim $*: $lines lines on stderr, expected 1: $out"
	for w in "${words[@]}"; do
		case "$out" in
		*"$w"*) ;;
		*) fail "sim $*: message lacks '$w': $out" ;;
		esac
	done
}

ok=(--policy linux-3.1 --scenario seed-2011 --pool 32M --duration 1s)

expect_usage_error --policy -- --scenario seed-2011
expect_usage_error --policy "unknown profile 'linux-9.9'" linux-3.1+nostall thp-ENABLED/DEFRAG modern-* -- \
	--policy linux-9.9 --scenario seed-2011
expect_usage_error --policy wb-wait-max -- --policy linux-3.1:wb-wait-max=soon --scenario seed-2011
expect_usage_error --policy "unknown key" -- --policy linux-3.1:nosuchkey=1 --scenario seed-2011
# an empty key list is a typo, not the profile as it is (and not a silent default)
expect_usage_error --policy "'linux-3.1:'" "an empty item" -- --policy linux-3.1: --scenario seed-2011
# simulated processes are bounded (each is a fiber with a stack): a count beyond is refused, not a
# run that fails with an empty message
expect_usage_error --opt "usemem-procs: bad value '100000'" "from 0 to 10000" -- \
	--policy linux-3.1 --scenario seed-2011 --opt usemem-procs=100000
expect_usage_error --opt "threads: bad value '10001'" "from 0 to 10000" -- \
	--policy linux-3.1 --scenario thpcompact --opt threads=10001
expect_usage_error --scenario seed-2011 thpcompact thpchallenge-fio -- --policy linux-3.1
expect_usage_error --scenario "unknown scenario 'postmark'" seed-2011 thpcompact thpchallenge-fio -- \
	--policy linux-3.1 --scenario postmark
expect_usage_error --pool 8M 64G -- "${ok[@]}" --pool 1M
expect_usage_error --pool 8M 64G -- "${ok[@]}" --pool lots
expect_usage_error --duration unit -- "${ok[@]}" --duration 10
expect_usage_error --duration -- "${ok[@]}" --duration 0
expect_usage_error --fs "'fat32'" vfat ext4 -- "${ok[@]}" --fs fat32
# --fs is the policy key fs, before or after --policy; the report's policy records it
pol=$("$THPEMU" sim --fs ext4 "${ok[@]}" --json - | jq -r .policy) || fail "sim --fs ext4 failed"
expect_eq "--fs ext4 in the policy" "$pol" "linux-3.1:fs=ext4"
pol=$("$THPEMU" sim "${ok[@]}" --fs vfat --json - | jq -r .policy) || fail "sim --fs vfat failed"
expect_eq "--fs vfat in the policy" "$pol" "linux-3.1"
expect_usage_error --seed integer -- "${ok[@]}" --seed -3
expect_usage_error --stall-threshold -- "${ok[@]}" --stall-threshold fast
expect_usage_error --zero-page "0/1, no/yes" -- "${ok[@]}" --zero-page maybe
expect_usage_error --device "unknown preset 'floppy'" usb2-stick-2011 sd-class4 -- "${ok[@]}" --device floppy
expect_usage_error --device "warp=9" -- "${ok[@]}" --device usb2-stick-2011:warp=9
# the options sim shares with run are run's (core/config's table): a directory or the live
# writeback engine's keys mean nothing to the simulator; none is the default model
expect_usage_error --device "'$T_TMP'" "none or a preset" -- "${ok[@]}" --device "$T_TMP"
expect_usage_error --device nr-requests= "live writeback engine" -- "${ok[@]}" \
	--device usb2-stick-2011:nr-requests=4
dev=$("$THPEMU" sim "${ok[@]}" --device none:preset=sd-class4 --json - | jq -r .device) ||
	fail "sim --device none:preset=sd-class4 failed"
expect_eq "--device none:preset= in the report" "$dev" none:preset=sd-class4
# mel-2011 brings its machine (its disk, ext4) unless --device, --fs or the policy key fs say
mel() { "$THPEMU" sim --scenario mel-2011 --pool 64M --duration 1s "$@" --json - |
	jq -r '.policy + " " + .device'; }
expect_eq "mel-2011's machine" "$(mel --policy linux-3.3)" "linux-3.3:fs=ext4 sata-hdd-2011"
expect_eq "mel-2011 --fs vfat" "$(mel --policy linux-3.3 --fs vfat)" "linux-3.3 sata-hdd-2011"
expect_eq "mel-2011 fs=vfat" "$(mel --policy linux-3.3:fs=vfat)" "linux-3.3 sata-hdd-2011"
expect_eq "mel-2011 --device" "$(mel --policy linux-3.3 --device usb2-stick-2011)" \
	"linux-3.3:fs=ext4 usb2-stick-2011"
expect_usage_error --policy-plugin "no such file" -- "${ok[@]}" --policy-plugin /nonexistent/p.so
expect_usage_error --opt "unknown key 'nosuch'" usemem-procs -- "${ok[@]}" --opt nosuch=1
expect_usage_error --opt usemem-hold duration -- "${ok[@]}" --opt usemem-hold=5
expect_usage_error "unknown option '--fast'" -- "${ok[@]}" --fast
expect_usage_error "--json needs a value" -- "${ok[@]}" --json
expect_usage_error --costs "No such file" -- "${ok[@]}" --costs "$T_TMP/none.costs"

# outputs and limits are checked before the simulation: no file is created
expect_usage_error --json "'/nonexistent/d/r.json'" "the directory '/nonexistent/d' does not exist" -- \
	"${ok[@]}" --json /nonexistent/d/r.json
ln -s "$T_TMP/victim" "$T_TMP/link.json"
expect_usage_error --json "is a symbolic link" -- "${ok[@]}" --json "$T_TMP/link.json"
[ ! -e "$T_TMP/victim" ] || fail "--json followed a symbolic link"
expect_usage_error --json --costs "name the same file" -- "${ok[@]}" --costs "$T_TMP/c" --json "$T_TMP/./c"
expect_usage_error --pool "'100G' is out of range" 8M 64G -- "${ok[@]}" --pool 100G
expect_usage_error --seed "'abc' is not a non-negative integer" -- "${ok[@]}" --seed abc
expect_usage_error --opt "'usemem-procs' is given twice" -- "${ok[@]}" --opt usemem-procs=1 --opt usemem-procs=2
expect_usage_error --policy "'defrag' is given twice" -- --policy linux-3.1:defrag=always,defrag=never \
	--scenario seed-2011
expect_usage_error "unexpected argument 'trace.bin'" --replay -- "${ok[@]}" trace.bin
expect_usage_error --policy 'linux\x0a9' -- --policy "$(printf 'linux\n9')" --scenario seed-2011
printf 'precious\n' >"$T_TMP/mine.json"
expect_usage_error --policy -- --scenario seed-2011 --json "$T_TMP/mine.json"
expect_eq "a usage error leaves --json alone" "$(cat "$T_TMP/mine.json")" precious

printf 'fault = 27us\n# comment\nscan-pfm = 3ns\n' >"$T_TMP/bad.costs"
expect_usage_error --costs "$T_TMP/bad.costs:3" "unknown key 'scan-pfm'" scan-pfn migrate-page -- \
	"${ok[@]}" --costs "$T_TMP/bad.costs"
printf 'clear-2m = 100\n' >"$T_TMP/bad2.costs"
expect_usage_error --costs "$T_TMP/bad2.costs:1" clear-2m "bad duration '100'" -- \
	"${ok[@]}" --costs "$T_TMP/bad2.costs"

help=$("$THPEMU" sim --help) || fail "--help exited $?"
for w in linux-3.1+nostall modern-never seed-2011 thpcompact thpchallenge-fio \
	migrate-page clear-2m scan-pfn usb2-stick-2011 usemem-procs; do
	case "$help" in
	*"$w"*) ;;
	*) fail "--help does not mention $w" ;;
	esac
done

# A valid calibration file is applied and recorded in the report.
printf 'migrate-page = 27us\nfault=27us\n' >"$T_TMP/live.costs"
"$THPEMU" sim "${ok[@]}" --costs "$T_TMP/live.costs" --json "$T_TMP/r.json" >/dev/null ||
	fail "run with a valid cost file failed"
expect_eq costs.migrate-page "$(json "$T_TMP/r.json" '.costs_ns."migrate-page"')" 27000
expect_eq costs.fault "$(json "$T_TMP/r.json" '.costs_ns.fault')" 27000

# The pool's watermarks and the AnonHugePages coverage over the run. A 1 GiB pool, all
# free, usemem with MADV_HUGEPAGE: modern-always maps nearly all of it huge, modern-never none.
for p in modern-always modern-never linux-3.1; do
	J=$T_TMP/cov-$p.json
	"$THPEMU" sim --policy $p --scenario seed-2011 --pool 1G --duration 300s --opt init= \
		--json "$J" >/dev/null || fail "sim $p"
	expect_eq "$p: min < low < high" \
		"$(json "$J" '.pool_end.watermarks | .min < .low and .low < .high')" true
	expect_eq "$p: min = min_free_kbytes in pages" \
		"$(json "$J" '.pool_end.watermarks.min == (.pool_end.min_free_kbytes / 4 | floor)')" true
	expect_eq "$p: 1..2000 samples" "$(json "$J" '.coverage.samples | length > 1 and length <= 2000')" true
	expect_eq "$p: the interval spreads them over the run" "$(json "$J" '.coverage.interval_ms >= 100')" true
	expect_eq "$p: samples in time order" \
		"$(json "$J" '[.coverage.samples[][0]] as $t | [range(1; $t | length) | $t[.] > $t[. - 1]] | all')" true
	expect_eq "$p: the last sample at the end" \
		"$(json "$J" '.coverage.samples[-1][0] == .duration_s * 1000')" true
	expect_eq "$p: 0 <= huge <= anon" "$(json "$J" '.coverage.samples | map(.[1] >= 0 and .[1] <= .[2]) | all')" true
	expect_eq "$p: percentages in 0..100" \
		"$(json "$J" '.coverage | [.end_pct, .time_weighted_pct] | map(. >= 0 and . <= 100) | all')" true
	# end: the last sample with at least half the peak's anon; time-weighted: each sample holds
	# until the next, over the time with anon (every sample is kept at this length: the mean
	# can be recomputed). A sample's time is printed cut to the microsecond, end_t_ms rounded
	# to it: the same instant reads up to 1 us apart.
	expect_eq "$p: end_pct is the last sample's near the peak" "$(json "$J" '.coverage | . as $c |
		(.samples | map(.[2] / 4) | max) as $pk |
		(.samples | map(select(.[2] / 4 >= $pk - ($pk / 2 | floor))) | last) as $e |
		(($e[0] - $c.end_t_ms) | fabs < 0.0015) and
		((100 * $e[1] / $e[2]) - $c.end_pct | fabs < 0.006)')" true
	expect_eq "$p: time_weighted_pct from the samples" "$(json "$J" '.coverage | .time_weighted_pct as $tw | .samples as $s |
		[range(1; $s | length) | select($s[. - 1][2] > 0) |
		 [($s[.][0] - $s[. - 1][0]), ($s[.][0] - $s[. - 1][0]) * $s[. - 1][1] / $s[. - 1][2]]] |
		(map(.[1]) | add) * 100 / (map(.[0]) | add) - $tw | fabs < 0.01')" true
done
J=$T_TMP/cov-modern-always.json
expect_eq "modern 1 GiB: min_free_kbytes raised to 11 pageblocks" "$(json "$J" .pool_end.min_free_kbytes)" 22528
expect_eq "modern 1 GiB: watermarks" "$(json "$J" '.pool_end.watermarks | "\(.min) \(.low) \(.high)"')" \
	"5632 7040 8448"
expect_eq "modern-always: coverage above 90 %" \
	"$(json "$J" '.coverage | .end_pct > 90 and .time_weighted_pct > 90')" true
expect_eq "modern-never: no coverage" \
	"$(json "$T_TMP/cov-modern-never.json" '.coverage | [.end_pct, .time_weighted_pct] | "\(.)"')" "[0,0]"
expect_eq "modern-never: there was anon memory" "$(json "$T_TMP/cov-modern-never.json" '.coverage.anon_ms > 0')" true
"$THPEMU" sim --policy modern-always --scenario seed-2011 --pool 1G --duration 20s --opt init= |
	grep -q "^AnonHugePages coverage: end [0-9.]* %, time-weighted [0-9.]* %; watermarks min 5632 low 7040 high 8448" ||
	fail "the text summary lacks the coverage and watermarks line"
say "ok"

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
expect_usage_error --policy "unknown profile 'linux-9.9'" linux-3.1+nostall modern-madvise -- \
	--policy linux-9.9 --scenario seed-2011
expect_usage_error --policy wb-wait-max -- --policy linux-3.1:wb-wait-max=soon --scenario seed-2011
expect_usage_error --policy "unknown key" -- --policy linux-3.1:nosuchkey=1 --scenario seed-2011
expect_usage_error --scenario seed-2011 thpcompact thpchallenge-fio -- --policy linux-3.1
expect_usage_error --scenario "unknown scenario 'postmark'" seed-2011 thpcompact thpchallenge-fio -- \
	--policy linux-3.1 --scenario postmark
expect_usage_error --pool 8M 64G -- "${ok[@]}" --pool 1M
expect_usage_error --pool 8M 64G -- "${ok[@]}" --pool lots
expect_usage_error --duration unit -- "${ok[@]}" --duration 10
expect_usage_error --duration -- "${ok[@]}" --duration 0
expect_usage_error --seed integer -- "${ok[@]}" --seed -3
expect_usage_error --stall-threshold -- "${ok[@]}" --stall-threshold fast
expect_usage_error --device "unknown preset 'floppy'" usb2-stick-2011 sd-class4 -- "${ok[@]}" --device floppy
expect_usage_error --device "warp=9" -- "${ok[@]}" --device usb2-stick-2011:warp=9
expect_usage_error --opt "unknown key 'nosuch'" usemem-procs -- "${ok[@]}" --opt nosuch=1
expect_usage_error --opt usemem-hold duration -- "${ok[@]}" --opt usemem-hold=5
expect_usage_error "unknown option '--fast'" -- "${ok[@]}" --fast
expect_usage_error "--json needs a value" -- "${ok[@]}" --json
expect_usage_error --costs "No such file" -- "${ok[@]}" --costs "$T_TMP/none.costs"

# outputs and limits are checked before the simulation (issue 17): no file is created
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
say "ok"

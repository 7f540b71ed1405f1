#!/usr/bin/env bash
# Outputs that cannot be completed fail loudly and leave nothing half-written (util/outfile.h):
# on a full file system (a 256 KiB tmpfs, filled), every output -- run --report, --stall-report,
# --trace, a process's THPEMU_REPORT, sim --json, ab --json/--html, report --html, a matrix
# result -- makes its command exit 1 with one line naming the file and the error, the file that
# was there before is intact, and no partial or temporary file is left. A reader of thpemu run's
# stderr that goes away (| head -2) does not cost the report. A replaced file keeps its mode.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq

TINY=$T_TMP/tiny
mkdir -p "$TINY"
mount -t tmpfs -o size=256k tmpfs "$TINY" || skip "cannot mount a tmpfs"
at_exit "umount -l '$TINY'"
printf '{"kind": "run", "old": true}\n' >"$TINY/old.json"
OLD=$(cat "$TINY/old.json")
fill() { # fill the file system to the last byte
	dd if=/dev/zero of="$TINY/fill" bs=4k 2>/dev/null
	[ "$(df -k --output=avail "$TINY" | tail -1 | tr -d ' ')" = 0 ] || fail "tmpfs not full"
}
unfill() { rm -f "$TINY/fill"; }
# nothing but the files named may be there: no partial output, no temporary file
only() {
	local want got
	want=$(printf '%s\n' "$@" | sort | tr '\n' ' ')
	got=$(ls -A "$TINY" | grep -vx fill | sort | tr '\n' ' ')
	expect_eq "files left" "$got" "$want"
}
# failed STATUS WANT...: the last command's status and its stderr ($T_TMP/err) has a line with
# every WANT
failed() {
	local st=$1 w
	shift
	expect_eq "exit status ($*)" "$st" 1
	for w in "$@"; do
		grep -F -- "$w" "$T_TMP/err" | grep -q "No space left on device" ||
			fail "no line with '$w' and the error: $(cat "$T_TMP/err")"
	done
}

fill
# 1. thpemu run --report / --stall-report: exit 1, one line each, the earlier report intact
"$THPEMU" run --quiet --report "$TINY/old.json" --stall-report "$TINY/s.txt" -- true 2>"$T_TMP/err"
failed $? "--report: '$TINY/old.json'" "--stall-report: '$TINY/s.txt'"
expect_eq "the earlier report" "$(cat "$TINY/old.json")" "$OLD"
only old.json
say "run --report/--stall-report on a full disk: exit 1, the earlier report intact"

# 2. --trace: the library stops tracing, removes the partial trace, thpemu run exits 1
unfill
dd if=/dev/zero of="$TINY/fill" bs=4k count=56 2>/dev/null # 16 KiB left: the header fits
"$THPEMU" run --quiet --policy modern-never --trace "$TINY/t.trace" -- "$USEMEM" --size 8M \
	--quiet >/dev/null 2>"$T_TMP/err"
failed $? "--trace (THPEMU_TRACE) '$TINY/t.trace'"
grep -q "partial trace was removed" "$T_TMP/err" || fail "trace: $(cat "$T_TMP/err")"
expect_eq "trace: lines on stderr" "$(wc -l <"$T_TMP/err")" 1
only old.json
say "run --trace on a full disk: exit 1, no partial trace"

# 3. a process's own report (THPEMU_REPORT): by hand the program's status is its own; under
# thpemu run the failure reaches the launcher's status
unfill
fill
LD_PRELOAD="$LIBTHPEMU" THPEMU_REPORT="$TINY/p.json" "$USEMEM" --size 4M --quiet >/dev/null \
	2>"$T_TMP/err"
expect_eq "THPEMU_REPORT by hand: the program's status" "$?" 0
grep -F "THPEMU_REPORT '$TINY/p.json'" "$T_TMP/err" | grep -q "No space left" ||
	fail "THPEMU_REPORT: $(cat "$T_TMP/err")"
THPEMU_REPORT="$TINY/p.json" "$THPEMU" run --quiet -- "$USEMEM" --size 4M --quiet >/dev/null \
	2>"$T_TMP/err"
failed $? "THPEMU_REPORT '$TINY/p.json'"
only old.json
say "THPEMU_REPORT on a full disk: said, no partial file; thpemu run exits 1"

# 4. the other commands' outputs
"$THPEMU" sim --policy linux-3.1 --scenario seed-2011 --duration 1s --json "$TINY/old.json" \
	>/dev/null 2>"$T_TMP/err"
failed $? "--json: '$TINY/old.json'"
"$THPEMU" ab --a policy=modern-always --b policy=modern-never --runs 1 --json "$TINY/ab.json" \
	--html "$TINY/ab.html" --keep "$T_TMP/keep" -- true >/dev/null 2>"$T_TMP/err"
failed $? "--json: '$TINY/ab.json'" "--html: '$TINY/ab.html'"
"$THPEMU" report "$T_TMP/keep/A-run1.json" --html "$TINY/old.json" >/dev/null 2>"$T_TMP/err"
failed $? "--html: '$TINY/old.json'"
expect_eq "the earlier file" "$(cat "$TINY/old.json")" "$OLD"
only old.json
say "sim --json, ab --json/--html, report --html on a full disk: exit 1, nothing half-written"

# 5. a matrix's result: 32 KiB free take the run's own report but not the result made of it; the
# cell fails, and no result file is left (a result that exists is complete: resuming trusts it)
unfill
"$THPEMU" matrix --policy policy=modern-never --workload 't=true' --runs 1 --out "$TINY/m" \
	--dry-run >/dev/null || fail "matrix --dry-run"
fill
truncate -s -32K "$TINY/fill"
THPEMU_MATRIX_LOCK=$T_TMP/lock "$THPEMU" matrix --policy policy=modern-never \
	--workload 't=true' --runs 1 --out "$TINY/m" >/dev/null 2>"$T_TMP/err"
[ $? != 0 ] || fail "matrix with no room for its result: exit status 0"
grep -F "'$TINY/m/results/0000.json'" "$T_TMP/err" | grep -q "No space left" ||
	fail "matrix: $(cat "$T_TMP/err")"
expect_eq "matrix: results" "$(ls -A "$TINY/m/results")" ""
rm -rf "$TINY/m"
say "matrix result on a full disk: said, no result file"

# 6. a replaced report keeps its mode
unfill
chmod 0600 "$TINY/old.json"
"$THPEMU" run --quiet --report "$TINY/old.json" -- true || fail "run on a roomy disk"
expect_eq "replaced report: kind" "$(json "$TINY/old.json" .kind)" run
expect_eq "replaced report: mode" "$(stat -c %a "$TINY/old.json")" 600
only old.json

# 7. a reader of stderr that goes away: thpemu run ignores SIGPIPE, the report is whole, the
# status is the program's
"$THPEMU" run --report "$T_TMP/pipe.json" -- "$USEMEM" --size 4M 2>&1 | head -2 >/dev/null
expect_eq "stderr reader gone: thpemu run's status" "${PIPESTATUS[0]}" 0
expect_eq "stderr reader gone: the report" "$(json "$T_TMP/pipe.json" .kind)" run
say "ok"

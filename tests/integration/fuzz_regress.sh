#!/usr/bin/env bash
# What the fuzz targets found, replayed through the commands (tests/fuzz/regress/): each input
# is refused with exit status 2 and one line naming what is wrong, within seconds, printing
# nothing else. Before the parsers were bounded, `thpemu sim --replay` died of SIGSEGV on a RESIDENT record whose
# range wraps and ran for minutes on huge times or lengths, and `thpemu report --mmtests`
# printed gigabytes for a histogram count of -1.
. "$(dirname "$0")/lib.sh"

REG="$THPEMU_SOURCE_DIR/tests/fuzz/regress"

# refused WORD CMD...: exit 2 within 20 s, one stderr line containing WORD, little stdout
refused() {
	local word=$1 rc lines
	shift
	timeout 20 "$@" >"$T_TMP/out" 2>"$T_TMP/err"
	rc=$?
	[ "$rc" = 2 ] || fail "$*: exit $rc, expected 2 ($(head -c 300 "$T_TMP/err"))"
	lines=$(wc -l <"$T_TMP/err")
	[ "$lines" = 1 ] || fail "$*: $lines lines on stderr: $(head -c 600 "$T_TMP/err")"
	grep -q -- "$word" "$T_TMP/err" || fail "$*: message lacks '$word': $(cat "$T_TMP/err")"
	[ "$(wc -c <"$T_TMP/out")" -lt 4096 ] || fail "$*: printed $(wc -c <"$T_TMP/out") bytes"
}

n=0
for f in "$REG"/fuzz_replay/*.trace; do
	case "$(basename "$f")" in
	fault-time-*) why="spans" ;;
	*) why="corrupt trace" ;;
	esac
	refused "$why" "$THPEMU" sim --replay "$f"
	n=$((n + 1))
done
[ "$n" -ge 4 ] || fail "only $n trace reproducers in $REG/fuzz_replay"

# a trace refused only for its span replays its first part when given --duration, quickly
f="$REG/fuzz_replay/fault-time-3-years.trace"
timeout 20 "$THPEMU" sim --replay "$f" --duration 10s >"$T_TMP/out" 2>"$T_TMP/err" ||
	fail "sim --replay --duration 10s: exit $? ($(cat "$T_TMP/err"))"
grep -q "replay of" "$T_TMP/out" || fail "no replay summary: $(head -c 300 "$T_TMP/out")"

# what report makes of the same files: corrupt traces are refused, not rendered
refused "corrupt trace" "$THPEMU" report "$REG/fuzz_replay/resident-range-wraps.trace"
refused "corrupt trace" "$THPEMU" report --mmtests "$REG/fuzz_replay/adopt-32-tib.trace"

for f in "$REG"/fuzz_report/*.json; do
	refused "latency_hist" "$THPEMU" report --mmtests "$f"
	refused "latency_hist" "$THPEMU" report "$f"
done
say "ok: $n traces and $(ls "$REG"/fuzz_report/*.json | wc -l) reports refused"

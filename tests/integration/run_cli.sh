#!/usr/bin/env bash
# thpemu run (and replay) as a hostile or careless user would drive it ("nobody in,
# validate before working"):
#  - an output path that cannot be written (a missing directory, a directory, a symbolic link or
#    hard link planted by another user, a world-writable non-sticky directory) is bad input: exit
#    status 2, one line naming the option, the path and why, and nothing ran: no program, no run
#    directory, and the file the link points to is untouched;
#  - --pool takes the library's range (64G at most), so the program never runs unmanaged for a
#    value the CLI accepted;
#  - numbers that are not numbers say so; a flag given a value is refused; a value with a
#    newline or an escape sequence stays on one line;
#  - an option given twice: the last one counts (as --help says);
#  - /dev/null and an existing file of ours are fine outputs.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq

export TMPDIR=$T_TMP/tmp # run directories go here: "no work" includes "none was made"
mkdir -p "$TMPDIR"
MARK=$T_TMP/ran
shared=$T_TMP/shared # a directory like /tmp: sticky, everyone may write
mkdir -m 1777 "$shared"
victim=$T_TMP/victim
printf 'precious\n' >"$victim"

# bad WANT... -- RUN-ARGS: exit 2, one line containing every WANT, the program did not run,
# no run directory was made, the victim is intact.
bad() {
	local want=() rc w
	while [ "$1" != -- ]; do
		want+=("$1")
		shift
	done
	shift
	rm -f "$MARK"
	"$THPEMU" run "$@" -- touch "$MARK" >"$T_TMP/out" 2>"$T_TMP/err"
	rc=$?
	[ $rc = 2 ] || fail "run $*: exit status $rc, expected 2 ($(cat "$T_TMP/err"))"
	[ "$(wc -l <"$T_TMP/err")" = 1 ] || fail "run $*: not one line: $(cat "$T_TMP/err")"
	for w in "${want[@]}"; do
		grep -qF -- "$w" "$T_TMP/err" || fail "run $*: message lacks '$w': $(cat "$T_TMP/err")"
	done
	[ ! -e "$MARK" ] || fail "run $*: the program ran"
	[ -z "$(ls -A "$TMPDIR")" ] || fail "run $*: left $(ls -A "$TMPDIR")"
	expect_eq "run $*: the victim" "$(cat "$victim")" precious
}

# a bad machine setting
bad --fs "'xfs'" "vfat, ext4 or tmpfs" -- --fs xfs

# output paths
bad --report "'/nonexistent/d/r.json'" "the directory '/nonexistent/d' does not exist" -- \
	--report /nonexistent/d/r.json
bad --trace "'/nonexistent/d/t'" "does not exist" -- --trace /nonexistent/d/t
bad --stall-report "'$T_TMP'" "is a directory" -- --stall-report "$T_TMP"
ln -s "$victim" "$shared/r.json"
chown -h 65534:65534 "$shared/r.json"
bad --report "'$shared/r.json'" "is a symbolic link" -- --report "$shared/r.json"
bad --trace "is a symbolic link" -- --trace "$shared/r.json"
ln "$victim" "$shared/hard.json"
bad --report "has 2 hard links" -- --report "$shared/hard.json"
rm -f "$shared/hard.json"
printf 'theirs\n' >"$shared/theirs.json"
chown 65534:65534 "$shared/theirs.json"
bad --report "belongs to uid 65534" -- --report "$shared/theirs.json"
mkdir -m 0777 "$T_TMP/open"
chmod 0777 "$T_TMP/open"
bad --report "writable by everyone and not sticky" -- --report "$T_TMP/open/r.json"
mkfifo "$shared/fifo"
bad --stall-report "FIFO" -- --stall-report "$shared/fifo" # and did not hang
bad --report --trace "name the same file" -- --report "$T_TMP/x.json" --trace "$T_TMP/./x.json"
bad --report "an empty path" -- --report ""
bad --trace "an empty path" -- --trace ""
# pseudo file systems are the kernel's interfaces, never outputs (a regular file of root's there
# passed the checks, and the program then ran unmanaged)
bad --trace "'/proc/version'" "on proc, a pseudo file system" -- --trace /proc/version
bad --report "'/sys/kernel/r.json'" "on sysfs, a pseudo file system" -- --report /sys/kernel/r.json
bad --stall-report "on proc, a pseudo file system" -- --stall-report /proc/self/stalls.txt
say "output paths: refused before anything ran"

# values
bad --pool "'100G' is out of range" "64G" -- --pool 100G
bad --seed "'abc' is not a non-negative integer" -- --seed abc
bad --handlers "'2.5' is not a non-negative integer" -- --handlers 2.5
bad --quiet "takes no value" -- --quiet=no
bad --policy 'linux\x0a3.1' -- --policy "$(printf 'linux\n3.1')"
bad --report '\x1b[2J' -- --report "$(printf '/nonexistent/\033[2J/r.json')"
bad --fragment "'bogus'" -- --fragment bogus
bad --policy "'defrag' is given twice" -- --policy linux-3.1:defrag=always,defrag=never
bad --dirty "'file' is given twice" -- --dirty 1G,file=1M,file=2M
bad --device "'bandwidth' is given twice" -- --device none:bandwidth=1M,bandwidth=2M
bad --device "is not a directory" -- --device /nonexistent/stick
bad --policy "'linux-3.1:'" "an empty item" -- --policy linux-3.1:
bad --policy "an empty item" -- --policy linux-3.1:defrag=always,
bad_usage "an empty item" ab --a policy=linux-3.1: --b policy=linux-3.2 -- touch "$MARK"
[ ! -e "$MARK" ] || fail "ab with an empty policy key list ran"
say "values: refused before anything ran"

# a TMPDIR anyone may rename things in is refused (the run directory could be swapped)
mkdir -m 0777 "$T_TMP/opentmp"
chmod 0777 "$T_TMP/opentmp"
rm -f "$MARK"
TMPDIR=$T_TMP/opentmp "$THPEMU" run -- touch "$MARK" 2>"$T_TMP/err"
expect_eq "TMPDIR not sticky: status" "$?" 1
expect_eq "TMPDIR not sticky: lines" "$(wc -l <"$T_TMP/err")" 1
grep -q "TMPDIR: '$T_TMP/opentmp'.*not sticky" "$T_TMP/err" || fail "TMPDIR: $(cat "$T_TMP/err")"
[ ! -e "$MARK" ] && [ -z "$(ls -A "$T_TMP/opentmp")" ] || fail "TMPDIR not sticky: work was done"

# the library's pool limit is the CLI's: the largest accepted pool is managed, not refused
"$THPEMU" run --quiet --pool 64G --report "$T_TMP/max.json" -- true 2>"$T_TMP/err" ||
	fail "--pool 64G: $(cat "$T_TMP/err")"
expect_eq "--pool 64G: managed" "$(json "$T_TMP/max.json" .program.processes)" 1
expect_eq "--pool 64G: unmanaged" "$(json "$T_TMP/max.json" .program.unmanaged_processes)" 0

# an option given twice: the last one counts
"$THPEMU" run --quiet --policy linux-3.1 --policy linux-3.3 --report "$T_TMP/twice.json" -- true ||
	fail "repeated --policy"
expect_eq "repeated --policy: the last" "$(json "$T_TMP/twice.json" .config.policy)" linux-3.3

# fine outputs: an existing file of ours (truncated), /dev/null
printf '%4096s' x >"$T_TMP/old.json"
"$THPEMU" run --quiet --report "$T_TMP/old.json" --stall-report /dev/null -- true ||
	fail "run with an existing report and /dev/null"
expect_eq "the old report replaced" "$(json "$T_TMP/old.json" .kind)" run
[ -c /dev/null ] || fail "/dev/null is no longer the null device"

# a note of the summary reads "note: the ...", one space after the colon
"$THPEMU" run --pool 8M -- "$USEMEM" --size 32M --quiet 2>"$T_TMP/err" >/dev/null ||
	fail "pool exhausted run: $(cat "$T_TMP/err")"
grep -q "^thpemu: note: the emulated pool (8 MiB) is exhausted" "$T_TMP/err" ||
	fail "note: $(grep note "$T_TMP/err")"
grep -q "note:[^ ]" "$T_TMP/err" && fail "a note without its space: $(grep note "$T_TMP/err")"

# replay: --speed is checked before the run starts; an output may not be the trace it reads
rm -f "$MARK"
"$THPEMU" replay --speed 0 "$T_TMP/none.trace" 2>"$T_TMP/err"
expect_eq "replay --speed 0" "$?" 2
grep -q -- "--speed: '0'" "$T_TMP/err" || fail "replay --speed: $(cat "$T_TMP/err")"
"$THPEMU" replay --trace "$T_TMP/a.trace" "$T_TMP/./a.trace" 2>"$T_TMP/err"
expect_eq "replay --trace TRACE" "$?" 2
grep -q "the trace to replay name the same file" "$T_TMP/err" || fail "replay: $(cat "$T_TMP/err")"
say "ok"

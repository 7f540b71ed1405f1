#!/usr/bin/env bash
# A `thpemu run` (or `thpemu ab`) killed with SIGKILL leaves its private directory behind --
# the processes' statistics, the owner record and, if its device daemon died too, a dead FUSE
# mount. The next run removes exactly those whose launcher is provably dead, and nothing else:
#  - a SIGKILLed run with a private device whose daemon was SIGKILLed too: the next run detaches
#    the dead mount and removes the directory, leaving no trace;
#  - a run still going is left alone by runs started beside it;
#  - records are trusted only as far as they prove death: a live pid with another start time
#    (the pid was reused) is dead; a live pid with its own start time, a directory without a
#    record, one of another user, a symbolic link, are all left alone;
#  - a SIGKILLed `thpemu ab` leaves its run directory; the next ab removes it.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_fuse
need_cmd jq

export TMPDIR=$T_TMP/tmp
mkdir -p "$TMPDIR"
our_mounts() { awk '{ print $5 }' /proc/self/mountinfo | grep "^$TMPDIR/" || true; }
at_exit 'for m in $(our_mounts); do fusermount3 -u -z "$m"; done'
wait_for() { # wait_for CMD...: up to 10 s
	local i
	for ((i = 0; i < 100; i++)); do "$@" && return 0; sleep 0.1; done
	return 1
}
has_mount() { [ -n "$(our_mounts)" ]; }
has() { compgen -G "$1" >/dev/null; }

# 1. SIGKILL to the launcher and to its device daemon: a dead mount and the run directory stay
"$THPEMU" run --quiet --device usb2-stick-2011 --dirty stream,file=1M -- \
	"$USEMEM" --size 4M --delay 60s --quiet >/dev/null 2>&1 &
R=$!
wait_for has_mount || fail "no private mount while the program runs"
left=$(ls -d "$TMPDIR"/thpemu-run.*)
[ -s "$left/.owner" ] || fail "no owner record in $left"
prog=$(pgrep -f "$USEMEM --size 4M --delay 60s" | head -1)
daemon=$(pgrep -f "thpemu-fusedev $left/dev")
[ -n "$prog" ] && [ -n "$daemon" ] || fail "program ($prog) or daemon ($daemon) not found"
kill -KILL "$daemon" # first: the launcher's death would send it SIGTERM, and it would unmount
sleep 0.2
kill -KILL "$R"
wait "$R" 2>/dev/null
kill -KILL "$prog" 2>/dev/null # (it may have stopped with its device)
sleep 0.5
[ -d "$left" ] || fail "the killed run left nothing: the test shows nothing"
has_mount || fail "the daemon's mount did not survive it (nothing to detach)"
say "killed run left $(ls -A "$left" | wc -l) entries and a dead mount"

"$THPEMU" run --quiet -- true || fail "the next run failed"
[ ! -e "$left" ] || fail "the next run left $left: $(ls -A "$left")"
[ -z "$(our_mounts)" ] || fail "mount left: $(our_mounts)"
[ -z "$(ls -A "$TMPDIR")" ] || fail "traces left in TMPDIR: $(ls -A "$TMPDIR")"
say "the next run removed the killed run's directory and its dead mount"

# 2. a run in progress is left alone by runs beside it
"$THPEMU" run --quiet --report "$T_TMP/long.json" -- "$USEMEM" --size 4M --delay 3s --quiet \
	>/dev/null &
R=$!
wait_for has "$TMPDIR/thpemu-run.*/.owner" || fail "no run directory"
busy=$(ls -d "$TMPDIR"/thpemu-run.*)
"$THPEMU" run --quiet -- true || fail "a run beside another failed"
[ -d "$busy" ] || fail "a run removed the directory of a run in progress"
wait "$R" || fail "the long run failed"
expect_eq "the long run's processes" "$(json "$T_TMP/long.json" .program.processes)" 1
[ -z "$(ls -A "$TMPDIR")" ] || fail "left: $(ls -A "$TMPDIR")"
say "a run in progress kept its directory"

# 3. forged and foreign directories
record() { # record DIR PID START
	printf 'thpemu-owner pid=%s start=%s boot=%s pidns=%s\n' "$2" "$3" \
		"$(cat /proc/sys/kernel/random/boot_id)" "$(readlink /proc/self/ns/pid)" >"$1/.owner"
}
sleep 30 &
S=$!
at_exit "kill $S"
start=$(sed 's/.*) //' /proc/$S/stat | cut -d' ' -f20)
mkdir -m 700 "$TMPDIR/thpemu-run.reused" "$TMPDIR/thpemu-run.alive1" "$TMPDIR/thpemu-run.norec1" \
	"$TMPDIR/thpemu-run.theirs" "$T_TMP/target"
record "$TMPDIR/thpemu-run.reused" $S $((start + 1)) # the pid lives, but is another process
record "$TMPDIR/thpemu-run.alive1" $S "$start"
record "$TMPDIR/thpemu-run.theirs" 999999999 1
chown -R 65534:65534 "$TMPDIR/thpemu-run.theirs"
touch "$T_TMP/target/keep"
record "$T_TMP/target" 999999999 1
ln -s "$T_TMP/target" "$TMPDIR/thpemu-run.link00"
"$THPEMU" run --quiet -- true || fail "run failed"
[ ! -e "$TMPDIR/thpemu-run.reused" ] || fail "a reused pid was taken for the maker"
for d in alive1 norec1 theirs link00; do
	[ -e "$TMPDIR/thpemu-run.$d" ] || fail "thpemu-run.$d was removed"
done
[ -e "$T_TMP/target/keep" ] || fail "a symbolic link was followed"
rm -rf "$TMPDIR"/thpemu-run.*
say "only provably dead makers' directories are removed"

# 4. a SIGKILLed ab
"$THPEMU" ab --a policy=modern-always --b policy=modern-never --runs 1 -- \
	"$USEMEM" --size 4M --delay 2s --quiet >/dev/null 2>&1 &
A=$!
wait_for has "$TMPDIR/thpemu-ab.*/.owner" || fail "no ab directory"
left=$(ls -d "$TMPDIR"/thpemu-ab.*)
kill -KILL $A
wait $A 2>/dev/null
no_run_dir() { ! compgen -G "$TMPDIR/thpemu-run.*" >/dev/null; }
wait_for no_run_dir || fail "ab's run did not finish"
[ -d "$left" ] || fail "the killed ab left nothing"
"$THPEMU" ab --a policy=modern-always --b policy=modern-never --runs 1 -- true >/dev/null 2>&1 ||
	fail "the next ab failed"
[ ! -e "$left" ] || fail "the next ab left $left"
[ -z "$(ls -A "$TMPDIR")" ] || fail "left: $(ls -A "$TMPDIR")"
say "ok"

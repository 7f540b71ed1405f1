#!/usr/bin/env bash
# Named machines (thpemu machine start/status/stop, thpemu run --machine):
#   1. two programs attached at the same time: both reports name the machine, and its status
#      lists both while they run; afterwards it lists none and the machine stays;
#   2. bad input exits 2: a bad name, no such machine, --pool with --machine, a name that runs;
#   3. another user can neither ask nor attach (refused), nor open the segment;
#   4. stop with a process attached: it steps aside and finishes unmanaged with its data intact,
#      the report is written, nothing stays mounted;
#   5. a daemon killed with SIGKILL leaves no mount and no socket.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
need_cmd python3
need_cmd setpriv
FORKSERVER="$THPEMU_BUILD_DIR/tests/programs/forkserver"
HOLD="$THPEMU_BUILD_DIR/tests/programs/holdcheck"
M="named-$$"
at_exit "'$THPEMU' machine stop '$M'"

"$THPEMU" machine start "$M" --pool 128M --policy linux-3.3 --report "$T_OUT/machine.json" \
	>"$T_TMP/start.out" || fail "machine start failed"
grep -q "^machine $M started (pid [0-9]*)$" "$T_TMP/start.out" ||
	fail "start said: $(cat "$T_TMP/start.out")"
dpid=$(sed 's/.*(pid \([0-9]*\)).*/\1/' "$T_TMP/start.out")
grep -q "@thpemu-machine-0-$M" /proc/net/unix ||
	fail "no abstract socket @thpemu-machine-0-$M"

# 1. two programs at once
"$THPEMU" run --machine "$M" --quiet --report "$T_OUT/a.json" -- "$HOLD" 32 3 \
	>"$T_TMP/a.out" 2>&1 &
pa=$!
"$THPEMU" run --machine "$M" --quiet --report "$T_OUT/b.json" -- \
	"$USEMEM" --size 32M --hold 2s --quiet >"$T_TMP/b.out" 2>&1 &
pb=$!
sleep 1.5
"$THPEMU" machine status "$M" --json >"$T_TMP/status.json" || fail "status failed"
comms=$(jq -r '[.processes[].comm] | unique | join(",")' "$T_TMP/status.json")
expect_eq "processes while both run" "$comms" "holdcheck,usemem"
"$THPEMU" machine status "$M" | grep -q "comm holdcheck state live" || fail "text status"
expect_eq "status: min < low < high" \
	"$(json "$T_TMP/status.json" '.pool.watermarks | .min < .low and .low < .high')" true
expect_eq "status: min is min_free_kbytes in pages" \
	"$(json "$T_TMP/status.json" '.pool.watermarks.min == (.pool.min_free_kbytes / 4 | floor)')" true
expect_eq "status: PMD-mapped anon within anon" "$(json "$T_TMP/status.json" '.pool.anon_pmd <= .pool.anon')" true
wait $pa || fail "holdcheck failed: $(cat "$T_TMP/a.out")"
wait $pb || fail "usemem failed: $(cat "$T_TMP/b.out")"
grep -q "managed start=1 end=1 .* data ok" "$T_TMP/a.out" || fail "a: $(cat "$T_TMP/a.out")"
expect_eq "report a names the machine" "$(json "$T_OUT/a.json" .program.machine.name)" "$M"
expect_eq "report b names the machine" "$(json "$T_OUT/b.json" .program.machine.name)" "$M"
expect_eq "same daemon" "$(json "$T_OUT/a.json" .program.machine.pid)" "$dpid"
# a forking program: its fork children join the named machine too
"$THPEMU" run --machine "$M" --quiet --report "$T_OUT/c.json" -- "$FORKSERVER" 2 16 \
	>"$T_TMP/c.out" 2>&1 || fail "forkserver failed: $(cat "$T_TMP/c.out")"
expect_eq "forkserver workers managed" "$(grep -c 'managed=1' "$T_TMP/c.out")" 2
expect_eq "forkserver: 3 processes" "$(json "$T_OUT/c.json" .program.processes)" 3
expect_eq "report c names the machine" "$(json "$T_OUT/c.json" .program.machine.name)" "$M"
expect_eq "machine's policy in the report" "$(json "$T_OUT/a.json" '.config.policy' |
	cut -c1-9)" "linux-3.3"
sleep 0.3
"$THPEMU" machine status "$M" --json >"$T_TMP/after.json" || fail "status after failed"
expect_eq "processes after" "$(jq '.processes | length' "$T_TMP/after.json")" 0
expect_eq "frames back" "$(jq '.pool.anon' "$T_TMP/after.json")" 0
say "two programs on machine $M (pid $dpid); it stays with none attached"

# 2. bad input
st() { "$@" >/dev/null 2>"$T_TMP/err"; echo $?; }
expect_eq "bad name" "$(st "$THPEMU" machine start 'a/b')" 2
expect_eq "name too long" "$(st "$THPEMU" machine status "$(printf 'x%.0s' {1..33})")" 2
expect_eq "missing machine" "$(st "$THPEMU" machine status "nope-$$")" 2
grep -q "no machine nope-$$" "$T_TMP/err" || fail "missing: $(cat "$T_TMP/err")"
expect_eq "run on a missing machine" "$(st "$THPEMU" run --machine "nope-$$" -- true)" 2
expect_eq "--pool with --machine" "$(st "$THPEMU" run --machine "$M" --pool 1G -- true)" 2
grep -q -- "--pool: the machine $M has its own (started with --pool 128M)" "$T_TMP/err" ||
	fail "--pool: $(cat "$T_TMP/err")"
expect_eq "second start" "$(st "$THPEMU" machine start "$M")" 2
grep -q "machine $M is running (pid $dpid)" "$T_TMP/err" || fail "second: $(cat "$T_TMP/err")"
expect_eq "bad option" "$(st "$THPEMU" machine start "x$$" --pool 3)" 2
expect_eq "per-process option" "$(st "$THPEMU" machine start "x$$" --handlers 2)" 2
expect_eq "unwritable report" "$(st "$THPEMU" machine start "x$$" --report /proc/nope/r)" 2
expect_eq "stop of a missing machine" "$(st "$THPEMU" machine stop "nope-$$")" 2
say "bad input: exit 2"

# 3. another user (a python it can run: a per-user pyenv is out of its reach)
SYSPY=$(command -v /usr/bin/python3 || command -v python3)
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
ask_raw='
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect("\0thpemu-machine-0-" + sys.argv[1])
s.sendall((sys.argv[2] + "\n").encode())
print(s.makefile().readline().strip())'
for req in status attach; do
	got=$(as_nobody "$SYSPY" -c "$ask_raw" "$M" "$req") || fail "nobody: $req: no answer"
	case "$got" in "error refused"*) ;; *) fail "nobody got '$got' for $req" ;; esac
done
expect_eq "nobody's own status" "$(st as_nobody "$THPEMU" machine status "$M")" 2
rdv=$(python3 - "$M" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect("\0thpemu-machine-0-" + sys.argv[1])
s.sendall(b"attach\n")
for l in s.makefile():
    if l.startswith("THPEMU_MACHINE="):
        print(l.strip().split("=", 1)[1])
EOF
)
[ -n "$rdv" ] || fail "attach gave no THPEMU_MACHINE"
seg="/proc/${rdv%%:*}/fd/${rdv##*:}"
head -c1 "$seg" >/dev/null || fail "root cannot read its own segment $seg"
as_nobody head -c1 "$seg" >/dev/null 2>&1 && fail "nobody could open the segment $seg"
say "another user: refused ($seg unreadable to it)"

# 4. stop with a process attached
"$THPEMU" run --machine "$M" --quiet --report "$T_OUT/held.json" -- "$HOLD" 48 5 \
	>"$T_TMP/held.out" 2>&1 &
ph=$!
sleep 1.5
"$THPEMU" machine status "$M" | grep -q "comm holdcheck state live" || fail "held not attached"
"$THPEMU" machine stop "$M" >"$T_TMP/stop.out" || fail "stop failed"
grep -q "machine $M stopped, report $T_OUT/machine.json" "$T_TMP/stop.out" ||
	fail "stop said: $(cat "$T_TMP/stop.out")"
kill -0 $ph 2>/dev/null || fail "the held program ended with the machine"
wait $ph || fail "held program failed after the stop: $(cat "$T_TMP/held.out")"
grep -q "managed start=1 end=0 .* data ok" "$T_TMP/held.out" ||
	fail "held: $(cat "$T_TMP/held.out")"
grep -q "the machine was stopped" "$T_TMP/held.out" || fail "held: no step-aside message"
r="$T_OUT/machine.json"
expect_eq "report: name" "$(json "$r" .program.machine.name)" "$M"
expect_eq "report: check" "$(json "$r" .program.machine.check)" ok
expect_eq "report: frames back" "$(json "$r" .host.pool.anon)" 0
expect_eq "report: held detached" \
	"$(jq -r '[.processes[] | select(.comm == "holdcheck" and .running)][0].state' "$r")" detached
expect_eq "report: every process seen (short-lived ones too)" \
	"$(jq -r '[.processes[].comm] | sort | join(",")' "$r")" \
	"forkserver,forkserver,forkserver,holdcheck,holdcheck,usemem"
[ "$(json "$r" .vmstat.thp_fault_alloc)" -gt 0 ] || fail "report: no thp_fault_alloc"
# coverage over the machine's life (a run on it has none: samples are the machine's)
expect_eq "report: coverage sampled" "$(json "$r" '.coverage.samples | length > 10')" true
expect_eq "report: coverage samples in order, huge <= anon" "$(json "$r" '.coverage.samples |
	(map(.[0]) as $t | [range(1; $t | length) | $t[.] > $t[. - 1]] | all) and (map(.[1] <= .[2]) | all)')" true
expect_eq "report: usemem's THPs were seen" "$(json "$r" '.coverage | .time_weighted_pct > 0 and .time_weighted_pct <= 100')" true
expect_eq "a run on a named machine has no coverage" "$(json "$T_OUT/b.json" .coverage)" null
kill -0 "$dpid" 2>/dev/null && fail "daemon $dpid still running after stop"
expect_eq "status after stop" "$(st "$THPEMU" machine status "$M")" 2
grep -q thpemu-machine /proc/mounts && fail "a machine mount remains"
say "stop: the held program stepped aside with its data intact; report written"

# 5. SIGKILL of the daemon (with a device, when fuse is there)
dev=()
[ -c /dev/fuse ] && command -v fusermount3 >/dev/null && dev=(--device usb2-stick-2011)
"$THPEMU" machine start "$M" --quiet "${dev[@]}" >"$T_TMP/start2.out" || fail "restart"
dpid=$(sed 's/.*(pid \([0-9]*\)).*/\1/' "$T_TMP/start2.out")
if [ ${#dev[@]} -gt 0 ]; then
	grep -q "thpemu-machine.*/dev fuse" /proc/mounts || fail "no device mount"
fi
ddir=$(ls -d "${TMPDIR:-/tmp}"/thpemu-machine.* | while read -r x; do
	grep -q " pid=$dpid " "$x/.owner" 2>/dev/null && echo "$x"
done)
[ -n "$ddir" ] || fail "no private directory of daemon $dpid"
expect_eq "private directory mode" "$(stat -c %a "$ddir")" 700
kill -KILL "$dpid"
for _ in $(seq 50); do grep -q thpemu-machine /proc/mounts || break; sleep 0.1; done
grep -q thpemu-machine /proc/mounts && fail "a mount outlived the killed daemon"
grep -q "@thpemu-machine-0-$M" /proc/net/unix && fail "the socket outlived the daemon"
"$THPEMU" machine start "$M" >/dev/null || fail "start after a kill"
[ -z "$ddir" ] || [ ! -e "$ddir" ] || fail "the killed daemon's directory $ddir remains"
"$THPEMU" machine stop "$M" >/dev/null || fail "stop after a kill"
say "SIGKILL: no mount, no socket left${dev[*]:+ (device ${dev[1]})}"

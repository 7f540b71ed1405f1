#!/usr/bin/env bash
# A machine's name held by someone else (anyone may bind an abstract socket name):
#   1. another user binds "\0thpemu-machine-0-NAME" first and answers like a daemon, offering a
#      policy plugin: root's run --machine, machine status, stop and start refuse it (exit 2, one
#      line naming its uid and pid) before sending anything, and the plugin is never loaded;
#   2. a listener of our own user that answers attach with what no daemon sends (a key that is
#      not a machine's setting, another process's rendezvous, a bad value, no rendezvous): run
#      --machine refuses (exit 1, one line) and runs nothing.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd setpriv
SYSPY=$(command -v /usr/bin/python3 || command -v python3)
[ -n "$SYSPY" ] || skip "python3 not installed"
EVIL="$THPEMU_BUILD_DIR/tests/plugins/evil_marker.so"
[ -f "$EVIL" ] || fail "no $EVIL (built with the tests)"
M="squat-$$"
MARK="$T_TMP/loaded"
export THPEMU_TEST_MARKER="$MARK"

# squat UID ANSWER: a listener on machine $M's name, running as UID, answering every connection
# with ANSWER (printf escapes); its pid in $squatter
squat() {
	local srv='
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("\0thpemu-machine-0-" + sys.argv[1])
s.listen(8)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    c.settimeout(2)
    try:
        c.recv(128)
        c.sendall(sys.argv[2].encode())
    except OSError:
        pass
    c.close()'
	# (the last listener's "ready" must not be read for this one's)
	rm -f "$T_TMP/squat.out"
	setpriv --reuid="$1" --regid="$1" --clear-groups "$SYSPY" -c "$srv" "$M" "$(printf "$2")" \
		>"$T_TMP/squat.out" 2>&1 &
	squatter=$!
	at_exit "kill $squatter"
	for _ in $(seq 50); do
		grep -qs ready "$T_TMP/squat.out" && return
		sleep 0.1
	done
	fail "the listener did not start: $(cat "$T_TMP/squat.out")"
}
unsquat() {
	kill "$squatter" && wait "$squatter" 2>/dev/null
	for _ in $(seq 50); do grep -q "@thpemu-machine-0-$M\$" /proc/net/unix || return 0; sleep 0.1; done
}

# 1. another user (nobody) holds the name
squat 65534 "ok\nTHPEMU_MACHINE=1:3\nTHPEMU_POLICY=linux-3.3:plugin=$EVIL\n"
who="held by another user's process (uid 65534, pid $squatter)"
bad_usage "$who" run --machine "$M" -- true
grep -qF -- "--machine $M:" "$T_TMP/err" || fail "run: $(cat "$T_TMP/err")"
bad_usage "$who" machine status "$M"
bad_usage "$who" machine stop "$M"
bad_usage "$who" machine start "$M" --pool 64M
[ -e "$MARK" ] && fail "the squatter's plugin was loaded: $(cat "$MARK")"
unsquat
say "another user's listener refused: $(cat "$T_TMP/err")"

# 2. a listener of our own user with answers no daemon of this build gives
# attach_refused WHAT ANSWER: run --machine exits 1 with one line containing WHAT
attach_refused() {
	local rc
	squat 0 "$2"
	"$THPEMU" run --machine "$M" -- touch "$T_TMP/ran" >"$T_TMP/out" 2>"$T_TMP/err"
	rc=$?
	unsquat
	expect_eq "exit status for '$1' ($(cat "$T_TMP/err"))" $rc 1
	expect_eq "lines for '$1'" "$(wc -l <"$T_TMP/err")" 1
	grep -qF -- "$1" "$T_TMP/err" || fail "'$1' not in: $(cat "$T_TMP/err")"
	[ -e "$T_TMP/ran" ] && fail "the program ran after '$2'"
	return 0
}
attach_refused "not a machine's setting: THPEMU_REPORT" \
	"ok\nTHPEMU_REPORT=$T_TMP/r.json\nTHPEMU_MACHINE=1:3\n"
attach_refused "not a machine's setting: THPEMU_POLICY_PLUGIN" \
	"ok\nTHPEMU_POLICY_PLUGIN=$EVIL\nTHPEMU_MACHINE=1:3\n"
attach_refused "the rendezvous of another process: 1:3" "ok\nTHPEMU_MACHINE=1:3\n"
attach_refused "not HOSTPID:FD" "ok\nTHPEMU_MACHINE=/tmp/x\n"
attach_refused "THPEMU_POOL='3'" "ok\nTHPEMU_POOL=3\n"
attach_refused "gave no rendezvous" "ok\nTHPEMU_POLICY=linux-3.3\n"
attach_refused "not KEY=VALUE" "ok\nplugin\n"
[ -e "$MARK" ] && fail "a plugin was loaded: $(cat "$MARK")"
say "answers no daemon gives: refused"

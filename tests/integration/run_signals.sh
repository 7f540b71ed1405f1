#!/usr/bin/env bash
# thpemu run as a launcher: the program's signal life is its native one.
#  - a signal sent to thpemu run reaches the program as many times as it reaches it natively,
#    never turned into a SIGKILL: two SIGINTs 300 ms apart are two (a graceful handler counts
#    them), `timeout -s INT` (child, then group) is usually one, as natively; SIGTERM to thpemu
#    run's pid, and to a process group it leads, is one;
#  - the program starts with the caller's signal mask and dispositions (SIGPIPE ignored stays
#    ignored, a blocked signal stays blocked), and a caller ignoring SIGCHLD does not lose it;
#  - a program killed by a signal makes thpemu run end by that signal (WIFSIGNALED), after its
#    report; SIGKILL to thpemu run and its group (timeout -k) ends the program and its children;
#  - on a terminal (a pty): ^C to a job, ^C to a script whose program dies of it (the script
#    ends too), ^Z/jobs/fg, a background job reading the terminal (stopped, then fg): the same
#    as natively.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
need_cmd timeout
need_cmd python3

SIGCOUNT="$THPEMU_BUILD_DIR/tests/programs/sigcount"
PTY="$THPEMU_SOURCE_DIR/tests/integration/run_signals_pty.py"
RUN=("$THPEMU" run --quiet --report "$T_TMP/r.json" --)
export T_TMP

wait_for() { # wait_for FILE: up to 20 s
	local i
	for ((i = 0; i < 200; i++)); do [ -e "$1" ] && return 0; sleep 0.1; done
	fail "$1 never appeared"
}

# counted SENDER [LAUNCHER...]: start sigcount under LAUNCHER (none: natively), run SENDER (a
# function given the pid) once it is ready; prints sigcount's output and "rc=N"
counted() {
	local sender=$1 ready=$T_TMP/ready pid rc
	shift
	rm -f "$ready"
	"$@" "$SIGCOUNT" 1000 "$ready" INT TERM USR1 >"$T_TMP/out" 2>"$T_TMP/err" &
	pid=$!
	wait_for "$ready"
	$sender "$pid" || kill -KILL "$pid"
	wait "$pid"
	rc=$?
	cat "$T_TMP/out"
	echo "rc=$rc"
}
int_twice() {
	kill -INT "$1"
	sleep 0.3
	kill -INT "$1"
}
term_pid() { kill -TERM "$1"; }
term_group() { kill -TERM -- "-$1"; } # the group: counted term_group setsid ...
usr1() { kill -USR1 "$1"; }

# 1. two SIGINTs: two, and the program ends as its handler decides (the old launcher SIGKILLed it)
native=$(counted int_twice)
run=$(counted int_twice "${RUN[@]}")
expect_eq "two SIGINTs, native" "$(echo "$native" | tr '\n' ' ')" "INT 2 TERM 0 USR1 0 rc=0 "
expect_eq "two SIGINTs under thpemu run" "$(echo "$run" | tr '\n' ' ')" "$(echo "$native" | tr '\n' ' ')"
expect_eq "report: exit status" "$(json "$T_TMP/r.json" .program.exit_status)" 0
say "two SIGINTs: $(echo "$run" | head -1), as natively"

# 2. SIGTERM to the pid, SIGUSR1 to the pid, SIGTERM to the group thpemu run leads (setsid)
for sender in term_pid usr1; do
	run=$(counted $sender "${RUN[@]}")
	native=$(counted $sender)
	expect_eq "$sender" "$(echo "$run" | tr '\n' ' ')" "$(echo "$native" | tr '\n' ' ')"
done
run=$(counted term_group setsid "${RUN[@]}")
native=$(counted term_group setsid)
expect_eq "SIGTERM to the group" "$(echo "$run" | tr '\n' ' ')" "$(echo "$native" | tr '\n' ' ')"
echo "$run" | grep -qx "TERM 1" || fail "SIGTERM to the group: $run"
say "SIGTERM to the pid and to the group, SIGUSR1: once each"

# 3. timeout -s INT signals thpemu run and its group: the program sees what it sees natively.
# Natively the pair is a race: one signal when the second kill comes while the first is still
# pending, two when the program's handler ran in between (timeout preempted by its woken child:
# 1 of 30 native runs at load 10, about half on an idle 2-CPU machine). Each try must be one of
# those, and the outcomes under thpemu must meet the native ones: a launcher that always merged
# the pair, or always split it, against a native run that never did, fails.
natives= runs=
for i in 1 2 3 4 5; do
	native=$(timeout -s INT 1 "$SIGCOUNT" 300 - INT)
	run=$(timeout -s INT 1 "${RUN[@]}" "$SIGCOUNT" 300 - INT)
	case "$run" in "INT 1" | "INT 2") ;; *) fail "timeout -s INT, try $i: got '$run'" ;; esac
	natives+="$native"$'\n'
	runs+="$run"$'\n'
done
native=$(printf '%s' "$natives" | sort -u | paste -sd,)
run=$(printf '%s' "$runs" | sort -u | paste -sd,)
printf '%s' "$runs" | sort -u | grep -qxF -f <(printf '%s' "$natives" | sort -u) ||
	fail "timeout -s INT: under thpemu only '$run' in 5 tries, natively only '$native'"
say "timeout -s INT: '$run' under thpemu, '$native' natively (5 tries each)"

# 4. what the program inherits: mask and dispositions as the caller left them; SIGCHLD ignored
state_as_caller() { # a caller that blocks SIGUSR2, ignores SIGPIPE and SIGCHLD, then execs "$@"
	python3 -c 'import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})
signal.signal(signal.SIGPIPE, signal.SIG_IGN)
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}
native=$(state_as_caller "$SIGCOUNT" state | grep -v '^pgrp=')
run=$(state_as_caller "${RUN[@]}" "$SIGCOUNT" state | grep -v '^pgrp=') || fail "SIGCHLD ignored: thpemu run failed"
expect_eq "inherited mask and SIGPIPE" "$run" "$native"
echo "$native" | grep -qx "sigpipe=ignored" || fail "the caller's SIGPIPE: $native"
state_as_caller "${RUN[@]}" sh -c 'exit 3'
expect_eq "SIGCHLD ignored by the caller: status" "$?" 3
expect_eq "SIGCHLD ignored: report" "$(json "$T_TMP/r.json" .program.exit_status)" 3
say "mask and dispositions as the caller's; a caller ignoring SIGCHLD is fine"

# 5. killed by a signal: thpemu run dies of it too (a parent's waitpid sees WIFSIGNALED)
got=$(python3 -c 'import subprocess, sys; print(subprocess.run(sys.argv[1:]).returncode)' \
	"${RUN[@]}" sh -c 'kill -TERM $$')
expect_eq "killed by SIGTERM: the caller sees" "$got" -15
expect_eq "killed by SIGTERM: report" "$(json "$T_TMP/r.json" .program.exit_status)" 143
say "a program killed by SIGTERM: thpemu run ends by SIGTERM, report written"

# 6. SIGKILL cannot be relayed: timeout -k's SIGKILL of thpemu run and of its group still ends
# the program and its children (the program's group is not timeout's: a keeper kills it)
timeout -s INT -k 1 0.5 "${RUN[@]}" sh -c 'trap "" INT; sleep 36.789; echo not-killed'
expect_eq "timeout -k: status" "$?" 137
sleep 0.5
pgrep -f "sleep 36.789" >/dev/null && fail "timeout -k left the program's child running"
say "timeout -k: the program and its child are gone, as natively"

# 7. a terminal: each scenario natively, then under thpemu run
pty() { # pty MODE: the same lines natively and under thpemu run
	local native run
	native=$(python3 "$PTY" "$1" "" "$SIGCOUNT") || fail "pty $1 natively"
	run=$(python3 "$PTY" "$1" "${RUN[*]}" "$SIGCOUNT") || fail "pty $1 under thpemu run"
	expect_eq "terminal, $1" "$(echo "$run" | tr '\n' ' ')" "$(echo "$native" | tr '\n' ' ')"
	say "terminal, $1: $(echo "$run" | tr '\n' ' ')"
}
pty ctrl-c-job
pty ctrl-c-script
pty ctrl-z-fg
pty ctrl-z-script
pty background-read
say "ok"

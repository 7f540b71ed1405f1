#!/usr/bin/env bash
# A SIGKILLed daemon: the writer gets ENOTCONN/ECONNABORTED instead of hanging, the mount is
# dead (ENOTCONN), fusedev refuses it with a hint, `fusermount3 -u -z` clears it and a new
# daemon mounts there again; with --auto-unmount the mount goes away by itself. SIGTERM and
# SIGINT unmount cleanly even with writes held; the daemonized mode honours --pidfile.
. "$(dirname "$0")/fusedev_common.sh"

MNT=$T_TMP/mnt
fd_mount "$MNT" --preset usb2-stick-2011 --bandwidth 1MB/s
"$FDIO" write "$MNT/f" 32M --direct --qd 4 >"$T_TMP/w.out" &
W=$!
sleep 1
kill -KILL "$FD_PID"
wait "$FD_PID" 2>/dev/null
for ((i = 0; i < 100; i++)); do kill -0 $W 2>/dev/null || break; sleep 0.1; done
kill -0 $W 2>/dev/null && fail "writer still blocked 10 s after the daemon was killed"
wait $W && fail "writer succeeded after the daemon was killed"
err=$(kv "$(cat "$T_TMP/w.out")" error)
case $err in ENOTCONN | ECONNABORTED) ;; *) fail "writer got '$err', want ENOTCONN or ECONNABORTED" ;; esac
say "killed daemon: writer got $err"
stat "$MNT" >/dev/null 2>"$T_TMP/stat.err" && fail "dead mount still answers"
grep -q "not connected" "$T_TMP/stat.err" || fail "stat: $(cat "$T_TMP/stat.err")"
"$FUSEDEV" "$MNT" --foreground 2>"$T_TMP/again.err"
expect_eq "mount on a dead mount exits" $? 2
grep -q "fusermount3 -u -z" "$T_TMP/again.err" || fail "no cleanup hint: $(cat "$T_TMP/again.err")"
fusermount3 -u -z "$MNT" || fail "fusermount3 -u -z failed"
is_mounted "$MNT" && fail "still mounted after fusermount3 -u -z"
say "dead mount cleared with fusermount3 -u -z"

for sig in TERM INT; do
	fd_mount "$MNT" --preset usb2-stick-2011 --bandwidth 1MB/s
	"$FDIO" write "$MNT/g" 8M --direct --qd 4 >"$T_TMP/w.out" &
	W=$!
	sleep 0.5
	kill -$sig "$FD_PID"
	for ((i = 0; i < 100; i++)); do kill -0 "$FD_PID" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$FD_PID" 2>/dev/null && fail "daemon still running 10 s after SIG$sig"
	wait "$FD_PID"
	expect_eq "exit status after SIG$sig" $? 0
	is_mounted "$MNT" && fail "still mounted after SIG$sig"
	for ((i = 0; i < 100; i++)); do kill -0 $W 2>/dev/null || break; sleep 0.1; done
	kill -0 $W 2>/dev/null && fail "writer hangs after SIG$sig"
	wait $W
	say "SIG$sig: clean unmount; writer ended with $(kv "$(cat "$T_TMP/w.out")" error)"
done
# --auto-unmount: fusermount3 watches the daemon and unmounts when it dies.
fd_mount "$MNT" --preset fast --auto-unmount
kill -KILL "$FD_PID"
wait "$FD_PID" 2>/dev/null
for ((i = 0; i < 50; i++)); do is_mounted "$MNT" || break; sleep 0.1; done
is_mounted "$MNT" && fail "--auto-unmount left the mount after SIGKILL"
say "--auto-unmount: mount removed after SIGKILL"

# Daemonized (no --foreground): returns once mounted, pid file names the daemon.
"$FUSEDEV" "$MNT" --preset fast --pidfile "$T_TMP/pid" 2>>"$T_OUT/fusedev.log" ||
	fail "daemonized start failed"
is_mounted "$MNT" || fail "not mounted when the launcher returned"
pid=$(cat "$T_TMP/pid")
at_exit "kill -KILL $pid; fusermount3 -u -z '$MNT'"
kill -0 "$pid" || fail "pid file names no process"
echo data >"$MNT/x" && expect_eq "daemonized read back" "$(cat "$MNT/x")" data
kill -TERM "$pid"
for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && fail "daemon ignores SIGTERM"
is_mounted "$MNT" && fail "still mounted after the daemon exited"
[ -e "$T_TMP/pid" ] && fail "pid file left behind"
say "ok"

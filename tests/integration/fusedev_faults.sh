#!/usr/bin/env bash
# Fault injection on a real mount: error rate 1 gives the writer EIO (from the command line and
# at run time through the control file), an error window, pause holds writers until resume,
# and a `dead` device hangs writers until it is resumed.
. "$(dirname "$0")/fusedev_common.sh"

MNT=$T_TMP/mnt

# --error-rate 1: every write fails with EIO.
fd_mount "$MNT" --preset fast --error-rate 1
out=$("$FDIO" write "$MNT/e" 4M --direct --bs 1M) && fail "write succeeded at error rate 1"
expect_eq "error at rate 1" "$(kv "$out" error)" EIO
out=$("$FDIO" write "$MNT/b" 1M --bs 64K --presize none) && fail "buffered write succeeded"
expect_eq "buffered error" "$(kv "$out" error)" EIO
[ "$(fd_stat "$MNT" .errors_injected)" -ge 2 ] || fail "errors not counted"
fd_umount "$MNT" "$FD_PID"

# Run-time control: error-rate=1 then 0; an error window of 1 s.
fd_mount "$MNT" --preset fast --set bandwidth=50MB/s
"$FDIO" write "$MNT/ok" 2M --direct >/dev/null || fail "healthy device failed"
fd_ctl "$MNT" "error-rate=1"
out=$("$FDIO" write "$MNT/ok" 2M --direct) && fail "write succeeded after error-rate=1"
expect_eq "run-time error rate" "$(kv "$out" error)" EIO
fd_ctl "$MNT" "error-rate=0"
"$FDIO" write "$MNT/ok" 2M --direct >/dev/null || fail "error-rate=0 did not heal the device"
fd_ctl "$MNT" "error-window=1s"
out=$("$FDIO" write "$MNT/ok" 1M --direct) && fail "write inside the error window succeeded"
expect_eq "error window" "$(kv "$out" error)" EIO
sleep 1.2
"$FDIO" write "$MNT/ok" 1M --direct >/dev/null || fail "write after the error window failed"
! { printf 'bandwidth=fast\n' >"$MNT/.thpemu-control"; } 2>/dev/null ||
	fail "a bad control line was accepted"

# pause holds writers until resume.
fd_ctl "$MNT" pause
[ "$(fd_stat "$MNT" .paused)" = true ] || fail "stats do not say paused"
"$FDIO" write "$MNT/held" 4M --direct --qd 4 >"$T_TMP/held.out" &
W=$!
sleep 1.5
kill -0 $W 2>/dev/null || fail "writer finished while the device was paused: $(cat "$T_TMP/held.out")"
inflight=$(fd_stat "$MNT" .in_flight)
[ "$inflight" -ge 1 ] || fail "no requests held while paused"
say "paused: writer blocked with $inflight requests held"
fd_ctl "$MNT" resume
wait $W || fail "writer failed after resume: $(cat "$T_TMP/held.out")"
el=$(kv "$(cat "$T_TMP/held.out")" elapsed_s)
fcmp "$el" ">=" 1.4 || fail "writer took only $el s across a 1.5 s pause"
"$FDIO" verify "$MNT/held" 4M >/dev/null || fail "data written across the pause differs"
fd_umount "$MNT" "$FD_PID"

# dead: hangs until resumed, then completes.
fd_mount "$MNT" --preset dead
"$FDIO" write "$MNT/d" 1M --direct >"$T_TMP/dead.out" &
W=$!
sleep 1
kill -0 $W 2>/dev/null || fail "writer finished on a dead device"
fd_ctl "$MNT" resume
wait $W || fail "writer failed after resuming the dead device"
say "ok"

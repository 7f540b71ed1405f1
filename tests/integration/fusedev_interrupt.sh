#!/usr/bin/env bash
# A sender that gives up on a request the device holds gets its answer at once; any other
# sender waits, as on a disk. With the device paused (nothing completes):
# - an io_uring ring cancelling its writes (what thpemu's flusher does at its exit) gets them
#   back with EINTR within seconds, while the device still holds them;
# - a SIGKILLed writer is gone at once, its request still held;
# - a writer whose SIGALRM handler runs meanwhile (SA_RESTART) never sees EINTR: its write
#   completes when the device resumes, with its data.
# Before fusedev answered FUSE_INTERRUPT, the first two waited for the device: the exit of
# `thpemu run` took 10-17 s after 4 s of writeback to usb2-stick-2011.
. "$(dirname "$0")/fusedev_common.sh"

MNT=$T_TMP/mnt
fd_mount "$MNT" --preset usb2-stick-2011 --set jitter=0 --store memory

# a ring cancels its buffered writes (each is several FUSE requests, in io_uring's workers)
fd_ctl "$MNT" pause
out=$(timeout 30 "$FDIO" write "$MNT/c" 4M --bs 1M --qd 4 --cancel-after 300ms)
rc=$?
[ $rc -ne 124 ] || fail "cancelled writes still waiting on the paused device after 30 s"
[ $rc -eq 1 ] || fail "cancelled writes: exit $rc ($out)"
case $(kv "$out" error) in EINTR | ECANCELED) ;; *) fail "cancelled writes: $out" ;; esac
fcmp "$(kv "$out" elapsed_s)" "<" 10 || fail "cancel took $(kv "$out" elapsed_s) s"
ab=$(fd_stat "$MNT" .replies_abandoned)
[ "$ab" -ge 1 ] || fail "no request answered early (replies_abandoned $ab)"
[ "$(fd_stat "$MNT" .in_flight)" -ge 1 ] || fail "the device let go of the cancelled requests"
say "ring cancel: $(kv "$out" error) after $(kv "$out" elapsed_s) s, $ab answered early, device still busy"

# a SIGKILLed writer: gone at once, its request still at the device
"$FDIO" write "$MNT/k" 1M --bs 1M >/dev/null 2>&1 &
W=$!
sleep 0.5
held=$(fd_stat "$MNT" .in_flight)
t0=$(date +%s%N)
kill -KILL $W
for ((i = 0; i < 100; i++)); do kill -0 $W 2>/dev/null || break; sleep 0.05; done
kill -0 $W 2>/dev/null && fail "SIGKILLed writer still there 5 s later (device paused)"
wait $W 2>/dev/null
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$(fd_stat "$MNT" .in_flight)" -ge "$held" ] || fail "the killed writer's request left the device"
[ "$(fd_stat "$MNT" .replies_abandoned)" -gt "$ab" ] || fail "the killed writer's request was not answered early"
say "SIGKILLed writer gone after $ms ms, its request still held"

# signals that do not kill: the writer waits for the device, like on a disk
fd_ctl "$MNT" resume
for mode in buffered direct; do
	flag=
	[ $mode = direct ] && flag=--direct
	fd_ctl "$MNT" pause
	(sleep 1.5 && fd_ctl "$MNT" resume) &
	R=$!
	out=$("$FDIO" write "$MNT/s-$mode" 1M --bs 256K $flag --signal-after 300ms) ||
		fail "$mode write interrupted by SIGALRM: $out"
	wait $R
	fcmp "$(kv "$out" elapsed_s)" ">=" 1 || fail "$mode write done before the device resumed: $out"
	"$FDIO" verify "$MNT/s-$mode" 1M >/dev/null || fail "$mode data differ after the signal"
done
say "SIGALRM during held writes: no EINTR, data intact"
[ "$(fd_stat "$MNT" .replies_abandoned)" -eq "$(($ab + 1))" ] ||
	fail "a request was answered early without its sender giving up"

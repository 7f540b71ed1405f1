#!/usr/bin/env bash
# The control file cannot wedge the mount: "bandwidth=1" held a 1 MiB write for 12
# days, and neither "preset=fast" nor "resume" released it, nor SIGKILL its writer (a FUSE
# request already sent waits for its reply). Out-of-range values are refused now, with a line
# saying what the key accepts; a request held under the slowest accepted value completes as
# soon as the device is made fast; and a SIGKILLed writer's request leaves the device once it is
# re-timed (the writer itself is gone at once: fusedev answers a dying sender's interrupt, see
# fusedev_interrupt).
. "$(dirname "$0")/fusedev_common.sh"

MNT=$T_TMP/mnt
fd_mount "$MNT" --preset usb2-stick-2011 --set jitter=0

# bad values: the write fails (EINVAL), the daemon says why, nothing changes
for line in bandwidth=1 latency=1h stall-for=1d tail-latency=10m gc-au=1 stall-every=1; do
	! { printf '%s\n' "$line" >"$MNT/.thpemu-control"; } 2>/dev/null ||
		fail "control line '$line' was accepted"
	grep -q "rejected '$line': ${line%%=*} accepts " "$T_OUT/fusedev.log" ||
		fail "no reason logged for '$line': $(tail -n 2 "$T_OUT/fusedev.log")"
done
grep -q "rejected 'bandwidth=1': bandwidth accepts 0 (unthrottled) or 10KB/s..1TB/s" \
	"$T_OUT/fusedev.log" || fail "bandwidth's bounds not given: $(tail -n 6 "$T_OUT/fusedev.log")"
grep -q '^bandwidth=5000000$' "$MNT/.thpemu-control" || fail "a refused value changed the device"

# the slowest accepted rate holds a 1 MiB write for ~105 s; preset=fast releases it at once
fd_ctl "$MNT" "bandwidth=10KB/s"
"$FDIO" write "$MNT/slow" 1M --direct --bs 1M >"$T_TMP/slow.out" &
W=$!
sleep 1.5
kill -0 $W 2>/dev/null || fail "1 MiB at 10 KB/s done in 1.5 s: $(cat "$T_TMP/slow.out")"
[ "$(fd_stat "$MNT" .in_flight)" -ge 1 ] || fail "no request held"
t0=$(date +%s%N)
fd_ctl "$MNT" "preset=fast"
wait $W || fail "held writer failed after preset=fast: $(cat "$T_TMP/slow.out")"
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$ms" -lt 3000 ] || fail "held writer took $ms ms to complete after preset=fast"
"$FDIO" verify "$MNT/slow" 1M >/dev/null || fail "data of the held write differs"
say "held 1 MiB write completed $ms ms after preset=fast"

# a SIGKILLed writer's request stays at the device: re-timing releases it too
fd_ctl "$MNT" "preset=usb2-stick-2011;jitter=0;bandwidth=10KB/s"
"$FDIO" write "$MNT/killed" 1M --direct --bs 1M >/dev/null 2>&1 &
W=$!
sleep 1.5
kill -KILL $W
sleep 0.5
[ "$(fd_stat "$MNT" .in_flight)" -ge 1 ] || fail "the killed writer's request is not held"
t0=$(date +%s%N)
fd_ctl "$MNT" "bandwidth=0"
wait $W 2>/dev/null
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$ms" -lt 3000 ] || fail "SIGKILLed writer took $ms ms to go after bandwidth=0"
[ "$(fd_stat "$MNT" .in_flight)" = 0 ] || fail "requests still held after bandwidth=0"
say "ok: SIGKILLed writer reaped $ms ms after bandwidth=0"

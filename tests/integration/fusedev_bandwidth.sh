#!/usr/bin/env bash
# At a set bandwidth, writing N MiB with O_DIRECT takes N/bandwidth (+-15 %), whether the
# writer has one request in flight or several; several in flight really queue in the model;
# with jitter on, wall time follows the model's own device time.
. "$(dirname "$0")/fusedev_common.sh"

MNT=$T_TMP/mnt
BW=4000000 # 4 MB/s: 262 ms per 1 MiB request, so per-call overheads of a loaded host stay small
N=12       # MiB: ~3.1 s per run
# The 2011 stick (1 ms command overhead, GC model on) at 4 MB/s, jitter off: the time is
# N/bandwidth plus 1 ms per 1 MiB request.
fd_mount "$MNT" --preset usb2-stick-2011 --bandwidth 4MB/s --jitter 0 --store discard
want=$(awk -v n=$N -v bw=$BW 'BEGIN { printf "%.6f", n * 1048576 / bw }')
i=0
for args in "--bs 1M" "--bs 1M --qd 4" "--bs 8M"; do
	i=$((i + 1))
	out=$("$FDIO" write "$MNT/f$i" ${N}M --direct $args) || fail "write ($args): $out"
	el=$(kv "$out" elapsed_s)
	ratio=$(awk -v e="$el" -v w="$want" 'BEGIN { printf "%.3f", e / w }')
	say "O_DIRECT $args: ${N} MiB in ${el} s, elapsed/(N/bandwidth) = $ratio"
	fcmp "$ratio" ">=" 0.85 && fcmp "$ratio" "<=" 1.15 || fail "ratio $ratio outside 0.85..1.15"
	q=$(fd_stat "$MNT" .queue_depth_max)
	case $i in
	1) expect_eq "requests in flight, one pwrite at a time" "$q" 1 ;;
	2) [ "$q" -ge 4 ] || fail "io_uring qd 4 on a pre-sized file: only $q in flight" ;;
	esac
done
expect_eq bytes_written "$(fd_stat "$MNT" .bytes_written)" $((3 * N * 1048576))
qmax=$(fd_stat "$MNT" .queue_depth_max)
svc=$(fd_stat "$MNT" .service_time_us.p50)
held=$(fd_stat "$MNT" .held_us.p90)
say "queue depth max $qmax, service p50 ${svc} us, held p90 ${held} us"
[ "$qmax" -ge 4 ] || fail "in-flight writes did not queue (max depth $qmax)"
# with 4 in flight on a 1-slot device a request waits for ~3 others
fcmp "$held" ">" "$(awk -v s="$svc" 'BEGIN { print 2.5 * s }')" || fail "held p90 $held us is not queueing behind service $svc us"
fd_umount "$MNT" "$FD_PID"

# Jitter on (20 % lognormal): a given run may be slower or faster than N/bandwidth, but the
# wall time follows the device time the model computed.
fd_mount "$MNT" --preset usb2-stick-2011 --bandwidth 4MB/s --store discard --seed 3
out=$("$FDIO" write "$MNT/j" ${N}M --direct --qd 4) || fail "write: $out"
el=$(kv "$out" elapsed_s)
busy=$(fd_stat "$MNT" .busy_ms)
ratio=$(awk -v e="$el" -v b="$busy" 'BEGIN { printf "%.3f", e * 1000 / b }')
say "jitter 20 %: ${el} s wall for ${busy} ms of model device time: ratio $ratio"
fcmp "$ratio" ">=" 0.97 && fcmp "$ratio" "<=" 1.10 || fail "wall/model $ratio outside 0.97..1.10"
fd_umount "$MNT" "$FD_PID"

# Reads are modelled too (read-bandwidth), unless --reads instant.
for reads in model instant; do
	fd_mount "$MNT" --preset fast --set read-bandwidth=4MB/s --reads $reads
	"$FDIO" write "$MNT/r" 12M --direct >/dev/null || fail "write for the read test"
	out=$("$FDIO" verify "$MNT/r" 12M --direct --bs 4M) || fail "read back: $out"
	el=$(kv "$out" elapsed_s)
	ratio=$(awk -v e="$el" 'BEGIN { printf "%.3f", e / (12 * 1048576 / 4000000) }')
	say "reads $reads: 12 MiB O_DIRECT read in $el s, elapsed/(N/read-bandwidth) = $ratio"
	if [ $reads = model ]; then
		fcmp "$ratio" ">=" 0.85 && fcmp "$ratio" "<=" 1.15 || fail "read ratio $ratio"
		expect_eq "bytes read" "$(fd_stat "$MNT" .bytes_read)" 12582912
	else
		fcmp "$ratio" "<" 0.5 || fail "--reads instant still throttles ($ratio)"
	fi
	fd_umount "$MNT" "$FD_PID"
done
to=$(cat /proc/sys/fs/fuse/default_request_timeout 2>/dev/null || echo 0)
[ "$to" = 0 ] || say "note: fs.fuse.default_request_timeout=$to: long stalls abort the connection"
say "ok"

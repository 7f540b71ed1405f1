#!/usr/bin/env bash
# fusedev benchmark (THPEMU_PERF_QUICK=1 for a smoke run). Prints ratios, not absolute times:
#  1. `fast` preset (no throttle): fusedev throughput as a ratio to the same writes on tmpfs,
#     measured in the same run (O_DIRECT io_uring qd 8, and buffered write-through).
#  2. throttled presets: achieved/configured bandwidth and the service-time p50/p99 the daemon
#     reports, with the reply lag (how late the completion thread replied).
# Results also go to $T_OUT/bench.json.
. "$(dirname "$0")/../integration/fusedev_common.sh"

QUICK=${THPEMU_PERF_QUICK:-0}
if [ "$QUICK" = 1 ]; then SIZE=64; REPS=1; TSIZE=4; else SIZE=512; REPS=5; TSIZE=16; fi
MNT=$T_TMP/mnt
TMPFS=$(mktemp -d /dev/shm/thpemu-bench.XXXXXX)
at_exit "rm -rf '$TMPFS'"
RES="$T_OUT/bench.json"
echo "{" >"$RES"

# pair MNT_DIR TMPFS_DIR ARGS...: best MB/s of $REPS writes on each, interleaved so that a
# change of host load hits both sides; prints "FUSEDEV TMPFS"
pair() {
	local a=$1 b=$2 ba=0 bb=0 out r d m
	shift 2
	for ((r = 0; r < REPS; r++)); do
		for d in "$a" "$b"; do
			rm -f "$d/bench"
			out=$("$FDIO" write "$d/bench" ${SIZE}M "$@") || fail "write $d: $out"
			m=$(kv "$out" mb_per_s)
			if [ "$d" = "$a" ]; then
				ba=$(awk -v x="$ba" -v m="$m" 'BEGIN { print (m > x ? m : x) }')
			else
				bb=$(awk -v x="$bb" -v m="$m" 'BEGIN { print (m > x ? m : x) }')
			fi
			rm -f "$d/bench"
		done
	done
	echo "$ba $bb"
}

fd_mount "$MNT" --preset fast --capacity $((SIZE * 2))M
for w in "direct_qd8:--direct --qd 8 --bs 1M" "buffered:--bs 1M"; do
	name=${w%%:*}
	args=${w#*:}
	read -r f t < <(pair "$MNT" "$TMPFS" $args)
	ratio=$(awk -v f="$f" -v t="$t" 'BEGIN { printf "%.3f", f / t }')
	say "fast preset, $name ${SIZE} MiB: fusedev $f MB/s, tmpfs $t MB/s, ratio $ratio"
	printf '  "fast_%s": {"fusedev_mb_s": %s, "tmpfs_mb_s": %s, "ratio": %s},\n' \
		"$name" "$f" "$t" "$ratio" >>"$RES"
done
fd_umount "$MNT" "$FD_PID"

throttled() { # throttled PRESET CONFIGURED_BYTES_PER_S
	local preset=$1 bw=$2 out el ach
	fd_mount "$MNT" --preset "$preset" --store discard
	out=$("$FDIO" write "$MNT/t" ${TSIZE}M --direct --qd 4 --bs 1M) || fail "$preset: $out"
	el=$(kv "$out" elapsed_s)
	ach=$(awk -v n="$TSIZE" -v e="$el" -v bw="$bw" 'BEGIN { printf "%.3f", n * 1048576 / e / bw }')
	local p50 p99 lag stalls gc
	p50=$(fd_stat "$MNT" .service_time_us.p50)
	p99=$(fd_stat "$MNT" .service_time_us.p99)
	lag=$(fd_stat "$MNT" .reply_lag_us.p99)
	stalls=$(fd_stat "$MNT" .stalls)
	say "$preset ${TSIZE} MiB O_DIRECT qd4: achieved/configured bandwidth $ach," \
		"service p50 $(awk -v v="$p50" 'BEGIN { printf "%.1f", v / 1000 }') ms" \
		"p99 $(awk -v v="$p99" 'BEGIN { printf "%.1f", v / 1000 }') ms, stalls $stalls," \
		"reply lag p99 $lag us"
	printf '  "%s": {"achieved_over_configured": %s, "service_p50_us": %s, "service_p99_us": %s, "stalls": %s, "reply_lag_p99_us": %s},\n' \
		"$preset" "$ach" "$p50" "$p99" "$stalls" "$lag" >>"$RES"
	fcmp "$ach" ">" 0.3 && fcmp "$ach" "<" 1.5 || fail "$preset: achieved/configured $ach is absurd"
	fd_umount "$MNT" "$FD_PID"
}
throttled usb2-stick-2011 5000000
[ "$QUICK" = 1 ] || throttled sd-class4 4000000
printf '  "quick": %s\n}\n' "$([ "$QUICK" = 1 ] && echo true || echo false)" >>"$RES"
jq . "$RES" >/dev/null || fail "bench.json is not JSON"
say "ok (results in $RES)"

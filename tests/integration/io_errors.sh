#!/usr/bin/env bash
# Writeback errors never cost the program its data nor hang it: with a device failing 30 % of
# its writes (EIO), and with the device's daemon killed mid-run (ECONNABORTED / ENOTCONN), a
# program whose memory is compacted and migrated under linux-3.1 (sync compaction waits on
# writeback) finishes with the same checksums as natively, and the report counts the errors.
#
# The writer copies a fixed amount (as rsync to a stick does), not `stream`. With the pool
# exhausted, the program's THP faults wait on the writer's writeback (3.1 sync compaction and
# sync lumpy reclaim), so the program ends about when the writer does: 12, 25 and 49 s for
# total=8M, 32M and 64M. A `stream` writer ends only with the program, and then 3.1's
# should_continue_reclaim (mm/vmscan.c), which goes on while a pass frees a page and
# compaction_suitable says SKIPPED, can hold one fault as long as the writer takes each page
# freed: 2 of about 50 looped runs took over 10 minutes (one 78 minutes), and a CI run timed out.
. "$(dirname "$0")/fusedev_common.sh"
need_uffd

PROG=$THPEMU_BUILD_DIR/tests/programs/mt_checksum
[ -x "$PROG" ] || fail "$PROG not built"
"$PROG" 3 96 >"$T_TMP/native.out" || fail "native run failed"
run=(--policy linux-3.1 --pool 96M --fragment anon:50%,pagecache:20% --seed 3)

# EIO on 30 % of the writes
MNT=$T_TMP/eio
fd_mount "$MNT" --preset usb2-stick-fast --error-rate 0.3 --store discard
"$THPEMU" run --quiet "${run[@]}" --device "$MNT" --dirty total=32M,file=1M \
	--report "$T_OUT/eio.json" -- "$PROG" 3 96 >"$T_TMP/eio.out" || fail "program failed with EIO writeback"
cmp -s "$T_TMP/native.out" "$T_TMP/eio.out" || fail "checksums differ: $(diff "$T_TMP/native.out" "$T_TMP/eio.out")"
eio=$(json "$T_OUT/eio.json" .io.errors.eio)
[ "$eio" -gt 0 ] || fail "no EIO counted ($(jq -c .io.errors "$T_OUT/eio.json"))"
[ "$(json "$T_OUT/eio.json" .io.pages_failed)" -gt 0 ] || fail "no failed pages counted"
[ "$(json "$T_OUT/eio.json" .io.bytes_written)" -gt 0 ] || fail "nothing written at all"
[ "$(json "$T_OUT/eio.json" .vmstat.writeback_error)" -gt 0 ] || fail "mm saw no writeback error"
say "EIO: checksums intact, $eio failed writes, $(json "$T_OUT/eio.json" .io.files.failed) files failed"

# the daemon killed while writes are in flight
MNT=$T_TMP/kill
fd_mount "$MNT" --preset usb2-stick-2011 --store discard
"$THPEMU" run --quiet "${run[@]}" --device "$MNT" --dirty total=64M,file=1M \
	--report "$T_OUT/kill.json" -- "$PROG" 3 160 >"$T_TMP/kill.out" &
R=$!
sleep 1.5
kill -KILL "$FD_PID"
for ((i = 0; i < 1200; i++)); do kill -0 $R 2>/dev/null || break; sleep 0.1; done
kill -0 $R 2>/dev/null && fail "program still running 120 s after the daemon was killed"
wait $R || fail "program failed after the daemon was killed"
"$PROG" 3 160 >"$T_TMP/native2.out"
cmp -s "$T_TMP/native2.out" "$T_TMP/kill.out" || fail "checksums differ after the daemon died"
disc=$(json "$T_OUT/kill.json" .io.errors.disconnected)
[ "$disc" -gt 0 ] || fail "no disconnected writes counted ($(jq -c .io.errors "$T_OUT/kill.json"))"
case $(json "$T_OUT/kill.json" .io.note) in *gone*) ;; *) fail "note: $(json "$T_OUT/kill.json" .io.note)" ;; esac
say "daemon killed: checksums intact, $disc writes failed as disconnected"

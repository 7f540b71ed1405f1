#!/usr/bin/env bash
# The private device of `thpemu run --device PRESET`: thpemu-fusedev is mounted on a private
# temporary directory while the program runs and is always gone afterwards -- after a normal
# exit, when thpemu run gets SIGTERM or SIGINT (relayed: the program is stopped), and when the
# daemon is killed mid-run (the program carries on, writeback reports the
# device as disconnected).
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_fuse
need_cmd jq

# the private mount is RUN_DIR/dev, RUN_DIR = $TMPDIR/thpemu-run.XXXXXX
our_mounts() { awk '$5 ~ /\/thpemu-run\.[^/]*\/dev$/ { print $5 }' /proc/self/mountinfo | grep "^$TMPDIR/" || true; }
export TMPDIR=$T_TMP # private mounts go under our own temporary directory
daemons() { pgrep -f "thpemu-fusedev $TMPDIR/thpemu-run" || true; }
expect_clean() {
	local i
	for ((i = 0; i < 50; i++)); do
		[ -z "$(our_mounts)$(daemons)" ] && break
		sleep 0.1
	done
	[ -z "$(our_mounts)" ] || fail "$1: mount left: $(our_mounts)"
	[ -z "$(daemons)" ] || fail "$1: daemon left: $(daemons)"
	[ -z "$(ls -d "$TMPDIR"/thpemu-run.* 2>/dev/null)" ] || fail "$1: run directory (and mount point) left"
}

# normal run: mounted during, gone after
"$THPEMU" run --quiet --device usb2-stick-2011 --dirty stream,file=1M --report "$T_OUT/normal.json" \
	-- "$USEMEM" --size 4M --delay 3s --quiet >/dev/null &
R=$!
for ((i = 0; i < 50; i++)); do [ -n "$(our_mounts)" ] && break; sleep 0.1; done
[ -n "$(our_mounts)" ] || fail "no private mount while the program runs"
[ -n "$(daemons)" ] || fail "no daemon while the program runs"
wait $R || fail "run failed"
expect_clean "normal exit"
expect_eq "device_info.kind" "$(json "$T_OUT/normal.json" .io.device_info.kind)" fusedev
expect_eq "daemon exit" "$(json "$T_OUT/normal.json" .io.device_info.daemon)" "exit status 0"
[ "$(json "$T_OUT/normal.json" .io.device_info.fusedev_stats.bytes_written)" -gt 0 ] ||
	fail "fusedev saw no writes"
say "normal exit: mounted while running, removed after"

# SIGTERM / SIGINT to thpemu run: forwarded to the program, then everything is removed (a
# script's background command starts with SIGINT ignored, natively too: env gives it back)
for sig in TERM INT; do
	env --default-signal=INT "$THPEMU" run --quiet --device usb2-stick-2011 --dirty stream -- \
		"$USEMEM" --size 4M --delay 60s --quiet >/dev/null &
	R=$!
	for ((i = 0; i < 50; i++)); do [ -n "$(our_mounts)" ] && break; sleep 0.1; done
	# 4 s of streaming writeback: the device then holds 10+ s of writes, which the exit
	# used to wait for (10-17 s); the flusher now cancels them and fusedev answers at once
	sleep 4
	kill -$sig $R
	for ((i = 0; i < 100; i++)); do kill -0 $R 2>/dev/null || break; sleep 0.1; done
	kill -0 $R 2>/dev/null && fail "thpemu run still running 10 s after SIG$sig"
	wait $R
	rc=$?
	[ $rc -ne 0 ] || fail "SIG$sig: exit status 0"
	expect_clean "SIG$sig"
	say "SIG$sig: program stopped (exit $rc), device removed"
done

# the daemon dies mid-run: the program finishes, writeback says the device is gone
"$THPEMU" run --quiet --policy linux-3.1 --device usb2-stick-2011 --dirty stream,file=1M \
	--report "$T_OUT/killed.json" -- "$USEMEM" --size 16M --loops 20 --delay 2s --hold 100ms \
	--quiet >"$T_TMP/killed.out" &
R=$!
for ((i = 0; i < 50; i++)); do [ -n "$(daemons)" ] && break; sleep 0.1; done
sleep 1.5
kill -KILL $(daemons)
for ((i = 0; i < 600; i++)); do kill -0 $R 2>/dev/null || break; sleep 0.1; done
kill -0 $R 2>/dev/null && fail "program did not finish within 60 s of the daemon's death"
wait $R || fail "run failed after the daemon died"
grep -q "usemem: extents=" "$T_TMP/killed.out" || fail "usemem did not finish"
expect_clean "daemon killed"
[ "$(json "$T_OUT/killed.json" .io.errors.disconnected)" -gt 0 ] || fail "no disconnected errors counted"
expect_eq "daemon status" "$(json "$T_OUT/killed.json" .io.device_info.daemon)" "killed by signal 9"
say "daemon killed: program finished, $(json "$T_OUT/killed.json" .io.errors.disconnected) device operations failed as disconnected"

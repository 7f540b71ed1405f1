#!/usr/bin/env bash
# A named machine's daemon SIGKILLed while writeback is in flight (linux-3.1, a slow stick, a
# streaming writer, the pool full): the attached programs must not wait for writeback the dead
# engine never completes (direct reclaim waits on it without a timeout). Both finish, exit 0,
# the checking one with its data intact; the run reports say the machine could not be asked.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_fuse
need_cmd jq
HOLD="$THPEMU_BUILD_DIR/tests/programs/holdcheck"
M="dkill-$$"
at_exit "'$THPEMU' machine stop '$M'"

"$THPEMU" machine start "$M" --quiet --policy linux-3.1 --pool 96M \
	--fragment anon:50%,pagecache:25% --device usb2-stick-2011 --dirty stream,file=4M \
	>"$T_TMP/start.out" || fail "machine start failed"
dpid=$(sed 's/.*(pid \([0-9]*\)).*/\1/' "$T_TMP/start.out")

"$THPEMU" run --machine "$M" --quiet --report "$T_OUT/usemem.json" -- \
	"$USEMEM" --size 16M --loops 8 --hold 300ms --quiet >"$T_TMP/usemem.out" 2>&1 &
pu=$!
"$THPEMU" run --machine "$M" --quiet -- "$HOLD" 16 6 >"$T_TMP/hold.out" 2>&1 &
ph=$!
running() { jobs -rp | grep -qx "$1"; } # a job of this shell, still running

# kill the daemon once its writeback is in flight and the programs have faulted a while
wb=0
for i in $(seq 100); do
	wb=$("$THPEMU" machine status "$M" --json | jq .pool.writeback)
	[ "$wb" -gt 0 ] && [ "$i" -ge 20 ] && break
	sleep 0.1
done
[ "$wb" -gt 0 ] || fail "no writeback in flight in 10 s"
running $pu || fail "usemem ended before the kill: $(cat "$T_TMP/usemem.out")"
kill -KILL "$dpid"
say "daemon $dpid killed with $wb pages under writeback"

# both programs must end within 30 s (they need a few); one still waiting is killed, its
# launcher first (a running job of this shell: its pid is still its own)
for _ in $(seq 300); do
	running $pu || running $ph || break
	sleep 0.1
done
stuck=""
for p in $pu $ph; do
	running $p || continue
	stuck="$stuck $p"
	kill -KILL $p $(cat /proc/$p/task/$p/children)
done
[ -z "$stuck" ] || fail "still waiting 30 s after their daemon was killed:$stuck (usemem $pu, holdcheck $ph)"
wait $pu || fail "usemem failed: $(cat "$T_TMP/usemem.out")"
wait $ph || fail "holdcheck failed: $(cat "$T_TMP/hold.out")"
grep -q "^usemem: extents=64 " "$T_TMP/usemem.out" || fail "usemem: $(cat "$T_TMP/usemem.out")"
grep -q "managed start=1 end=1 .* data ok" "$T_TMP/hold.out" ||
	fail "holdcheck: $(cat "$T_TMP/hold.out")"
expect_eq "report: the machine could not be asked" \
	"$(json "$T_OUT/usemem.json" .program.machine.stopped)" true
for _ in $(seq 50); do grep -q thpemu-machine /proc/mounts || break; sleep 0.1; done
grep -q thpemu-machine /proc/mounts && fail "a mount outlived the killed daemon"
say "both programs finished without their daemon; data intact"

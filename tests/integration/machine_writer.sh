#!/usr/bin/env bash
# A real writer and a faulting process attached to one named machine with a slow stick: the
# writer's pages sit in the machine's page cache, dirty and then under writeback, and the
# faulting process's huge-page faults wait on them.
#   linux-3.2: the faulting process stalls on the writer's pages, and its stall group names
#              both (which process waited, and whose page: "a page written by dd (pid N)");
#   linux-3.2+nostall: no compaction ever waits on writeback (Mel Gorman's patch).
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_fuse
need_cmd jq
M="writer-$$"

# run POLICY: a writer (dd, 48 MiB to the stick) and usemem, both attached to machine $M
run() {
	local p=$1 n="$M-${1//+/-}" # a machine name has no '+'
	at_exit "'$THPEMU' machine stop '$n'"
	"$THPEMU" machine start "$n" --policy "$p" --pool 96M --fragment anon:50%,pagecache:25% \
		--device usb2-stick-2011 --report "$T_OUT/$p.machine.json" >/dev/null ||
		fail "machine start ($p)"
	"$THPEMU" run --machine "$n" --quiet --report "$T_OUT/$p.dd.json" -- \
		sh -c 'dd if=/dev/urandom of="$THPEMU_DEVICE_DIR/big" bs=1M count=48 2>/dev/null' &
	local w=$!
	sleep 1
	"$THPEMU" run --machine "$n" --quiet --stall-threshold 200ms --report "$T_OUT/$p.json" \
		-- "$USEMEM" --size 8M --loops 10 --hold 100ms --quiet >/dev/null ||
		fail "usemem on $p"
	wait $w || fail "the writer on $p"
	"$THPEMU" machine stop "$n" >/dev/null || fail "machine stop ($p)"
}

run linux-3.2
rep="$T_OUT/linux-3.2.json"
jq -e '.program.machine.writers.pages_dirtied > 0' "$rep" >/dev/null ||
	fail "the writer's pages did not go through the machine's page cache"
on=$(jq -r '[.stalls.groups[] | select((.waited_on // "") | test("written by dd \\(pid [0-9]+\\)"))]
	| .[0] | "\(.process) (pid \(.pid)) waited \(.total_ms | round) ms on \(.waited_on)"' "$rep")
case $on in
"usemem (pid "*" ms on a page written by dd (pid"*) ;;
*) fail "no stall group of usemem names dd's page (groups: $(jq -c '[.stalls.groups[] | {process, cause, waited_on}]' "$rep"))" ;;
esac
say "linux-3.2: $on"

run linux-3.2+nostall
expect_eq "nostall: compaction waits on writeback" \
	"$(json "$T_OUT/linux-3.2+nostall.json" .vmstat.compact_writeback_wait)" 0
say "linux-3.2+nostall: no compaction waited on writeback" \
	"($(json "$T_OUT/linux-3.2+nostall.json" .stalls.count) stalls >= 200 ms)"

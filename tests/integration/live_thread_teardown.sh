#!/usr/bin/env bash
# thpemu's threads are thpemu's until they are gone, their C library teardown included: after a
# thread's start routine returns, glibc's start_thread still runs code that may be the program's
# (__libc_thread_freeres frees through the program's allocator). teardown_free has a free of its
# own that first-touches a new page of managed memory each time a thread of thpemu's calls it,
# and waits for the dirtier, whose finite total ends it long before the process, to call it and
# be gone. Under a bare LD_PRELOAD, where io runs in the program's process (under `thpemu run`
# it runs in the host of the run's machine). Three runs, each: the dirtier called it; no fault
# was counted while the program waited nor before it, but its own (before: the dirtier's
# teardown touches were counted as the program's); the report's faults are exactly those the
# program counted at its last instruction (the flusher's and the handlers' teardown at exit are
# thpemu's too); host.own_faults served at least every such touch.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
PROG="$THPEMU_BUILD_DIR/tests/programs/teardown_free"

# field NAME OUTPUT: NAME=VALUE from the program's line
field() { sed -n "s/.*\<$1=\([0-9]*\).*/\1/p" "$2"; }

touches=0
for i in 1 2 3; do
	rep="$T_OUT/run.$i.json" out="$T_OUT/run.$i.out"
	# the dirtier starts a second late: the program's free is ready by then
	LD_PRELOAD="$LIBTHPEMU" THPEMU_POLICY=modern-never THPEMU_DIRTY=total=2M,file=1M,start=1s \
		THPEMU_REPORT="$rep" "$PROG" 64 >"$out" 2>"$T_TMP/err.$i" ||
		fail "run $i: teardown_free failed: $(cat "$out" "$T_TMP/err.$i")"
	[ -n "$(field faults "$out")" ] || fail "run $i: no line from teardown_free: $(head -3 "$out")"
	expect_eq "run $i: the dirtier is gone" "$(field dirtier_gone "$out")" 1
	[ "$(field dirty_calls "$out")" -ge 1 ] ||
		fail "run $i: the dirtier's teardown never called the program's free: $(cat "$out")"
	expect_eq "run $i: faults counted while the dirtier's teardown touched pages" \
		"$(field after "$out")" "$(field before "$out")"
	expect_eq "run $i: the program touched its own pages" "$(field before "$out")" \
		"$(field own "$out")"
	counted=$(json "$rep" .faults.total)
	expect_eq "run $i: faults in the report (the program's own count at its last instruction)" \
		"$counted" "$(field faults "$out")"
	calls=$(field thpemu_calls "$out")
	ownf=$(json "$rep" .host.own_faults)
	[ "$ownf" -ge "$calls" ] ||
		fail "run $i: $calls touches by thpemu's threads, only $ownf faults served as thpemu's"
	touches=$((touches + calls))
	say "run $i: $(field dirty_calls "$out") free calls on the dirtier, $calls on thpemu's" \
		"threads before the last instruction; $counted faults in the report, $ownf thpemu's"
done
say "PASS ($touches touches by thpemu's threads, none counted as the program's)"

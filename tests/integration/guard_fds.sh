#!/usr/bin/env bash
# The emulator's descriptors are out of the program's sight and reach (core/inprocess):
#   1. a program that closes every descriptor it did not open (closerange), then writes files,
#      finds them intact while the writeback engine runs (it used to write its counters and
#      page-cache blocks into the program's new files);
#   2. a child enumerating its descriptors (fstat over 0..sysconf(_SC_OPEN_MAX)) sees the same
#      ones under thpemu as natively, with a device, a dirtier and a trace running;
#   3. after close_range/closefrom/close of everything, the emulator still serves faults;
#   4. the built-in writer holds a bounded number of descriptors: a program can still open 900
#      files under `ulimit -n 1024` while it streams;
#   5. the limits: the program sees the hard limit lowered by the zone (32), can raise its soft
#      limit to that, and dup2 onto the top numbers fails as natively.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_fuse
need_cmd python3
need_cmd jq
FDLIST="$THPEMU_BUILD_DIR/tests/programs/fdlist"
dev=(--device usb2-stick-2011 --dirty stream,file=256K) # the issue's reproducer
fast=(--device fast --dirty stream,file=256K)             # the same engine, a quick teardown

# 1. closerange, then 40 files of 100 bytes of 'A', read back after the writer ran a while
cat >"$T_TMP/closer.py" <<'EOF'
import os, sys, time
d = sys.argv[1]
os.closerange(3, 65536)
for i in range(40):
    with open(os.path.join(d, "f%02d" % i), "w") as f:
        f.write("A" * 100)
time.sleep(3)
bad = [i for i in range(40) if open(os.path.join(d, "f%02d" % i)).read() != "A" * 100]
print("corrupted files:", len(bad))
sys.exit(1 if bad else 0)
EOF
mkdir "$T_TMP/files"
"$THPEMU" run --quiet --report "$T_OUT/closer.json" "${dev[@]}" -- \
	python3 "$T_TMP/closer.py" "$T_TMP/files" >"$T_TMP/closer.out" 2>&1 ||
	fail "closerange program: $(cat "$T_TMP/closer.out")"
expect_eq "closer output" "$(cat "$T_TMP/closer.out")" "corrupted files: 0"
submitted=$(json "$T_OUT/closer.json" .io.pages_submitted)
[ "$submitted" -gt 0 ] || fail "no page went to the device: not a test"
say "closerange: 40 files intact while writeback sent $submitted pages to the device"

# 2. the descriptors a child sees, natively and under thpemu (device, dirtier and trace on)
"$FDLIST" | grep '^fd ' >"$T_TMP/native.fds"
"$THPEMU" run --quiet "${fast[@]}" --trace "$T_TMP/t.trace" -- sh -c "sleep 1; exec '$FDLIST'" |
	grep '^fd ' >"$T_TMP/emu.fds"
diff -u "$T_TMP/native.fds" "$T_TMP/emu.fds" >&2 || fail "the child sees other descriptors"
say "descriptors seen: $(wc -l <"$T_TMP/emu.fds"), as natively"
# ... also when the program's main starts while the emulator's threads are still starting: two
# busy loops delay them (a handler's start-up read /proc/self/maps through a low descriptor, and
# a program listing its descriptors at once saw it in 6 of 40 such runs)
busy() { while :; do :; done; }
busy &
b1=$!
busy &
b2=$!
at_exit "kill $b1 $b2 2>/dev/null"
for i in $(seq 20); do
	"$THPEMU" run --quiet -- "$FDLIST" | grep '^fd ' >"$T_TMP/emu2.fds"
	diff -u "$T_TMP/native.fds" "$T_TMP/emu2.fds" >&2 || fail "run $i under load: the program sees other descriptors"
done
kill $b1 $b2 2>/dev/null
say "under load: 20 runs, the descriptors seen as natively"
# and the threads it sees are the emulator's, named as such (io_uring's kernel workers are
# named by the kernel: iou-wrk-<tid>)
"$THPEMU" run --quiet "${fast[@]}" -- sh -c 'sleep 1; cat /proc/$$/task/*/comm' >"$T_TMP/comm"
others=$(grep -v -e '^thpemu-' -e '^iou-wrk-' "$T_TMP/comm" | grep -vx sh || true)
[ -z "$others" ] || fail "threads not named thpemu-*: $others"

# 3. close everything, then fault: the emulator still serves (and the numbers stay out of reach)
"$THPEMU" run --quiet --policy modern-never --report "$T_OUT/closeall.json" "${fast[@]}" -- \
	"$FDLIST" --close-everything \
	>"$T_TMP/closeall.out" 2>&1 || fail "fdlist --close-everything: $(cat "$T_TMP/closeall.out")"
grep -qx "touched 64 MiB after closing everything" "$T_TMP/closeall.out" ||
	fail "no memory after closing: $(cat "$T_TMP/closeall.out")"
grep -qx "dup2 above the soft limit refused: 64 of 64" "$T_TMP/closeall.out" ||
	fail "dup2 onto the top numbers: $(grep dup2 "$T_TMP/closeall.out")"
faults=$(json "$T_OUT/closeall.json" .faults.total)
[ "$faults" -ge 16384 ] || fail "only $faults faults served after closing everything (64 MiB)"
expect_eq "uffd errors after closing everything" "$(json "$T_OUT/closeall.json" .host.uffd_errors)" 0

# 4. bounded writer descriptors: 900 opens under ulimit -n 1024 while streaming 64K files
cat >"$T_TMP/opener.py" <<'EOF'
import os, sys, time
time.sleep(2)
fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(900)]
print("opened", len(fds))
EOF
"$THPEMU" run --quiet --device fast --dirty stream,file=64K -- \
	sh -c "ulimit -n 1024; exec python3 '$T_TMP/opener.py'" >"$T_TMP/opener.out" 2>&1 ||
	fail "opening 900 files while the writer streams: $(tail -3 "$T_TMP/opener.out")"
expect_eq "opener" "$(cat "$T_TMP/opener.out")" "opened 900"

# 5. limits as the program sees them
read -r nsoft nhard < <(sh -c 'echo $(ulimit -Sn) $(ulimit -Hn)')
read -r esoft ehard < <("$THPEMU" run --quiet -- sh -c 'echo $(ulimit -Sn) $(ulimit -Hn)')
expect_eq "hard limit seen" "$ehard" "$((nhard - 32))"
expect_eq "soft limit seen" "$esoft" "$((nsoft < nhard - 32 ? nsoft : nhard - 32))"
raised=$("$THPEMU" run --quiet -- sh -c 'ulimit -Sn $(ulimit -Hn) && ulimit -Sn')
expect_eq "soft limit raised to the hard one" "$raised" "$ehard"
say "limits: native $nsoft/$nhard, seen $esoft/$ehard"
say "ok"

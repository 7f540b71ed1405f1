#!/usr/bin/env bash
# Real writers through the machine's page cache: rsync -a, cp -r, dd (conv=fsync), tar -x and a
# Python writer with os.fsync write a generated tree to the device of `thpemu run --device
# PRESET` (thpemu-fusedev joined to the run's machine: their WRITEs become dirty pool pages the
# machine's engine writes back at the device's pace). What is read back from the device, inside
# the same run, equals the source byte for byte; fstat sizes are right while data is dirty; the
# report shows the writers' dirty pages, fsyncs and pages under writeback.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_fuse
need_cmd jq
need_cmd rsync
need_cmd tar
need_cmd python3
need_cmd sha256sum

export TMPDIR=$T_TMP
SRC=$T_TMP/src
# a tree: 4 directories, 40 files of 1 KiB .. 300 KiB (partial pages, odd sizes), ~5 MiB
python3 - "$SRC" <<'EOF'
import os, sys, random
root = sys.argv[1]
rnd = random.Random(7)
for d in range(4):
    sub = os.path.join(root, "d%d" % d, "sub")
    os.makedirs(sub)
    for f in range(10):
        size = rnd.choice([1024, 4095, 4096, 4097, 65536, 100003, 262144, 300001])
        path = os.path.join(root, "d%d" % d, "f%d.bin" % f) if f % 2 else os.path.join(sub, "g%d.bin" % f)
        with open(path, "wb") as fh:
            fh.write(os.urandom(size))
EOF
tar -C "$SRC" -cf "$T_TMP/src.tar" .
head -c 3000000 /dev/urandom >"$T_TMP/one.bin"
(cd "$SRC" && find . -type f | sort | xargs sha256sum) >"$T_TMP/src.sums"

cat >"$T_TMP/writers.sh" <<'EOF'
set -eu
D=$THPEMU_DEVICE_DIR
SRC=$1 T=$2
check() { # tree under $1 equals the source
	(cd "$1" && find . -type f | sort | xargs sha256sum) >"$T/got.sums"
	cmp -s "$T/src.sums" "$T/got.sums" || { echo "MISMATCH $1"; diff "$T/src.sums" "$T/got.sums" | grep ">" | head -3; ls -la "$1/d0"; exit 1; }
	echo "same: $1"
}
rsync -a "$SRC/" "$D/r/"
check "$D/r"
cp -r "$SRC" "$D/c"
check "$D/c"
mkdir "$D/t" && tar -C "$D/t" -xf "$T/src.tar"
check "$D/t"
dd if="$T/one.bin" of="$D/one.bin" bs=64k conv=fsync status=none
cmp "$T/one.bin" "$D/one.bin"
dd if="$T/one.bin" of="$D/two.bin" bs=10000 status=none
cmp "$T/one.bin" "$D/two.bin"
python3 - "$D/py.bin" "$T/one.bin" <<'PY'
import os, sys
dst, src = sys.argv[1], sys.argv[2]
data = open(src, "rb").read()
with open(dst, "wb") as f:
    for i in range(0, len(data), 50000):
        f.write(data[i:i + 50000])
        f.flush()
        # fstat while the data is still dirty in the emulated page cache
        assert os.fstat(f.fileno()).st_size == min(i + 50000, len(data))
    os.fsync(f.fileno())
with open(dst, "rb") as f:
    assert f.read() == data, "python: read back differs"
print("python ok")
PY
echo "ALL OK"
EOF

# the 2011 stick, faster and without its garbage collection (each file the engine writes back is
# its own run of allocation units: 160 small files would each force a GC) so the test stays short
"$THPEMU" run --quiet --device usb2-stick-2011:bandwidth=20MB/s,gc-au=0,gc-open=0 --report "$T_OUT/writers.json" \
	-- sh "$T_TMP/writers.sh" "$SRC" "$T_TMP" >"$T_OUT/writers.out" 2>&1 ||
	{ cat "$T_OUT/writers.out" >&2; fail "writers under thpemu run failed"; }
grep -q "ALL OK" "$T_OUT/writers.out" || { cat "$T_OUT/writers.out" >&2; fail "writers did not finish"; }

R=$T_OUT/writers.json
w() { json "$R" ".program.machine.writers.$1"; }
say "writers: $(jq -c .program.machine.writers "$R")"
[ "$(w pages_dirtied)" -gt 3000 ] || fail "pages dirtied by writers: $(w pages_dirtied)"
[ "$(w fsyncs)" -ge 2 ] || fail "fsyncs that waited for writeback: $(w fsyncs)"
[ "$(w fsync_timeouts)" = 0 ] || fail "fsync timed out"
[ "$(w dirty_max)" -gt 0 ] || fail "no dirty pool file pages seen"
[ "$(w writeback_max)" -gt 0 ] || fail "no pool file pages under writeback seen"
[ "$(json "$R" .io.pages_submitted)" -gt 0 ] || fail "the engine wrote back nothing"
[ "$(json "$R" .io.pages_failed)" = 0 ] || fail "writeback errors: $(jq -c .io.errors "$R")"
expect_eq "machine check" "$(json "$R" .program.machine.check)" ok
say "ok"

#!/usr/bin/env bash
# The 3.x request list live (core/io/rqshare.h, block/blk-core.c get_request_wait, 3.2): under
# linux-3.2 a writer (the machine's dirtier) and a real writer (dd conv=fsync through
# thpemu-fusedev) queue far more than nr_requests (128) requests on the slow stick. Write
# requests allocated at once never exceed the list's bound (3/2 * 128: a batcher's allowance,
# in flight included), more than 128 were allocated, the fsync's writeback slept for requests,
# and the data read back is the data written. Under modern-always (blk-mq: no such list) the
# report has no requests_3x and at most nr_requests are in flight, with the same data.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_fuse
need_cmd jq
need_cmd sha256sum

export TMPDIR=$T_TMP
head -c $((24 << 20)) /dev/urandom >"$T_TMP/src.bin"
sha256sum <"$T_TMP/src.bin" | cut -d' ' -f1 >"$T_TMP/src.sum"
cat >"$T_TMP/writer.sh" <<'EOF'
set -eu
dd if="$1/src.bin" of="$THPEMU_DEVICE_DIR/dd.bin" bs=1M conv=fsync status=none
got=$(sha256sum <"$THPEMU_DEVICE_DIR/dd.bin" | cut -d' ' -f1)
[ "$got" = "$(cat "$1/src.sum")" ] || { echo "MISMATCH"; exit 1; }
echo "DATA OK"
EOF

run() { # POLICY NAME
	"$THPEMU" run --quiet --policy "$1" --pool 128M \
		--device usb2-stick-2011:gc-au=0,gc-open=0 \
		--dirty total=32M,file=4M,dirty-ratio=40%,background-ratio=5% \
		--report "$T_OUT/$2.json" -- sh "$T_TMP/writer.sh" "$T_TMP" >"$T_OUT/$2.out" 2>&1 ||
		{ cat "$T_OUT/$2.out" >&2; fail "$2: thpemu run failed"; }
	grep -q "DATA OK" "$T_OUT/$2.out" || { cat "$T_OUT/$2.out" >&2; fail "$2: data differs"; }
	[ "$(json "$T_OUT/$2.json" .io.pages_failed)" = 0 ] || fail "$2: writeback errors"
	expect_eq "$2: machine check" "$(json "$T_OUT/$2.json" .program.machine.check)" ok
}

run linux-3.2 old
R=$T_OUT/old.json
q() { json "$R" ".io.requests_3x.$1"; }
say "linux-3.2: $(jq -c .io.requests_3x "$R") inflight_max=$(json "$R" .io.inflight_max)"
[ "$(q write_allocated_max)" -gt 128 ] || fail "no more than nr_requests allocated: $(q write_allocated_max)"
[ "$(q write_allocated_max)" -le 192 ] || fail "beyond 3/2 nr_requests: $(q write_allocated_max)"
[ "$(json "$R" .io.inflight_max)" -le 192 ] || fail "in flight beyond 192: $(json "$R" .io.inflight_max)"
[ "$(q write_beyond_limit)" -gt 0 ] || fail "no batcher went beyond nr_requests"
[ "$(q refused)" -gt 0 ] || fail "get_request never refused"
[ "$(q congested_on)" -gt 0 ] || fail "the queue never became congested"
[ "$(q real_writers_waited.count)" -gt 0 ] || fail "the fsync writer never slept for a request"
[ "$(q flusher_waited.count)" -gt 0 ] || fail "the flusher never slept for a request"

run modern-always new
R=$T_OUT/new.json
say "modern-always: inflight_max=$(json "$R" .io.inflight_max)"
expect_eq "modern: requests_3x" "$(json "$R" .io.requests_3x)" null
[ "$(json "$R" .io.inflight_max)" -le 128 ] || fail "modern: in flight beyond nr_requests"
[ "$(json "$R" .io.inflight_max)" -gt 0 ] || fail "modern: nothing in flight"
say "ok"

#!/usr/bin/env bash
# thpemu run's io options: bad --device / --dirty values are one line and exit 2; --device none
# runs the in-process device model and says so; a directory device gets O_DIRECT files; the
# dirtier runs once, in the process thpemu run started, not in what that process execs or forks.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq

# expect_usage_error WORDS -- ARGS...: exit 2, exactly one line, containing every word.
expect_usage_error() {
	local words=() out rc w
	while [ "$1" != -- ]; do
		words+=("$1")
		shift
	done
	shift
	out=$("$THPEMU" run "$@" -- true 2>&1 >/dev/null)
	rc=$?
	[ "$rc" = 2 ] || fail "run $*: exit $rc, expected 2 ($out)"
	[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "run $*: more than one line: $out"
	for w in "${words[@]}"; do
		case "$out" in *"$w"*) ;; *) fail "run $*: message lacks '$w': $out" ;; esac
	done
}
expect_usage_error --device "unknown preset 'floppy'" usb2-stick-2011 none -- --device floppy
expect_usage_error --device "warp=9" -- --device usb2-stick-2011:warp=9
expect_usage_error --device timeout -- --device none:timeout=1ms
expect_usage_error --device "not a directory" -- --device /nonexistent/stick
expect_usage_error --dirty "unknown item 'turbo'" fsync= -- --dirty 1G,turbo
expect_usage_error --dirty "total size or 'stream'" -- --dirty file=64K
expect_usage_error --dirty "fsync=often" -- --dirty stream,fsync=often
help=$("$THPEMU" run --help) || fail "--help exited $?"
for w in --device --dirty --stall-report usb2-stick-2011 delete-after fsync=none nr-requests; do
	case "$help" in *"$w"*) ;; *) fail "--help does not mention $w" ;; esac
done
say "bad options: one line, exit 2"

# --device none: the in-process model, reported as such; the dirtier writes exactly its total
rep=$T_OUT/none.json
"$THPEMU" run --quiet --device none:bandwidth=20M --dirty total=6M,file=1M,fsync=end \
	--report "$rep" -- "$USEMEM" --size 4M --delay 2s --quiet >/dev/null || fail "run failed"
expect_eq "model: active" "$(json "$rep" .io.active)" true
expect_eq "model: in_process_fallback" "$(json "$rep" .io.in_process_fallback)" true
expect_eq "model: bytes_dirtied" "$(json "$rep" .io.bytes_dirtied)" $((6 << 20))
expect_eq "model: bytes_written" "$(json "$rep" .io.bytes_written)" $((6 << 20))
expect_eq "model: fsyncs" "$(json "$rep" .io.fsyncs)" 1
expect_eq "model: device_info.kind" "$(json "$rep" .io.device_info.kind)" model
say "--device none: model, $(json "$rep" .io.writeback_ops) writes"

# a directory device (tmpfs): O_DIRECT files with the data, a manifest
dev=$(mktemp -d /dev/shm/thpemu-io-cli.XXXXXX)
at_exit "rm -rf '$dev'"
rep=$T_OUT/dir.json
"$THPEMU" run --quiet --device "$dev" --dirty total=3M,file=1M,fsync=each --seed 5 \
	--report "$rep" -- "$USEMEM" --size 4M --delay 2s --quiet >/dev/null || fail "run failed"
expect_eq "dir: in_process_fallback" "$(json "$rep" .io.in_process_fallback)" false
expect_eq "dir: odirect" "$(json "$rep" .io.odirect)" true
expect_eq "dir: files complete" "$(json "$rep" .io.files.complete)" 3
expect_eq "dir: fsyncs" "$(json "$rep" .io.fsyncs)" 3
sub=$(echo "$dev"/thpemu-io.*)
[ -d "$sub" ] || fail "no thpemu-io.PID directory in $dev"
v=$("$THPEMU_BUILD_DIR/tests/io_verify" "$sub" 5) || fail "io_verify: $v"
case $v in *complete=3*) ;; *) fail "io_verify: $v" ;; esac
say "directory device: $v"

# the dirtier runs in the process thpemu run starts, not in its children
rep=$T_OUT/children.json
"$THPEMU" run --quiet --device none --dirty total=2M,file=1M --report "$rep" -- \
	sh -c "\"$USEMEM\" --size 4M --delay 1s --quiet >/dev/null; \"$USEMEM\" --size 4M --delay 1s --quiet >/dev/null" ||
	fail "run failed"
[ "$(json "$rep" .program.processes)" -ge 3 ] || fail "expected sh and two usemem processes"
expect_eq "children: bytes_dirtied (once)" "$(json "$rep" .io.bytes_dirtied)" $((2 << 20))
say "io ran once among $(json "$rep" .program.processes) processes"

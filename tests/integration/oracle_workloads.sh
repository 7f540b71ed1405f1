#!/usr/bin/env bash
# The workload suite outside the guest: each workload runs natively (the static build, as the
# guest runs it, and the dynamic one) and under thpemu run with the same arguments, and prints
# the same protocol (ORACLE wl, info, extent per 2 MiB, summary) in every world. Under thpemu,
# a size relative to the machine's memory is refused (the emulated pool is not /proc/meminfo).
. "$(dirname "$0")/lib.sh"
need_root
need_uffd

WL="$THPEMU_BUILD_DIR/thpemu-wl"
WLS="$THPEMU_BUILD_DIR/thpemu-wl-static"

# check OUT NAME EXTENTS: the protocol of a finished run
check() {
	local out=$1 name=$2 n=$3
	grep -qx "ORACLE wl $name 1" "$out" || fail "$out: no 'ORACLE wl $name 1'"
	grep -q "^ORACLE info " "$out" || fail "$out: no info line"
	expect_eq "$out: extent lines" "$(grep -c '^ORACLE extent ' "$out")" "$n"
	grep -q "^ORACLE summary extents=$n " "$out" || fail "$out: no summary of $n extents"
	! grep -q "^ORACLE error" "$out" || fail "$out: $(grep '^ORACLE error' "$out")"
	! grep -q "^ORACLE snap " "$out" || fail "$out: counter snapshots outside the guest"
}

# natively: both builds, every workload, small sizes
run_native() { # BIN OUT ARGS...
	local bin=$1 out=$2
	shift 2
	"$bin" "$@" >"$out" 2>&1 || fail "$(basename "$bin") $*: exit $? ($(tail -2 "$out"))"
}
run_native "$WLS" "$T_OUT/frag.static" fragfault --fill 32M --region 8M
check "$T_OUT/frag.static" fragfault 4
run_native "$WL" "$T_OUT/frag.dyn" fragfault --fill 32M --region 8M --touch page
check "$T_OUT/frag.dyn" fragfault 4
expect_eq "fault lines" "$(grep -c '^ORACLE fault [0-9]* \(huge\|base\) ' "$T_OUT/frag.dyn")" 4
run_native "$WLS" "$T_OUT/unev" unevictable --fill 16M --region 4M
check "$T_OUT/unev" unevictable 2
run_native "$WLS" "$T_OUT/mthp" mthp --region 4M
check "$T_OUT/mthp" mthp 2
run_native "$WLS" "$T_OUT/scale" thpscale --anon 16M --file-dir "$T_TMP"
check "$T_OUT/scale" thpscale 2
# thpcompact: 4 threads, a 4 MiB share each, half of it (one extent) faulted by each
run_native "$WLS" "$T_OUT/compact" thpcompact --anon 16M --file-dir "$T_TMP"
check "$T_OUT/compact" thpcompact 4
grep -q "^ORACLE info .* threads=4 share_bytes=4194304 " "$T_OUT/compact" ||
	fail "thpcompact's shares: $(grep '^ORACLE info' "$T_OUT/compact")"
run_native "$WLS" "$T_OUT/kh" khugepaged --region 4M --wait 200ms --interval 100ms
check "$T_OUT/kh" khugepaged 2
run_native "$WLS" "$T_OUT/col" collapse --region 4M
check "$T_OUT/col" collapse 2
expect_eq "collapse lines" "$(grep -c '^ORACLE collapse ' "$T_OUT/col")" 2
run_native "$WLS" "$T_OUT/shr" shrinker --region 4M --pressure 8M --hold 0
check "$T_OUT/shr" shrinker 2
run_native "$WLS" "$T_OUT/writer" writer --region 4M --write 8M --delay 0 --dir "$T_TMP"
check "$T_OUT/writer" writer 2
grep -q "^ORACLE info written_at_phase_bytes=[0-9]* writer_ms=" "$T_OUT/writer" ||
	fail "writer: no writer outcome: $(grep '^ORACLE info' "$T_OUT/writer")"
[ -z "$(ls "$T_TMP"/thpemu-wl-writer.* 2>/dev/null)" ] || fail "writer: its file was left behind"
# as root on the host the PFNs are visible: outcomes are known, huge or not
! grep -q "^ORACLE extent [0-9]* unknown" "$T_OUT/frag.static" || fail "kpageflags unread"

# under thpemu run: the same arguments; a huge policy gives real PMDs, seen the same way
"$THPEMU" run --quiet --pool 256M --policy thp-always/always -- \
	"$WL" fragfault --fill 64M --keep 2 --region 16M >"$T_OUT/frag.thpemu" 2>&1 ||
	fail "thpemu run fragfault: $(tail -3 "$T_OUT/frag.thpemu")"
check "$T_OUT/frag.thpemu" fragfault 8
grep -q "^ORACLE summary extents=8 huge=8 .* final_huge=8 " "$T_OUT/frag.thpemu" ||
	fail "thpemu, thp-always/always, no fragmentation left: not all huge: $(grep summary "$T_OUT/frag.thpemu")"
"$THPEMU" run --quiet --pool 256M --policy thp-never/never -- \
	"$WL" fragfault --fill 0 --region 8M >"$T_OUT/never.thpemu" 2>&1 || fail "thpemu run never"
grep -q "^ORACLE summary extents=4 huge=0 .* final_huge=0 " "$T_OUT/never.thpemu" ||
	fail "thpemu, thp-never: $(grep summary "$T_OUT/never.thpemu")"
# the phase's counters under thpemu are the emulated machine's (thpemu_vmstat), not the host's
ORACLE_COUNTERS=1 "$THPEMU" run --quiet --pool 256M --policy thp-always/always -- \
	"$WL" fragfault --fill 0 --region 8M >"$T_OUT/counters.thpemu" 2>&1 || fail "thpemu run counters"
b=$(sed -n 's/^ORACLE snap phase-begin vmstat thp_fault_alloc //p' "$T_OUT/counters.thpemu")
e=$(sed -n 's/^ORACLE snap phase-end vmstat thp_fault_alloc //p' "$T_OUT/counters.thpemu")
expect_eq "emulated thp_fault_alloc over the phase" "$((e - b))" 4

# a memory snapshot where the phase begins: thpemu-snapshot's text, base64, length and checksum
ORACLE_SNAPSHOT="$THPEMU_BUILD_DIR/thpemu-snapshot" run_native "$WLS" "$T_OUT/snap" \
	fragfault --fill 0 --region 4M
check "$T_OUT/snap" fragfault 2
grep -qx "ORACLE snapshot begin phase" "$T_OUT/snap" || fail "no snapshot at the phase"
grep -q "^ORACLE snapshot end [1-9][0-9]* [0-9a-f]\{16\}$" "$T_OUT/snap" || fail "no snapshot end"
[ "$(grep -c '^ORACLE S ' "$T_OUT/snap")" -gt 1 ] || fail "no snapshot data lines"
ORACLE_SNAPSHOT=/nonexistent run_native "$WLS" "$T_OUT/nosnap" fragfault --fill 0 --region 4M
grep -q "^ORACLE snapshot failed /nonexistent: " "$T_OUT/nosnap" || fail "no snapshot failure line"

"$THPEMU" run --quiet --pool 256M -- "$WL" fragfault --fill 50% >"$T_OUT/pct.thpemu" 2>&1
expect_eq "a percentage under thpemu" "$?" 2
grep -q "a percentage is of the guest's memory" "$T_OUT/pct.thpemu" || fail "$(cat "$T_OUT/pct.thpemu")"
say "ok"

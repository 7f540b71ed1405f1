#!/usr/bin/env bash
# USDT probes (core/obs/usdt.h) seen by the field's tools: (1) readelf and bpftrace -l list every
# thpemu probe in libthpemu.so; (2) demo/bpftrace/faultsnoop.bt, attached by the library's path
# (no pid: a path-based uprobe covers every process that maps the file), sees the faults of a
# real `thpemu run -- usemem --size 8M`: its lines for the program's pid agree with the run's
# JSON report (faults.total, faults.huge, faults.base).
. "$(dirname "$0")/lib.sh"

PROBES="fault_begin fault_end compaction_begin compaction_end compaction_deferred defer_compaction
	migrate_pages migrate_page
	wb_wait_begin wb_wait_end reclaim wait collapse split stall"

grep -q '^THPEMU_USDT:BOOL=ON' "$THPEMU_BUILD_DIR/CMakeCache.txt" &&
	grep -q '^THPEMU_SDT_H:INTERNAL=1' "$THPEMU_BUILD_DIR/CMakeCache.txt" ||
	skip "built without sys/sdt.h (package systemtap-sdt-dev) or with -DTHPEMU_USDT=OFF"
need_cmd readelf
notes=$(readelf -n "$LIBTHPEMU") || fail "readelf -n $LIBTHPEMU"
for p in $PROBES; do
	printf '%s\n' "$notes" | grep -A3 'stapsdt' | grep -qx "[[:space:]]*Name: $p" ||
		fail "readelf -n: probe $p missing from libthpemu.so"
done
prov=$(printf '%s\n' "$notes" | awk '/Provider:/ {print $2}' | sort -u)
expect_eq "probe provider" "$prov" thpemu
say "readelf: $(printf '%s\n' $PROBES | wc -l) probes of provider thpemu in libthpemu.so"

need_root
need_uffd
need_cmd bpftrace
need_cmd jq
listed=$(bpftrace -l "usdt:$LIBTHPEMU:*" 2>"$T_TMP/l.err") || fail "bpftrace -l: $(cat "$T_TMP/l.err")"
for p in $PROBES; do
	printf '%s\n' "$listed" | grep -qx "usdt:$LIBTHPEMU:thpemu:$p" || fail "bpftrace -l: no $p"
done
say "bpftrace -l: every probe listed"
# A kernel without BPF (or a container without CAP_BPF/perf events) cannot run a script at all.
timeout 30 bpftrace -e 'BEGIN { exit(); }' >"$T_TMP/bpf.out" 2>&1 ||
	skip "bpftrace cannot load a program here: $(tail -1 "$T_TMP/bpf.out")"

# bpftrace prints "Attaching N probes..." before it attaches; BEGIN runs once every probe is
# attached, so the script's header line (printed in BEGIN) says it is ready.
timeout 50 bpftrace "$THPEMU_SOURCE_DIR/demo/bpftrace/faultsnoop.bt" "$LIBTHPEMU" \
	>"$T_OUT/faultsnoop.out" 2>"$T_OUT/faultsnoop.err" &
bt=$!
at_exit "kill $bt"
for _ in $(seq 1 300); do
	grep -q '^TIME(ms)' "$T_OUT/faultsnoop.out" 2>/dev/null && break
	kill -0 $bt 2>/dev/null || fail "bpftrace exited: $(cat "$T_OUT/faultsnoop.err")"
	sleep 0.1
done
grep -q '^TIME(ms)' "$T_OUT/faultsnoop.out" || fail "bpftrace never attached (30 s)"

"$THPEMU" run --quiet --pool 64M --report "$T_TMP/r.json" -- "$USEMEM" --size 8M \
	>"$T_TMP/run.out" 2>&1 || fail "thpemu run: $(cat "$T_TMP/run.out")"
pid=$(json "$T_TMP/r.json" '.processes[0].pid')
total=$(json "$T_TMP/r.json" '.faults.total')
huge=$(json "$T_TMP/r.json" '.faults.huge')
base=$(json "$T_TMP/r.json" '.faults.base')
# fault_end fires before the report is written, and bpftrace prints events as they come; let its
# ring buffer drain, then stop it (SIGINT: END runs and it exits).
sleep 1
kill -INT $bt
wait $bt
count() { awk -v pid="$pid" -v d="$1" '$2 == pid && (d == "" || $5 == d)' "$T_OUT/faultsnoop.out" | wc -l; }
seen=$(count "")
seen_huge=$(count huge)
seen_base=$(count base)
say "report: pid $pid faults $total (huge $huge, base $base); faultsnoop: $seen (huge $seen_huge, base $seen_base)"
[ "$huge" -ge 1 ] || fail "the run had no huge fault to see"
# Lost events (bpftrace's perf ring full) would show as fewer lines, never more; allow 5 %.
expect_eq "huge faults seen" "$seen_huge" "$huge"
[ "$seen" -le "$total" ] || fail "faultsnoop saw $seen faults of pid $pid, the report $total"
[ $((seen * 100)) -ge $((total * 95)) ] || fail "faultsnoop saw $seen of $total faults"
[ "$seen_base" -le "$base" ] || fail "base: $seen_base seen, $base in the report"
say "ok"

#!/usr/bin/env bash
# What zero pages cost the live emulator (core/live/README.md, "Read faults and the zero page"),
# from the faulting thread, as ratios to floors measured in the same run. 4096 pages
# (MADV_NOHUGEPAGE) are read once each, then written once each (tests/perf/zero_wp_bench.c):
#   floors   a bare handler: copy-wp (a read answered by UFFDIO_COPY(MODE_WP), the later write
#            a WP message answered by lifting the protection: what --zero-page does, minus the
#            emulated kernel) and zeropage (UFFDIO_ZEROPAGE; the later write is the host's
#            copy-on-write, unseen: what --zero-page 0 does);
#   emulator zero_wp_bench touch under thpemu run --policy modern-never, --zero-page 1 and 0.
# Floors and emulator alternate round after round; per figure the best p50 over the rounds is
# kept. THPEMU_PERF_QUICK=1: one round (it only checks that everything ran and printed).
. "$THPEMU_SOURCE_DIR/tests/integration/lib.sh"
need_root
need_uffd
BENCH="$THPEMU_BUILD_DIR/tests/perf/zero_wp_bench"
[ -x "$BENCH" ] || fail "$BENCH not built"
reps=3
[ "${THPEMU_PERF_QUICK:-0}" = 1 ] && reps=1

for r in $(seq $reps); do
	"$BENCH" copy-wp >>"$T_TMP/copy-wp" || fail "copy-wp floor"
	"$THPEMU" run --quiet --policy modern-never --zero-page 1 -- "$BENCH" touch >>"$T_TMP/on" ||
		fail "touch under thpemu --zero-page 1 (wrong data?)"
	"$BENCH" zeropage >>"$T_TMP/zeropage" || fail "zeropage floor"
	"$THPEMU" run --quiet --policy modern-never --zero-page 0 -- "$BENCH" touch >>"$T_TMP/off" ||
		fail "touch under thpemu --zero-page 0 (wrong data?)"
done
# best FILE PASS: the best p50 (us) of PASS (first | write) over the rounds
best() { awk -v pass="$2" '$2 == pass { if (m == "" || $4 < m) m = $4 } END { print m }' "$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
for f in copy-wp on zeropage off; do
	for pass in first write; do
		v=$(best "$T_TMP/$f" $pass)
		[ -n "$v" ] || fail "$f: no $pass figure"
		eval "${f//-/_}_$pass=$v"
	done
done
grep -q 'wp 4096' "$T_TMP/copy-wp" || fail "copy-wp: not every later write was seen"
printf '%-34s %10s %10s %8s\n' "p50 per page, us (best of $reps)" emulator floor ratio
printf '%-34s %10s %10s %8s\n' "zero page on: read first touch" "$on_first" "$copy_wp_first" \
	"$(ratio "$on_first" "$copy_wp_first")"
printf '%-34s %10s %10s %8s\n' "zero page on: later write" "$on_write" "$copy_wp_write" \
	"$(ratio "$on_write" "$copy_wp_write")"
printf '%-34s %10s %10s %8s\n' "zero page off: read first touch" "$off_first" "$zeropage_first" \
	"$(ratio "$off_first" "$zeropage_first")"
printf '%-34s %10s %10s %8s\n' "zero page off: later write (host)" "$off_write" \
	"$zeropage_write" "$(ratio "$off_write" "$zeropage_write")"
on=$(awk -v a="$on_first" -v b="$on_write" 'BEGIN { printf "%.2f", a + b }')
off=$(awk -v a="$off_first" -v b="$off_write" 'BEGIN { printf "%.2f", a + b }')
say "read then write, per page: zero page on $on us, off $off us (on/off $(ratio "$on" "$off"))"

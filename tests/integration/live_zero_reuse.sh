#!/usr/bin/env bash
# A first touch reads zeros however often memory is freed and touched again (zero_reuse: every
# 2 MiB extent's first write, then all its other bytes checked, then filled with a pattern, then
# freed: MADV_DONTNEED or munmap), and each 2 MiB is cleared once: a huge fault given
# a staging THP the host zeroed when it was populated does not clear it again
# (host.huge_clears_skipped), and is charged a clear's measured cost (zeroing, latency).
#   - modern-always, 1 and 4 threads, --host-fault thp and pte: data right, most huge faults
#     skip the second clear, the rest (the first, before a clear's cost is known) memset;
#   - --host-thp 0 (chunks of 512 small pages): thpemu clears every chunk itself.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
PROG="$THPEMU_BUILD_DIR/tests/programs/zero_reuse"

run() { # TAG OPTIONS...: 64 MiB, 6 rounds, threads from $thr
	local tag=$1
	shift
	"$THPEMU" run --quiet --policy modern-always --pool 512M --report "$T_OUT/$tag.json" "$@" -- \
		"$PROG" 64 6 "$thr" >"$T_TMP/$tag" 2>&1 || fail "$tag: $(cat "$T_TMP/$tag")"
	expect_eq "$tag output" "$(cat "$T_TMP/$tag")" "zero_reuse: ok 192 extents"
	huge=$(json "$T_OUT/$tag.json" .faults.huge)
	clears=$(json "$T_OUT/$tag.json" .host.huge_clears)
	skipped=$(json "$T_OUT/$tag.json" .host.huge_clears_skipped)
	charged=$(json "$T_OUT/$tag.json" .host.huge_clear_charged_ns)
	say "$tag: $huge huge faults, $skipped given a chunk the host zeroed, $clears memsets"
}

want=$("$PROG" 64 6 4) || fail "zero_reuse natively"
expect_eq "native output" "$want" "zero_reuse: ok 192 extents"

for mode in thp pte; do
	for thr in 1 4; do
		run "$mode.$thr" --host-fault "$mode"
		[ "$huge" -ge 150 ] || fail "$mode.$thr: only $huge huge faults of 192"
		# the refill thread measures a clear once; a staging miss or the first fault may too
		[ "$skipped" -ge $((huge - 8)) ] || fail "$mode.$thr: $skipped of $huge skipped a clear"
		[ "$clears" -le 8 ] || fail "$mode.$thr: $clears memsets (a second clear per fault?)"
		[ "$charged" -gt 0 ] || fail "$mode.$thr: no clearing charged"
		zero=$(json "$T_OUT/$mode.$thr.json" .time_ms.zeroing)
		awk -v z="$zero" 'BEGIN { exit !(z > 0) }' || fail "$mode.$thr: zeroing $zero ms"
	done
done

# chunks of small pages: not a THP's clear, so thpemu clears each itself
thr=1
run small --host-thp 0
[ "$clears" -ge "$huge" ] || fail "host-thp 0: $clears memsets for $huge huge faults"
expect_eq "host-thp 0: none skipped" "$skipped" 0

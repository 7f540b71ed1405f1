#!/usr/bin/env bash
# Snapshots of a machine's physical memory (thpemu snapshot, the static thpemu-snapshot) and pools
# that start from one (core/snapshot/README.md):
#   1. bad input exits 2 with one line: an unknown option, no such zone, an output that cannot be
#      written, a user who is not root; a --fragment snapshot: that is not one, or a --pool
#      larger than the snapshot;
#   2. the round trip: a snapshot of this host's default zone (the one with the most managed
#      pages) and of DMA32, each loaded into a named machine (machine start --fragment
#      snapshot:FILE): `machine status --json` free blocks by order are the snapshot's, and
#      those are /proc/buddyinfo's as read in the same pass (exactly when it held still during
#      the pass, else between the least and the most it showed before, during - read every 2 ms
#      beside the pass, as unit/snapshot_take does - and after it; a snapshot is taken again,
#      one pass a time, until it agrees or its time budget is spent); frames and watermarks are
#      the zone's;
#   3. the static helper (what the oracle runs in a guest): statically linked, and its snapshot
#      round-trips the same way;
#   4. a smaller --pool samples the zone: thpemu run and thpemu sim start from it.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
need_cmd setpriv
need_cmd readelf
STATIC="$THPEMU_BUILD_DIR/thpemu-snapshot"
WATCH="$THPEMU_BUILD_DIR/tests/programs/buddy_watch"
# Per snapshot: it is taken until it agrees with buddyinfo, and none starts that the last one's
# length says would end past this many seconds (a pass took 1-6 s at a load of 10; four such
# budgets fit in the test's timeout with room for the rest)
TAKE_BUDGET_S=50
POLICY="modern-always:proactiveness=0,kswapd=no,kcompactd=no,khugepaged=no"

# 1. bad input
bad_usage "unknown option or argument '--frobnicate'" snapshot --frobnicate
bad_usage "--zone: no zone 'NoSuchZone'" snapshot --zone NoSuchZone -o "$T_TMP/x.snap"
bad_usage "-o: " snapshot -o /proc/self/snapshot
bad_usage "-o: " snapshot -o "$T_TMP/no/such/dir/x.snap"
bad_usage "-o needs a value" snapshot -o
[ ! -e "$T_TMP/x.snap" ] || fail "a refused snapshot left its output"
setpriv --reuid=65534 --regid=65534 --clear-groups "$THPEMU" snapshot -o /dev/null \
	>"$T_TMP/out" 2>"$T_TMP/err"
expect_eq "not root: exit status" "$?" 2
grep -q "needs root" "$T_TMP/err" || fail "not root: $(cat "$T_TMP/err")"
printf 'not a snapshot\n' >"$T_TMP/bogus"
bad_usage "not a thpemu snapshot" run --fragment "snapshot:$T_TMP/bogus" -- true
bad_usage "No such file" machine start "snapx-$$" --fragment "snapshot:$T_TMP/nonexistent"

# "[a,b,...]" of a header line's numbers
orders() { awk -v k="$2" '$1 == k { s = "["; for (i = 2; i <= NF; i++) s = s $i (i < NF ? "," : "");
	print s "]"; exit }' "$1"; }

# "[a,b,...]" of the free blocks a pool loaded from the file has: the file's free blocks with its
# flagless pages (loaded free) merged in. With every free page marked (buddy-flags all) the
# file's blocks are the greedy aligned cut of each run of free pages, and so are the merged ones
# of each run of free and flagless pages; with heads only, the file's free-blocks if it has no
# flagless pages, else "" (not predicted).
merged_orders() {
	awk 'function flush(  p, e, o) {
		for (p = fs; fs >= 0 && p < pos; p += 2 ^ o) {
			for (o = 10; o > 0 && (p % (2 ^ o) || p + 2 ^ o > pos); o--) ;
			cnt[o]++
		}
		fs = -1
	}
	BEGIN { fs = -1 }
	$1 == "buddy-flags" { all = $2 == "all" }
	$1 == "classes" { for (i = 2; i < NF; i += 2) if ($i == "flagless") z = $(i + 1) }
	$1 == "free-blocks" { fb = "["; for (i = 2; i <= NF; i++) fb = fb $i (i < NF ? "," : "]") }
	$1 == "runs" { r = 1; next }
	r && $1 == "end" { flush(); r = 0 }
	r { l = substr($1, 1, 1); n = l == "F" ? $2 * 2 ^ substr($1, 2) : $2
	    if (l != "F" && l != "Z") flush(); else if (fs < 0) fs = pos
	    pos += n }
	END { if (!z) { print fb; exit }
	      if (!all) { print ""; exit }
	      s = "["; for (o = 0; o <= 10; o++) s = s (cnt[o] + 0) (o < 10 ? "," : "]"); print s }' "$1"
}

# "[a,b,...]" of the watcher's bound (lo or hi) for the snapshot's zone (version 2: its node's
# zones summed), "" if it has none
watched() {
	local f=$1 w=$2 bound=$3 node zone
	read -r node zone < <(awk '$1 == "zone" { print $2, $3; exit }' "$f")
	grep -q '^zones ' "$f" && zone=all
	awk -v n="$node" -v z="$zone" -v b="$bound" '$1 == n && $2 == z && $3 == b {
		s = "["; for (i = 4; i <= NF; i++) s = s $i (i < NF ? "," : ""); print s "]"; exit }' "$w"
}

# Is the snapshot's free-blocks what buddyinfo said in its pass (exact when it held still, else
# between the least and the most it showed before, during (the watcher's reads, file w) and
# after the pass, order by order)?
as_buddyinfo() {
	local f=$1 w=$2 snap before after lo hi
	snap=$(orders "$f" free-blocks)
	before=$(orders "$f" buddyinfo-before)
	after=$(orders "$f" buddyinfo-after)
	lo=$(watched "$f" "$w" lo)
	hi=$(watched "$f" "$w" hi)
	[ -n "$lo" ] && [ -n "$hi" ] || lo=$before hi=$before # the watcher saw nothing
	jq -en --argjson s "$snap" --argjson b "$before" --argjson a "$after" \
		--argjson l "$lo" --argjson h "$hi" \
		'[range(11) | . as $o | $s[$o] >= ([$b[$o], $a[$o], $l[$o]] | min) and
		  $s[$o] <= ([$b[$o], $a[$o], $h[$o]] | max)] | all' >/dev/null
}

# take NAME TOOL ARGS...: a snapshot into $T_OUT/NAME.snap that agrees with buddyinfo, one
# snapshot a time (so that the watcher's reads are its passes'), within TAKE_BUDGET_S
take() {
	local name=$1 tool=$2 i=0 w t0 t1 give_up=$((SECONDS + TAKE_BUDGET_S))
	shift 2
	while :; do
		i=$((i + 1))
		t0=$SECONDS
		"$WATCH" >"$T_TMP/$name.watch" &
		w=$!
		"$tool" "$@" -o "$T_OUT/$name.snap" 2>"$T_TMP/$name.err" ||
			{ kill "$w"; fail "$name: snapshot failed: $(cat "$T_TMP/$name.err")"; }
		kill -TERM "$w" && wait "$w"
		as_buddyinfo "$T_OUT/$name.snap" "$T_TMP/$name.watch" && return 0
		t1=$SECONDS
		[ $((t1 + t1 - t0)) -lt "$give_up" ] || break
		say "$name: buddyinfo moved past what it showed during snapshot $i, again"
	done
	fail "$name: free blocks $(orders "$T_OUT/$name.snap" free-blocks), buddyinfo" \
		"$(orders "$T_OUT/$name.snap" buddyinfo-before) then" \
		"$(orders "$T_OUT/$name.snap" buddyinfo-after), during" \
		"$(watched "$T_OUT/$name.snap" "$T_TMP/$name.watch" lo) to" \
		"$(watched "$T_OUT/$name.snap" "$T_TMP/$name.watch" hi)" \
		"($i snapshots in $((SECONDS - give_up + TAKE_BUDGET_S)) s)"
}

# roundtrip NAME: $T_OUT/NAME.snap loaded into a named machine, its status against the file
roundtrip() {
	local name=$1 f="$T_OUT/$1.snap" m="snap-$$-$1" pool snap
	"$THPEMU" machine start "$m" --fragment "snapshot:$f" --policy "$POLICY" --quiet \
		>"$T_TMP/$name.start" 2>&1 || fail "$name: machine start: $(cat "$T_TMP/$name.start")"
	at_exit "'$THPEMU' machine stop '$m'"
	"$THPEMU" machine status "$m" --json >"$T_OUT/$name.status.json" ||
		fail "$name: machine status failed"
	"$THPEMU" machine stop "$m" >/dev/null || fail "$name: machine stop failed"
	pool=$(jq -c '.pool.free_blocks_by_order' "$T_OUT/$name.status.json")
	snap=$(merged_orders "$f")
	[ -z "$snap" ] || expect_eq "$name: the pool's free blocks by order are the snapshot's" \
		"$pool" "$snap"
	expect_eq "$name: frames" "$(jq .pool.frames "$T_OUT/$name.status.json")" \
		"$(awk '$1 == "range" { print $3 }' "$f")"
	expect_eq "$name: watermarks" \
		"$(jq -r '.pool.watermarks | "\(.min) \(.low) \(.high)"' "$T_OUT/$name.status.json")" \
		"$(awk '$1 == "watermarks" { w = $2 " " $3 " " $4 } END { print w }' "$f")"
	local b a
	b=$(orders "$f" buddyinfo-before)
	a=$(orders "$f" buddyinfo-after)
	[ "$a" = "$b" ] || b="$b then $a"
	say "$name: $(awk '$1 == "zone" { z = z s $2 ":" $3; s = "+" } END { print z }' "$f")," \
		"buddyinfo $b, pool $pool"
}

# 2. this host
take host "$THPEMU" snapshot
roundtrip host
if awk '$1 == "Node" && $4 == "DMA32" { found = 1 } END { exit !found }' /proc/buddyinfo; then
	take dma32 "$THPEMU" snapshot --zone DMA32
	roundtrip dma32
fi

# 3. the static helper
# every zone of the node in one pool (version 2): free blocks and buddyinfo summed over the zones,
# the watermarks the highest zone's; a sample of it is refused
take node "$THPEMU" snapshot --zone all
roundtrip node
if [ "$(awk '$1 == "zones" { print $2 }' "$T_OUT/node.snap")" -gt 1 ]; then
	expect_eq "node: version 2" "$(head -1 "$T_OUT/node.snap")" "thpemu-snapshot 2"
	bad_usage "loads whole" run --pool 64M --fragment "snapshot:$T_OUT/node.snap" -- true
fi

readelf -d "$STATIC" 2>/dev/null | grep -q "NEEDED" && fail "thpemu-snapshot is not static"
take static "$STATIC" --quiet
roundtrip static
"$STATIC" --help | grep -q "^usage: thpemu-snapshot" || fail "thpemu-snapshot --help"

# 4. a sample of the zone: thpemu run and thpemu sim
f="$T_OUT/host.snap"
bad_usage "larger than the snapshot's zone" run --pool 64G --fragment "snapshot:$f" -- true
"$THPEMU" run --pool 64M --fragment "snapshot:$f" --policy "$POLICY" --quiet \
	--report "$T_OUT/run.json" -- "$USEMEM" --size 8M --quiet >"$T_TMP/run.out" 2>&1 ||
	fail "run from a sampled snapshot: $(cat "$T_TMP/run.out")"
expect_eq "run: the pool is 64M" "$(json "$T_OUT/run.json" .config.pool_bytes)" 67108864
expect_eq "run: the fragment is the snapshot" "$(json "$T_OUT/run.json" .config.fragment)" \
	"snapshot:$f"
"$THPEMU" sim --policy linux-3.3 --scenario thpcompact --pool 64M --opt "init=snapshot:$f" \
	--opt threads=1 --json "$T_OUT/sim.json" >/dev/null 2>"$T_TMP/sim.err" ||
	fail "sim from a sampled snapshot: $(cat "$T_TMP/sim.err")"
expect_eq "sim: the pool is 64M" "$(json "$T_OUT/sim.json" .pool_bytes)" 67108864
say "ok"

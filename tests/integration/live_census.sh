#!/usr/bin/env bash
# The memory census counts what was resident at its largest, per process and in total, and gives
# every unmanaged byte a reason:
#   1. a short program that writes 256 MiB and unmaps it at once (before: about 1 MiB seen);
#   2. six such programs one after another: the total is one of them, not six (before: the sum
#      of every process's largest);
#   3. three programs holding 128 MiB each at the same time (for 4 s: they overlap on a loaded
#      machine too): the total is all three, and each process's own largest is in its entry;
#   4. 2000 adjacent 32 KiB mappings, which the kernel merges into one VMA: "small", not
#      "unseen" (Ruby maps its heap this way);
#   5. preloaded by hand, a glibc-malloc program holding 64 MiB is told at exit that nothing was
#      managed and what to preload (before: silence);
#   6. shared memory (a SysV segment, a memfd, a MAP_SHARED anonymous mapping) written by a
#      process and its fork child, counted once (each process's Pss): the memfd and the
#      anonymous one managed (core/live/shmem.c), the SysV one unmanaged as "shared";
#   7. the machine's segment's Pss from its pages' mapcounts (core/live/census.c: seg_pss_kb,
#      read in place of smaps_rollup) is smaps_rollup's, on python3 and sqlite3: under --log
#      debug every census prints both (the mapcounts' read before and after the rollup's, as the
#      host's threads and the process's own may map a page of the segment meanwhile).
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
P="$THPEMU_BUILD_DIR/tests/programs/memshape"
MiB=1048576

"$THPEMU" run --quiet --report "$T_OUT/brief.json" -- "$P" brief 256 || fail "brief"
a=$(json "$T_OUT/brief.json" .memory.anon_program_bytes)
[ "$a" -ge $((240 * MiB)) ] || fail "a 256 MiB program seen at $((a / MiB)) MiB"
say "brief 256 MiB: $((a / MiB)) MiB at its largest"

"$THPEMU" run --quiet --report "$T_OUT/serial.json" -- \
	sh -c "for i in 1 2 3 4 5 6; do '$P' brief 256; done" || fail "serial"
a=$(json "$T_OUT/serial.json" .memory.anon_program_bytes)
[ "$a" -ge $((240 * MiB)) ] && [ "$a" -le $((320 * MiB)) ] ||
	fail "six 256 MiB programs one after another: $((a / MiB)) MiB at the largest"
say "six one after another: $((a / MiB)) MiB at the largest"

"$THPEMU" run --quiet --report "$T_OUT/together.json" -- \
	sh -c "'$P' hold 128 4000 & '$P' hold 128 4000 & '$P' hold 128 4000 & wait" ||
	fail "together"
a=$(json "$T_OUT/together.json" .memory.anon_program_bytes)
[ "$a" -ge $((370 * MiB)) ] || fail "three 128 MiB programs at once: $((a / MiB)) MiB"
each=$(jq '[.processes[] | select(.comm == "memshape") | .memory.anon_program_bytes >= 120 * 1048576] | all' \
	"$T_OUT/together.json")
expect_eq "each holder's own largest" "$each" true
say "three at once: $((a / MiB)) MiB at the largest"

"$THPEMU" run --quiet --report "$T_OUT/small.json" -- "$P" small 2000 32 || fail "small"
small=$(json "$T_OUT/small.json" .memory.unmanaged_by_reason.small)
unseen=$(json "$T_OUT/small.json" .memory.unmanaged_by_reason.unseen)
[ "$small" -ge $((60 * MiB)) ] && [ "$unseen" -le $((4 * MiB)) ] ||
	fail "2000 merged 32 KiB mappings: small $((small / MiB)) MiB, unseen $((unseen / MiB)) MiB"
say "merged small mappings: $((small / MiB)) MiB small, $((unseen / 1024)) KiB unseen"

LD_PRELOAD="$LIBTHPEMU" "$P" glibc 64 300 2>"$T_TMP/glibc.err" || fail "glibc"
grep -q "^thpemu: pid [0-9]* managed none of its memory (.* MiB anonymous at its largest): its malloc is glibc's" \
	"$T_TMP/glibc.err" || fail "preloaded by hand, glibc malloc: $(cat "$T_TMP/glibc.err")"
expect_eq "one line" "$(wc -l <"$T_TMP/glibc.err")" 1
say "preloaded by hand: $(cat "$T_TMP/glibc.err")"

"$THPEMU" run --quiet --report "$T_OUT/shm.json" -- "$P" shm 32 1500 || fail "shm"
# each process's shared mappings at its Pss: the parent's census before the fork has all of
# them, the child's (taken while both map them) half. The memfd and the MAP_SHARED anonymous
# mapping are managed (core/live/shmem.c): on the managed side; the SysV segment cannot be
# (UFFDIO_REGISTER refuses its VMA) and stays unmanaged as "shared"
shared=$(json "$T_OUT/shm.json" .memory.unmanaged_by_reason.shared)
managed=$(json "$T_OUT/shm.json" .memory.anon_managed_bytes)
[ "$shared" -ge $((31 * MiB)) ] && [ "$shared" -le $((49 * MiB)) ] ||
	fail "32 MiB of SysV shared memory in two processes: shared $((shared / MiB)) MiB"
[ "$managed" -ge $((62 * MiB)) ] ||
	fail "2 x 32 MiB of managed shared memory in two processes: managed $((managed / MiB)) MiB"
expect_eq "shared maps managed (the memfd and the anonymous one)" \
	"$(json "$T_OUT/shm.json" .host.shmem_maps)" 2
per=$(jq -c '[.memory.largest_unmanaged[] | select((.name | startswith("/SYSV"))
	and .reason == "shared") | .anon_bytes / 1048576 | round] | sort' "$T_OUT/shm.json")
expect_eq "/SYSV: MiB resident per process (Pss)" "$per" "[16,32]"
say "shared memory: $((managed / MiB)) MiB managed, $((shared / MiB)) MiB unmanaged (SysV, shared)"

# 7. The light census (a kernel from 6.16, glibc before 2.42: census.c,
# uffd_census_light_supported) as root with CAP_SYS_ADMIN, who may read the frames and their
# mapcounts.
kmaj=$(uname -r | cut -d. -f1) kmin=$(uname -r | cut -d. -f2 | tr -cd 0-9)
gver=$(getconf GNU_LIBC_VERSION | awk '{print $2}')
gmaj=${gver%%.*} gmin=$(echo "${gver#*.}" | tr -cd 0-9)
if [ "$kmaj" -gt 6 ] || { [ "$kmaj" = 6 ] && [ "$kmin" -ge 16 ]; }; then
	if [ "$gmaj" -lt 2 ] || { [ "$gmaj" = 2 ] && [ "$gmin" -lt 42 ]; }; then
		light=1
	fi
fi
# the frames of pagemap are shown to CAP_SYS_ADMIN (bit 21) alone: without it the rollup is read
capeff=$(awk '/^CapEff:/ {print $2}' /proc/self/status)
(((0x$capeff >> 21) & 1)) || light=0
seg_pss() { # NAME: each census line of $T_TMP/NAME.err, the mapcounts' figures against the rollup's
	local abc res
	abc=$(sed -n "s/.*census: the machine's segment's Pss \(-*[0-9]*\) KiB from its pages' mapcounts, \(-*[0-9]*\) KiB from smaps_rollup, \(-*[0-9]*\) KiB again$/\1 \2 \3/p" \
		"$T_TMP/$1.err")
	[ -n "$abc" ] || fail "$1: no census line under --log debug: $(head -c 600 "$T_TMP/$1.err")"
	# the rollup's between the two reads of the mapcounts (equal to both when nothing moved)
	res=$(echo "$abc" | awk '{ lo = $1 < $3 ? $1 : $3; hi = $1 < $3 ? $3 : $1
		if ($1 < 0 || $2 < lo || $2 > hi) bad = bad " [" $0 "]"
		if ($1 == $2 && $2 == $3) same++ }
		END { print NR, same + 0, (bad == "" ? "ok" : bad) }')
	set -- "$1" $res
	[ "$4" = ok ] || fail "$1: the mapcounts' Pss (KiB) is not smaps_rollup's: ${*:4}"
	say "$1: the segment's Pss from its mapcounts is smaps_rollup's in $2 censuses ($3 the same in all three reads)"
}
if [ "${light:-0}" = 1 ] && command -v python3 >/dev/null; then
	"$THPEMU" run --quiet --log debug --report "$T_OUT/py.json" -- python3 -c '
import json, zlib
d = [bytearray(1 << 20) for i in range(48)]
print(sum(len(zlib.compress(bytes(x[:65536]))) for x in d) > 0, json.dumps({"a": 1}))
' >"$T_TMP/py.out" 2>"$T_TMP/python3.err" || fail "python3: $(cat "$T_TMP/python3.err")"
	expect_eq "python3's output" "$(cat "$T_TMP/py.out")" 'True {"a": 1}'
	seg_pss python3
	if command -v sqlite3 >/dev/null; then
		"$THPEMU" run --quiet --log debug --report "$T_OUT/sqlite.json" -- sqlite3 :memory: \
			"create table t(a); with recursive c(x) as (select 1 union all select x + 1
			from c where x < 100000) insert into t select randomblob(200) from c;
			select count(*) from t;" >"$T_TMP/sq.out" 2>"$T_TMP/sqlite3.err" ||
			fail "sqlite3: $(cat "$T_TMP/sqlite3.err")"
		expect_eq "sqlite3's output" "$(cat "$T_TMP/sq.out")" 100000
		seg_pss sqlite3
	fi
else
	say "no light census here (a kernel before 6.16, glibc 2.42+), no CAP_SYS_ADMIN or no python3: the Pss check skipped"
fi

#!/usr/bin/env bash
# usemem under modern-always with an unfragmented pool: >= 90 % of extents huge and really
# PMD-mapped (AnonHugePages, PAGEMAP_SCAN); under modern-never: none.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
size_mb=256

field() { sed -n "s/.*$2=\([0-9.]*\).*/\1/p" "$1" | tail -1; }

rep="$T_OUT/usemem.always.json"
"$THPEMU" run --policy modern-always --pool 1G --stall-threshold 100us --report "$rep" -- \
	"$USEMEM" --size ${size_mb}M --quiet >"$T_TMP/always" || fail "usemem failed"
cat "$T_TMP/always"
pct=$(field "$T_TMP/always" huge_pct)
kb=$(field "$T_TMP/always" anonhuge_kb)
awk -v p="$pct" 'BEGIN { exit !(p >= 90) }' || fail "huge_pct=$pct < 90"
[ "$kb" -ge $((size_mb * 1024 * 9 / 10)) ] || fail "AnonHugePages ${kb} kB < 90 % of ${size_mb} MiB"
pmd=$(json "$rep" .host.real_pmd_faults)
[ "$pmd" -ge $((size_mb / 2 * 9 / 10)) ] || fail "only $pmd huge faults got a real PMD"
say "modern-always: huge_pct=$pct anonhuge_kb=$kb real_pmd=$pmd"
# faults over the (low) stall threshold are reported as stall events, grouped by cause
n=$(json "$rep" .stalls.count)
[ "$n" -ge 1 ] || fail "no stall event over 100us among $(json "$rep" .faults.total) faults"
expect_eq "stall stacks" "$(json "$rep" .stalls.stacks)" captured
json "$rep" '.stalls.groups[0].comms[]' | grep -qx usemem || fail "stall events do not name usemem"

rep="$T_OUT/usemem.never.json"
"$THPEMU" run --policy modern-never --pool 1G --report "$rep" -- \
	"$USEMEM" --size ${size_mb}M --quiet >"$T_TMP/never" || fail "usemem failed"
cat "$T_TMP/never"
expect_eq "modern-never huge" "$(field "$T_TMP/never" 'huge')" 0
expect_eq "modern-never AnonHugePages" "$(field "$T_TMP/never" anonhuge_kb)" 0
expect_eq "modern-never huge faults" "$(json "$rep" .faults.huge)" 0
[ "$(json "$rep" .faults.base)" -ge $((size_mb * 256)) ] || fail "too few base faults"

# a host that gives no THP: emulated huge decisions still work, mapped with 512 small pages,
# and the report says so
rep="$T_OUT/usemem.nohostthp.json"
"$THPEMU" run --policy modern-always --pool 1G --host-thp 0 --report "$rep" -- \
	"$USEMEM" --size 64M --quiet >"$T_TMP/nothp" || fail "usemem failed without host THPs"
cat "$T_TMP/nothp"
expect_eq "no-host-THP emulated huge" "$(json "$rep" .faults.huge)" 32
expect_eq "no-host-THP real PMDs" "$(json "$rep" .host.real_pmd_faults)" 0
expect_eq "no-host-THP small-mapped huge" "$(json "$rep" .host.huge_not_pmd)" 32
[ "$(json "$rep" .host.host_thp_unavailable)" -ge 32 ] || fail "THP-less chunks not counted"
expect_eq "no-host-THP AnonHugePages" "$(field "$T_TMP/nothp" anonhuge_kb)" 0

# --wait-writeback: usemem starts once the machine's writer has that much under writeback
# (nr_writeback of thpemu_vmstat; the writeback goes to the in-process device model)
"$THPEMU" run --quiet --policy linux-3.2 --pool 128M --dirty total=16M,file=2M -- \
	"$USEMEM" --wait-writeback 1M --size 4M --quiet >"$T_TMP/wb" 2>&1 || fail "usemem --wait-writeback failed"
cat "$T_TMP/wb"
kb=$(sed -n 's/^usemem: waited [0-9.]* s for writeback: \([0-9]*\) kB under writeback$/\1/p' "$T_TMP/wb")
[ -n "$kb" ] && [ "$kb" -ge 1024 ] || fail "usemem --wait-writeback 1M did not see 1 MiB under writeback"
grep -q "^usemem: extents=2 " "$T_TMP/wb" || fail "usemem did not run after its wait"
"$USEMEM" --wait-writeback 0 --size 2M >/dev/null 2>"$T_TMP/err"
expect_eq "usemem --wait-writeback 0: exit status" $? 2
grep -q "^usemem: --wait-writeback: '0' is not" "$T_TMP/err" || fail "usemem --wait-writeback 0: $(cat "$T_TMP/err")"

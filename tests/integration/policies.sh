#!/usr/bin/env bash
# thpemu policies ("policy names that say what they are"):
#  - every modern profile is listed by its sysfs pair thp-ENABLED/DEFRAG (all 3 x 5), each alias
#    says what it means, and --json carries every setting;
#  - `host` reproduces THIS machine's settings: the test reads /sys itself and compares each
#    modelled knob with what `thpemu policies --json` reports as host's effective settings;
#    and a report made with --policy host records that resolved spec;
#  - a missing THP sysfs tree (THPEMU_SYSFS_ROOT pointing to an empty directory) is a clear error;
#  - bad usage is one line and exit status 2.
. "$(dirname "$0")/lib.sh"
need_cmd jq

SYS=/sys/kernel/mm/transparent_hugepage

"$THPEMU" policies >"$T_OUT/policies.txt" || fail "thpemu policies failed"
for e in always madvise never; do
	for d in always defer defer+madvise madvise never; do
		grep -q "^thp-$e/$d  *6\.12  *$e  *$d" "$T_OUT/policies.txt" ||
			fail "thp-$e/$d not listed with enabled=$e defrag=$d"
	done
done
grep -qx "  modern-madvise = alias of thp-always/madvise (enabled=always, defrag=madvise)" \
	"$T_OUT/policies.txt" || fail "modern-madvise does not say what it means"
grep -qx "  modern-never = alias of thp-never/madvise (enabled=never, defrag=madvise)" \
	"$T_OUT/policies.txt" || fail "modern-never does not say what it means"

"$THPEMU" policies --json >"$T_OUT/policies.json" || fail "thpemu policies --json failed"
expect_eq "profiles" "$(json "$T_OUT/policies.json" '.profiles | length')" 21
# linux-6.1: Debian 12's kernel with Debian's pair; the per-size keys are refused there
grep -q "^linux-6\.1  *6\.1  *always  *madvise" "$T_OUT/policies.txt" ||
	fail "linux-6.1 not listed as 6.1 with enabled=always defrag=madvise"
expect_eq "linux-6.1: kernel, shrink-underused" \
	"$(json "$T_OUT/policies.json" '.profiles[] | select(.name == "linux-6.1") |
		.kernel + "," + .settings["shrink-underused"]')" 6.1,no
out=$("$THPEMU" policies linux-6.1:hugepages-64kB=always 2>&1)
expect_eq "6.1 refuses mTHP: status" "$?" 2
printf '%s' "$out" | grep -q "'hugepages-64kB': needs era=modern (multi-size THP came in 6.8" ||
	fail "6.1 mTHP refusal does not say why: $out"
expect_eq "alias resolved" \
	"$(json "$T_OUT/policies.json" '.aliases[] | select(.alias == "modern-madvise") | .canonical')" \
	thp-always/madvise
expect_eq "settings of thp-madvise/defer" \
	"$(json "$T_OUT/policies.json" '.profiles[] | select(.name == "thp-madvise/defer") |
		.settings.enabled + "," + .settings.defrag')" madvise,defer

# bad usage: one line, exit 2
out=$("$THPEMU" policies --bogus 2>&1)
expect_eq "bad option status" "$?" 2
expect_eq "bad option: one line" "$(printf '%s\n' "$out" | wc -l)" 1
printf '%s' "$out" | grep -q -- "--bogus" || fail "bad option not named: $out"
out=$("$THPEMU" policies no-such-profile 2>&1)
expect_eq "bad profile status" "$?" 2
printf '%s' "$out" | grep -q "linux-3.2+nostall|.*thp-ENABLED/DEFRAG|host" || fail "accepted names not listed: $out"
"$THPEMU" policies --help | grep -q "thp-ENABLED/DEFRAG" || fail "--help does not explain the names"
"$THPEMU" --help | grep -q "^ *policies" || fail "thpemu --help does not list policies"

# no THP in the kernel (an empty sysfs tree): a clear error naming the file
mkdir -p "$T_TMP/empty"
out=$(THPEMU_SYSFS_ROOT=$T_TMP/empty "$THPEMU" policies host 2>&1)
expect_eq "host without THP: status" "$?" 1
printf '%s' "$out" | grep -q "transparent_hugepage/enabled" || fail "missing file not named: $out"
THPEMU_SYSFS_ROOT=$T_TMP/empty "$THPEMU" policies | grep -q "^host: unavailable: " ||
	fail "the full listing does not say host is unavailable"

# host reproduces this machine's settings
[ -r "$SYS/enabled" ] || skip "no $SYS (THP not built into this kernel)"
"$THPEMU" policies host >"$T_OUT/host.txt" || fail "thpemu policies host failed"
"$THPEMU" policies --json host >"$T_TMP/host.json" || fail "thpemu policies --json host failed"
chosen() { sed 's/.*\[\(.*\)\].*/\1/' "$1"; }
ms() { # scan_sleep_millisecs as the spec language prints a duration
	if [ "$1" = 0 ]; then echo 0; elif [ $(($1 % 1000)) = 0 ]; then echo "$(($1 / 1000))s"; else echo "${1}ms"; fi
}
yn() { if [ "$1" = 0 ]; then echo no; else echo yes; fi; }
host() { json "$T_TMP/host.json" ".profiles[0].settings[\"$1\"]"; }
e=$(chosen "$SYS/enabled")
d=$(chosen "$SYS/defrag")
expect_eq "host enabled" "$(host enabled)" "$e"
expect_eq "host defrag" "$(host defrag)" "$d"
expect_eq "host name" "$(head -1 "$T_OUT/host.txt" | sed 's/^host = \([^: ]*\).*/\1/')" "thp-$e/$d"
checked=2
for k in pages_to_scan max_ptes_none max_ptes_swap max_ptes_shared; do
	[ -r "$SYS/khugepaged/$k" ] || continue
	expect_eq "host $k" "$(host "${k//_/-}")" "$(cat "$SYS/khugepaged/$k")"
	checked=$((checked + 1))
done
for k in scan_sleep alloc_sleep; do
	[ -r "$SYS/khugepaged/${k}_millisecs" ] || continue
	expect_eq "host $k" "$(host "${k//_/-}")" "$(ms "$(cat "$SYS/khugepaged/${k}_millisecs")")"
	checked=$((checked + 1))
done
if [ -r "$SYS/khugepaged/defrag" ]; then
	expect_eq "host khugepaged/defrag" "$(host khugepaged-defrag)" "$(yn "$(cat "$SYS/khugepaged/defrag")")"
	checked=$((checked + 1))
fi
if [ -r "$SYS/shrink_underused" ]; then
	expect_eq "host shrink_underused" "$(host shrink-underused)" "$(yn "$(cat "$SYS/shrink_underused")")"
	checked=$((checked + 1))
fi
for kb in 16 32 64 128 256 512 1024 2048; do
	[ -r "$SYS/hugepages-${kb}kB/enabled" ] || continue
	expect_eq "host hugepages-${kb}kB" "$(host "hugepages-${kb}kB")" "$(chosen "$SYS/hugepages-${kb}kB/enabled")"
	checked=$((checked + 1))
done
if [ -r /proc/sys/vm/defrag_mode ]; then
	expect_eq "host defrag_mode" "$(host defrag-mode)" "$(cat /proc/sys/vm/defrag_mode)"
	checked=$((checked + 1))
fi
# a report made with --policy host records the resolved spec (the pair plus overrides)
resolved=$(head -1 "$T_OUT/host.txt" | sed 's/^host = \([^ ]*\) .*/\1/')
expect_eq "host in a sim report" "$("$THPEMU" sim --policy host --scenario seed-2011 --pool 128M \
	--duration 2s --json - 2>/dev/null | jq -r .policy)" "$resolved"
expect_eq "an alias in a sim report" "$("$THPEMU" sim --policy modern-madvise --scenario seed-2011 \
	--pool 128M --duration 2s --json - 2>/dev/null | jq -r .policy)" thp-always/madvise
say "host = $(head -1 "$T_OUT/host.txt" | sed 's/^host = //') matches $checked settings of $SYS"

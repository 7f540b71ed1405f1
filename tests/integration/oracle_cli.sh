#!/usr/bin/env bash
# thpemu oracle's command line as a careless user drives it: every bad option is one line and
# exit status 2 before anything is fetched or booted; a missing qemu, a dynamic busybox and an
# empty cache are the environment's failures (exit 1) and leave no JSON behind. Needs no qemu.
. "$(dirname "$0")/lib.sh"

WL="$THPEMU_BUILD_DIR/thpemu-wl"
cache="$T_TMP/cache"
mkdir -p "$cache"
export THPEMU_ORACLE_CACHE=$cache

"$THPEMU" oracle --help >"$T_TMP/help" || fail "--help failed"
grep -q -- "--workload NAME|PATH" "$T_TMP/help" || fail "--help does not show --workload"
"$THPEMU" --help | grep -q "^  oracle " || fail "thpemu --help does not list oracle"

bad_usage "--workload NAME|PATH is required" oracle
bad_usage "--kernel: '7'" oracle --kernel 7 --workload fragfault
bad_usage "--kernel: './nonexistent'" oracle --kernel ./nonexistent --workload fragfault
bad_usage "--mem: '100M'" oracle --mem 100M --workload fragfault
bad_usage "--mode: 'fast'" oracle --mode fast --workload fragfault
bad_usage "--smp: '0'" oracle --smp 0 --workload fragfault
bad_usage "--boots: '0'" oracle --boots 0 --workload fragfault
bad_usage "--jobs: '0' is not an integer 1..64" oracle --jobs 0 --workload fragfault
bad_usage "--jobs: 'x' is not an integer 1..64" oracle --jobs x --workload fragfault
bad_usage "--timeout: '5'" oracle --timeout 5 --workload fragfault
bad_usage "unknown setting 'vm.drop_caches'" oracle --set vm.drop_caches=3 --workload fragfault
bad_usage "enabled: 'sometimes' is not one of always|madvise|never" \
	oracle --enabled sometimes --workload fragfault
bad_usage "enabled given twice" oracle --enabled always --set enabled=never --workload fragfault
bad_usage "khugepaged/max_ptes_none: '600' is not an integer 0..511" \
	oracle --set khugepaged/max_ptes_none=600 --workload fragfault
bad_usage "'defrag' is not KEY=VALUE" oracle --set defrag --workload fragfault
bad_usage "--accel kvm" oracle --accel kvm --workload fragfault
bad_usage "--disk-write-rate needs --disk" oracle --disk-write-rate 3MB/s --workload fragfault
bad_usage "--disk: '1M'" oracle --disk 1M --workload fragfault
bad_usage "not a workload of the suite" oracle --workload nosuch
bad_usage "dynamically linked" oracle --workload /bin/true
bad_usage "not found" oracle --workload ./nonexistent-program
bad_usage "double quote" oracle --workload fragfault 'a"b'
bad_usage "unknown option '--bogus'" oracle --bogus --workload fragfault
bad_usage "--json: '/proc/" oracle --json /proc/thpemu-oracle.json --workload fragfault
# everything after --workload is the workload's, even what looks like thpemu's options
args=()
for i in $(seq 30); do args+=(--x); done
bad_usage "at most 23 arguments" oracle --workload fragfault "${args[@]}"

# the environment: exit 1, one line, nothing written
"$THPEMU" oracle --qemu /nonexistent/qemu --json "$T_TMP/o.json" --workload fragfault \
	>/dev/null 2>"$T_TMP/err"
expect_eq "missing qemu status" "$?" 1
grep -q "not found (apt-get install qemu-system-x86)" "$T_TMP/err" || fail "$(cat "$T_TMP/err")"
[ ! -e "$T_TMP/o.json" ] || fail "a JSON was left after a failure before any boot"
if command -v qemu-system-x86_64 >/dev/null; then
	"$THPEMU" oracle --busybox /bin/true --workload fragfault >/dev/null 2>"$T_TMP/err"
	expect_eq "dynamic busybox status" "$?" 1
	grep -q "not static" "$T_TMP/err" || fail "$(cat "$T_TMP/err")"
fi
"$THPEMU" oracle --fetch-only --offline --kernel 6.12 >/dev/null 2>"$T_TMP/err"
expect_eq "empty cache, offline" "$?" 1
grep -q "no kernel of this series in the cache (--offline)" "$T_TMP/err" ||
	fail "$(cat "$T_TMP/err")"

# the workload suite's own usage
"$WL" --help | grep -q "^  fragfault " || fail "thpemu-wl --help does not list fragfault"
expect_eq "suite list" "$("$WL" --list | tr '\n' ' ')" \
	"fragfault unevictable mthp thpscale thpcompact khugepaged collapse shrinker writer shmem "
"$WL" nosuch 2>/dev/null
expect_eq "unknown workload" "$?" 2
"$WL" fragfault --keep 0 2>"$T_TMP/err"
expect_eq "--keep 0" "$?" 2
grep -qx "thpemu-wl fragfault: --keep: 0 is not a group size (1 keeps every page)" "$T_TMP/err" ||
	fail "$(cat "$T_TMP/err")"
for w in $("$WL" --list); do
	"$WL" "$w" --help >/dev/null || fail "thpemu-wl $w --help"
done
say "ok"

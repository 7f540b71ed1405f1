#!/usr/bin/env bash
# --host-fault pte: managed memory is MADV_NOHUGEPAGE on the host, so a first touch reaches the
# handler through the host's 4 KiB path (no 2 MiB folio allocated, cleared and discarded by
# mm/huge_memory.c __do_huge_pmd_anonymous_page), and the handler frees the empty page table
# that path leaves before each huge move (CONFIG_PT_RECLAIM, Linux 6.14+).
#   - every huge decision still ends in a real PMD (PAGEMAP_SCAN, AnonHugePages), one freed table
#     per huge fault, the report names the path in effect;
#   - the host VMA says nh (what the program could see in smaps), thp's says hg;
#   - threads sharing extents (usemem --threads 4) and mt_checksum's data are intact;
#   - a bad value is refused before the program runs.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
PROG="$THPEMU_BUILD_DIR/tests/programs/mt_checksum"

field() { sed -n "s/.*$2=\([0-9.]*\).*/\1/p" "$1" | tail -1; }

# the kernel must free an emptied range's page table, or the option falls back (said below)
case "$(uname -r)" in
[0-5].* | 6.[0-9].* | 6.1[0-3].*) skip "Linux $(uname -r) predates CONFIG_PT_RECLAIM (6.14)" ;;
esac

size_mb=128
rep="$T_OUT/pte.json"
"$THPEMU" run --policy modern-always --pool 1G --host-fault pte --report "$rep" -- \
	"$USEMEM" --size ${size_mb}M --hold 100ms >"$T_TMP/pte" || fail "usemem failed under pte"
tail -1 "$T_TMP/pte"
expect_eq "host_fault in effect" "$(json "$rep" .config.host_fault)" pte
expect_eq "huge faults" "$(json "$rep" .faults.huge)" $((size_mb / 2))
expect_eq "real PMDs" "$(json "$rep" .host.real_pmd_faults)" $((size_mb / 2))
expect_eq "4 KiB-mapped huge decisions" "$(json "$rep" .host.huge_not_pmd)" 0
expect_eq "page tables freed" "$(json "$rep" .host.pt_reclaims)" $((size_mb / 2))
expect_eq "AnonHugePages" "$(field "$T_TMP/pte" anonhuge_kb)" $((size_mb * 1024))
expect_eq "note" "$(json "$rep" .host.note)" null

# the host VMA's advice, as the program itself reads it from smaps
vmflags() { # MODE: the VmFlags of an 8 MiB mapping python3 makes
	"$THPEMU" run --quiet --policy modern-always --host-fault "$1" -- python3 -c '
import ctypes, mmap
m = mmap.mmap(-1, 8 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
m[0] = 1
a = ctypes.addressof(ctypes.c_char.from_buffer(m))
cur = False
for line in open("/proc/self/smaps"):
    f = line.split()
    if "-" in f[0] and not f[0].endswith(":"):
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        cur = lo <= a < hi
    elif cur and f[0] == "VmFlags:":
        print(" ".join(f[1:]))'
}
need_cmd python3
flags_pte=$(vmflags pte) || fail "python3 under pte"
flags_thp=$(vmflags thp) || fail "python3 under thp"
say "VmFlags pte: $flags_pte; thp: $flags_thp"
grep -qw nh <<<"$flags_pte" || fail "pte: the managed VMA is not nh: $flags_pte"
grep -qw hg <<<"$flags_thp" || fail "thp: the managed VMA is not hg: $flags_thp"

# threads sharing the extents fault into the same 2 MiB at once: some faults find the page table
# another thread's fault made; nothing is lost and every huge decision is still counted
rep="$T_OUT/pte.threads.json"
"$THPEMU" run --policy modern-always --pool 1G --host-fault pte --report "$rep" -- \
	"$USEMEM" --size 256M --threads 4 --quiet >"$T_TMP/thr" || fail "usemem --threads 4 under pte"
cat "$T_TMP/thr"
huge=$(json "$rep" .faults.huge)
[ "$huge" -ge 120 ] || fail "only $huge of 128 extents huge"
expect_eq "every huge decision accounted" \
	"$(($(json "$rep" .host.real_pmd_faults) + $(json "$rep" .host.huge_not_pmd) + $(json "$rep" .host.huge_move_fallbacks)))" \
	"$((huge + $(json "$rep" .host.huge_move_fallbacks)))"
say "4 threads: $huge huge, $(json "$rep" .host.real_pmd_faults) real PMDs," \
	"$(json "$rep" .host.pt_reclaims) tables freed"

want=$("$PROG" 4 40) || fail "mt_checksum natively"
got=$("$THPEMU" run --quiet --policy modern-always --host-fault pte -- "$PROG" 4 40) ||
	fail "mt_checksum under pte"
expect_eq "mt_checksum output under pte" "$got" "$want"

# bad input: one line naming the option and what is accepted, exit 2, nothing run
bad_usage "--host-fault: 'huge' is not accepted (accepted: thp or pte)" \
	run --host-fault huge -- touch "$T_TMP/ran"
[ ! -e "$T_TMP/ran" ] || fail "the program ran despite a bad --host-fault"

#!/usr/bin/env bash
# Process-level behaviour is the program's own under the emulator: signal dispositions and
# handlers of every signal, masks and pending signals, vfork, clone(CLONE_VM|CLONE_VFORK), a
# child made by a raw clone (no atfork handler: the emulator recognises it and stays out of its
# way), prctl, rlimits. host_calls prints what it saw; natively and under thpemu must agree.
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
PROG="$THPEMU_BUILD_DIR/tests/programs/host_calls"

"$PROG" >"$T_TMP/native" 2>&1 || fail "host_calls natively: $(tail -3 "$T_TMP/native")"
for policy in modern-always linux-3.2; do
	"$THPEMU" run --quiet --policy "$policy" --report "$T_OUT/$policy.json" -- "$PROG" \
		>"$T_TMP/emu" 2>&1 || fail "host_calls under $policy: $(tail -3 "$T_TMP/emu")"
	diff -u "$T_TMP/native" "$T_TMP/emu" >&2 || fail "host_calls under $policy differs"
	expect_eq "$policy: uffd errors" "$(json "$T_OUT/$policy.json" .host.uffd_errors)" 0
done
say "$(wc -l <"$T_TMP/native") lines as natively"

# prctl(PR_SET_THP_DISABLE) reaches the emulated kernel: no huge pages for the process under a
# 6.x profile (vma_thp_disabled), as natively; the 3.x profiles predate the call (3.15)
cat >"$T_TMP/thp.py" <<'PY'
import ctypes, mmap, sys
libc = ctypes.CDLL(None, use_errno=True)
if sys.argv[1] == "off" and libc.prctl(41, 1, 0, 0, 0) != 0:  # PR_SET_THP_DISABLE
    sys.exit("prctl failed")
m = mmap.mmap(-1, 64 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
for i in range(0, 64 << 20, 4096):
    m[i] = 1
PY
for mode in on off; do
	"$THPEMU" run --quiet --policy modern-always --report "$T_OUT/thp-$mode.json" -- \
		python3 "$T_TMP/thp.py" $mode || fail "THP $mode"
done
on=$(json "$T_OUT/thp-on.json" .faults.huge)
off=$(json "$T_OUT/thp-off.json" .faults.huge) # huge pages before the call stay huge, as natively
# the 64 MiB are 32 extents; the interpreter's own start-up takes a few huge pages either way
[ "$on" -ge 32 ] && [ "$off" -le 8 ] || fail "THP on: $on huge faults, off: $off: the 64 MiB did not differ"
"$THPEMU" run --quiet --policy linux-3.2 --report "$T_OUT/thp-3x.json" -- \
	python3 "$T_TMP/thp.py" off 2>"$T_TMP/err" || fail "THP off under linux-3.2"
json "$T_OUT/thp-3x.json" .host.note | grep -q 'PR_SET_THP_DISABLE ignored' ||
	fail "3.x: no note that the call predates the profile"
say "PR_SET_THP_DISABLE: $on huge faults without, $off with (before the call)"

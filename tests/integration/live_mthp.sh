#!/usr/bin/env bash
# Multi-size THP live: with hugepages-64kB=always the handler serves write faults
# with 64 KiB folios (one UFFDIO_COPY of 16 zeroed pages; the host maps them with 4 KiB PTEs):
#  (a) usemem 64M under modern-never:hugepages-64kB=always (no PMD possible): data verified by
#      usemem, ~pages/16 faults, all of them 64 KiB folios in the report (faults.mthp,
#      mthp.sizes["64kB"], anon_fault_alloc, latency), against modern-never without mTHP;
#  (b) python3 under modern-always:hugepages-64kB=always prints what it prints natively and
#      takes 64 KiB folios beside its THPs;
#  (c) a partial munmap / MADV_DONTNEED of folios (programs/mthp_partial.c): the rest of the
#      data intact, the partly unmapped folios deferred-split, the wholly unmapped one not;
#  (d) linux-3.2 reports have no "mthp" section (no mTHP before 6.8).
. "$(dirname "$0")/lib.sh"
need_root
need_uffd
need_cmd jq
need_cmd python3
USEMEM="$THPEMU_BUILD_DIR/usemem"
PARTIAL="$THPEMU_BUILD_DIR/tests/programs/mthp_partial"
[ -x "$USEMEM" ] || fail "$USEMEM not built"
[ -x "$PARTIAL" ] || fail "$PARTIAL not built"

# run NAME POLICY CMD...: CMD under thpemu run, report in $T_OUT/NAME.json, stdout in
# $T_TMP/NAME.out
run() {
	local name=$1 policy=$2
	shift 2
	"$THPEMU" run --policy "$policy" --quiet --report "$T_OUT/$name.json" -- "$@" \
		>"$T_TMP/$name.out" 2>"$T_TMP/$name.err" || {
		cat "$T_TMP/$name.out" "$T_TMP/$name.err" >&2
		fail "$name: the program failed (its data was not intact?)"
	}
}
j() { json "$T_OUT/$1.json" "$2"; }
ge() { [ "$2" -ge "$3" ] || fail "$1: $2 < $3"; }
le() { [ "$2" -le "$3" ] || fail "$1: $2 > $3"; }

# (a) usemem: 64 MiB = 16384 pages = 1024 folios of 64 KiB
run base modern-never "$USEMEM" --size 64M --no-madvise --quiet
run m64 'modern-never:hugepages-64kB=always' "$USEMEM" --size 64M --no-madvise --quiet
grep -q 'extents=32 ' "$T_TMP/m64.out" || fail "usemem did not report its 32 extents"
expect_eq "no mTHP without the setting" "$(j base .faults.mthp)" 0
ge "no mTHP: base faults" "$(j base .faults.base)" 16384
m=$(j m64 .faults.mthp)
ge "faults.mthp" "$m" 1024
le "faults.mthp" "$m" 1100
expect_eq "faults.mthp = mthp.sizes.64kB.faults" "$(j m64 '.mthp.sizes["64kB"].faults')" "$m"
expect_eq "anon_fault_alloc = faults" "$(j m64 '.mthp.sizes["64kB"].anon_fault_alloc')" "$m"
expect_eq "64kB setting" "$(j m64 '.mthp.sizes["64kB"].setting')" always
expect_eq "32kB faults" "$(j m64 '.mthp.sizes["32kB"].faults')" 0
expect_eq "delivery" "$(j m64 .mthp.delivery)" per-PTE
le "base faults beside the folios" "$(j m64 .faults.base)" 200
expect_eq "latency_us.mthp.count" "$(j m64 .latency_us.mthp.count)" "$m"
expect_eq "kernel_latency_us.mthp.count" "$(j m64 .kernel_latency_us.mthp.count)" "$m"
expect_eq "per-size latency count" "$(j m64 '.mthp.sizes["64kB"].latency_us.count')" "$m"
cov=$(j m64 .mthp.coverage_pct)
jq -e '.mthp.coverage_pct > 90' "$T_OUT/m64.json" >/dev/null || fail "coverage_pct $cov <= 90"
# whole folios unmapped at exit go back whole: never partially mapped
expect_eq "usemem split_deferred" "$(j m64 '.mthp.sizes["64kB"].split_deferred')" 0
say "usemem 64M: base-only $(j base .faults.total) faults p50 $(j base .latency_us.base.p50) us;" \
	"64kB: $m mTHP faults p50 $(j m64 .latency_us.mthp.p50) us, coverage $cov%"

# (b) python3: byte-identical output, 64 KiB folios beside THPs
cat >"$T_TMP/work.py" <<'PY'
import hashlib
d = {i: str(i) * 3 for i in range(200000)}
print(len(d), hashlib.sha256("".join(d[i] for i in range(0, 200000, 7)).encode()).hexdigest())
PY
python3 "$T_TMP/work.py" >"$T_TMP/py.native"
run py 'modern-always:hugepages-64kB=always' python3 "$T_TMP/work.py"
cmp -s "$T_TMP/py.native" "$T_TMP/py.out" || fail "python3 output differs under thpemu run"
ge "python3 mTHP faults" "$(j py '.mthp.sizes["64kB"].faults')" 1
ge "python3 faults.mthp" "$(j py .faults.mthp)" 1
say "python3: $(j py .faults.mthp) 64kB folios, $(j py .faults.huge) THPs, $(j py .faults.base) base"

# (c) partial unmap of folios
run partial 'modern-never:hugepages-64kB=always' "$PARTIAL"
grep -q 'bad=0' "$T_TMP/partial.out" || fail "mthp_partial: $(cat "$T_TMP/partial.out")"
ge "partial: mTHP faults" "$(j partial '.mthp.sizes["64kB"].faults')" 60
# folios 0 and 1 partly unmapped (then the rest at exit: they were queued already); folio 2 and
# the others whole
expect_eq "partial: split_deferred" "$(j partial '.mthp.sizes["64kB"].split_deferred')" 2
say "mthp_partial: $(cat "$T_TMP/partial.out"), split_deferred 2"

# (d) no mTHP section before 6.8
run old linux-3.2 "$USEMEM" --size 8M --no-madvise --quiet
expect_eq "linux-3.2: no mthp section" "$(j old 'has("mthp")')" false
expect_eq "linux-3.2: faults.mthp" "$(j old .faults.mthp)" 0
say ok

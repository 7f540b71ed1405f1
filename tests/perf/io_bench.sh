#!/usr/bin/env bash
# core/io benchmark (THPEMU_PERF_QUICK=1 for a smoke run): ratios against floors measured in the
# same run --
#  1. wake-up round trip through the hashed futex waitqueue vs a bare futex round trip;
#  2. writeback throughput of the engine through thpemu-fusedev `fast` vs direct O_DIRECT
#     io_uring writes of the same size and depth to the same mount.
. "$(dirname "$0")/../integration/fusedev_common.sh"

BENCH=$THPEMU_BUILD_DIR/tests/perf/io_bench
[ -x "$BENCH" ] || fail "$BENCH not built"
"$BENCH" wake | tee "$T_OUT/wake.txt" || fail "wake benchmark failed"
MNT=$T_TMP/mnt
fd_mount "$MNT" --preset fast --store discard
"$BENCH" writeback "$MNT" | tee "$T_OUT/writeback.txt" || fail "writeback benchmark failed"

# core/mm micro-benchmark: fast-path huge/base faults and compaction attempts on a fragmented
# 1 GiB pool, as ratios to a bare buddy alloc+free floor measured in the same run.
add_executable(mm_bench ${CMAKE_CURRENT_SOURCE_DIR}/perf/mm_bench.c)
target_link_libraries(mm_bench PRIVATE thpemu_mm thpemu_util)
thpemu_add_test(NAME perf/mm_bench COMMAND mm_bench LABELS perf TIMEOUT 300)

# core/io benchmark: waitqueue wake-up vs a bare futex, engine writeback vs direct O_DIRECT
# writes on a thpemu-fusedev `fast` mount (ratios; THPEMU_PERF_QUICK=1 is short).
add_executable(io_bench ${CMAKE_CURRENT_LIST_DIR}/io_bench.c)
target_link_libraries(io_bench PRIVATE thpemu_io thpemu_mm thpemu_util PkgConfig::URING
                      Threads::Threads)
set_target_properties(io_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/perf)
thpemu_add_test(NAME perf/io_bench COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/io_bench.sh
                LABELS perf needs-fuse needs-root TIMEOUT 900)

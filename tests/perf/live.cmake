# Live emulator benchmark: fault-service latency against floors measured in the same run, and
# usemem wall time emulated vs native (tests/perf/live_bench.sh; THPEMU_PERF_QUICK=1 is short).
add_executable(live_bench ${CMAKE_CURRENT_SOURCE_DIR}/perf/live_bench.c)
set_target_properties(live_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/perf)
target_include_directories(live_bench PRIVATE ${PROJECT_SOURCE_DIR}/core) # util/sys.h's uapi
target_link_libraries(live_bench PRIVATE Threads::Threads)
thpemu_add_test(NAME perf/live_bench COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/perf/live_bench.sh
                LABELS perf needs-uffd needs-root TIMEOUT 1200)

# Shared machine: first-touch service of 1, 2 and 4 processes on one machine, as ratios to the
# same processes each with a pool of its own (tests/perf/machine_bench.sh).
thpemu_add_test(NAME perf/machine_bench COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/perf/machine_bench.sh
                LABELS perf needs-uffd needs-root TIMEOUT 1200)

# Every fault-service ratio in one run - 4 KiB / 2 MiB first touches with 1, 2 and 4
# faulting threads, throughput and wake-ups per fault, migration, usemem, kernel_latency_us
# (tests/perf/bench.sh).
thpemu_add_test(NAME perf/bench COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/perf/bench.sh
                LABELS perf needs-uffd needs-root TIMEOUT 1800)

# The cost of seeing a write to a page answered with the zero page (UFFDIO_ZEROPAGE +
# write-protect against UFFDIO_COPY), and the emulator's zero pages against those floors
# (tests/perf/zero_bench.sh: read first touches and later writes, --zero-page 1 and 0).
add_executable(zero_wp_bench ${CMAKE_CURRENT_SOURCE_DIR}/perf/zero_wp_bench.c)
set_target_properties(zero_wp_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/perf)
target_include_directories(zero_wp_bench PRIVATE ${PROJECT_SOURCE_DIR}/core) # util/sys.h's uapi
target_link_libraries(zero_wp_bench PRIVATE Threads::Threads)
thpemu_add_test(NAME perf/zero_bench COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/perf/zero_bench.sh
                LABELS perf needs-uffd needs-root TIMEOUT 600)

# Collapse: the program-visible hold of MADV_COLLAPSE per 2 MiB with one and two writer
# threads on the range, managed against the host kernel's own collapse in the same run
# (tests/perf/collapse_bench.sh).
add_executable(collapse_bench ${CMAKE_CURRENT_SOURCE_DIR}/perf/collapse_bench.c)
set_target_properties(collapse_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/perf)
target_link_libraries(collapse_bench PRIVATE Threads::Threads)
thpemu_add_test(NAME perf/collapse_bench COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/perf/collapse_bench.sh
                LABELS perf needs-uffd needs-root TIMEOUT 600)

# Shared memory: MISSING + UFFDIO_COPY against MINOR + UFFDIO_CONTINUE with bare handlers (no
# emulator), per page and per 2 MiB, a first and a second process, against the host's own shmem
# faults; PostgreSQL's one-faulter-16-backends pattern; MISSING|MINOR on one range
# (tests/perf/shmem_uffd_bench.sh).
add_executable(shmem_uffd_bench ${CMAKE_CURRENT_SOURCE_DIR}/perf/shmem_uffd_bench.c)
set_target_properties(shmem_uffd_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/perf)
target_link_libraries(shmem_uffd_bench PRIVATE Threads::Threads)
thpemu_add_test(NAME perf/shmem_uffd_bench COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/perf/shmem_uffd_bench.sh
                LABELS perf needs-uffd needs-root TIMEOUT 600)

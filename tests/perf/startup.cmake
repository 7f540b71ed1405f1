# Start-up benchmark: a managed /bin/true at --pool 1G, 16G and 64G against native, wall time
# and peak RSS (tests/perf/startup_bench.sh; THPEMU_PERF_QUICK=1 runs 5 rounds instead of 20).
thpemu_add_test(NAME perf/startup_bench
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/startup_bench.sh
                LABELS perf needs-uffd needs-root TIMEOUT 600)

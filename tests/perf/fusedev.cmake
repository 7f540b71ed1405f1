# fusedev benchmark: overhead of the fast preset against tmpfs, fidelity of a throttled preset.
thpemu_add_test(NAME perf/fusedev_bench
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/fusedev_bench.sh
                LABELS perf needs-fuse needs-root TIMEOUT 600)

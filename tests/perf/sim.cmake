# thpemu sim speed: virtual seconds simulated per CPU second per scenario, against the bare
# engine's cost per event measured in the same run (THPEMU_PERF_QUICK=1: shorter runs).
add_executable(sim_bench ${CMAKE_CURRENT_LIST_DIR}/sim_bench.c)
target_link_libraries(sim_bench PRIVATE thpemu_sim thpemu_io thpemu_obs thpemu_mm
                      thpemu_devmodel thpemu_util)
thpemu_add_test(NAME perf/sim_bench COMMAND sim_bench LABELS perf TIMEOUT 900)

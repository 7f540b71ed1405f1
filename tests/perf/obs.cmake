# core/obs benchmark: fault-path observation costs as ratios to clock_gettime (label perf).
add_executable(obs_bench ${CMAKE_CURRENT_SOURCE_DIR}/perf/obs_bench.c)
target_link_libraries(obs_bench PRIVATE thpemu_obs thpemu_mm thpemu_util Threads::Threads)
thpemu_add_test(NAME perf/obs_bench COMMAND obs_bench LABELS perf TIMEOUT 900)

# What a process costs under thpemu run against natively: fork + exit, fork / vfork + exec,
# posix_spawn, a managed /bin/true, a shell loop of short processes and (full mode) a cmake
# configure, as ratios to native figures measured in the same run (tests/perf/proc_bench.sh;
# THPEMU_PERF_QUICK=1 is a short smoke run).
add_executable(proc_bench ${CMAKE_CURRENT_SOURCE_DIR}/perf/proc_bench.c)
set_target_properties(proc_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/perf)
thpemu_add_test(NAME perf/proc_bench COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/perf/proc_bench.sh
                LABELS perf needs-uffd needs-root TIMEOUT 1800)

# Live emulator: integration tests with real userfaultfd and real programs, and the small test
# programs they run (tests/integration/programs/*.c, built into <build>/tests/programs).
file(GLOB _live_progs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/integration/programs/*.c)
foreach(src ${_live_progs})
  get_filename_component(n ${src} NAME_WE)
  add_executable(prog_${n} ${src})
  set_target_properties(prog_${n} PROPERTIES OUTPUT_NAME ${n}
                        RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/programs)
  target_include_directories(prog_${n} PRIVATE ${CMAKE_SOURCE_DIR}/core/include)
  target_link_libraries(prog_${n} PRIVATE Threads::Threads)
endforeach()
# buddy_watch reads /proc with the snapshot's own parsers
target_include_directories(prog_buddy_watch PRIVATE ${CMAKE_SOURCE_DIR}/core)
target_link_libraries(prog_buddy_watch PRIVATE thpemu_snapshot)
# the uapi values Debian 12's headers lack, from the emulator's own copy (core/util/sys.h)
foreach(n collapse_check dontfork)
  target_include_directories(prog_${n} PRIVATE ${CMAKE_SOURCE_DIR}/core)
endforeach()

# live_programs: byte-identical output and fault counts, nothing timed: one test per policy,
# side by side with the other parallel tests.
foreach(p never always)
  thpemu_add_test(NAME integration/live_programs_${p}
                  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/live_programs.sh modern-${p}
                  LABELS integration parallel needs-uffd needs-root)
endforeach()
foreach(t threads stress badenv nonroot fork exit usemem signals exec api memory mremap machine make
          collapse collapse_swap split mthp host_fault thread_exit mlock dlopen debuggers own_uffd
          addresses census thp_prctl zeropage shmem shmem_collapse shmem_hole zero_reuse exit_work
          thread_teardown)
  thpemu_add_test(NAME integration/live_${t}
                  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/live_${t}.sh
                  LABELS integration needs-uffd needs-root)
endforeach()

# PostgreSQL 15 under thpemu run as an unprivileged user: pgbench against a server whose shared
# buffers are managed shared memory (balances checked, the report's shmem counters and census).
thpemu_add_test(NAME integration/live_postgres
                COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/live_postgres.sh
                LABELS integration needs-uffd needs-root TIMEOUT 600)

# Named machines (thpemu machine start/status/stop, thpemu run --machine); its device part uses
# fuse when there is one.
thpemu_add_test(NAME integration/machine_named
                COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/machine_named.sh
                LABELS integration needs-uffd needs-root TIMEOUT 300)

# A machine's name held by another user's listener (refused, its plugin never loaded), and
# attach answers no daemon gives.
thpemu_add_test(NAME integration/machine_squat
                COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/machine_squat.sh
                LABELS integration needs-uffd needs-root TIMEOUT 60)

# A named machine's daemon SIGKILLed with writeback in flight: its programs do not wait for it.
thpemu_add_test(NAME integration/machine_daemon_kill
                COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/machine_daemon_kill.sh
                LABELS integration needs-uffd needs-fuse needs-root TIMEOUT 120)

# Bad NAMEs (an option where a NAME goes) and a bad THPEMU_MACHINE under a bare preload.
thpemu_add_test(NAME integration/machine_args
                COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/machine_args.sh
                LABELS integration needs-uffd needs-root TIMEOUT 60)

# No uffd or root needed: the built library against the names it exports (core/util/sys.h).
thpemu_add_test(NAME integration/live_selfcalls
                COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/live_selfcalls.sh
                LABELS integration TIMEOUT 60)

# A real writer (dd) and a faulting program on one named machine with a slow stick: whose pages
# the faults waited on, under linux-3.2 and linux-3.2+nostall.
thpemu_add_test(NAME integration/machine_writer
                COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/machine_writer.sh
                LABELS integration needs-uffd needs-fuse needs-root TIMEOUT 300)

# Stall stacks of a real run named down into Debian's stripped libc (.dynsym, libc6-dbg's
# build-id debug file), checked against nm.
thpemu_add_test(NAME integration/live_symbolise
                COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/live_symbolise.sh
                LABELS integration needs-uffd needs-root TIMEOUT 60)

# dl_check loads a library of its own by bare name through its RUNPATH ($ORIGIN/dl).
add_library(thpemu_dltest SHARED ${CMAKE_CURRENT_SOURCE_DIR}/integration/programs/dl/dltest.c)
set_target_properties(thpemu_dltest PROPERTIES LIBRARY_OUTPUT_DIRECTORY
                      ${CMAKE_BINARY_DIR}/tests/programs/dl)
set_target_properties(prog_dl_check PROPERTIES BUILD_RPATH "\$ORIGIN/dl" SKIP_BUILD_RPATH OFF)
add_dependencies(prog_dl_check thpemu_dltest)

# core/io on real devices: data integrity through the page cache and writeback (a verifier reads
# the files back from the device's backing store), writeback errors and a killed daemon, the
# device life cycle of `thpemu run` (private mounts, cleanup on signals), and bad options.
add_executable(io_verify ${CMAKE_CURRENT_LIST_DIR}/io_verify.c)
target_link_libraries(io_verify PRIVATE thpemu_io thpemu_util)
set_target_properties(io_verify PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)

thpemu_add_test(NAME integration/io_cli COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/io_cli.sh
                LABELS integration needs-uffd needs-root TIMEOUT 300)
foreach(t data errors device)
  thpemu_add_test(NAME integration/io_${t} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/io_${t}.sh
                  LABELS integration needs-uffd needs-fuse needs-root TIMEOUT 600)
endforeach()
# real writers (rsync, cp, dd, tar, python) through the machine's page cache on fusedev
thpemu_add_test(NAME integration/io_writers COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/io_writers.sh
                LABELS integration needs-uffd needs-fuse needs-root TIMEOUT 300)
# the 3.x request list live: get_request_wait's bound and sleeps (linux-3.2), none for modern
thpemu_add_test(NAME integration/io_requests COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/io_requests.sh
                LABELS integration needs-uffd needs-fuse needs-root TIMEOUT 300)

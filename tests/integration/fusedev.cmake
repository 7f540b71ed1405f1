# fusedev integration tests: real FUSE mounts of thpemu-fusedev (root, /dev/fuse).
add_executable(fusedev_io ${CMAKE_CURRENT_LIST_DIR}/fusedev_io.c)
target_link_libraries(fusedev_io PRIVATE thpemu_util PkgConfig::URING)
set_target_properties(fusedev_io PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})

# Shell tests on a real mount (root, /dev/fuse); they skip without them, except under CI=true.
foreach(t bandwidth data faults kill cli control interrupt)
  thpemu_add_test(NAME integration/fusedev_${t}
                  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/fusedev_${t}.sh
                  LABELS integration needs-fuse needs-root TIMEOUT 180)
endforeach()

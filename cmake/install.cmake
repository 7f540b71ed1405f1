# `cmake --install build --prefix P`: the layout of a Debian tool, relocatable.
#   P/bin                      thpemu, thpemu-fusedev, thpemu-replayer, usemem, thpemu-wl (the
#                              oracle's workload suite: core/oracle/workloads)
#   P/lib/thpemu               libthpemu.so: a private library (it is only ever LD_PRELOADed by
#                              `thpemu run`, nothing links it), so it stays out of the linker's
#                              path, as Debian keeps a package's private objects in /usr/lib/PKG;
#                              libthpemu-jemalloc.so (where built: the jemalloc `thpemu run`
#                              preloads, core/preload/jemalloc/jemalloc.c), private the same way
#   P/lib/thpemu/plugins       the example policy plugins (demo/plugins)
#   P/lib/thpemu/thpemu-snapshot  `thpemu snapshot`, static, to copy into a guest (not run here)
#   P/lib/thpemu/thpemu-wl-static  the workload suite, static, for the guests `thpemu oracle` boots
#   P/include/thpemu           thpemu.h, thpemu_policy.h
#   P/share/pkgconfig          thpemu.pc (headers only: arch-independent), prefix = its own place
#   P/share/man/man1           thpemu.1, thpemu-COMMAND.1, thpemu-fusedev.1, thpemu-replayer.1,
#                              usemem.1, made from --help by help2man at build time
# Nothing names P: `thpemu` finds libthpemu.so and libthpemu-jemalloc.so from /proc/self/exe
# (beside it in build/, else ../lib/thpemu), its helpers beside it, and every installed program
# carries RUNPATH $ORIGIN/../lib/thpemu, so a copied or moved tree works
# (tests/integration/install.sh).
set(THPEMU_PRIVLIBDIR lib/thpemu)
set(_thpemu_exes thpemu_cli thpemu_replayer thpemu_fusedev usemem)
# They carry it in the build tree too (BUILD_WITH_INSTALL_RPATH; there it names a directory that
# does not exist): else CMake pads the build tree's RUNPATH to the install one's length with the
# list of empty entries described below, each the current directory.
foreach(t ${_thpemu_exes})
  set_target_properties(${t} PROPERTIES INSTALL_RPATH "$ORIGIN/../${THPEMU_PRIVLIBDIR}"
                                        BUILD_WITH_INSTALL_RPATH ON)
endforeach()
# libthpemu.so needs only system libraries (libunwind, libm, libc; liburing where its archive is
# not installed): no RUNPATH, in the
# build tree or installed. The loader searches a RUNPATH's directories (and their glibc-hwcaps,
# tls and x86_64 subdirectories) for every library it needs before its cache: $ORIGIN cost every
# managed process 30 failed opens, and in the build tree the install RUNPATH's placeholder
# (CMake pads the build RUNPATH with ':' to the install one's length) is a list of empty entries,
# each the current directory (glibc elf/dl-load.c: fillin_rpath), where a liburing.so.2 would be
# loaded into every managed process.
set_target_properties(thpemu_preload PROPERTIES SKIP_BUILD_RPATH ON)

install(TARGETS ${_thpemu_exes} RUNTIME DESTINATION bin)
install(TARGETS thpemu_preload LIBRARY DESTINATION ${THPEMU_PRIVLIBDIR})
if(TARGET thpemu_jemalloc)
  install(TARGETS thpemu_jemalloc LIBRARY DESTINATION ${THPEMU_PRIVLIBDIR})
endif()
install(TARGETS thpemu_snapshot_static RUNTIME DESTINATION ${THPEMU_PRIVLIBDIR})
file(GLOB _plugin_srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/demo/plugins/*.c)
foreach(src ${_plugin_srcs})
  get_filename_component(_name ${src} NAME_WE)
  install(TARGETS plugin_${_name} LIBRARY DESTINATION ${THPEMU_PRIVLIBDIR}/plugins)
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/core/include/thpemu.h
              ${PROJECT_SOURCE_DIR}/core/include/thpemu_policy.h
        DESTINATION include/thpemu)
configure_file(${CMAKE_CURRENT_LIST_DIR}/thpemu.pc.in ${CMAKE_BINARY_DIR}/thpemu.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/thpemu.pc DESTINATION share/pkgconfig)

# Man pages from --help (help2man). The thpemu command list is read from `thpemu --help` when
# the pages are made, so a new command gets its page without an edit here.
# Sanitizer and fuzz builds make none: their binaries are not for installing, and running them at
# build time (TSan, libFuzzer's instrumentation) can fail for reasons unrelated to the pages.
find_program(HELP2MAN help2man)
if(HELP2MAN AND THPEMU_SANITIZE STREQUAL "" AND NOT THPEMU_FUZZ)
  set(_mandir ${CMAKE_BINARY_DIR}/man/man1)
  add_custom_command(
    OUTPUT ${CMAKE_BINARY_DIR}/man/stamp
    COMMAND ${CMAKE_COMMAND} -DHELP2MAN=${HELP2MAN} -DOUT=${_mandir}
            -DTHPEMU=$<TARGET_FILE:thpemu_cli> -DFUSEDEV=$<TARGET_FILE:thpemu_fusedev>
            -DREPLAYER=$<TARGET_FILE:thpemu_replayer> -DUSEMEM=$<TARGET_FILE:usemem>
            -P ${CMAKE_CURRENT_LIST_DIR}/manpages.cmake
    COMMAND ${CMAKE_COMMAND} -E touch ${CMAKE_BINARY_DIR}/man/stamp
    DEPENDS thpemu_cli thpemu_fusedev thpemu_replayer usemem
            ${CMAKE_CURRENT_LIST_DIR}/manpages.cmake ${CMAKE_CURRENT_LIST_DIR}/help2man-usage.sh
    COMMENT "Man pages from --help (help2man)")
  add_custom_target(thpemu_man ALL DEPENDS ${CMAKE_BINARY_DIR}/man/stamp)
  install(DIRECTORY ${_mandir}/ DESTINATION share/man/man1 FILES_MATCHING PATTERN "*.1")
elseif(NOT HELP2MAN)
  message(STATUS "help2man not found: no man pages (apt-get install help2man; .ci/deps has it)")
endif()

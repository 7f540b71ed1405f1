# core/inprocess: the emulator inside someone else's process - its descriptors, threads,
# credentials, forks and sandboxes never reach, show to or break the program.
foreach(t fds io_fail creds fork sandbox host secure soak)
  thpemu_add_test(NAME integration/guard_${t}
                  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/guard_${t}.sh
                  LABELS integration needs-uffd needs-root)
endforeach()

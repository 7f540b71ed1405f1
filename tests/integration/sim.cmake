# thpemu sim: command-line errors, determinism, the 2011 seed scenario's findings, khugepaged,
# writebackCP's ordering per kernel,
# speed.
# Pure computation (virtual time): no root, userfaultfd or FUSE needed.
foreach(t sim_cli sim_determinism sim_seed2011 sim_khugepaged sim_speed sim_writebackcp)
  thpemu_add_test(NAME integration/${t}
                  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/${t}.sh
                  LABELS integration parallel TIMEOUT 600)
endforeach()

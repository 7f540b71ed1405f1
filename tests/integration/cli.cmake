# The command line as a hostile or careless user drives it: output paths checked
# before any work (no symbolic link followed), values refused with one line, the library's
# limits, and the leftovers of SIGKILLed runs removed by the next one.
thpemu_add_test(NAME integration/run_cli
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/run_cli.sh
                LABELS integration needs-uffd needs-root TIMEOUT 300)
thpemu_add_test(NAME integration/run_kill
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/run_kill.sh
                LABELS integration needs-uffd needs-fuse needs-root TIMEOUT 300)
# thpemu policies: the sysfs-pair names, aliases, and host against this machine's /sys.
thpemu_add_test(NAME integration/policies
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/policies.sh
                LABELS integration parallel TIMEOUT 60)
# thpemu run as a launcher: signals reach the program as natively (never a SIGKILL instead), the
# caller's mask and dispositions, death by the program's signal, ^C/^Z/fg on a pty.
thpemu_add_test(NAME integration/run_signals
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/run_signals.sh
                LABELS integration needs-uffd needs-root TIMEOUT 120)
# Outputs on a full file system (a tiny tmpfs): exit 1, one line, nothing half-written; a reader
# of stderr going away does not cost the report.
thpemu_add_test(NAME integration/run_outputs
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/run_outputs.sh
                LABELS integration needs-uffd needs-root TIMEOUT 120)
# Unmanaged runs said and counted (no userfaultfd, a change of user, a static binary, a step
# aside), and --require-managed's exit status 3.
thpemu_add_test(NAME integration/run_unmanaged
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/run_unmanaged.sh
                LABELS integration needs-uffd needs-root TIMEOUT 120)

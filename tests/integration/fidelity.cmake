# thpemu fidelity: thpemu against a real kernel from the same memory (core/oracle/README.md).
# Its command line: refusals before any work, environment failures, no qemu needed.
thpemu_add_test(NAME integration/fidelity_cli
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/fidelity_cli.sh
                LABELS integration parallel TIMEOUT 120)
# One small real comparison: 6.12, 512 MiB, pinned, 2 boots and 2 runs per setting; only
# invariants (no fragmentation: all huge on both sides; defrag=never: no compaction stall on
# either side). Boots real kernels under qemu (TCG) and runs thpemu: minutes.
thpemu_add_test(NAME integration/fidelity_real
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/fidelity_real.sh
                LABELS integration parallel needs-qemu needs-uffd needs-root TIMEOUT 1800)
# A program of your own (demo/fragtouch, static and dynamic) in one command: one pinned 6.12 boot
# and one thpemu run, the counters over the whole program on both sides (about a minute).
thpemu_add_test(NAME integration/fidelity_program
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/fidelity_program.sh
                LABELS integration parallel needs-qemu needs-uffd needs-root TIMEOUT 600)

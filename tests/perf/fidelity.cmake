# The whole fidelity suite's command (tests/perf/fidelity_suite.sh) on something small: its
# option refusals, its totals from kept JSONs (--tally), and one cell of one boot (mthp, 6.12,
# 512 MiB) run for real: its row is its JSON's verdicts. Boots a real kernel under qemu (TCG):
# about a minute.
thpemu_add_test(NAME perf/fidelity_suite
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/fidelity_suite_check.sh
                LABELS perf parallel needs-qemu needs-uffd needs-root TIMEOUT 600)

# Policy x workload x run matrices: thpemu matrix locally (cells one at a time,
# resumable, bad input) and as a Slurm job array on a one-node Slurm the test starts itself
# (policy cells, and one cell of the fidelity suite).
thpemu_add_test(NAME integration/matrix_local
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/matrix_local.sh
                LABELS integration needs-uffd needs-root TIMEOUT 120)
thpemu_add_test(NAME integration/matrix_slurm
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/matrix_slurm.sh
                LABELS integration needs-uffd needs-root TIMEOUT 400)

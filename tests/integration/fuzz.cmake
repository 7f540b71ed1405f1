# Inputs the fuzz targets (tests/fuzz) found, replayed through the commands: pure computation,
# no root, userfaultfd or FUSE needed.
thpemu_add_test(NAME integration/fuzz_regress
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/fuzz_regress.sh
                LABELS integration parallel TIMEOUT 300)

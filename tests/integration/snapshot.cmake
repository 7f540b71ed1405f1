# Snapshots of a machine's physical memory and pools that start from one (core/snapshot): bad
# input, this host's round trip through a named machine, the static helper, sampled pools.
thpemu_add_test(NAME integration/snapshot
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/snapshot.sh
                LABELS integration needs-uffd needs-root TIMEOUT 300)

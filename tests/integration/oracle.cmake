# The real-kernel oracle (core/oracle/README.md).
# thpemu oracle's command line: refusals before any work, environment failures, no qemu needed.
thpemu_add_test(NAME integration/oracle_cli
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/oracle_cli.sh
                LABELS integration parallel TIMEOUT 120)
# The workload suite natively and under thpemu run: the same ORACLE lines in both worlds.
thpemu_add_test(NAME integration/oracle_workloads
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/oracle_workloads.sh
                LABELS integration needs-uffd needs-root TIMEOUT 300)
# A workload's file in the pool: thpscale and thpcompact under thpemu run --device fast write
# it through thpemu-fusedev, so its pages are the machine's page cache (--fs tmpfs: never dirty,
# written back or reclaimed; ext4: dirty, written back); without a device the pool has none.
thpemu_add_test(NAME integration/oracle_wl_file
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/oracle_wl_file.sh
                LABELS integration needs-uffd needs-fuse needs-root TIMEOUT 300)
# The pinned CI subset: both kernels, three settings, 512 MiB, invariants that hold on every
# boot (no fragmentation: all huge; defrag=never: no compaction stall; an mlocked filler with
# compact_unevictable_allowed=0: compaction fails, faults fall back), and a pinned boot
# repeated gives the same counters. Boots real kernels under qemu (TCG): minutes.
thpemu_add_test(NAME integration/oracle_pinned
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/oracle_pinned.sh
                LABELS integration parallel needs-qemu TIMEOUT 900)

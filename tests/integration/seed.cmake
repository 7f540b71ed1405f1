# demo/seed-2011.sh --quick: the 2011 findings on real faults, a real slow device and captured
# stacks (root, userfaultfd, FUSE; skips without them, fails instead under CI=true). Label
# slow-device: they wait on the emulated USB stick most of the time (a few % of a CPU each), so
# CI runs them side by side with each other, apart from the serial tests that time.
foreach(k 3.2 3.1)
  thpemu_add_test(NAME integration/seed2011_${k}
                  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/seed2011.sh ${k}
                  LABELS integration slow-device needs-uffd needs-fuse needs-root TIMEOUT 900)
endforeach()
# four usemem processes stalling concurrently on one machine: every stall carries the stack of
# the thread that faulted (or says why it has none)
thpemu_add_test(NAME integration/stall_stacks
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/stall_stacks.sh
                LABELS integration slow-device needs-uffd needs-fuse needs-root TIMEOUT 900)

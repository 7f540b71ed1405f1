# USDT probes (core/obs/usdt.h): listed by readelf/bpftrace, and a demo/bpftrace script sees a
# real run's faults (needs root, BPF and Debian's bpftrace).
thpemu_add_test(NAME integration/usdt
                COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/usdt.sh
                LABELS integration needs-uffd needs-root TIMEOUT 90)

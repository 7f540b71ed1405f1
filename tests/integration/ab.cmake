# Policy A/B testing, reports and fault traces: thpemu ab with statistics and the HTML
# report rendered in headless Chromium, traces replayed in the simulator and live.
thpemu_add_test(NAME integration/replay
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/replay.sh
                LABELS integration needs-uffd needs-root TIMEOUT 900)
thpemu_add_test(NAME integration/ab_cli
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/ab_cli.sh
                LABELS integration needs-uffd needs-root TIMEOUT 600)
# ab_seed waits on the emulated USB stick most of the time: slow-device (seed.cmake)
thpemu_add_test(NAME integration/ab_seed
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/ab_seed.sh
                LABELS integration slow-device needs-uffd needs-fuse needs-root TIMEOUT 1500)
thpemu_add_test(NAME integration/report_mthp
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/report_mthp.sh
                LABELS integration parallel TIMEOUT 300)
thpemu_add_test(NAME integration/report_single
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/report_single.sh
                LABELS integration needs-uffd needs-root TIMEOUT 120)
thpemu_add_test(NAME integration/report_html
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/report_html.sh
                LABELS integration parallel TIMEOUT 300)

# Install: cmake --install into a temporary prefix, copied elsewhere; the README's
# examples, man pages, pkg-config plugin build and RUNPATHs checked from the copy.
thpemu_add_test(NAME integration/install
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/install.sh
                LABELS integration needs-uffd needs-fuse needs-root TIMEOUT 120)

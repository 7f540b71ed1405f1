# Policy plugins: the example plugins change decisions in thpemu run and thpemu sim;
# broken plugins (built here) are one line and exit 2 from the CLI, and one line plus the
# built-in policy under a bare LD_PRELOAD. evil_marker.so only records that it was loaded
# (machine_squat: a squatter's plugin= must never be).
file(GLOB _badplugins CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/plugins/*.c)
foreach(src ${_badplugins})
  get_filename_component(_name ${src} NAME_WE)
  add_library(testplugin_${_name} MODULE ${src})
  set_target_properties(testplugin_${_name} PROPERTIES PREFIX "" OUTPUT_NAME ${_name}
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/plugins)
  target_include_directories(testplugin_${_name} PRIVATE ${PROJECT_SOURCE_DIR}/core/include)
endforeach()
thpemu_add_test(NAME integration/plugin
                COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/plugin.sh
                LABELS integration needs-uffd needs-root TIMEOUT 300)

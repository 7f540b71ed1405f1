# cmake -P: the man pages, made by help2man from each program's --help and --version.
# In: HELP2MAN, OUT (a man1 directory), THPEMU, FUSEDEV, REPLAYER, USEMEM (executables).
get_filename_component(ROOT ${OUT} DIRECTORY)
file(REMOVE_RECURSE ${OUT} ${ROOT}/wrap)
file(MAKE_DIRECTORY ${OUT} ${ROOT}/wrap)

# help2man takes "Usage:" (and "or:" lines) for the SYNOPSIS; the programs print "usage:" with
# indented further forms. Each runs through a wrapper that rewrites that block
# (help2man-usage.sh) and keeps the program's exit status.
function(wrap prog out)
  file(WRITE ${out} "#!/bin/sh\nexec sh \"${CMAKE_CURRENT_LIST_DIR}/help2man-usage.sh\" \"${prog}\" \"$@\"\n")
  file(CHMOD ${out} PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE)
endfunction()

# page NAME PROGRAM DESCRIPTION [help option] [include file]
function(page name prog desc helpopt incl)
  get_filename_component(base ${prog} NAME)
  set(w ${ROOT}/wrap/${base})
  wrap(${prog} ${w})
  set(prog ${w})
  set(args --no-info --version-option=--version "--help-option=${helpopt}" -n "${desc}"
      -o ${OUT}/${name}.1)
  if(incl)
    list(APPEND args --include ${incl})
  endif()
  execute_process(COMMAND ${HELP2MAN} ${args} ${prog} RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "help2man ${name}: ${err}")
  endif()
endfunction()

execute_process(COMMAND ${THPEMU} --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "thpemu --help failed (${rc})")
endif()
string(REGEX REPLACE ".*\nCommands:\n" "" cmds "${help}")
string(REGEX REPLACE "\n\n.*" "" cmds "${cmds}")
string(REPLACE "\n" ";" cmds "${cmds}")

set(seealso "[SEE ALSO]\n.nh\n")
foreach(line ${cmds})
  if(line MATCHES "^  ([a-z][a-z0-9-]*) +(.*)$")
    list(APPEND names ${CMAKE_MATCH_1})
    set(summary_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
    string(APPEND seealso ".BR thpemu-${CMAKE_MATCH_1} (1),\n")
  endif()
endforeach()
string(APPEND seealso ".BR thpemu-fusedev (1),\n.BR thpemu-replayer (1),\n.BR usemem (1)\n")
file(WRITE ${ROOT}/seealso.h2m "${seealso}")

page(thpemu ${THPEMU} "userspace emulator of Linux transparent huge pages" --help
     ${ROOT}/seealso.h2m)
foreach(c ${names})
  # thpemu-CMD.1 documents `thpemu CMD`: help2man names the page after the program, rename it
  page(thpemu-${c} ${THPEMU} "${summary_${c}}" "${c} --help" "")
  file(READ ${OUT}/thpemu-${c}.1 txt)
  string(TOUPPER "${c}" uc)
  string(REPLACE ".TH THPEMU \"1\"" ".TH THPEMU-${uc} \"1\"" txt "${txt}")
  string(REGEX REPLACE "\n\\.SH NAME\nthpemu \\\\- " "\n.SH NAME\nthpemu-${c} \\\\- " txt "${txt}")
  string(APPEND txt ".SH \"SEE ALSO\"\n.nh\n.BR thpemu (1)\n")
  file(WRITE ${OUT}/thpemu-${c}.1 "${txt}")
endforeach()
page(thpemu-fusedev ${FUSEDEV} "slow-device FUSE filesystem for thpemu's writeback" --help "")
page(thpemu-replayer ${REPLAYER} "act out a thpemu fault trace in a real process" --help "")
page(usemem ${USEMEM} "self-timing first-touch workload for THP experiments" --help "")

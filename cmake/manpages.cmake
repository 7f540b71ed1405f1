# cmake -P: the man pages, made by help2man from each program's --help and --version.
# In: HELP2MAN, OUT (a man1 directory), THPEMU, FUSEDEV, REPLAYER, USEMEM (executables).
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})

# page NAME PROGRAM DESCRIPTION [help option] [include file]
function(page name prog desc helpopt incl)
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

set(seealso "[SEE ALSO]\n")
foreach(line ${cmds})
  if(line MATCHES "^  ([a-z][a-z0-9-]*) +(.*)$")
    list(APPEND names ${CMAKE_MATCH_1})
    set(summary_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
    string(APPEND seealso ".BR thpemu-${CMAKE_MATCH_1} (1),\n")
  endif()
endforeach()
string(APPEND seealso ".BR thpemu-fusedev (1),\n.BR thpemu-replayer (1),\n.BR usemem (1)\n")
file(WRITE ${OUT}/../seealso.h2m "${seealso}")

page(thpemu ${THPEMU} "userspace emulator of Linux transparent huge pages" --help
     ${OUT}/../seealso.h2m)
foreach(c ${names})
  # thpemu-CMD.1 documents `thpemu CMD`: help2man names the page after the program, rename it
  page(thpemu-${c} ${THPEMU} "${summary_${c}}" "${c} --help" "")
  file(READ ${OUT}/thpemu-${c}.1 txt)
  string(TOUPPER "${c}" uc)
  string(REPLACE ".TH THPEMU \"1\"" ".TH THPEMU-${uc} \"1\"" txt "${txt}")
  string(REGEX REPLACE "\n\\.SH NAME\nthpemu \\\\- " "\n.SH NAME\nthpemu-${c} \\\\- " txt "${txt}")
  string(APPEND txt ".SH \"SEE ALSO\"\n.BR thpemu (1)\n")
  file(WRITE ${OUT}/thpemu-${c}.1 "${txt}")
endforeach()
page(thpemu-fusedev ${FUSEDEV} "slow-device FUSE filesystem for thpemu's writeback" --help "")
page(thpemu-replayer ${REPLAYER} "act out a thpemu fault trace in a real process" --help "")
page(usemem ${USEMEM} "self-timing first-touch workload for THP experiments" --help "")

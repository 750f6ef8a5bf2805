# run_checked(OUTPUT_VAR command...): runs a command, fails the test with its output if it fails.
function(run_checked out)
  execute_process(COMMAND ${ARGN} OUTPUT_VARIABLE o ERROR_VARIABLE e RESULT_VARIABLE rc TIMEOUT 240)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}\n${o}\n${e}")
  endif()
  set(${out} "${o}" PARENT_SCOPE)
endfunction()

# absolute(OUT x): |x| for a decimal number (math() has no floats: drop the sign).
function(absolute out x)
  string(REGEX REPLACE "^-" "" x "${x}")
  set(${out} "${x}" PARENT_SCOPE)
endfunction()

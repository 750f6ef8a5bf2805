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

# replay_on_4(SCENARIO settings...): exports the scenario's step with the settings to OUT/graph.json,
# replays it on 4 CPU ranks into OUT/measured, and reads both into `graph` and `measured` (and
# the op count into `ops`), failing unless the measured timeline has every op on 4 ranks.
macro(replay_on_4 scenario)
  run_checked(o ${SHARDSIM} export ${scenario} ${ARGN} --out ${OUT}/graph.json)
  run_checked(o ${REPLAY} --graph ${OUT}/graph.json --backend cpu --out ${OUT}/measured --compute-scale 0.02 --bytes-scale 0.1
              --timeout 120)
  message(STATUS "${o}")
  file(READ ${OUT}/measured/timeline.json measured)
  file(READ ${OUT}/graph.json graph)
  string(JSON ranks GET "${measured}" ranks)
  string(JSON ops LENGTH "${measured}" ops)
  string(JSON graph_ops LENGTH "${graph}" ops)
  if(NOT ranks EQUAL 4 OR NOT ops EQUAL graph_ops)
    message(FATAL_ERROR "measured timeline: ${ops} ops on ${ranks} ranks; expected ${graph_ops} on 4")
  endif()
endmacro()

# check_overlap(OP A B WHAT): fails unless ranks A and B ran op OP of `measured` at overlapping
# times (neither ended before the other started), as the two members of a collective or a send
# must.
function(check_overlap i a b what)
  string(JSON sa GET "${measured}" ops ${i} start ${a})
  string(JSON sb GET "${measured}" ops ${i} start ${b})
  string(JSON ea GET "${measured}" ops ${i} end ${a})
  string(JSON eb GET "${measured}" ops ${i} end ${b})
  if(ea LESS sb OR eb LESS sa)
    message(FATAL_ERROR "op ${i} (${what}): ranks ${a} and ${b} did not overlap: [${sa}, ${ea}] and [${sb}, ${eb}]")
  endif()
endfunction()

# Ring steps through the replay harness on the CPU backend, on 4 MPI processes: context
# parallelism's K/V rotation (CP 2 x FSDP 2, cp_rotate: alltoall, so that forward and backward
# both pass K and V around the ring) and async TP's chunk copies (TP 2 x FSDP 2, compiled). Every
# member of a ring step sends to the next one and receives from the one before, so each step's
# group ({0,1} and {2,3} for CP 2 and TP 2, the innermost dimension either way) must overlap in
# time, and the step must run to the end with every op on every rank. A wrong group hangs into
# the timeout.
include(${CMAKE_CURRENT_LIST_DIR}/run_checked.cmake)
set(scenario ${SOURCE}/tests/data/tiny_llama.yaml)
set(common --set cluster.overrides.node.gpus=4 --set fsdp.version=2 --set fsdp.backward_prefetch=pre)
set(cp_job --set parallelism.cp=2 --set parallelism.cp_rotate=alltoall)
set(tp_job --set parallelism.tp=2 --set training.compile=true --set parallelism.tp_async=true)
set(root ${OUT})
foreach(job cp tp)
  set(OUT ${root}/${job})
  file(REMOVE_RECURSE ${OUT})
  file(MAKE_DIRECTORY ${OUT})
  replay_on_4(${scenario} ${common} ${${job}_job})
  set(steps 0)
  math(EXPR last_op "${ops} - 1")
  foreach(i RANGE ${last_op})
    string(JSON kind GET "${graph}" ops ${i} kind)
    if(kind STREQUAL "cpu_wait")
      continue()
    endif()
    foreach(r RANGE 3)
      string(JSON start GET "${measured}" ops ${i} start ${r})
      if(start STREQUAL "")  # a null: never ran there
        message(FATAL_ERROR "${job}: op ${i} (${kind}) did not run on rank ${r}")
      endif()
    endforeach()
    if(kind STREQUAL "send")
      math(EXPR steps "${steps} + 1")
      check_overlap(${i} 0 1 "${job} ring step")
      check_overlap(${i} 2 3 "${job} ring step")
    endif()
  endforeach()
  if(steps EQUAL 0)
    message(FATAL_ERROR "${job}: the schedule has no ring step")
  endif()
  message(STATUS "${job}: ${steps} ring steps, each joined by its group")
endforeach()

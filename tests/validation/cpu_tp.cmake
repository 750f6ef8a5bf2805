# Tensor parallelism through the replay harness on the CPU backend: a TP 2 x FSDP 2 schedule of
# the tiny Llama on 4 MPI processes, its communicators split by the same layout the simulator
# uses (graph::Groups: TP groups {0,1} {2,3}, shard groups {0,2} {1,3}). It must run to the end
# with every op on every rank, and the members of each collective's group must overlap in it
# (none finishes before the other started). A split the graph does not expect hangs into the
# timeout or fails; that the timing is right is cpu_loop's business.
include(${CMAKE_CURRENT_LIST_DIR}/run_checked.cmake)
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
set(scenario ${SOURCE}/tests/data/tiny_llama.yaml)
set(sets --set cluster.overrides.node.gpus=4 --set fsdp.version=2 --set parallelism.tp=2 --set fsdp.backward_prefetch=pre)

replay_on_4(${scenario} ${sets})
set(tp_ops 0)
math(EXPR last_op "${ops} - 1")
foreach(i RANGE ${last_op})
  string(JSON group GET "${graph}" ops ${i} group)
  if(group STREQUAL "tp")
    set(groups "0,1" "2,3")
    math(EXPR tp_ops "${tp_ops} + 1")
  elseif(group STREQUAL "shard")
    set(groups "0,2" "1,3")
  elseif(group STREQUAL "none")
    continue()
  else()
    message(FATAL_ERROR "op ${i}: unexpected group ${group}")
  endif()
  foreach(members IN LISTS groups)
    string(REGEX MATCHALL "[0-9]+" m "${members}")
    list(GET m 0 a)
    list(GET m 1 b)
    check_overlap(${i} ${a} ${b} ${group})
  endforeach()
endforeach()
if(tp_ops EQUAL 0)
  message(FATAL_ERROR "the schedule has no tensor-parallel collective")
endif()
message(STATUS "${tp_ops} TP collectives, each joined only by its group")

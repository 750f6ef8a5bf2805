# The fuzz test: builds the libFuzzer target of the config loader with clang, AddressSanitizer
# and UBSan in BUILD_DIR (once; later runs rebuild incrementally), then fuzzes for SECONDS starting
# from the committed corpus (tests/fuzz/corpus). New inputs go to BUILD_DIR/work, never into the
# source tree. Any crash, sanitizer report, uncaught exception, input slower than 10 s or using
# more than 2 GB fails the test and leaves the input in BUILD_DIR/artifacts/.
#   cmake -DSOURCE_DIR=... -DBUILD_DIR=... -DSECONDS=60 -P run_fuzz.cmake
find_program(CLANGXX NAMES clang++-14 clang++)
if(NOT CLANGXX)
  message(FATAL_ERROR "clang++ not found: fuzzing needs clang and libFuzzer (Debian: clang-14 libclang-rt-14-dev)")
endif()
if(NOT DEFINED JOBS)
  set(JOBS 2)
endif()

if(NOT EXISTS ${BUILD_DIR}/CMakeCache.txt)
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${BUILD_DIR} -DCMAKE_CXX_COMPILER=${CLANGXX}
                          -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHARDSIM_FUZZ=ON -DSHARDSIM_TESTS=OFF
                  RESULT_VARIABLE rc OUTPUT_QUIET)
  if(NOT rc EQUAL 0)
    file(REMOVE ${BUILD_DIR}/CMakeCache.txt)
    message(FATAL_ERROR "configuring the fuzz build failed (${rc})")
  endif()
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target shardsim_config_fuzz -j ${JOBS} RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the fuzz target failed (${rc})")
endif()

file(REMOVE_RECURSE ${BUILD_DIR}/work)
file(MAKE_DIRECTORY ${BUILD_DIR}/work ${BUILD_DIR}/artifacts)
set(fuzzer ${BUILD_DIR}/tests/fuzz/shardsim_config_fuzz)
execute_process(COMMAND ${fuzzer} -max_total_time=${SECONDS} -timeout=10 -rss_limit_mb=2048 -max_len=8192
                        -dict=${SOURCE_DIR}/tests/fuzz/config.dict -artifact_prefix=${BUILD_DIR}/artifacts/ -print_final_stats=1
                        ${BUILD_DIR}/work ${SOURCE_DIR}/tests/fuzz/corpus
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE log)
string(REGEX MATCH "stat::number_of_executed_units: *[0-9]+" runs "${log}")
string(REGEX MATCH "stat::average_exec_per_sec: *[0-9]+" rate "${log}")
string(REGEX MATCH "stat::peak_rss_mb: *[0-9]+" rss "${log}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the fuzzer found a failure (exit ${rc}); the input is in ${BUILD_DIR}/artifacts/\n"
                      "reproduce: ${fuzzer} ${BUILD_DIR}/artifacts/<file>\n${log}")
endif()
message(STATUS "fuzzed the config loader for ${SECONDS} s without a failure: ${runs}, ${rate}, ${rss}")

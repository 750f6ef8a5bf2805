# Every doctest::Approx in the tests says its scale: doctest's default (1) adds an absolute slack
# of epsilon x 1 to the comparison, so a check on microseconds or milliseconds with .epsilon(1e-3)
# passes whatever the value is (two checks had gone stale unseen that way: see the history of
# tests/unit/cli/async_tp_test.cpp). Write .scale(0) for a relative comparison, or a scale that
# gives the absolute slack the quantity needs; a comparison with zero is written Approx(0) or
# Approx(0.0) and is exempt. Run: cmake -DSOURCE_DIR=<repo> -P tests/lint/approx_relative.cmake
file(GLOB_RECURSE sources "${SOURCE_DIR}/tests/*.cpp")
set(bad "")
foreach(f ${sources})
  file(READ "${f}" text)
  set(rest "${text}")
  string(FIND "${rest}" "doctest::Approx(" at)
  while(at GREATER -1)
    string(SUBSTRING "${rest}" ${at} -1 rest)
    # The statement the Approx is in, up to its semicolon.
    string(FIND "${rest}" ";" end)
    string(SUBSTRING "${rest}" 0 ${end} statement)
    if(NOT statement MATCHES "^doctest::Approx\\(0(\\.0)?\\)" AND NOT statement MATCHES "\\.scale\\(")
      string(SUBSTRING "${statement}" 0 80 shown)
      string(REGEX REPLACE "[\r\n]+ *" " " shown "${shown}")
      list(APPEND bad "${f}: ${shown}")
    endif()
    string(SUBSTRING "${rest}" 1 -1 rest)
    string(FIND "${rest}" "doctest::Approx(" at)
  endwhile()
endforeach()
if(bad)
  list(LENGTH bad count)
  list(JOIN bad "\n  " listed)
  message(FATAL_ERROR "${count} doctest::Approx without a scale (an absolute slack that can hide a wrong value):\n  ${listed}")
endif()

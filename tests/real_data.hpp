// The real measurements in ../shared/real-data (profiler traces, nccl-tests logs) are not part
// of a clone: a test that reads one skips, saying so, where it is absent.
#pragma once

#include <doctest/doctest.h>

#include <filesystem>

#include "test_support.hpp"

namespace shardsim::test {

// The file, or an empty path (and a message that the test skipped) when it is not there.
inline std::filesystem::path real_data(const char* name) {
  const auto p = source_dir() / ".." / "shared" / "real-data" / name;
  if (!std::filesystem::exists(p)) {
    MESSAGE("skipped: " << p.string() << " is absent (../shared/real-data is not part of a clone)");
    return {};
  }
  return p;
}

}  // namespace shardsim::test

// What the report tests share: a GPU with the figures summarize() needs (80 GB, 1 PFLOPS bf16,
// 100 TFLOPS fp32) and nothing else set.
#pragma once

#include "config/topology.hpp"

namespace shardsim::test {

inline config::TopologyConfig minimal_topology() {
  config::TopologyConfig t;
  t.gpu.memory = Bytes(80e9);
  t.gpu.peak_bf16 = FlopRate(1e15);
  t.gpu.peak_fp32 = FlopRate(1e14);
  return t;
}

}  // namespace shardsim::test

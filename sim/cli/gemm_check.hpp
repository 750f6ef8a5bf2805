// Measured GEMMs beside the compute model (`shardsim calibrate --topology FILE`): each sample's time
// as the topology's nominal model prices it (engine::RooflineModel), and, for shapes timed in both
// bf16 and float8 (shardsim-bench --fp8), the float8 speed-up measured against the model's: whether
// the topology's float8 rate holds at those shapes, before any calibration replaces it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/topology.hpp"
#include "validate/bench_data.hpp"

namespace shardsim::cli {

struct GemmCheckRow {
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  bool fp8 = false;
  double measured = 0;  // seconds
  double modelled = 0;  // seconds; 0 where the topology has no rate for the type (float8 on a GPU without it)
};

struct GemmSpeedup {
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  double measured = 0;  // bf16 time / float8 time
  double modelled = 0;
};

struct GemmCheck {
  std::vector<GemmCheckRow> rows;
  std::vector<GemmSpeedup> speedups;  // shapes timed in both dtypes
};

[[nodiscard]] GemmCheck check_gemms(const validate::BenchResults& bench, const config::TopologyConfig& topology);
[[nodiscard]] std::string gemm_check_text(const GemmCheck& check, const std::string& topology_name);

}  // namespace shardsim::cli

// Microbenchmark results ("shardsim-bench" JSON): what validation/'s shardsim-bench measures and
// `shardsim calibrate` fits. Sizes are nominal (the graph's units): a backend that runs scaled
// kernels (the CPU backend) records the nominal size and the time of the scaled run, so that the
// fitted rates price the graph's ops as that backend runs them. Format: docs/calibration.md.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/calibration.hpp"
#include "graph/op.hpp"
#include "validate/gemm_precision.hpp"

namespace shardsim::validate {

inline constexpr int kBenchFormatVersion = 1;

struct CollectiveSample {
  graph::OpKind kind = graph::OpKind::all_gather;  // all_gather | reduce_scatter | all_reduce
  config::LinkClass link = config::LinkClass::nvlink;
  int ranks = 2;
  int ranks_per_node = 2;
  double bytes = 0;  // total size S (all-gather output, reduce-scatter input, all-reduce buffer)
  double seconds = 0;

  [[nodiscard]] int nodes() const { return ranks / ranks_per_node; }
  // nccl-tests (PERFORMANCE.md): algbw = S / t; busbw = algbw x (n-1)/n, x 2(n-1)/n for all-reduce.
  [[nodiscard]] double bus_factor() const;
  [[nodiscard]] double algbw() const { return bytes / seconds; }
  [[nodiscard]] double busbw() const { return algbw() * bus_factor(); }
};

struct GemmSample {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t batch = 1;
  double seconds = 0;
  // "dtype": "bf16" | "fp8", and for fp8 "accumulate": "fast" (or absent) | "precise".
  GemmPrecision precision = GemmPrecision::bf16;
  [[nodiscard]] double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(batch);
  }
};

struct AttentionSample {
  graph::AttentionCall call;
  double seconds = 0;
};

struct MemorySample {
  double bytes = 0;  // HBM traffic: a copy of N bytes reads N and writes N, 2N in all
  double seconds = 0;
};

struct BenchResults {
  std::string backend;  // cpu | nccl
  std::string device;
  double compute_scale = 1;  // fraction of each kernel's work actually run (CPU backend)
  double bytes_scale = 1;    // fraction of each collective's bytes actually moved
  std::vector<CollectiveSample> collectives;
  std::vector<GemmSample> gemms;
  std::vector<AttentionSample> attention;
  std::vector<MemorySample> memory;

  void append(const BenchResults& o);  // samples of another run of the same backend
};

[[nodiscard]] nlohmann::json to_json(const BenchResults& b);
// Throws ConfigError naming `source` and the key path for malformed input.
[[nodiscard]] BenchResults bench_from_json(const nlohmann::json& j, const std::string& source);

}  // namespace shardsim::validate

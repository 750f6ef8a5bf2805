// Microbenchmarks in the manner of nccl-tests: for each size, warm-up iterations, then timed
// iterations back to back on one stream between two events, the time per iteration being their
// mean; each iteration uses the next of a few buffer offsets ("shifted buffers"), so that no run
// is flattered by reusing the last one's addresses. Collectives are timed on every rank and the
// slowest rank's time kept (a collective is done when its last rank is); bus bandwidth as
// nccl-tests (bench_data.hpp). Sweeps: collective sizes over every power-of-two ring length that
// divides the world (so that calibrate can separate base and per-step latency), GEMM shapes and
// attention calls (from a graph: its own shapes, plus smaller and larger variants to span the
// efficiency curve), and copy sizes for HBM bandwidth.
#pragma once

#include "graph/step_graph.hpp"
#include "replay/backend.hpp"
#include "replay/watchdog.hpp"
#include "validate/bench_data.hpp"

namespace shardsim::replay {

struct BenchOptions {
  bool collectives = true;
  bool gemm = true;
  bool attention = true;
  bool memory = true;
  bool fp8 = false;            // every GEMM shape also in float8 (e4m3, tensorwise scales); the graph's float8 GEMMs are anyway
  double min_bytes = 1 << 10;  // collectives: total size S from..to, x factor
  double max_bytes = double(1 << 30);
  double factor = 4;
  double min_copy = 1 << 20;  // memory: traffic bytes from..to, x factor
  double max_copy = double(1 << 30);
  int warmup = 5;
  int iters = 20;
  int ranks_per_node = 1;                   // from the launcher: decides the link class
  const graph::StepGraph* graph = nullptr;  // GEMM / attention shapes of this graph; else LLM defaults
  double compute_scale = 1;                 // recorded in the results (the backend applies it)
  double bytes_scale = 1;
};

// Collective over all ranks (every rank must call it with the same options).
[[nodiscard]] validate::BenchResults run_microbenchmarks(Backend& b, const BenchOptions& o, Watchdog& w);

}  // namespace shardsim::replay

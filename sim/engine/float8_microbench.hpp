#pragma once
// torchao's float8 microbenchmark (benchmarks/float8/float8_roofline.py, LNLinearSigmoid) priced
// by a compute model, and its measured speed-up tables read back: the kernel-level check of the
// float8 casts and GEMMs (tests/unit/cli/float8_test.cpp, make validate).
#include <cstdint>
#include <filesystem>
#include <vector>

#include "engine/compute_model.hpp"
#include "model/float8.hpp"

namespace shardsim::engine {

// One linear's forward and backward work, as the step graph prices a matmul kernel
// (graph::add_forward_work / add_backward_work): its three GEMMs and, in float8, its casts
// (`fused_casts`: their first read fused into the producer's kernel, as compiled).
[[nodiscard]] graph::Work float8_linear_work(std::int64_t tokens, std::int64_t in, std::int64_t out, model::Float8Recipe recipe,
                                             bool fused_casts);

// Seconds of a compiled LayerNorm (no weights) -> Linear -> Sigmoid, forward and backward, summed
// kernel time, on `tokens` rows of `in` features into `out`: the three GEMMs and, in float8, the
// recipe's casts (the first read fused into the LayerNorm and the sigmoid's backward); the
// LayerNorm moves 2 + 2 bytes an input element forward and 3 x 2 backward, the sigmoid the same
// of the output's.
[[nodiscard]] double ln_linear_sigmoid_seconds(const RooflineModel& m, std::int64_t tokens, std::int64_t in, std::int64_t out,
                                               model::Float8Recipe recipe);

// One measured cell: the speed-up of float8 over bf16 at forward shape M x K -> N.
struct MeasuredSpeedup {
  std::int64_t m = 0;
  std::int64_t k = 0;
  std::int64_t n = 0;
  double speedup = 0;
};

// A table as tests/data/torchao_rowwise_speedups.txt holds it: '#' comment lines, then rows of
// "M K s_1 ... s_c" for N = 1,024, 2,048, ... (c columns, c the same on every row). Throws
// std::runtime_error naming the file and line on anything else.
[[nodiscard]] std::vector<MeasuredSpeedup> read_speedup_table(const std::filesystem::path& path);

struct SpeedupFit {
  double mean = 0;   // of predicted / measured - 1
  double worst = 0;  // the error largest in size, signed
  int cells = 0;
};

// The model's speed-ups against the cells whose M, K and N are all at least `least`.
[[nodiscard]] SpeedupFit fit_speedups(const RooflineModel& m, const std::vector<MeasuredSpeedup>& table, model::Float8Recipe recipe,
                                      std::int64_t least);

}  // namespace shardsim::engine

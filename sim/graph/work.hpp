// Turns a segment's kernels into the Work of its forward and backward ops for one micro-batch.
#pragma once

#include <cstdint>

#include "config/scenario.hpp"
#include "fsdp/plan.hpp"
#include "graph/op.hpp"

namespace shardsim::graph {

struct Batch {
  std::int64_t sequences = 1;  // micro-batch size
  std::int64_t seq_len = 1;
  int cp = 1;  // context parallelism: a rank holds 1/cp of each sequence
  [[nodiscard]] std::int64_t tokens() const { return sequences * seq_len / cp; }  // this rank's
};

// The checkpointing mode that applies to a segment (blocks only; none elsewhere).
[[nodiscard]] model::AcMode checkpoint_mode(const fsdp::Segment& s, const config::TrainingConfig& t);
// Bytes of one of a segment's Activation figures under `mode`, for one micro-batch.
[[nodiscard]] double activation_bytes(const std::array<double, 3>& per_mode, model::AcMode mode, const Batch& b);

[[nodiscard]] Work forward_work(const fsdp::Segment& s, const Batch& b);

// Backward of a segment: first the recompute that `ac` asks for, then the
// gradients: two GEMMs per matmul (input and weight), the attention backward, and memory kernels.
[[nodiscard]] Work backward_work(const fsdp::Segment& s, const Batch& b, model::AcMode ac);

// A bandwidth-bound kernel of `bytes` traffic (copies, casts, the optimizer).
[[nodiscard]] Work memory_work(double bytes, int launches);

}  // namespace shardsim::graph

// Exposed communication by parallel dimension. A moment of the step where a rank's compute stream
// stands idle while some collective of it runs is exposed communication; each such moment is
// charged to one dimension (data, tensor, pipeline or context parallel), so that the dimensions
// add up to the exposed total and read as "what the compute stream waited for".
//
// The moment goes to the collective the compute stream was waiting for. From the compute op that
// ends an idle gap, the walk goes back along the predecessor that ended last on this rank (the op
// that let it start), and from that op to its own, until the walk reaches the gap's start: each op
// on that chain covers the part of the gap from its own start to where the op after it took over.
// The parts a collective covers are its dimension's. A part the chain leaves unexplained (the
// walk met an op of another kind, a copy or a CPU wait, or a collective waited for other ranks to
// be ready) goes, where collectives run in it, to the dimension on the critical path first:
// tensor, then context, then pipeline, then data parallel. A data-parallel all-gather that runs
// while the compute stream waits for a tensor-parallel reduce-scatter is then not exposed data-
// parallel time: the step would not be shorter without it. Nor is the part of a gap before a
// pipeline send the chain reaches began: the compute stream waited for another stage's compute,
// the pipeline's bubble, whatever collectives ran meanwhile.
#pragma once

#include <array>
#include <string_view>
#include <vector>

#include "graph/step_graph.hpp"
#include "graph/timeline.hpp"

namespace shardsim::report {

enum class Dimension { dp, tp, pp, cp };
inline constexpr std::size_t kDimensions = 4;

[[nodiscard]] std::string_view to_string(Dimension d);  // "dp", "tp", "pp", "cp"

// The dimension of a collective: its group's (FSDP's shard, replicate and reshard groups are
// data parallel).
[[nodiscard]] Dimension dimension_of(const graph::Op& collective);

// A stretch of exposed communication and what it is charged to: the collective `op` the compute
// stream waited for, or (op -1) a collective of `dimension` running while it waited for nothing
// the chain could name.
struct ExposedSpan {
  double start = 0, end = 0;
  Dimension dimension = Dimension::dp;
  int op = -1;
};

struct ExposedComm {
  double total = 0;                                // seconds idle with some collective running
  std::array<double, kDimensions> by_dimension{};  // of those, by Dimension; they add up to total
  std::vector<ExposedSpan> spans;                  // where they are, when asked for
  [[nodiscard]] double of(Dimension d) const { return by_dimension[static_cast<std::size_t>(d)]; }
};

// Rank `rank`'s exposed communication over [start, end], its ops of step `step` only; with
// `spans`, each stretch of it too (the Perfetto trace's "compute waits for" track).
[[nodiscard]] ExposedComm exposed_comm(const graph::StepGraph& g, const graph::Timeline& t, int rank, int step, double start, double end,
                                       bool spans = false);

}  // namespace shardsim::report

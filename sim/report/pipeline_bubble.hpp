// Pipeline parallelism's bubble as the simulated schedule makes it: the time a stage's compute
// stream stands idle waiting for a micro-batch's activations or gradients from another stage.
#pragma once

#include "graph/step_graph.hpp"
#include "graph/timeline.hpp"

namespace shardsim::report {

// Seconds of [start, end) that rank `rank`'s compute stream is idle before a compute op whose
// input a send brings (directly, or through the tensor-parallel collective it feeds), up to when
// that send ended, and after the stage's last op of the step until `end` (it waits for the other
// stages to finish): the bubble plus the exposed time of the sends themselves.
[[nodiscard]] double pipeline_bubble(const graph::StepGraph& g, const graph::Timeline& t, int rank, double start, double end);

}  // namespace shardsim::report

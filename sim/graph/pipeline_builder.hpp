// Pipeline parallelism (parallelism.pp): the step graph of a job whose blocks are cut into stages.
// Each stage runs its own FSDP program (an FsdpStepBuilder over the stage's plan, its ops marked
// with the stage) on micro-batches in the order its schedule gives; a send joins the last op of a
// micro-batch's forward on one stage to the first of the next stage's (activations), and the
// backward back (gradients). The bubble is not a formula: it is the time stages wait for sends.
#pragma once

#include <vector>

#include "config/scenario.hpp"
#include "core/deadline.hpp"
#include "fsdp/plan.hpp"
#include "graph/step_graph.hpp"
#include "model/transformer.hpp"

namespace shardsim::graph {

struct PipelineAction {
  bool forward = true;  // else backward
  int micro = 0;
  int chunk = 0;  // which of the rank's model chunks (interleaved): model stage chunk x ranks + rank
};

// What pipeline rank `rank` of `ranks` runs, in order (torch.distributed.pipelining's schedules):
//   gpipe: every micro-batch's forward, then every backward;
//   1f1b:  ranks - rank forwards (warm-up), then backward and forward alternately, then the
//          remaining backwards (Schedule1F1B);
//   interleaved_1f1b with v chunks per rank: (v - 1) x ranks + 2 (ranks - 1 - rank) forwards,
//          then forward and backward alternately, then the remaining backwards; the k-th forward
//          runs chunk (k / ranks) % v on micro-batch (k / (ranks v)) ranks + k % ranks, backwards
//          the chunks in reverse (ScheduleInterleaved1F1B, Megatron-LM's interleaved schedule).
[[nodiscard]] std::vector<PipelineAction> pipeline_actions(config::PpSchedule schedule, int rank, int ranks, int microbatches,
                                                           int chunks = 1);

// The graph of `steps` steps; `stage_plans[c]` is model stage c's FSDP plan (pp x v of them, in
// model order; model stage c runs on pipeline rank c % pp). Throws like the FSDP builder.
[[nodiscard]] StepGraph build_pipeline_graph(const model::Model& whole, const std::vector<fsdp::Plan>& stage_plans,
                                             const config::ScenarioConfig& scenario, int steps, const Deadline& deadline);

}  // namespace shardsim::graph

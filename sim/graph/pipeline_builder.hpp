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
};

// What stage `stage` of `stages` runs, in order (torch.distributed.pipelining's schedules):
//   gpipe: every micro-batch's forward, then every backward;
//   1f1b:  stages - stage forwards (warm-up), then backward and forward alternately, then the
//          remaining backwards (PipelineSchedule1F1B).
[[nodiscard]] std::vector<PipelineAction> pipeline_actions(config::PpSchedule schedule, int stage, int stages, int microbatches);

// The graph of `steps` steps; `stage_plans[s]` is stage s's FSDP plan. Throws like the FSDP builder.
[[nodiscard]] StepGraph build_pipeline_graph(const model::Model& whole, const std::vector<fsdp::Plan>& stage_plans,
                                             const config::ScenarioConfig& scenario, int steps, const Deadline& deadline);

}  // namespace shardsim::graph

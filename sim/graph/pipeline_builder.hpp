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
#include "graph/work.hpp"
#include "model/transformer.hpp"

namespace shardsim::graph {

struct PipelineAction {
  bool forward = true;  // else backward
  int micro = 0;
  int chunk = 0;  // which of the rank's model chunks (model_stage() says which model stage it is)
  // A backward's part: all of it, or (zbv) its input gradients (I) or weight gradients (W).
  BackwardPart part = BackwardPart::all;
};

// The model stage of chunk `chunk` on pipeline rank `rank`: chunk x ranks + rank (a loop), or for
// zbv the V: rank and 2 ranks - 1 - rank (torch's generate_stage_to_rank_mapping, style "v").
[[nodiscard]] int model_stage(config::PpSchedule schedule, int chunk, int rank, int ranks);
[[nodiscard]] int rank_of_stage(config::PpSchedule schedule, int stage, int ranks);

// What pipeline rank `rank` of `ranks` runs, in order (torch.distributed.pipelining's schedules):
//   gpipe: every micro-batch's forward, then every backward;
//   1f1b:  ranks - rank forwards (warm-up), then backward and forward alternately, then the
//          remaining backwards (Schedule1F1B);
//   interleaved_1f1b with v chunks per rank: (v - 1) x ranks + 2 (ranks - 1 - rank) forwards,
//          then forward and backward alternately, then the remaining backwards; the k-th forward
//          runs chunk (k / ranks) % v on micro-batch (k / (ranks v)) ranks + k % ranks, backwards
//          the chunks in reverse (ScheduleInterleaved1F1B, Megatron-LM's interleaved schedule);
//   zbv:   two chunks in a V, forwards, input-gradient and weight-gradient backwards in the order
//          of ScheduleZBVZeroBubble (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, ZB-V).
[[nodiscard]] std::vector<PipelineAction> pipeline_actions(config::PpSchedule schedule, int rank, int ranks, int microbatches,
                                                           int chunks = 1);

// The graph of `steps` steps; `stage_plans[c]` is model stage c's FSDP plan (pp x v of them, in
// model order; model stage c runs on pipeline rank rank_of_stage(c)). Throws like the FSDP builder.
[[nodiscard]] StepGraph build_pipeline_graph(const model::Model& whole, const std::vector<fsdp::Plan>& stage_plans,
                                             const config::ScenarioConfig& scenario, int steps, const Deadline& deadline);

}  // namespace shardsim::graph

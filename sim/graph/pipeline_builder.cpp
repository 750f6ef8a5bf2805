#include "graph/pipeline_builder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "graph/step_builder.hpp"

namespace shardsim::graph {

std::vector<PipelineAction> pipeline_actions(config::PpSchedule schedule, int stage, int stages, int microbatches) {
  std::vector<PipelineAction> out;
  if (schedule == config::PpSchedule::gpipe) {
    for (int m = 0; m < microbatches; ++m) out.push_back({true, m});
    for (int m = 0; m < microbatches; ++m) out.push_back({false, m});
    return out;
  }
  const int warmup = std::min(microbatches, stages - stage);
  int next_forward = 0;
  int next_backward = 0;
  while (next_forward < warmup) out.push_back({true, next_forward++});
  while (next_backward < microbatches) {
    out.push_back({false, next_backward++});
    if (next_forward < microbatches) out.push_back({true, next_forward++});
  }
  return out;
}

StepGraph build_pipeline_graph(const model::Model& whole, const std::vector<fsdp::Plan>& stage_plans, const config::ScenarioConfig& s,
                               int steps, const Deadline& deadline) {
  const int stages = static_cast<int>(stage_plans.size());
  const config::ParallelismConfig& p = s.parallelism;
  const std::int64_t micro_batch = p.pp_microbatches > 0 ? s.training.micro_batch / p.pp_microbatches : 1;
  const int microbatches = static_cast<int>(s.training.micro_batch / micro_batch);
  StepGraph g;
  std::vector<std::unique_ptr<FsdpStepBuilder>> builders;
  for (int st = 0; st < stages; ++st) {
    builders.push_back(std::make_unique<FsdpStepBuilder>(stage_plans[static_cast<std::size_t>(st)], s, steps, g, st, micro_batch));
    builders.back()->set_deadline(deadline);
    builders.back()->fill_info();
    g.info.stage_initial_memory.push_back(g.info.initial_memory);
    const auto too_many = [&] { throw_too_many_ops(s, stage_plans[0].units.size() * static_cast<std::size_t>(stages), steps); };
    builders.back()->issuer().set_limit(s.simulation.max_ops.value, too_many);
  }
  g.info.initial_memory.clear();
  // The activation (and its gradient) between stages: a micro-batch's hidden states, as each
  // tensor-parallel rank holds them (sequence shards with sequence parallelism).
  const double seq_share = whole.tp.sp() ? 1.0 / whole.tp.degree : 1.0;
  const double bytes =
      static_cast<double>(micro_batch * s.training.seq_len) * static_cast<double>(whole.spec.hidden) * whole.act_bytes * seq_share;
  std::vector<std::vector<PipelineAction>> actions;
  for (int st = 0; st < stages; ++st) actions.push_back(pipeline_actions(p.pp_schedule, st, stages, microbatches));
  for (int step = 0; step < steps; ++step) {
    // sent[st][m]: the send of micro-batch m's activations from stage st to st + 1 (forward), or
    // of its gradients from st to st - 1 (backward); -1 until issued.
    std::vector<std::vector<int>> fwd_sent(stages, std::vector<int>(microbatches, -1));
    std::vector<std::vector<int>> bwd_sent(stages, std::vector<int>(microbatches, -1));
    std::vector<std::size_t> next(stages, 0);
    const auto send = [&](int from, int to, int producer, int m, bool forward) {
      Op op = make_op(OpKind::send, Stream::pp, fmt::format("{} mb{} stage {}->{}", forward ? "send act" : "send grad", m, from, to), -1);
      op.group = Group::pp;
      op.bytes = bytes;
      op.peer_stage = to;
      FsdpStepBuilder& b = *builders[static_cast<std::size_t>(from)];
      op.stage = from;
      const int id = b.issuer().issue(std::move(op));
      g.add_edge(producer, id, EdgeKind::data);
      return id;
    };
    // Issue every stage's actions in an order where each one's input exists: the schedules are
    // deadlock-free, so some stage can always go on.
    for (bool progress = true; progress;) {
      progress = false;
      for (int st = 0; st < stages; ++st) {
        auto& i = next[static_cast<std::size_t>(st)];
        const auto& list = actions[static_cast<std::size_t>(st)];
        while (i < list.size()) {
          const PipelineAction a = list[i];
          FsdpStepBuilder& b = *builders[static_cast<std::size_t>(st)];
          if (a.forward) {
            const int input = st == 0 ? -1 : fwd_sent[static_cast<std::size_t>(st - 1)][static_cast<std::size_t>(a.micro)];
            if (st > 0 && input < 0) break;
            const int out = b.pipeline_forward(step, a.micro, input);
            if (st + 1 < stages)
              fwd_sent[static_cast<std::size_t>(st)][static_cast<std::size_t>(a.micro)] = send(st, st + 1, out, a.micro, true);
          } else {
            const int grad = st + 1 == stages ? -1 : bwd_sent[static_cast<std::size_t>(st + 1)][static_cast<std::size_t>(a.micro)];
            if (st + 1 < stages && grad < 0) break;
            const int out = b.pipeline_backward(step, a.micro, grad);
            if (st > 0) bwd_sent[static_cast<std::size_t>(st)][static_cast<std::size_t>(a.micro)] = send(st, st - 1, out, a.micro, false);
          }
          ++i;
          progress = true;
        }
      }
    }
    for (int st = 0; st < stages; ++st) {
      if (next[static_cast<std::size_t>(st)] != actions[static_cast<std::size_t>(st)].size()) {
        throw RuntimeError(fmt::format("the pipeline schedule deadlocks at stage {} (an internal error)", st));
      }
      builders[static_cast<std::size_t>(st)]->pipeline_optimizer(step);
    }
  }
  (void)g.topological_order();  // asserts the schedule is a DAG
  return g;
}

}  // namespace shardsim::graph

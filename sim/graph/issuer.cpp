#include "graph/issuer.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace shardsim::graph {

Op make_op(OpKind kind, Stream stream, std::string name, int unit) {
  Op op;
  op.kind = kind;
  op.stream = stream;
  op.name = std::move(name);
  op.unit = unit;
  return op;
}

void throw_too_many_ops(const config::ScenarioConfig& scenario, std::size_t units, int steps) {
  const auto& limit = scenario.simulation.max_ops;
  throw ConfigError(
      limit.where, "simulation.max_ops",
      fmt::format("the step graph needs more than {} ops ({} FSDP units, training.grad_accum {}, simulation.steps {}); expected at "
                  "most {} (raise simulation.max_ops, or simulate fewer layers, micro-steps or steps)",
                  limit.value, units, scenario.training.grad_accum, steps, limit.value));
}

void Issuer::set_limit(std::int64_t max_ops, std::function<void()> exceeded) {
  max_ops_ = max_ops;
  exceeded_ = std::move(exceeded);
}

Issuer::Issuer(StepGraph& g) : g_(g) {
  last_.fill(-1);
  gate_seen_.fill(-1);
}

void Issuer::begin_micro_step(int step, int micro, int barrier) {
  step_ = step;
  micro_ = micro;
  barrier_ = barrier;
  started_.fill(false);
}

int Issuer::issue(Op op) {
  if (max_ops_ >= 0 && static_cast<std::int64_t>(g_.size()) >= max_ops_) exceeded_();
  if (deadline_ != nullptr && g_.size() % 4096 == 0) {
    deadline_->check(fmt::format("while building the step graph ({} ops so far)", g_.size()));
  }
  op.step = step_;
  op.micro = micro_;
  const auto s = static_cast<std::size_t>(op.stream);
  const int id = g_.add_op(std::move(op));
  g_.add_edge(last_[s], id, EdgeKind::stream);
  if (cpu_gate_ >= 0 && gate_seen_[s] != cpu_gate_) {
    g_.add_edge(cpu_gate_, id, EdgeKind::cpu);
    gate_seen_[s] = cpu_gate_;
  }
  // The root's pre-forward makes the unshard streams wait on the default stream (after the
  // optimizer step, or the previous micro-step's backward).
  if (!started_[s]) {
    g_.add_edge(barrier_, id, EdgeKind::data);
    started_[s] = true;
  }
  last_[s] = id;
  if (g_.op(id).stream == Stream::compute && !in_program_order_.empty()) {
    const int stage = g_.op(id).stage;
    std::erase_if(in_program_order_, [&](int waiting) {
      Op& w = g_.op(waiting);
      if (w.stage != stage) return false;
      for (auto& m : w.memory) {
        if (m.bytes > 0) m.not_before = id;
      }
      return true;
    });
  }
  return id;
}

int Issuer::cpu_wait(int event, std::string name) {
  const int id = issue(make_op(OpKind::cpu_wait, Stream::cpu, std::move(name), -1));
  g_.add_edge(event, id, EdgeKind::rate_limit);
  cpu_gate_ = id;
  return id;
}

}  // namespace shardsim::graph

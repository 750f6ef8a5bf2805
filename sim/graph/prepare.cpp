#include "graph/prepare.hpp"

#include <fmt/format.h>

#include "graph/builder.hpp"
#include "model/transformer_spec.hpp"

namespace shardsim::graph {

Prepared prepare(config::ScenarioConfig scenario, const Deadline& deadline) {
  Prepared p;
  p.scenario = std::move(scenario);
  const auto& s = p.scenario;
  if (s.fsdp.cpu_offload && s.training.grad_accum > 1 && !s.training.no_sync) {
    // FSDP1 asserts this (fsdp-semantics.md section 5).
    throw ConfigError(s.fsdp.where, "fsdp.cpu_offload",
                      "gradient accumulation with CPU offload needs training.no_sync: true (PyTorch does not support it otherwise)");
  }
  const auto spec = model::resolve_spec(s.model);
  if (spec.max_positions > 0 && s.training.seq_len > spec.max_positions) {
    // A model with learned position embeddings has none past max_positions: the run would fail.
    throw ConfigError(s.training.seq_len_where, "training.seq_len",
                      fmt::format("{} tokens, but {} has learned position embeddings for {} positions only; expected at most {}",
                                  s.training.seq_len, spec.name.empty() ? std::string("the model") : spec.name, spec.max_positions,
                                  spec.max_positions));
  }
  const auto& mp = s.fsdp.mixed_precision;
  const int act_bytes = mp.enabled ? config::dtype_bytes(mp.param) : config::dtype_bytes(s.training.dtype);
  p.model = model::build_model(spec, s.training.seq_len, act_bytes);
  deadline.check("while building the model");
  fsdp::WrapPolicyRegistry policies;
  fsdp::register_builtin_wrap_policies(policies);
  p.plan = fsdp::make_plan(p.model, s, policies);
  deadline.check("while wrapping the model into FSDP units");
  p.graph = build_step_graph(p.model, p.plan, s, deadline);
  return p;
}

}  // namespace shardsim::graph

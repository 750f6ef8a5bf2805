#include "graph/prepare.hpp"

#include <fmt/format.h>

#include <array>
#include <numeric>

#include "graph/builder.hpp"
#include "graph/pipeline_builder.hpp"
#include "model/pipeline.hpp"
#include "model/transformer_spec.hpp"

namespace shardsim::graph {

namespace {

// How messages name the model: "llama3.1-70b's 8 key/value heads"; one written field by field is
// "the model".
std::string model_label(const model::TransformerSpec& spec) {
  return spec.name.empty() || spec.name == "custom" ? std::string("the model") : spec.name;
}

// parallelism.tp as the model allows it: every split dimension divisible by the degree.
model::TensorParallel tensor_parallel(const config::ScenarioConfig& s, const model::TransformerSpec& spec) {
  const auto& p = s.parallelism;
  model::TensorParallel tp{p.tp,
                           p.sequence_parallel,
                           p.loss_parallel,
                           p.shard_embedding,
                           p.tp_save_gathered,
                           p.tp_gather_per_linear,
                           p.tp_sequence_leading,
                           p.shard_output};
  if (p.tp == 1) return tp;
  const std::string model = model_label(spec);
  const auto fail = [&](const std::string& what) { throw ConfigError(p.where, "parallelism.tp", what); };
  if (spec.arch != model::Arch::llama && spec.arch != model::Arch::gpt) {
    fail(fmt::format("tensor parallelism is modelled for llama and GPT models; {} is neither; expected tp: 1", model));
  }
  const auto divides = [&](std::int64_t n, const char* what) {
    if (n % p.tp != 0) fail(fmt::format("{} does not divide {}'s {} {}; expected a divisor of {}", p.tp, model, n, what, n));
  };
  if (spec.tie_embeddings && !p.shard_output) {
    throw ConfigError(p.shard_output_where, "parallelism.tp_shard_output",
                      fmt::format("{} ties its output layer to the embedding; expected tp_shard_output: true", model));
  }
  if (spec.tie_embeddings && !p.shard_embedding) {
    throw ConfigError(p.shard_embedding_where, "parallelism.tp_shard_embedding",
                      fmt::format("{} ties its output layer to the embedding, which ColwiseParallel splits over the vocabulary; "
                                  "expected tp_shard_embedding: true",
                                  model));
  }
  divides(spec.heads, "attention heads");
  divides(spec.kv_heads, "key/value heads");
  divides(spec.ffn_hidden, "MLP features (ffn_hidden)");
  // Of a rank's shard of the sequence with context parallelism.
  const std::int64_t tokens = (p.sequence_parallel ? s.training.seq_len : s.training.micro_batch * s.training.seq_len) / p.cp;
  if (tokens % p.tp != 0) {
    fail(fmt::format("{} does not divide the {} tokens {} splits over the group; expected a divisor of {}", p.tp, tokens,
                     p.sequence_parallel ? "of a sequence that sequence parallelism" : "of a micro-batch that tensor parallelism", tokens));
  }
  return tp;
}

// training.attention and training.dropout where they are modelled (model/attention_impl.hpp).
void check_attention(const config::ScenarioConfig& s, const model::TransformerSpec& spec) {
  const auto& t = s.training;
  const bool unfused = t.attention.value == config::AttentionKernel::unfused;
  if (unfused && s.parallelism.cp > 1) {
    throw ConfigError(t.attention.where, "training.attention",
                      "torch's ring attention (parallelism.cp) runs flash kernels per step; expected attention: flash with cp > 1");
  }
  const bool hopper_kernel = t.attention.value == config::AttentionKernel::cudnn || t.attention.value == config::AttentionKernel::flash3;
  if (hopper_kernel) {
    // Their rates come from measurements on H100 (FlashAttention-3 paper); FlashAttention-3 runs
    // on Hopper only, and cuDNN's kernels differ by generation.
    const auto& gpu = s.cluster.topology.gpu;
    const auto name = config::to_string(t.attention.value);
    if (gpu.arch != config::GpuArch::hopper) {
      throw ConfigError(t.attention.where, "training.attention",
                        fmt::format("{} attention is priced from measurements on Hopper GPUs; the GPU {} is {}; expected attention: "
                                    "flash (or a Hopper topology)",
                                    name, gpu.model, config::kGpuArchNames[static_cast<std::size_t>(gpu.arch)]));
    }
    const auto [forward, backward] = config::attention_efficiency(gpu.efficiency, t.attention.value);
    if (forward <= 0 || backward <= 0) {
      throw ConfigError(t.attention.where, "training.attention",
                        fmt::format("the topology {} gives no rates for {} attention; expected gpu.efficiency.attention_{}_forward "
                                    "and attention_{}_backward there, or attention: flash",
                                    s.cluster.topology_file.string(), name, name, name));
    }
  }
  if (spec.sliding_window > 0 && spec.sliding_window < t.seq_len) {
    // FlashAttention-2 and -3 take a window (window_size) and skip the tiles outside it; SDPA has
    // no window argument, so its cuDNN kernel would need a mask; torch's ring attention has none.
    if (s.parallelism.cp > 1) {
      throw ConfigError(s.parallelism.cp_where, "parallelism.cp",
                        fmt::format("{} attends within a sliding window of {} tokens, which torch's ring attention does not "
                                    "support; expected cp: 1",
                                    model_label(spec), spec.sliding_window));
    }
    if (t.attention.value == config::AttentionKernel::cudnn) {
      throw ConfigError(t.attention.where, "training.attention",
                        fmt::format("{} attends within a sliding window of {} tokens; SDPA's cuDNN kernel takes no window "
                                    "(it would need a mask); expected flash or flash3 (the flash-attn kernels with window_size, "
                                    "transformers' flash_attention_2), or unfused (a mask: all of s x s computed)",
                                    model_label(spec), spec.sliding_window));
    }
  }
  for (const auto& [d, key] : {std::pair{&t.dropout, "training.dropout"}, std::pair{&t.attention_dropout, "training.attention_dropout"}}) {
    if (d->value > 0 && spec.arch != model::Arch::gpt) {
      throw ConfigError(d->where, key,
                        fmt::format("dropout is modelled for GPT blocks (Megatron-LM's, GPT-2's); {} has {} blocks; expected 0",
                                    model_label(spec), model::to_string(spec.arch)));
    }
  }
  if (t.attention_dropout.value > 0 && !unfused) {
    // Not written, attention_dropout is dropout's value, said at dropout's key.
    const bool own_key = t.attention_dropout_given;
    throw ConfigError(
        t.attention_dropout.where, own_key ? "training.attention_dropout" : "training.dropout",
        fmt::format("dropout inside a flash attention kernel is not modelled; expected {}, or attention: unfused",
                    own_key ? "attention_dropout: 0" : "dropout: 0, attention_dropout: 0 (the residual branches' dropout alone)"));
  }
}

}  // namespace

std::vector<int> tensor_parallel_degrees(const config::ScenarioConfig& scenario) {
  std::vector<int> out{1};
  if (scenario.fsdp.sharding == config::Sharding::zero3) return out;
  const auto spec = model::resolve_spec(scenario.model);
  config::ScenarioConfig s = scenario;
  for (int t = 2; t <= s.cluster.topology.node.gpus; ++t) {
    if (s.cluster.topology.node.gpus % t != 0 || s.world_size() % t != 0) continue;
    s.parallelism.tp = t;
    try {
      (void)tensor_parallel(s, spec);
      out.push_back(t);
    } catch (const ConfigError&) {
      // not a degree this model allows
    }
  }
  return out;
}

std::vector<int> pipeline_parallel_degrees(const config::ScenarioConfig& scenario) {
  std::vector<int> out{1};
  const auto spec = model::resolve_spec(scenario.model);
  if (scenario.fsdp.sharding == config::Sharding::zero3 || scenario.fsdp.cpu_offload) return out;
  for (std::int64_t p = 2; p <= spec.layers && scenario.world_size() % p == 0; p *= 2) out.push_back(static_cast<int>(p));
  return out;
}

std::vector<int> context_parallel_degrees(const config::ScenarioConfig& scenario) {
  std::vector<int> out{1};
  const auto spec = model::resolve_spec(scenario.model);
  if (scenario.fsdp.sharding == config::Sharding::zero3 || spec.arch != model::Arch::llama) return out;
  if (spec.sliding_window > 0 && spec.sliding_window < scenario.training.seq_len) return out;  // ring attention takes no window
  for (std::int64_t c = 2; c <= scenario.cluster.topology.node.gpus && scenario.world_size() % c == 0; c *= 2) {
    if (scenario.training.seq_len % (2 * c) == 0) out.push_back(static_cast<int>(c));
  }
  return out;
}

std::vector<std::string> pipeline_schedules(const config::ScenarioConfig& scenario) {
  std::vector<std::string> out{"1f1b", "gpipe", "interleaved_1f1b"};
  if (!scenario.training.compile.value) out.insert(out.end(), {"zbv", "interleaved_zb"});
  return out;
}

// training.float8: converts the model's linears (model/float8.hpp); a skip entry that keeps
// nothing out is a warning, a conversion that converts nothing an error.
static void apply_float8(Prepared& p, int act_bytes) {
  const config::Float8Config& f = p.scenario.training.float8;
  if (!f.enabled) return;
  static constexpr std::array kRecipes{model::Float8Recipe::tensorwise, model::Float8Recipe::rowwise,
                                       model::Float8Recipe::rowwise_with_gw_hp, model::Float8Recipe::mxfp8, model::Float8Recipe::none};
  model::Float8Options o;
  o.recipe = kRecipes[static_cast<std::size_t>(f.recipe.value)];
  o.fsdp_all_gather = f.fsdp_float8_all_gather.value;
  o.compiled = p.scenario.training.compile.value;
  o.skip = f.skip;
  o.auto_filter = f.auto_filter;
  o.act_bytes = act_bytes;
  o.tp = p.scenario.parallelism.tp;
  o.sequence_parallel = p.scenario.parallelism.sequence_parallel;
  o.gather_per_linear = p.scenario.parallelism.tp_gather_per_linear;
  p.float8 = model::convert_to_float8(p.model.root, o);
  for (std::size_t i = 0; i < f.skip.size(); ++i) {
    if (p.float8.skip_matches[i] == 0) {
      p.scenario.warnings.push_back(
          {f.skip_where, "training.float8.skip",
           fmt::format("\"{}\" names no linear of {}: it keeps nothing in high precision", f.skip[i], model_label(p.model.spec))});
    }
  }
  if (p.float8.linears == 0) {
    throw ConfigError(f.where, "training.float8",
                      fmt::format("no linear of {} is converted ({} skipped by name, {} with features not multiples of 16{}); expected "
                                  "a skip list that leaves some",
                                  model_label(p.model.spec), std::accumulate(p.float8.skip_matches.begin(), p.float8.skip_matches.end(), 0),
                                  p.float8.skipped_by_shape,
                                  f.auto_filter ? fmt::format(", {} too small by the auto filter", p.float8.skipped_as_small) : ""));
  }
}

// Pipeline parallelism: the model cut into stages (model/pipeline.hpp), FSDP applied to each
// stage's part as torchtitan applies it per model chunk, and the schedule's graph.
static void prepare_pipeline(Prepared& p, const fsdp::WrapPolicyRegistry& policies, const Deadline& deadline) {
  const auto& s = p.scenario;
  const auto& par = s.parallelism;
  const std::string model = model_label(p.model.spec);
  const auto layers = static_cast<int>(p.model.spec.layers);
  const int stages = par.pp * par.pp_stages_per_rank;
  if (stages > layers) {
    throw ConfigError(par.pp_where, "parallelism.pp",
                      fmt::format("{} stages ({} ranks x {} per rank), but {} has {} layers; expected at most {} (a stage holds at least "
                                  "one block)",
                                  stages, par.pp, par.pp_stages_per_rank, model, layers, layers));
  }
  std::string error;
  const std::vector<model::StageSpan> spans = model::stage_spans(layers, stages, par.pp_split_points, error);
  if (spans.empty()) {
    throw ConfigError(par.pp_split_points_where, "parallelism.pp_split_points",
                      fmt::format("{}; expected ascending first layers below {}", error, layers));
  }
  for (int st = 0; st < stages; ++st) {
    const model::Model part = model::stage_model(p.model, st, stages, spans[static_cast<std::size_t>(st)]);
    p.stage_plans.push_back(fsdp::make_plan(part, s, policies));
    deadline.check("while wrapping the pipeline stages into FSDP units");
  }
  p.plan = p.stage_plans.front();
  p.graph = build_pipeline_graph(p.model, p.stage_plans, s, steps_to_simulate(s), deadline);
}

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
                                  s.training.seq_len, model_label(spec), spec.max_positions, spec.max_positions));
  }
  const model::TensorParallel tp = tensor_parallel(s, spec);
  const auto& mp = s.fsdp.mixed_precision;
  const int act_bytes = mp.enabled ? config::dtype_bytes(mp.param) : config::dtype_bytes(s.training.dtype);
  if (s.training.compile.value && spec.arch != model::Arch::llama) {
    throw ConfigError(
        s.training.compile.where, "training.compile",
        fmt::format("torch.compile's fusion is modelled for llama-architecture blocks; {} is not one; expected false", model_label(spec)));
  }
  if (s.parallelism.cp > 1 && spec.arch != model::Arch::llama) {
    throw ConfigError(
        s.parallelism.cp_where, "parallelism.cp",
        fmt::format("context parallelism is modelled for llama-architecture attention; {} is not one; expected cp: 1", model_label(spec)));
  }
  check_attention(s, spec);
  const bool unfused = s.training.attention.value == config::AttentionKernel::unfused;
  p.model = model::build_model(spec, s.training.seq_len, act_bytes,
                               model::BlockOptions{tp, s.training.compile.value, s.parallelism.cp, s.training.loss_upcast,
                                                   s.training.keep_logits && s.parallelism.pp == 1, s.training.keep_logits_fp32,
                                                   s.training.compile_loss, s.training.loss_impl.value == config::LossImpl::megatron,
                                                   unfused, s.training.dropout.value, s.training.attention_dropout.value});
  apply_float8(p, act_bytes);
  deadline.check("while building the model");
  fsdp::WrapPolicyRegistry policies;
  fsdp::register_builtin_wrap_policies(policies);
  if (s.parallelism.pp > 1) {
    prepare_pipeline(p, policies, deadline);
    return p;
  }
  p.plan = fsdp::make_plan(p.model, s, policies);
  deadline.check("while wrapping the model into FSDP units");
  p.graph = build_step_graph(p.model, p.plan, s, deadline);
  return p;
}

}  // namespace shardsim::graph

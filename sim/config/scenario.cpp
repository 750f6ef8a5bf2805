#include "config/scenario.hpp"

#include <fmt/format.h>

#include <array>
#include <limits>

#include "config/overrides.hpp"
#include "config/yaml_load.hpp"
#include "core/reader.hpp"

namespace shardsim::config {
namespace {

constexpr std::array kScenarioParams{
    ParamSpec{"name", "string", "-", "a title for reports (default: the file name)"},
    ParamSpec{"description", "string", "-", "notes: what the scenario is and where its figures come from"},
    ParamSpec{"cluster", "mapping", "", "the cluster (see cluster)"},
    ParamSpec{"model", "mapping", "", "the model (see model)"},
    ParamSpec{"training", "mapping", "", "batch, sequence, optimizer, checkpointing (see training)"},
    ParamSpec{"fsdp", "mapping", "{}", "FSDP settings (see fsdp)"},
    ParamSpec{"simulation", "mapping", "{}", "how the simulation runs (see simulation)"},
};
constexpr std::array kClusterParams{
    ParamSpec{"topology", "file path", "", "topology YAML, relative to this file"},
    ParamSpec{"nodes", "integer >= 1", "1", "number of nodes; world size = nodes x node.gpus"},
    ParamSpec{"overrides", "mapping of dotted topology keys", "{}", "e.g. {gpu.memory: 96GiB}"},
};
constexpr std::array kModelParams{
    ParamSpec{"preset", "model name", "-", "a built-in model (shardsim describe models)"},
    ParamSpec{"hf_config", "file path", "-", "a Hugging Face config.json (Llama- or GPT-2-style)"},
    ParamSpec{"arch", "llama | gpt | torch_decoder | seed_block", "-", "block structure when fields are given explicitly"},
    ParamSpec{"layers", "integer >= 1", "-", "transformer blocks"},
    ParamSpec{"hidden", "integer >= 1", "-", "model width"},
    ParamSpec{"heads", "integer >= 1", "-", "attention heads"},
    ParamSpec{"kv_heads", "integer >= 1", "-", "key/value heads (grouped-query attention); default heads"},
    ParamSpec{"ffn_hidden", "integer >= 1", "-", "MLP inner width"},
    ParamSpec{"vocab", "integer >= 1", "-", "vocabulary size"},
    ParamSpec{"max_positions", "integer >= 0", "-", "learned position embeddings (GPT); 0 for rotary"},
    ParamSpec{"tie_embeddings", "bool", "-", "output layer shares the embedding's weight"},
};
constexpr std::array kTrainingParams{
    ParamSpec{"seq_len", "integer >= 1", "", "tokens per sequence"},
    ParamSpec{"micro_batch", "integer >= 1", "1", "sequences per GPU per micro-step"},
    ParamSpec{"grad_accum", "integer >= 1", "1", "micro-steps per optimizer step"},
    ParamSpec{"optimizer", "adamw | adam | sgd", "adamw", "optimizer (state bytes per parameter, step cost)"},
    ParamSpec{"activation_checkpointing", "none | selective | full", "none", "what the forward keeps for backward"},
    ParamSpec{"dtype", "fp32 | bf16", "fp32", "storage type of parameters, gradients and optimizer state; bf16 is pure-bf16 training"},
};
constexpr std::array kFsdpParams{
    ParamSpec{"version", "1 | 2", "2", "1 = FullyShardedDataParallel, 2 = fully_shard"},
    ParamSpec{"sharding", "full_shard | shard_grad_op | no_shard | hybrid_shard | hybrid_shard_zero2", "full_shard", "sharding strategy"},
    ParamSpec{"wrap", "mapping {policy: ...}", "{policy: module}", "how the model is cut into units (shardsim describe wrap)"},
    ParamSpec{"backward_prefetch", "pre | post | none", "pre", "when the next unit's all-gather is issued in backward"},
    ParamSpec{"forward_prefetch", "bool", "false", "issue the next unit's all-gather before this unit's forward"},
    ParamSpec{"limit_all_gathers", "bool", "true", "FSDP1 rate limiter: the CPU waits before issuing more all-gathers"},
    ParamSpec{"max_inflight_all_gathers", "integer >= 1", "2",
              "FSDP1 limiter depth (_max_num_inflight_all_gathers, \"empirically chosen\" 2)"},
    ParamSpec{"mixed_precision", "mapping {param, reduce} or none", "none", "dtypes of all-gathered parameters and of gradient reduction"},
    ParamSpec{"cpu_offload", "bool", "false", "keep parameter shards and optimizer on the CPU"},
};
constexpr std::array kMixedPrecisionParams{
    ParamSpec{"param", "fp32 | bf16 | fp16", "bf16", "dtype of unsharded parameters and compute"},
    ParamSpec{"reduce", "fp32 | bf16 | fp16", "-", "dtype of gradient reduction (default: param)"},
};
constexpr std::array kSimulationParams{
    ParamSpec{"steps", "integer 1..100", "1", "training steps simulated back to back; the last is reported"},
    ParamSpec{"flows", "path | edge", "path",
              "a collective's ring as one SimGrid flow per path (O(1)) or one per ring edge (O(n), for cross-checks)"},
    ParamSpec{"max_ops", "integer 1..100000000", "1000000", "limit: ops in the step graph (all steps and micro-steps)"},
    ParamSpec{"max_op_instances", "integer >= 1", "200000000", "limit: ops x ranks the engine simulates (about 30 bytes of memory each)"},
    ParamSpec{"max_wall_time", "duration", "30min", "limit: wall-clock time the engine may run before it stops with an error"},
};

constexpr Schema kScenarioSchema{"scenario", "one simulated training job", kScenarioParams};
constexpr Schema kClusterSchema{"cluster", "which cluster and how many nodes", kClusterParams};
constexpr Schema kModelSchema{"model", "the model: a preset, an HF config or explicit fields", kModelParams};
constexpr Schema kTrainingSchema{"training", "the training loop", kTrainingParams};
constexpr Schema kFsdpSchema{"fsdp", "FSDP settings (PyTorch names)", kFsdpParams};
constexpr Schema kMixedPrecisionSchema{"fsdp.mixed_precision", "FSDP MixedPrecision", kMixedPrecisionParams};
constexpr Schema kSimulationSchema{"simulation", "how the simulation runs", kSimulationParams};

constexpr std::array<std::string_view, 3> kDTypeNames{"fp32", "bf16", "fp16"};
constexpr std::array<std::string_view, 3> kOptimizerNames{"adamw", "adam", "sgd"};
constexpr std::array<std::string_view, 3> kAcNames{"none", "selective", "full"};
constexpr std::array<std::string_view, 5> kShardingNames{"full_shard", "shard_grad_op", "no_shard", "hybrid_shard", "hybrid_shard_zero2"};
constexpr std::array<std::string_view, 3> kPrefetchNames{"pre", "post", "none"};

template <class E, std::size_t N>
E pick(const Reader& r, std::string_view key, const std::array<std::string_view, N>& names) {
  const std::string v = r.choice(key, names);
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == v) return static_cast<E>(i);
  }
  return static_cast<E>(0);
}

const ConfigNode& section(const Reader& r, std::string_view key, ConfigNode& scratch) {
  if (const ConfigNode* n = r.node(key)) return *n;
  scratch = ConfigNode::make_map(r.where(key));
  return scratch;
}

template <class T>
std::optional<Located<T>> located(std::optional<T> v, const Reader& r, std::string_view key) {
  if (!v) return std::nullopt;
  return Located<T>{std::move(*v), r.where(key)};
}

ModelConfig read_model(const Reader& top) {
  const ConfigNode* node = top.node("model");
  if (node == nullptr) top.fail("model", "missing required key (expected {preset: llama3.1-8b} or explicit fields)");
  Reader r(*node, "model", kModelSchema);
  r.finish();  // first: a misspelt key is reported as such, not as the key it misses
  ModelConfig m;
  m.where = node->where;
  using L = ModelLimits;
  m.preset = located(r.opt_text("preset"), r, "preset");
  if (r.has("hf_config")) m.hf_config = Located<std::filesystem::path>{r.file_path("hf_config"), r.where("hf_config")};
  m.arch = located(r.opt_text("arch"), r, "arch");
  m.layers = located(r.opt_integer("layers", 1, L::layers), r, "layers");
  m.hidden = located(r.opt_integer("hidden", 1, L::hidden), r, "hidden");
  m.heads = located(r.opt_integer("heads", 1, L::heads), r, "heads");
  m.kv_heads = located(r.opt_integer("kv_heads", 1, L::heads), r, "kv_heads");
  m.ffn_hidden = located(r.opt_integer("ffn_hidden", 1, L::ffn_hidden), r, "ffn_hidden");
  m.vocab = located(r.opt_integer("vocab", 1, L::vocab), r, "vocab");
  m.max_positions = located(r.opt_integer("max_positions", 0, L::max_positions), r, "max_positions");
  m.tie_embeddings = located(r.opt_boolean("tie_embeddings"), r, "tie_embeddings");
  if (m.preset && m.hf_config) r.fail("hf_config", "give either model.preset or model.hf_config, not both");
  return m;
}

TrainingConfig read_training(const Reader& top) {
  const ConfigNode* node = top.node("training");
  if (node == nullptr) top.fail("training", "missing required key (expected at least {seq_len: ...})");
  Reader r(*node, "training", kTrainingSchema);
  r.finish();
  TrainingConfig t;
  t.seq_len = r.integer("seq_len", 1, 1 << 24);
  t.micro_batch = r.integer("micro_batch", 1, 1 << 20);
  t.grad_accum = r.integer("grad_accum", 1, 1 << 16);
  t.optimizer = pick<Optimizer>(r, "optimizer", kOptimizerNames);
  t.activation_checkpointing = pick<ActivationCheckpointing>(r, "activation_checkpointing", kAcNames);
  t.dtype = pick<DType>(r, "dtype", kDTypeNames);
  if (t.dtype == DType::fp16) r.fail("dtype", "expected fp32 or bf16 (pure fp16 training is not modelled)");
  return t;
}

MixedPrecision read_mixed_precision(const Reader& fsdp) {
  MixedPrecision mp;
  const ConfigNode* node = fsdp.node("mixed_precision");
  if (node == nullptr) return mp;
  if (node->is_scalar() && (node->scalar == "none" || node->scalar == "false")) return mp;
  Reader r(*node, "fsdp.mixed_precision", kMixedPrecisionSchema);
  r.finish();
  mp.enabled = true;
  mp.param = pick<DType>(r, "param", kDTypeNames);
  mp.reduce = r.has("reduce") ? pick<DType>(r, "reduce", kDTypeNames) : mp.param;
  return mp;
}

FsdpConfig read_fsdp(const Reader& top) {
  ConfigNode scratch;
  Reader r(section(top, "fsdp", scratch), "fsdp", kFsdpSchema);
  r.finish();
  FsdpConfig f;
  f.where = r.where("cpu_offload");
  f.version = static_cast<int>(r.integer("version", 1, 2));
  f.sharding = pick<Sharding>(r, "sharding", kShardingNames);
  if (const ConfigNode* w = r.node("wrap")) {
    if (w->is_scalar()) {
      f.wrap = Choice{w->scalar, "fsdp.wrap", w->where, ConfigNode{}};
    } else if (w->is_map()) {
      const ConfigNode* policy = w->find("policy");
      if (policy == nullptr || !policy->is_scalar()) {
        throw ConfigError(policy != nullptr ? policy->where : w->where, "fsdp.wrap.policy",
                          "missing required key (expected module, size or none)");
      }
      f.wrap = Choice{policy->scalar, "fsdp.wrap", policy->where, *w};
    } else {
      throw ConfigError(w->where, "fsdp.wrap", fmt::format("expected a mapping such as {{policy: module}}; got {}", w->describe()));
    }
  } else {
    f.wrap = Choice{"module", "fsdp.wrap", r.where("wrap"), ConfigNode{}};
  }
  f.backward_prefetch = pick<BackwardPrefetch>(r, "backward_prefetch", kPrefetchNames);
  f.forward_prefetch = r.boolean("forward_prefetch");
  f.limit_all_gathers = r.boolean("limit_all_gathers");
  f.max_inflight_all_gathers = static_cast<int>(r.integer("max_inflight_all_gathers", 1, 1024));
  f.mixed_precision = read_mixed_precision(r);
  f.cpu_offload = r.boolean("cpu_offload");
  return f;
}

SimulationConfig read_simulation(const Reader& top) {
  ConfigNode scratch;
  Reader sim(section(top, "simulation", scratch), "simulation", kSimulationSchema);
  sim.finish();
  SimulationConfig out;
  out.steps = static_cast<int>(sim.integer("steps", 1, 100));
  constexpr std::array<std::string_view, 2> kFlowNames{"path", "edge"};
  out.flows = pick<FlowGranularity>(sim, "flows", kFlowNames);
  // Op ids are ints; 1e8 ops would be tens of GB of graph anyway.
  out.max_ops = {sim.integer("max_ops", 1, 100'000'000), sim.where("max_ops")};
  out.max_op_instances = {sim.integer("max_op_instances", 1, std::int64_t{1} << 50), sim.where("max_op_instances")};
  out.max_wall_time = {Seconds(sim.quantity("max_wall_time", Dimension::seconds)), sim.where("max_wall_time")};
  if (out.max_wall_time.value.value() <= 0) sim.fail("max_wall_time", "expected a duration above zero, such as 30min");
  return out;
}

}  // namespace

int dtype_bytes(DType t) {
  switch (t) {
    case DType::fp32:
      return 4;
    case DType::bf16:
    case DType::fp16:
      return 2;
  }
  return 4;
}

std::string_view to_string(DType t) {
  return kDTypeNames[static_cast<std::size_t>(t)];
}
std::string_view to_string(ActivationCheckpointing a) {
  return kAcNames[static_cast<std::size_t>(a)];
}
std::string_view to_string(Sharding s) {
  return kShardingNames[static_cast<std::size_t>(s)];
}
std::string_view to_string(BackwardPrefetch b) {
  return kPrefetchNames[static_cast<std::size_t>(b)];
}
std::string_view to_string(Optimizer o) {
  return kOptimizerNames[static_cast<std::size_t>(o)];
}

ScenarioConfig load_scenario(const std::filesystem::path& file, std::span<const std::string> assignments) {
  return load_scenario(file, assignments, DiskFiles{});
}

ScenarioConfig load_scenario(const std::filesystem::path& file, std::span<const std::string> assignments, const FileSource& source) {
  ConfigNode root = load_yaml_file(file, source, std::nullopt);
  if (root.is_null()) {
    throw ConfigError(Location{file.string(), 1, 1}, "", "empty file; expected a scenario mapping (cluster, model, training, fsdp)");
  }
  for (const auto& a : assignments) apply_assignment(root, a);

  Reader top(root, "", kScenarioSchema);
  top.finish();
  ScenarioConfig s;
  s.file = file;
  s.name = top.has("name") ? top.text("name") : file.stem().string();
  if (top.has("description")) (void)top.text("description");

  const ConfigNode* cluster = top.node("cluster");
  if (cluster == nullptr) top.fail("cluster", "missing required key (expected {topology: FILE, nodes: N})");
  Reader c(*cluster, "cluster", kClusterSchema);
  c.finish();
  s.cluster.topology_file = c.file_path("topology");
  s.cluster.nodes = c.integer("nodes", 1, 1 << 20);
  const ConfigNode* overrides = c.node("overrides");
  const ConfigNode empty;
  // Errors inside the topology file are reported there; a missing file is reported here.
  s.cluster.topology = load_topology(s.cluster.topology_file, overrides != nullptr ? *overrides : empty, "cluster.overrides", source,
                                     FileRef{c.where("topology"), "cluster.topology"});

  s.model = read_model(top);
  s.training = read_training(top);
  s.fsdp = read_fsdp(top);
  s.simulation = read_simulation(top);

  constexpr std::int64_t kMaxWorld = 1'000'000;
  if (s.world_size() > kMaxWorld) {
    c.fail("nodes", fmt::format("{} nodes x {} GPUs = {} GPUs; expected at most {} GPUs", s.cluster.nodes, s.cluster.topology.node.gpus,
                                s.world_size(), kMaxWorld));
  }
  return s;
}

std::vector<Schema> scenario_schemas() {
  return {kScenarioSchema, kClusterSchema, kModelSchema, kTrainingSchema, kFsdpSchema, kMixedPrecisionSchema, kSimulationSchema};
}

}  // namespace shardsim::config

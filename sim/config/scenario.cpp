#include "config/scenario.hpp"

#include <fmt/format.h>

#include <array>
#include <limits>

#include "config/overrides.hpp"
#include "config/sections.hpp"
#include "config/topology_library.hpp"
#include "config/yaml_load.hpp"
#include "core/reader.hpp"

namespace shardsim::config {
namespace {

constexpr std::array<std::string_view, 2> kPlacementNames{"packed", "interleaved"};
constexpr std::array<std::string_view, 2> kFlowNames{"path", "edge"};
constexpr std::array<std::string_view, 3> kModeNames{"auto", "full", "symmetric"};
constexpr std::array<std::string_view, 2> kLinkNames{"nvlink", "nic"};
using L = ModelLimits;

constexpr std::array kScenarioParams{
    ParamSpec{"name", "string", "-", "a title for reports (default: the file name)"},
    ParamSpec{"description", "string", "-", "notes: what the scenario is and where its figures come from"},
    ParamSpec{"cluster", "mapping", "", "the cluster (see cluster)"},
    ParamSpec{"model", "mapping", "", "the model (see model)"},
    ParamSpec{"training", "mapping", "", "batch, sequence, optimizer, checkpointing (see training)"},
    ParamSpec{"fsdp", "mapping", "{}", "FSDP settings (see fsdp)"},
    ParamSpec{"parallelism", "mapping", "{}", "tensor parallelism beside FSDP: the device mesh (see parallelism)"},
    ParamSpec{"simulation", "mapping", "{}", "how the simulation runs (see simulation)"},
    ParamSpec{"collectives", "mapping", "{}", "NCCL algorithm and protocol of the collectives (see collectives)"},
    ParamSpec{"stragglers", "mapping", "{}", "slow GPUs, degraded links, jitter (see stragglers)"},
    ParamSpec{"calibration", "file path", "-", "calibration YAML from `shardsim calibrate` (shardsim describe calibration)"},
};
constexpr std::array kClusterParams{
    ParamSpec{"topology", "file path or name", "",
              "topology YAML, relative to this file, or the name of a shipped one (h100_sxm_8x_ib400)"},
    ParamSpec{"nodes", "integer", "1", "number of nodes; world size = nodes x node.gpus", Range{1, 1 << 20}},
    ParamSpec{"overrides", "mapping of dotted topology keys", "{}", "e.g. {gpu.memory: 96GiB}"},
    ParamSpec{"jobs", "integer", "1",
              "identical copies of this job sharing the fabric, each on its own `nodes` nodes; the report is job 0's", Range{1, 1024}},
    ParamSpec{"placement",
              "",
              "packed",
              "how the jobs' nodes are laid out: packed gives each job consecutive nodes, interleaved deals node i to job i mod "
              "jobs (so jobs share leaf switches and their uplinks)",
              {},
              kPlacementNames},
};
constexpr std::array kModelParams{
    ParamSpec{"preset", "model name", "-", "a built-in model (shardsim describe models)"},
    ParamSpec{"hf_config", "file path", "-", "a Hugging Face config.json (model_type llama, mistral, qwen2, qwen3 or gpt2)"},
    ParamSpec{"arch", "llama | gpt | torch_decoder | seed_block", "-", "block structure when fields are given explicitly"},
    ParamSpec{"layers", "integer", "-", "transformer blocks", Range{1, L::layers}},
    ParamSpec{"hidden", "integer", "-", "model width", Range{1, L::hidden}},
    ParamSpec{"heads", "integer", "-", "attention heads", Range{1, L::heads}},
    ParamSpec{"kv_heads", "integer", "-", "key/value heads (grouped-query attention); default heads", Range{1, L::heads}},
    ParamSpec{"ffn_hidden", "integer", "-", "MLP inner width", Range{1, L::ffn_hidden}},
    ParamSpec{"vocab", "integer", "-", "vocabulary size", Range{1, L::vocab}},
    ParamSpec{"max_positions", "integer", "-", "learned position embeddings (GPT); 0 for rotary", Range{0, L::max_positions}},
    ParamSpec{"tie_embeddings", "bool", "-", "output layer shares the embedding's weight"},
    ParamSpec{"sliding_window", "integer", "-",
              "llama models: sliding-window attention, each query attending to itself and the sliding_window - 1 tokens before "
              "it (Mistral's sliding_window); 0 for none. Priced for flash and flash3 attention, which skip the tiles outside the "
              "window; unfused attention computes all of s x s either way",
              Range{0, L::max_positions}},
};
constexpr std::array kSimulationParams{
    ParamSpec{"steps", "auto | integer", "auto",
              "training steps simulated back to back, the last reported; auto = 2 where the first step differs (FSDP1 forward "
              "prefetch, ZeRO-3's recorded trace), else 1",
              Range{1, 100}},
    ParamSpec{"mode",
              "",
              "auto",
              "full simulates every rank; symmetric one representative (every rank alike); auto: symmetric from 512 GPUs when valid",
              {},
              kModeNames},
    ParamSpec{"flows",
              "",
              "path",
              "a collective's ring as one SimGrid flow per path (O(1)) or one per ring edge (O(n), for cross-checks)",
              {},
              kFlowNames},
    ParamSpec{"max_ops", "integer", "1000000", "limit: ops in the step graph (all steps and micro-steps)", Range{1, 100'000'000}},
    ParamSpec{"max_op_instances", "integer", "200000000", "limit: ops x ranks the engine simulates (about 30 bytes of memory each)",
              Range{1, static_cast<double>(std::int64_t{1} << 50)}},
    ParamSpec{"max_wall_time", "duration", "30min", "limit: wall-clock time the engine may run before it stops with an error",
              Range{1e-3, 1e6, Dimension::seconds}},
};

constexpr std::array<std::string_view, 4> kProtocolNames{"auto", "ll", "ll128", "simple"};
constexpr std::array kCollectivesParams{
    ParamSpec{"algorithm", "auto | NAME | {all_gather: NAME, reduce_scatter: NAME, all_reduce: NAME}", "auto",
              "auto picks per collective and size as NCCL's tuner does; a NAME (shardsim describe collectives) forces it"},
    ParamSpec{"protocol", "", "auto", "NCCL protocol; auto picks with the algorithm", {}, kProtocolNames},
};
constexpr std::array kCollectiveKindParams{
    ParamSpec{"all_gather", "auto | NAME", "auto", "algorithm of the all-gathers"},
    ParamSpec{"reduce_scatter", "auto | NAME", "auto", "algorithm of the reduce-scatters"},
    ParamSpec{"all_reduce", "auto | NAME", "auto", "algorithm of the all-reduces"},
};

constexpr Schema kScenarioSchema{"scenario", "one simulated training job", kScenarioParams};
constexpr Schema kClusterSchema{"cluster", "which cluster and how many nodes", kClusterParams};
constexpr Schema kModelSchema{"model", "the model: a preset, an HF config or explicit fields", kModelParams};
constexpr Schema kSimulationSchema{"simulation", "how the simulation runs", kSimulationParams};
constexpr Schema kCollectivesSchema{"collectives", "NCCL algorithm and protocol of the collectives", kCollectivesParams};
constexpr Schema kCollectiveKindSchema{"collectives.algorithm", "the algorithm of each kind of collective", kCollectiveKindParams};
constexpr std::array kStragglerParams{
    ParamSpec{"slow_gpus", "list of {rank, factor}", "[]", "ranks whose compute takes factor times as long"},
    ParamSpec{"degraded_links", "list of {rank, link: nvlink | nic, factor}", "[]", "links that keep factor of their bandwidth"},
    ParamSpec{"jitter", "number", "0", "sigma of a log-normal factor on every compute op's duration", Range{0, 10}},
    ParamSpec{"gpu_variation", "number", "0",
              "sigma of a log-normal speed factor each GPU keeps for the whole run (GPUs of one SKU differ: Sinha et al., SC'22)",
              Range{0, 10}},
    ParamSpec{"seed", "integer", "1", "seed of the jitter and the variation (same seed, same result)", Range{0, 1e18}},
};
constexpr Schema kStragglerSchema{"stragglers", "ranks that do not behave like the others", kStragglerParams};
constexpr std::array kSlowGpuParams{
    ParamSpec{"rank", "integer", "", "the GPU", Range{0, 1'000'000}},
    ParamSpec{"factor", "number", "", "its compute takes this many times as long", Range{1, 1e6}},
};
constexpr Schema kSlowGpuSchema{"stragglers.slow_gpus[]", "a slow GPU", kSlowGpuParams};
constexpr std::array kDegradedLinkParams{
    ParamSpec{"rank", "integer", "", "the GPU whose link is degraded", Range{0, 1'000'000}},
    ParamSpec{"link", "", "nic", "which of its links", {}, kLinkNames},
    ParamSpec{"factor", "number", "", "fraction of the bandwidth it keeps", Range{1e-6, 1}},
};
constexpr Schema kDegradedLinkSchema{"stragglers.degraded_links[]", "a degraded link", kDegradedLinkParams};

template <class T, class F>
std::vector<T> read_list(const Reader& r, std::string_view key, const Schema& schema, F read_item) {
  std::vector<T> out;
  const ConfigNode* n = r.node(key);
  if (n == nullptr) return out;
  if (!n->is_sequence()) r.fail(key, fmt::format("expected a list of {{...}} entries; got {}", n->describe()));
  for (std::size_t i = 0; i < n->items.size(); ++i) {
    Reader item(n->items[i], fmt::format("{}[{}]", r.path_of(key), i), schema);
    out.push_back(read_item(item));
    item.finish();
  }
  return out;
}

// cluster.topology: a path (relative to the scenario), or the name of a shipped topology.
std::filesystem::path topology_file(const Reader& c) {
  const std::string value = c.text("topology");
  if (!is_topology_name(value)) return c.file_path("topology");
  if (auto shipped = find_shipped_topology(value)) return *shipped;
  const auto names = shipped_topologies();
  std::vector<std::string_view> views(names.begin(), names.end());
  std::string message =
      fmt::format("no shipped topology named {} (a path needs a folder or .yaml); expected one of {}", quote(value), join(views));
  if (auto g = closest_match(value, views); !g.empty()) message += fmt::format(" (did you mean \"{}\"?)", g);
  c.fail("topology", message);
}

Stragglers read_stragglers(const Reader& top, std::int64_t world, std::vector<ConfigWarning>& warnings) {
  ConfigNode scratch;
  Reader r(section(top, "stragglers", scratch), "stragglers", kStragglerSchema);
  Stragglers s;
  s.slow_gpus = read_list<SlowGpu>(r, "slow_gpus", kSlowGpuSchema, [&](const Reader& item) {
    return SlowGpu{item.integer("rank", 0, world - 1), item.number("factor")};
  });
  s.degraded_links = read_list<DegradedLink>(r, "degraded_links", kDegradedLinkSchema, [&](const Reader& item) {
    return DegradedLink{item.integer("rank", 0, world - 1), pick<LinkKind>(item, "link"), item.number("factor")};
  });
  s.jitter = r.number("jitter");
  s.gpu_variation = r.number("gpu_variation");
  s.seed = static_cast<std::uint64_t>(r.integer("seed"));
  if (r.has("seed") && s.jitter == 0 && s.gpu_variation == 0) {
    warnings.push_back({r.where("seed"), "stragglers.seed",
                        "seeds the random draws of stragglers.jitter and stragglers.gpu_variation, and both are 0; it is ignored"});
  }
  r.finish();
  return s;
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
  m.preset = located(r.opt_text("preset"), r, "preset");
  if (r.has("hf_config")) m.hf_config = Located<std::filesystem::path>{r.file_path("hf_config"), r.where("hf_config")};
  m.arch = located(r.opt_text("arch"), r, "arch");
  m.layers = located(r.opt_integer("layers"), r, "layers");
  m.hidden = located(r.opt_integer("hidden"), r, "hidden");
  m.heads = located(r.opt_integer("heads"), r, "heads");
  m.kv_heads = located(r.opt_integer("kv_heads"), r, "kv_heads");
  m.ffn_hidden = located(r.opt_integer("ffn_hidden"), r, "ffn_hidden");
  m.vocab = located(r.opt_integer("vocab"), r, "vocab");
  m.max_positions = located(r.opt_integer("max_positions"), r, "max_positions");
  m.tie_embeddings = located(r.opt_boolean("tie_embeddings"), r, "tie_embeddings");
  m.sliding_window = located(r.opt_integer("sliding_window"), r, "sliding_window");
  if (m.preset && m.hf_config) r.fail("hf_config", "give either model.preset or model.hf_config, not both");
  return m;
}

CollectivesConfig read_collectives(const Reader& top) {
  ConfigNode scratch;
  Reader r(section(top, "collectives", scratch), "collectives", kCollectivesSchema);
  r.finish();
  CollectivesConfig c;
  const ConfigNode* algorithm = r.node("algorithm");
  if (algorithm == nullptr || algorithm->is_scalar()) {
    c.all_gather = Choice{r.text("algorithm"), "collectives.algorithm", r.where("algorithm"), ConfigNode{}};
    c.reduce_scatter = c.all_reduce = c.all_gather;
  } else {
    Reader k(*algorithm, "collectives.algorithm", kCollectiveKindSchema);
    k.finish();
    auto kind = [&](std::string_view key) { return Choice{k.text(key), k.path_of(key), k.where(key), ConfigNode{}}; };
    c.all_gather = kind("all_gather");
    c.reduce_scatter = kind("reduce_scatter");
    c.all_reduce = kind("all_reduce");
  }
  c.protocol = Choice{r.choice("protocol"), "collectives.protocol", r.where("protocol"), ConfigNode{}};
  return c;
}

SimulationConfig read_simulation(const Reader& top) {
  ConfigNode scratch;
  Reader sim(section(top, "simulation", scratch), "simulation", kSimulationSchema);
  sim.finish();
  SimulationConfig out;
  const ConfigNode* steps = sim.node("steps");
  out.steps = (steps == nullptr || (steps->is_scalar() && steps->scalar == "auto")) ? 0 : static_cast<int>(sim.integer("steps"));
  out.flows = pick<FlowGranularity>(sim, "flows");
  out.mode = pick<SimulationMode>(sim, "mode");
  out.mode_where = sim.where("mode");
  out.flows_where = sim.where("flows");
  // Op ids are ints; 1e8 ops would be tens of GB of graph anyway.
  out.max_ops = {sim.integer("max_ops"), sim.where("max_ops")};
  out.max_op_instances = {sim.integer("max_op_instances"), sim.where("max_op_instances")};
  out.max_wall_time = {Seconds(sim.quantity("max_wall_time", Dimension::seconds)), sim.where("max_wall_time")};
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
std::string_view to_string(AttentionKernel a) {
  return kAttentionNames[static_cast<std::size_t>(a)];
}

ScenarioConfig load_scenario(const std::filesystem::path& file, std::span<const std::string> assignments) {
  return load_scenario(file, assignments, DiskFiles{});
}

ScenarioConfig load_scenario(const std::filesystem::path& file, std::span<const std::string> assignments, const FileSource& source) {
  ConfigNode root = load_yaml_file(file, source, std::nullopt);
  if (root.is_null()) {
    throw ConfigError(Location{file.string(), 1, 1}, "", "empty file; expected a scenario mapping (cluster, model, training, fsdp)");
  }
  if (const ConfigNode* sweep = root.is_map() && root.find("cluster") == nullptr ? root.find("scenario") : nullptr) {
    throw ConfigError(sweep->where, "scenario", "this is a sweep file; expected a scenario (cluster, model, training, ...) here");
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
  s.cluster.topology_file = topology_file(c);
  s.cluster.nodes = c.integer("nodes");
  s.cluster.jobs = static_cast<int>(c.integer("jobs"));
  s.cluster.placement = pick<Placement>(c, "placement");
  if (c.has("placement") && s.cluster.jobs == 1) {
    s.warnings.push_back({c.where("placement"), "cluster.placement",
                          "how the nodes of several jobs (cluster.jobs) are laid out, and there is one job; it is ignored"});
  }
  const ConfigNode* overrides = c.node("overrides");
  const ConfigNode empty;
  // Errors inside the topology file are reported there; a missing file is reported here.
  s.cluster.topology = load_topology(s.cluster.topology_file, overrides != nullptr ? *overrides : empty, "cluster.overrides", source,
                                     FileRef{c.where("topology"), "cluster.topology"});

  s.model = read_model(top);
  s.training = read_training(top, s.warnings);
  s.fsdp = read_fsdp(top, s.warnings);
  s.parallelism = read_parallelism(top, s.warnings);
  s.simulation = read_simulation(top);
  s.collectives = read_collectives(top);
  s.stragglers = read_stragglers(top, s.world_size(), s.warnings);
  if (s.training.optimizer_impl.value != OptimizerImpl::automatic &&
      (s.fsdp.cpu_offload || s.fsdp.zero3.offload_optimizer.value != OffloadDevice::none)) {
    s.warnings.push_back({s.training.optimizer_impl.where, "training.optimizer_impl",
                          "the optimizer steps on the CPU here (fsdp.cpu_offload or fsdp.zero3.offload_optimizer), priced by its "
                          "host memory traffic alone; the GPU kernels' implementation does not apply and is ignored"});
  }
  if (s.training.loss_impl.value == LossImpl::megatron && s.parallelism.tp > 1 && !s.parallelism.loss_parallel) {
    throw ConfigError(s.training.loss_impl.where, "training.loss_impl",
                      "Megatron-LM's cross-entropy always runs on the logits' shards over the vocabulary "
                      "(vocab_parallel_cross_entropy); expected parallelism.tp_loss_parallel: true with tp_shard_output: true, "
                      "or loss_impl: torch");
  }
  if (s.fsdp.sharding == Sharding::no_shard && s.fsdp.forward_prefetch > 0 && !forward_prefetch_applies(s)) {
    s.warnings.push_back({s.fsdp.forward_prefetch_where, "fsdp.forward_prefetch",
                          s.fsdp.megatron_ddp
                              ? "forward prefetching, and Megatron-LM's DDP (fsdp.ddp_impl: megatron) keeps its parameters in the "
                                "compute dtype: nothing to gather or cast; it is ignored"
                              : "forward prefetching, and fsdp.sharding: no_shard all-gathers no parameters and, without mixed "
                                "precision, casts none; it is ignored"});
  }
  if (s.training.keep_logits && s.parallelism.pp > 1) {
    s.warnings.push_back({s.training.keep_logits_where, "training.keep_logits",
                          "under pipeline parallelism the schedule itself keeps the last stage's logits of every micro-batch to the "
                          "step's end (torch.distributed.pipelining's output_chunks), longer than the loop could; it is ignored"});
  }
  if (s.simulation.mode == SimulationMode::symmetric && s.cluster.jobs > 1) {
    throw ConfigError(c.where("jobs"), "simulation.mode",
                      "symmetric simulates one representative rank of one job, but cluster.jobs puts several on the fabric; expected "
                      "full or auto");
  }
  if (s.simulation.mode == SimulationMode::symmetric && s.stragglers.any()) {
    throw ConfigError(top.where("stragglers"), "simulation.mode",
                      "symmetric simulates one representative rank, but stragglers make ranks differ; expected full or auto");
  }
  const auto& fabric = s.cluster.topology.fabric;
  if (s.simulation.mode == SimulationMode::symmetric && fabric.kind.name == "fat_tree" && fabric.nodes_per_leaf > 1 &&
      fabric.oversubscription > 1 && s.cluster.nodes > 1) {
    // Several nodes share a leaf's uplinks: the representative node's collectives contend there
    // with its neighbours', which symmetric mode does not simulate (up to 2x off on the 4-per-leaf
    // 2:1 fat tree).
    throw ConfigError(s.simulation.mode_where, "simulation.mode",
                      fmt::format("symmetric simulates one representative node, but the fabric puts {} nodes under each leaf with {}:1 "
                                  "uplinks they share, which it would not see; expected full or auto",
                                  fabric.nodes_per_leaf, fabric.oversubscription));
  }
  if (fabric.routing == Routing::ecmp && s.simulation.mode == SimulationMode::symmetric && s.cluster.nodes > 1) {
    // ECMP pins each flow to the spine its hash picks: nodes differ in which uplinks collide.
    throw ConfigError(s.simulation.mode_where, "simulation.mode",
                      "symmetric simulates one representative node, but the fabric's ECMP routing hashes every node's flows to "
                      "spines of their own, so nodes differ; expected full or auto");
  }
  if (fabric.routing == Routing::ecmp && s.simulation.flows == FlowGranularity::edge) {
    throw ConfigError(s.simulation.flows_where, "simulation.flows",
                      "ECMP routes each NCCL channel's flows to a spine of their own, which only path flows carry; expected path");
  }
  check_parallelism(s, s.warnings);
  check_float8(s);
  check_offload(s);
  if (top.has("calibration")) {
    const auto cal = top.file_path("calibration");
    if (!std::filesystem::exists(cal)) top.fail("calibration", fmt::format("no such file: {}", cal.string()));
    s.calibration = load_calibration(cal);
    s.calibration_file = cal;
  }

  constexpr std::int64_t kMaxWorld = 1'000'000;
  if (s.world_size() > kMaxWorld) {
    c.fail("nodes", fmt::format("{} nodes x {} GPUs = {} GPUs; expected at most {} GPUs", s.cluster.nodes, s.cluster.topology.node.gpus,
                                s.world_size(), kMaxWorld));
  }
  if (s.world_size() * s.cluster.jobs > kMaxWorld) {
    c.fail("jobs", fmt::format("{} jobs x {} GPUs = {} GPUs on the fabric; expected at most {} GPUs", s.cluster.jobs, s.world_size(),
                               s.world_size() * s.cluster.jobs, kMaxWorld));
  }
  return s;
}

std::vector<std::pair<std::filesystem::path, std::string>> ScenarioConfig::input_files() const {
  std::vector<std::pair<std::filesystem::path, std::string>> out{{file, "the scenario"}};
  for (const auto& t : cluster.topology.files) out.emplace_back(t, "the topology");
  if (model.hf_config) out.emplace_back(model.hf_config->value, "the model's config.json");
  if (calibration_file) out.emplace_back(*calibration_file, "the calibration");
  return out;
}

std::vector<Schema> scenario_schemas() {
  std::vector<Schema> out{kScenarioSchema, kClusterSchema, kModelSchema, training_schema()};
  for (const auto& sc : fsdp_schemas()) out.push_back(sc);
  for (const auto& sc : parallelism_schemas()) out.push_back(sc);
  for (const auto& sc : float8_schemas()) out.push_back(sc);
  out.push_back(kSimulationSchema);
  out.push_back(kCollectivesSchema);
  out.push_back(kCollectiveKindSchema);
  for (const auto& sc : {kStragglerSchema, kSlowGpuSchema, kDegradedLinkSchema}) out.push_back(sc);
  return out;
}

}  // namespace shardsim::config

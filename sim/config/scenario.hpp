// A scenario file (scenarios/*.yaml) as plain, validated data. See DESIGN.md "Scenario file".
// The topology it names is loaded too, with the scenario's cluster.overrides applied.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "config/choice.hpp"
#include "config/topology.hpp"
#include "core/param_spec.hpp"

namespace shardsim::config {

enum class DType { fp32, bf16, fp16 };
enum class Optimizer { adamw, adam, sgd };
enum class ActivationCheckpointing { none, selective, full };
enum class Sharding { full_shard, shard_grad_op, no_shard, hybrid_shard, hybrid_shard_zero2 };
enum class BackwardPrefetch { pre, post, none };

[[nodiscard]] int dtype_bytes(DType t);
[[nodiscard]] std::string_view to_string(DType t);
[[nodiscard]] std::string_view to_string(ActivationCheckpointing a);
[[nodiscard]] std::string_view to_string(Sharding s);
[[nodiscard]] std::string_view to_string(BackwardPrefetch b);
[[nodiscard]] std::string_view to_string(Optimizer o);

template <class T>
struct Located {
  T value{};
  Location where;
};

// Largest values the model's shape may take, wherever it is written (scenario, config.json):
// far above any real model, low enough that parameter and FLOP counts cannot overflow.
struct ModelLimits {
  static constexpr std::int64_t layers = 100'000;
  static constexpr std::int64_t hidden = std::int64_t{1} << 24;
  static constexpr std::int64_t heads = std::int64_t{1} << 20;
  static constexpr std::int64_t ffn_hidden = std::int64_t{1} << 26;
  static constexpr std::int64_t vocab = std::int64_t{1} << 40;
  static constexpr std::int64_t max_positions = std::int64_t{1} << 26;
};

// The model as written: a preset, a Hugging Face config.json, explicit fields, or a preset with
// some fields overridden. The model layer resolves it (model/transformer_spec.hpp).
struct ModelConfig {
  std::optional<Located<std::string>> preset;
  std::optional<Located<std::filesystem::path>> hf_config;
  std::optional<Located<std::string>> arch;
  std::optional<Located<std::int64_t>> layers, hidden, heads, kv_heads, ffn_hidden, vocab, max_positions;
  std::optional<Located<bool>> tie_embeddings;
  Location where;
};

struct TrainingConfig {
  std::int64_t seq_len = 0;
  std::int64_t micro_batch = 1;
  std::int64_t grad_accum = 1;
  Optimizer optimizer = Optimizer::adamw;
  ActivationCheckpointing activation_checkpointing = ActivationCheckpointing::none;
  DType dtype = DType::fp32;  // how parameters, gradients and optimizer state are stored
};

struct MixedPrecision {
  bool enabled = false;
  DType param = DType::fp32;   // all-gathered parameters and compute
  DType reduce = DType::fp32;  // reduce-scatter / all-reduce of gradients
};

struct FsdpConfig {
  int version = 2;
  Sharding sharding = Sharding::full_shard;
  Choice wrap;  // module | size | none, checked by the fsdp layer
  BackwardPrefetch backward_prefetch = BackwardPrefetch::pre;
  bool forward_prefetch = false;
  bool limit_all_gathers = true;
  int max_inflight_all_gathers = 2;  // FSDP1's _max_num_inflight_all_gathers
  MixedPrecision mixed_precision;
  bool cpu_offload = false;
  Location where;  // of the fsdp section, for settings checked after loading
};

struct ClusterConfig {
  std::filesystem::path topology_file;
  std::int64_t nodes = 1;
  TopologyConfig topology;
};

enum class FlowGranularity { path, edge };

struct SimulationConfig {
  int steps = 1;  // training steps simulated back to back; the last one is reported
  FlowGranularity flows = FlowGranularity::path;
  // Limits, so that a scenario too big to simulate stops with a message naming the limit instead
  // of exhausting memory or time. `where` is the key's location (the section's when defaulted).
  Located<std::int64_t> max_ops{1'000'000, {}};             // ops in the step graph (graph layer)
  Located<std::int64_t> max_op_instances{200'000'000, {}};  // ops x ranks the engine tracks (~30 bytes each)
  Located<Seconds> max_wall_time{Seconds(1800), {}};        // wall-clock budget of the engine's run
};

struct ScenarioConfig {
  std::string name;
  std::filesystem::path file;
  ClusterConfig cluster;
  ModelConfig model;
  TrainingConfig training;
  FsdpConfig fsdp;
  SimulationConfig simulation;

  [[nodiscard]] std::int64_t world_size() const { return cluster.nodes * cluster.topology.node.gpus; }
};

// Loads a scenario and its topology; `assignments` are --set KEY=VALUE strings applied first.
[[nodiscard]] ScenarioConfig load_scenario(const std::filesystem::path& file, std::span<const std::string> assignments = {});
// The same, reading the scenario and the files it names through `source` (file_source.hpp).
[[nodiscard]] ScenarioConfig load_scenario(const std::filesystem::path& file, std::span<const std::string> assignments,
                                           const FileSource& source);

// Scenario settings, for `shardsim describe scenario`.
[[nodiscard]] std::vector<Schema> scenario_schemas();

}  // namespace shardsim::config

// Helpers shared by the files that read a scenario's sections (internal to the config layer).
#pragma once

#include <array>
#include <string_view>
#include <vector>

#include "config/scenario.hpp"
#include "core/reader.hpp"

namespace shardsim::config {

inline constexpr std::array<std::string_view, 3> kDTypeNames{"fp32", "bf16", "fp16"};
inline constexpr std::array<std::string_view, 3> kOptimizerNames{"adamw", "adam", "sgd"};
inline constexpr std::array<std::string_view, 3> kOptimizerImplNames{"auto", "foreach", "fused"};
inline constexpr std::array<std::string_view, 2> kLossImplNames{"torch", "megatron"};
inline constexpr std::array<std::string_view, 4> kAcNames{"none", "selective", "full", "blocks"};
inline constexpr std::array<std::string_view, 7> kShardingNames{"full_shard",         "shard_grad_op", "no_shard",       "hybrid_shard",
                                                                "hybrid_shard_zero2", "zero3",         "shard_optimizer"};
inline constexpr std::array<std::string_view, 3> kPrefetchNames{"pre", "post", "none"};
inline constexpr std::array<std::string_view, 4> kAttentionNames{"flash", "unfused", "cudnn", "flash3"};
inline constexpr std::array<std::string_view, 2> kTpAsyncImplNames{"inductor", "userbuffers"};

// Reads a choice among the key's ParamSpec choices as the enum E whose values follow them.
template <class E>
E pick(const Reader& r, std::string_view key) {
  return static_cast<E>(r.choice_index(key));
}

// Reads a choice and returns its index as the enum E whose values follow `names`.
template <class E, std::size_t N>
E pick(const Reader& r, std::string_view key, const std::array<std::string_view, N>& names) {
  const std::string v = r.choice(key, names);
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == v) return static_cast<E>(i);
  }
  return static_cast<E>(0);
}

// The mapping under `key`, or an empty mapping located at the parent when absent.
inline const ConfigNode& section(const Reader& r, std::string_view key, ConfigNode& scratch) {
  if (const ConfigNode* n = r.node(key)) return *n;
  scratch = ConfigNode::make_map(r.where(key));
  return scratch;
}

// training_settings.cpp: the training loop's section; warnings as read_fsdp's.
[[nodiscard]] TrainingConfig read_training(const Reader& top, std::vector<ConfigWarning>& warnings);
[[nodiscard]] Schema training_schema();

// Settings written for a configuration they do not apply to are added to `warnings`.
[[nodiscard]] FsdpConfig read_fsdp(const Reader& top, std::vector<ConfigWarning>& warnings);
[[nodiscard]] std::vector<Schema> fsdp_schemas();
// Whether every unit keeps its parameters from forward to backward, so that backward all-gathers
// nothing: DDP's strategies, shard_grad_op and hybrid_shard_zero2 unless fully_shard's
// reshard_after_forward says otherwise, reshard_after_forward: false, and fully_shard under a
// pipeline (pp > 1) where reshard_after_forward is not given (torchtitan: reshard_after_forward =
// not pp_enabled). fsdp/plan.cpp's apply_reshard_settings builds the units to match.
[[nodiscard]] bool keeps_every_unit(const FsdpConfig& f, std::int64_t pp = 1);
// Whether fsdp.forward_prefetch has anything to issue ahead: all-gathers of sharded parameters or,
// under no_shard with mixed precision, the casts of whole ones (FSDP1 unshards a NO_SHARD unit by
// casting it); nothing where shard_optimizer gathers after the optimizer step, nor under DeepSpeed.
[[nodiscard]] bool forward_prefetch_applies(const ScenarioConfig& s);

// parallelism.cpp: the section as written, then checked against the cluster and fsdp.sharding.
[[nodiscard]] ParallelismConfig read_parallelism(const Reader& top, std::vector<ConfigWarning>& warnings);
void check_parallelism(const ScenarioConfig& s, std::vector<ConfigWarning>& warnings);
[[nodiscard]] std::vector<Schema> parallelism_schemas();

// float8_settings.cpp: training.float8 as written, then checked against the GPU and FSDP.
[[nodiscard]] Float8Config read_float8(const Reader& training);
void check_float8(ScenarioConfig& s);
// fsdp_settings.cpp: ZeRO-Infinity's NVMe offload needs the topology's host.nvme.
void check_offload(const ScenarioConfig& s);
[[nodiscard]] std::vector<Schema> float8_schemas();

}  // namespace shardsim::config

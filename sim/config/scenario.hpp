// A scenario file (scenarios/*.yaml) as plain, validated data. See DESIGN.md "Scenario file".
// The topology it names is loaded too, with the scenario's cluster.overrides applied.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "config/calibration.hpp"
#include "config/choice.hpp"
#include "config/topology.hpp"
#include "core/param_spec.hpp"

namespace shardsim::config {

enum class DType { fp32, bf16, fp16 };
enum class Optimizer { adamw, adam, sgd };
// How the optimizer step runs: torch.optim's foreach kernels (a kernel per operation over all
// tensors, with a temporary for Adam's denominator) or one fused kernel per tensor list
// (torch's fused=True, DeepSpeed's and Megatron's FusedAdam); automatic: the framework's default.
enum class OptimizerImpl { automatic, foreach, fused };
enum class LossImpl { torch, megatron };
// selective: torchtitan's per-op SAC; blocks: full checkpointing of every k-th block only
// (torchtitan selective_ac_option "k", fms-fsdp selective_checkpointing).
enum class ActivationCheckpointing { none, selective, full, blocks };
// shard_optimizer: ZeRO-1 / Megatron-LM's distributed optimizer, DDP whose optimizer state is
// sharded over the data-parallel ranks (gradients reduce-scattered, parameters all-gathered).
enum class Sharding { full_shard, shard_grad_op, no_shard, hybrid_shard, hybrid_shard_zero2, zero3, shard_optimizer };
enum class HookOrder { post_first, pre_first };
enum class BackwardPrefetch { pre, post, none };

[[nodiscard]] int dtype_bytes(DType t);
[[nodiscard]] std::string_view to_string(DType t);
[[nodiscard]] std::string_view to_string(ActivationCheckpointing a);
[[nodiscard]] std::string_view to_string(Sharding s);
[[nodiscard]] std::string_view to_string(BackwardPrefetch b);
[[nodiscard]] std::string_view to_string(Optimizer o);
[[nodiscard]] std::string_view to_string(AttentionKernel a);

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
  std::optional<Located<std::int64_t>> layers, hidden, heads, kv_heads, ffn_hidden, vocab, max_positions, sliding_window;
  std::optional<Located<bool>> tie_embeddings;
  Location where;
};

// torchao float8 training (training.float8; model/float8.hpp says what each recipe does).
enum class Float8RecipeName { tensorwise, rowwise, rowwise_with_gw_hp, mxfp8, none };
[[nodiscard]] std::string_view to_string(Float8RecipeName r);

struct Float8Config {
  bool enabled = false;  // the section is present
  Located<Float8RecipeName> recipe;
  Located<bool> fsdp_float8_all_gather;     // FSDP2 all-gathers converted weights in float8 (tensorwise)
  Located<bool> precompute_scales;          // one amax all-reduce per step instead of one per weight per all-gather
  std::vector<std::string> skip{"output"};  // module names containing any of these stay in high precision
  Location skip_where;
  // torchtitan's "auto_filter_small_kn" entry of filter_fqns (given in `skip`, and taken out of
  // it): torchao's _auto_filter_for_recipe keeps linears too small to gain in high precision.
  bool auto_filter = false;
  Location where;
};

struct TrainingConfig {
  std::int64_t seq_len = 0;
  Location seq_len_where;
  std::int64_t micro_batch = 1;
  std::int64_t grad_accum = 1;
  bool loss_upcast = true;        // cross_entropy(logits.float()) as torchtitan; false: in the logits' dtype
  bool keep_logits = false;       // the loop holds the logits through backward (torchtitan deletes them)
  bool keep_logits_fp32 = false;  // keep_logits: fp32: the logits it holds are fp32 (the model's forward upcasts them)
  Location keep_logits_where;
  bool compile_loss = false;                         // torch.compile of the loss function (torchtitan since 2025-04 with compile)
  Located<LossImpl> loss_impl{LossImpl::torch, {}};  // whose cross-entropy: torch's F.cross_entropy or Megatron's
  bool no_sync = false;                              // accumulate unsharded gradients without reducing until the last micro-step
  bool expandable_segments = false;                  // PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (report/caching_allocator.hpp)
  Optimizer optimizer = Optimizer::adamw;
  Located<OptimizerImpl> optimizer_impl{OptimizerImpl::automatic, {}};
  ActivationCheckpointing activation_checkpointing = ActivationCheckpointing::none;
  int checkpoint_every = 2;            // with blocks: checkpoint blocks 0, k, 2k, ...
  DType dtype = DType::fp32;           // how parameters, gradients and optimizer state are stored
  Located<bool> compile;               // torch.compile per transformer block (model/blocks.cpp: what fuses)
  Located<AttentionKernel> attention;  // model/attention_impl.hpp
  Located<double> dropout;             // GPT blocks: hidden_dropout (Megatron-LM's), and attention_dropout's default
  Located<double> attention_dropout;   // GPT blocks: on the attention probabilities (dropout's when not given)
  bool attention_dropout_given = false;
  Float8Config float8;
};

struct MixedPrecision {
  bool enabled = false;
  DType param = DType::fp32;   // all-gathered parameters and compute
  DType reduce = DType::fp32;  // reduce-scatter / all-reduce of gradients
};

// DeepSpeed ZeRO-3 knobs, in numel as DeepSpeed counts them.
// Where ZeRO-Infinity keeps what it offloads (DeepSpeed's offload_optimizer / offload_param device).
enum class OffloadDevice { none, cpu, nvme };

struct Zero3Config {
  std::int64_t prefetch_bucket_size = 50'000'000;
  std::int64_t max_live_parameters = 1'000'000'000;
  std::int64_t max_reuse_distance = 1'000'000'000;
  std::int64_t param_persistence_threshold = 100'000;
  std::int64_t reduce_bucket_size = 500'000'000;
  bool overlap_comm = true;
  // ZeRO-Infinity: fp32 master weights and optimizer state (and the step) on the CPU or NVMe;
  // the 16-bit parameter partition on the CPU or NVMe, brought to the GPU for each all-gather.
  Located<OffloadDevice> offload_optimizer;
  Located<OffloadDevice> offload_param;
  std::int64_t sub_group_size = 1'000'000'000;  // parameters the optimizer steps (and swaps) at a time
  // The optimizer on NVMe (DeepSpeed's offload_optimizer.buffer_count, pipeline_read,
  // pipeline_write): pinned swap buffers of a sub-group's fp32 elements each; reading the next
  // sub-group while this one steps, writing the previous one back while it steps.
  Located<std::int64_t> optimizer_buffer_count{4, {}};
  bool pipeline_read = false;
  bool pipeline_write = false;
  // The parameters on NVMe (offload_param.buffer_count, buffer_size): pinned buffers of elements.
  std::int64_t param_buffer_count = 5;
  std::int64_t param_buffer_size = 100'000'000;
  // DeepSpeed's activation_checkpointing.cpu_checkpointing: checkpointed blocks' inputs in CPU memory.
  Located<bool> cpu_checkpointing;
};

struct FsdpConfig {
  int version = 2;
  Sharding sharding = Sharding::full_shard;
  Choice wrap;                                                 // module | size | none, checked by the fsdp layer
  BackwardPrefetch backward_prefetch = BackwardPrefetch::pre;  // FSDP1
  int backward_prefetch_depth = 1;                             // FSDP2
  int forward_prefetch = 0;                                    // units prefetched ahead in forward
  bool limit_all_gathers = true;
  int max_inflight_all_gathers = 2;  // FSDP1's _max_num_inflight_all_gathers
  // FSDP2: 1 (true) frees after forward, 0 (false) keeps, d > 1 keeps a 1/d shard; absent: by sharding.
  std::optional<Located<int>> reshard_after_forward;
  bool keep_last_unit_unsharded = false;
  bool reshard_root_after_forward = false;  // FSDP2, torch >= 2.8 with reshard_after_forward=True passed for the root
  // FSDP2: the reduce-scatter input in the reduce-scatter stream's pool (fully_shard before
  // pytorch#129721, torch 2.5) rather than the compute stream's.
  bool copy_in_on_reduce_scatter_stream = false;
  HookOrder backward_hook_order = HookOrder::post_first;
  Bytes bucket_size = Bytes(25e6);       // no_shard: DDP bucket_cap_mb
  bool megatron_ddp = false;             // no_shard as Megatron-LM runs it (fsdp.ddp_impl: megatron)
  bool grad_accumulation_fusion = true;  // Megatron's buffer filled in the weight-gradient GEMMs
  MixedPrecision mixed_precision;
  bool cpu_offload = false;
  Zero3Config zero3;
  Location where;                          // of the fsdp section, for settings checked after loading
  Location sharding_where;                 // of fsdp.sharding (its section's where defaulted)
  Location keep_last_where;                // ... of fsdp.keep_last_unit_unsharded
  Location reshard_root_where;             // ... of fsdp.reshard_root_after_forward
  Location forward_prefetch_where;         // ... of fsdp.forward_prefetch
  Location backward_prefetch_depth_where;  // ... of fsdp.backward_prefetch_depth

  // Megatron-LM's gradient buffer (main_grad, in the reduce dtype): its distributed optimizer, or
  // its DDP.
  [[nodiscard]] bool megatron_grad_buffer() const { return sharding == Sharding::shard_optimizer || megatron_ddp; }
};

// How several jobs' nodes are laid out on the fabric (cluster.placement).
enum class Placement { packed, interleaved };

struct ClusterConfig {
  std::filesystem::path topology_file;
  std::int64_t nodes = 1;  // of one job
  TopologyConfig topology;
  int jobs = 1;  // identical jobs on the fabric; the scenario describes job 0
  Placement placement = Placement::packed;
};

enum class FlowGranularity { path, edge };
// full: every rank is simulated. symmetric: one representative rank, valid when every rank does
// the same (no stragglers); auto: symmetric from 512 GPUs when valid, else full.
enum class SimulationMode { automatic, full, symmetric };

struct SimulationConfig {
  int steps = 0;  // training steps simulated back to back, the last one reported; 0 = auto
  FlowGranularity flows = FlowGranularity::path;
  SimulationMode mode = SimulationMode::automatic;
  Location mode_where;
  Location flows_where;
  // Limits, so that a scenario too big to simulate stops with a message naming the limit instead
  // of exhausting memory or time. `where` is the key's location (the section's when defaulted).
  Located<std::int64_t> max_ops{1'000'000, {}};             // ops in the step graph (graph layer)
  Located<std::int64_t> max_op_instances{200'000'000, {}};  // ops x ranks the engine tracks (~30 bytes each)
  Located<Seconds> max_wall_time{Seconds(1800), {}};        // wall-clock budget of the engine's run
};

// Ranks that do not behave like the others.
struct SlowGpu {
  std::int64_t rank = 0;
  double factor = 1;  // compute takes `factor` times as long
};
enum class LinkKind { nvlink, nic };
struct DegradedLink {
  std::int64_t rank = 0;
  LinkKind link = LinkKind::nic;
  double factor = 1;  // the link keeps `factor` of its bandwidth
};
struct Stragglers {
  std::vector<SlowGpu> slow_gpus;
  std::vector<DegradedLink> degraded_links;
  double jitter = 0;         // compute durations x exp(jitter x N(0, 1)), per op and rank
  double gpu_variation = 0;  // compute durations x exp(gpu_variation x N(0, 1)), per rank for the whole run
  std::uint64_t seed = 1;    // of the jitter and the variation
  [[nodiscard]] bool any() const { return !slow_gpus.empty() || !degraded_links.empty() || jitter > 0 || gpu_variation > 0; }
  // Whether every rank runs at its own speed (each its own cohort in the engine).
  [[nodiscard]] bool per_rank() const { return jitter > 0 || gpu_variation > 0; }
};

// Which NCCL algorithm and protocol run each collective (engine/collectives/). Algorithm names
// ("auto" or a registered algorithm) are checked by the engine's registry; a Choice keeps where
// each was written so that a name the engine rejects is reported there.
struct CollectivesConfig {
  Choice all_gather;  // name "auto" unless forced
  Choice reduce_scatter;
  Choice all_reduce;
  Choice protocol;  // auto | ll | ll128 | simple
};

// The device mesh (parallelism.cpp): tensor parallelism inside the data-parallel layout that
// fsdp.sharding gives. Ranks are laid out innermost-first (graph/groups.hpp).
// Pipeline schedules (parallelism.pp_schedule), torchtitan's names.
enum class PpSchedule { gpipe, one_f_one_b, interleaved_1f1b, zbv, interleaved_zb };

struct ParallelismConfig {
  int tp = 1;
  bool sequence_parallel = true;
  bool loss_parallel = true;    // logits left sharded over the vocabulary for the loss
  bool shard_embedding = true;  // token embedding split over the vocabulary
  Location shard_embedding_where;
  bool shard_output = true;  // output layer split over the vocabulary; false: whole on every TP rank
  Location shard_output_where;
  // The column-parallel linears that read one input each gather it (or reduce its gradient)
  // themselves, rather than the module once for all of them (tp_input_gather: linear).
  bool tp_gather_per_linear = false;
  Location tp_input_gather_where;
  // Sequence parallelism over activations laid out [sequence, batch, hidden] (Megatron-LM), whose
  // shards are contiguous; false: [batch, sequence, hidden] (DTensor's Shard(1)), reordered by a
  // copy around each all-gather and reduce-scatter (tp_activation_layout).
  bool tp_sequence_leading = false;
  bool tp_async = false;  // micro-pipelined collective matmuls (needs sequence parallelism)
  Location tp_async_where;
  // Whose collective matmuls: Inductor's micro_pipeline_tp pass (torchtitan, under compile), or
  // Transformer Engine's userbuffers (Megatron's --tp-comm-overlap), which also overlaps each
  // column-parallel linear's gradient reduce-scatter with its weight-gradient GEMM.
  bool tp_userbuffers = false;
  // Sequence parallelism: the column-parallel linears keep their all-gathered input for backward
  // (torchtitan's DTensor), or only their sequence shard, all-gathered again in backward for the
  // weight gradient (Megatron-LM, Korthikanti et al. 2022).
  bool tp_save_gathered = true;
  Location tp_save_gathered_where;
  int cp = 1;                // context parallelism: ranks splitting each sequence (inside the shard group)
  bool cp_alltoall = false;  // cp_rotate: K/V passed around the ring step by step, else all-gathered once
  Location cp_where;
  int pp = 1;  // pipeline stages (outermost in the mesh)
  PpSchedule pp_schedule = PpSchedule::one_f_one_b;
  int pp_stages_per_rank = 1;        // v: model chunks per rank (interleaved_1f1b; zbv: 2, in a V)
  int pp_microbatches = 0;           // micro-batches training.micro_batch is split into; 0: one sequence each
  std::vector<int> pp_split_points;  // first layer of stages 1 .. pp x v - 1 (empty: an even split)
  bool pp_scatter_gather = false;    // Megatron's: a send of 1/tp per TP rank, all-gathered over the TP group
  Location pp_where;                 // of parallelism.pp
  Location pp_schedule_where;
  Location pp_microbatches_where;
  Location pp_split_points_where;
  std::optional<Located<int>> dp_shard;  // as written, checked against fsdp.sharding
  std::optional<Located<int>> dp_replicate;
  Location where;  // of parallelism.tp (the section's when defaulted)
};

struct ScenarioConfig {
  std::string name;
  std::filesystem::path file;
  ClusterConfig cluster;
  ModelConfig model;
  TrainingConfig training;
  FsdpConfig fsdp;
  ParallelismConfig parallelism;
  SimulationConfig simulation;
  CollectivesConfig collectives;
  Stragglers stragglers;
  std::optional<CalibrationConfig> calibration;  // measured rates replacing the topology's (validation/)
  std::optional<std::filesystem::path> calibration_file;
  std::vector<ConfigWarning> warnings;  // settings that do not apply here (core/error.hpp)

  [[nodiscard]] std::int64_t world_size() const { return cluster.nodes * cluster.topology.node.gpus; }
  // Every file this scenario was read from, with what it is ("scenario", "topology", ...): an
  // output must never be written over one of them.
  [[nodiscard]] std::vector<std::pair<std::filesystem::path, std::string>> input_files() const;
};

// Loads a scenario and its topology; `assignments` are --set KEY=VALUE strings applied first.
[[nodiscard]] ScenarioConfig load_scenario(const std::filesystem::path& file, std::span<const std::string> assignments = {});
// The same, reading the scenario and the files it names through `source` (file_source.hpp).
[[nodiscard]] ScenarioConfig load_scenario(const std::filesystem::path& file, std::span<const std::string> assignments,
                                           const FileSource& source);

// Scenario settings, for `shardsim describe scenario`.
[[nodiscard]] std::vector<Schema> scenario_schemas();

}  // namespace shardsim::config

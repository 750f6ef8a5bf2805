// The fsdp: section of a scenario. Names follow PyTorch (FullyShardedDataParallel arguments,
// fully_shard arguments) and DeepSpeed's zero_optimization keys; docs/fsdp.md explains each.
#include <fmt/format.h>

#include <array>
#include <cctype>

#include "config/sections.hpp"

namespace shardsim::config {
namespace {

constexpr std::array<std::string_view, 2> kHookOrderNames{"post_first", "pre_first"};
constexpr std::array<std::string_view, 2> kCopyInStreamNames{"compute", "reduce_scatter"};
constexpr std::array<std::string_view, 2> kDdpImplNames{"torch", "megatron"};
constexpr double kNumelMax = static_cast<double>(std::int64_t{1} << 50);

constexpr std::array kFsdpParams{
    ParamSpec{"version", "integer", "2", "1 = FullyShardedDataParallel, 2 = fully_shard", Range{1, 2}},
    ParamSpec{"sharding",
              "",
              "full_shard",
              "sharding strategy; zero3 = DeepSpeed ZeRO stage 3 (settings under fsdp.zero3); shard_optimizer = ZeRO-1 / "
              "Megatron's distributed optimizer (DDP with the optimizer state sharded)",
              {},
              kShardingNames},
    ParamSpec{"wrap", "mapping {policy: ...}", "{policy: module}", "how the model is cut into units (shardsim describe wrap)"},
    ParamSpec{"backward_prefetch", "", "pre", "FSDP1: when the next unit's all-gather is issued in backward", {}, kPrefetchNames},
    ParamSpec{"backward_prefetch_depth", "integer", "1", "FSDP2: units prefetched ahead in backward (set_modules_to_backward_prefetch)",
              Range{1, 1024}},
    ParamSpec{"forward_prefetch", "bool or integer >= 0", "false",
              "prefetch the next unit(s) before this unit's forward (FSDP1: next one, from the second step; FSDP2: N units)"},
    ParamSpec{"limit_all_gathers", "bool", "true", "FSDP1 rate limiter: the CPU waits before issuing more all-gathers"},
    ParamSpec{"max_inflight_all_gathers", "integer", "2", "FSDP1 limiter depth (_max_num_inflight_all_gathers, \"empirically chosen\" 2)",
              Range{1, 1024}},
    ParamSpec{"reshard_after_forward", "bool or integer > 1", "-",
              "free parameters after forward (default: by sharding); FSDP2 integer d keeps a 1/d shard for backward"},
    ParamSpec{"keep_last_unit_unsharded", "bool", "false",
              "do not reshard the last unit after forward (torchtitan: backward needs it first)"},
    ParamSpec{"reshard_root_after_forward", "bool", "false",
              "FSDP2: free the root unit's parameters (embedding, final norm, output head) after the model's forward and "
              "all-gather them again once the loss's backward is done, as fully_shard(model, reshard_after_forward=True) "
              "does since pytorch#154704 (2025-06, torch 2.8); before it, or with the argument left out, the root stays "
              "unsharded"},
    ParamSpec{"backward_hook_order",
              "",
              "post_first",
              "FSDP1: whether unit k's post-backward fires before unit k-1's pre-backward (autograd order; unsure)",
              {},
              kHookOrderNames},
    ParamSpec{"copy_in_stream",
              "",
              "compute",
              "FSDP2: the stream whose memory pool holds the reduce-scatter input (the gradients copied in, in the reduce "
              "dtype): compute, as fully_shard allocates it since pytorch#129721 (2024-06-27, torch 2.5); reduce_scatter for "
              "fully_shard before it",
              {},
              kCopyInStreamNames},
    ParamSpec{"bucket_size", "size", "25MB", "no_shard, shard_optimizer: DDP gradient bucket (bucket_cap_mb)",
              Range{1, 1e15, Dimension::bytes}},
    ParamSpec{"ddp_impl",
              "",
              "torch",
              "no_shard: whose data parallelism; torch = PyTorch DDP (gradients in param.grad, in the master dtype, added up by "
              "autograd); megatron = Megatron-LM's (its model in the compute dtype, fp32 main parameters in the optimizer, "
              "gradients added into a contiguous buffer in the reduce dtype and zeroed each step)",
              {},
              kDdpImplNames},
    ParamSpec{"grad_accumulation_fusion", "bool", "true",
              "Megatron's gradient buffer (sharding shard_optimizer, or no_shard with ddp_impl megatron): the linears' "
              "weight-gradient GEMMs add into it in their epilogue (Megatron-Core's default); false: every gradient added by "
              "the parameter's backward hook (main_grad.add_), as Megatron-LM before 2022"},
    ParamSpec{"mixed_precision", "mapping {param, reduce} or none", "none", "dtypes of all-gathered parameters and of gradient reduction"},
    ParamSpec{"cpu_offload", "bool", "false", "keep parameter shards, gradients and optimizer on the CPU"},
    ParamSpec{"zero3", "mapping", "{}", "DeepSpeed ZeRO-3 settings (sharding: zero3)"},
};
constexpr std::array kMixedPrecisionParams{
    ParamSpec{"param", "", "bf16", "dtype of unsharded parameters and compute", {}, kDTypeNames},
    ParamSpec{"reduce", "", "-", "dtype of gradient reduction (default: param)", {}, kDTypeNames},
};
constexpr std::array<std::string_view, 3> kOffloadNames{"none", "cpu", "nvme"};
// DeepSpeed defaults (deepspeed/runtime/zero/config.py, shared/reference/fsdp-semantics.md section 8).
constexpr std::array kZero3Params{
    ParamSpec{"prefetch_bucket_size", "integer", "50000000", "stage3_prefetch_bucket_size: parameters prefetched ahead (numel)",
              Range{0, kNumelMax}},
    ParamSpec{"max_live_parameters", "integer", "1000000000", "stage3_max_live_parameters: gathered parameters kept at once (numel)",
              Range{1, kNumelMax}},
    ParamSpec{"max_reuse_distance", "integer", "1000000000", "stage3_max_reuse_distance: keep a parameter if reused within (numel)",
              Range{0, kNumelMax}},
    ParamSpec{"param_persistence_threshold", "integer", "100000",
              "stage3_param_persistence_threshold: smaller parameters are never partitioned", Range{0, kNumelMax}},
    ParamSpec{"reduce_bucket_size", "integer", "500000000", "reduce_bucket_size: gradients reduce-scattered per bucket (numel)",
              Range{1, kNumelMax}},
    ParamSpec{"overlap_comm", "bool", "true", "reduce on a separate stream, overlapping backward"},
    ParamSpec{"offload_optimizer",
              "none | cpu | nvme",
              "none",
              "ZeRO-Offload / ZeRO-Infinity: fp32 master weights, optimizer state and the optimizer step on the CPU, the state on "
              "the node's NVMe (host.nvme) swapped in and out per sub-group",
              {},
              kOffloadNames},
    ParamSpec{"offload_param",
              "none | cpu | nvme",
              "none",
              "ZeRO-Infinity: the 16-bit parameter partition in CPU memory or on NVMe, copied to the GPU before each all-gather",
              {},
              kOffloadNames},
    ParamSpec{"sub_group_size", "integer", "1000000000", "sub_group_size: parameters the offloaded optimizer steps and swaps at a time",
              Range{1, kNumelMax}},
    ParamSpec{"optimizer_buffer_count", "integer", "4",
              "offload_optimizer.buffer_count: pinned swap buffers of a sub-group's fp32 elements (optimizer on NVMe; at least the "
              "tensors swapped per sub-group, twice that pipelined)",
              Range{1, 1024}},
    ParamSpec{"pipeline_read", "bool", "false",
              "offload_optimizer.pipeline_read: read the next sub-group's state from NVMe while this one steps (optimizer on NVMe)"},
    ParamSpec{"pipeline_write", "bool", "false",
              "offload_optimizer.pipeline_write: write the previous sub-group's state to NVMe while this one steps (optimizer on NVMe)"},
    ParamSpec{"param_buffer_count", "integer", "5", "offload_param.buffer_count: pinned parameter buffers (parameters on NVMe)",
              Range{1, 1024}},
    ParamSpec{"param_buffer_size", "integer", "100000000", "offload_param.buffer_size: elements of each pinned parameter buffer",
              Range{1, kNumelMax}},
    ParamSpec{"cpu_checkpointing", "bool", "false",
              "DeepSpeed's activation_checkpointing.cpu_checkpointing: each checkpointed block's input copied to CPU memory "
              "after the next block's forward (the newest kept on the GPU) and back when its backward needs it; needs "
              "training.activation_checkpointing: full"},
};

constexpr Schema kFsdpSchema{"fsdp", "FSDP settings (PyTorch names)", kFsdpParams};
constexpr Schema kMixedPrecisionSchema{"fsdp.mixed_precision", "FSDP MixedPrecision", kMixedPrecisionParams};
constexpr Schema kZero3Schema{"fsdp.zero3", "DeepSpeed ZeRO-3 (zero_optimization) settings", kZero3Params};

MixedPrecision read_mixed_precision(const Reader& fsdp) {
  MixedPrecision mp;
  const ConfigNode* node = fsdp.node("mixed_precision");
  if (node == nullptr) return mp;
  if (node->is_scalar() && (node->scalar == "none" || node->scalar == "false")) return mp;
  Reader r(*node, "fsdp.mixed_precision", kMixedPrecisionSchema);
  mp.enabled = true;
  mp.param = pick<DType>(r, "param");
  mp.reduce = r.has("reduce") ? pick<DType>(r, "reduce") : mp.param;
  r.finish();
  return mp;
}

Choice read_wrap(const Reader& r) {
  const ConfigNode* w = r.node("wrap");
  if (w == nullptr) return Choice{"module", "fsdp.wrap", r.where("wrap"), ConfigNode{}};
  if (w->is_scalar()) return Choice{w->scalar, "fsdp.wrap", w->where, ConfigNode{}};
  if (!w->is_map()) {
    throw ConfigError(w->where, "fsdp.wrap", fmt::format("expected a mapping such as {{policy: module}}; got {}", w->describe()));
  }
  const ConfigNode* policy = w->find("policy");
  // Settings without a policy (--set fsdp.wrap.blocks_per_unit=2 on a scenario that leaves wrap at
  // its default) are settings of the default policy.
  if (policy == nullptr) return Choice{"module", "fsdp.wrap", w->where, *w};
  if (!policy->is_scalar()) {
    throw ConfigError(policy->where, "fsdp.wrap.policy", fmt::format("expected module, size or none; got {}", policy->describe()));
  }
  return Choice{policy->scalar, "fsdp.wrap", policy->where, *w};
}

// DDP's strategies: parameters whole on every rank, gradients reduced in buckets.
bool ddp_like(Sharding s) {
  return s == Sharding::no_shard || s == Sharding::shard_optimizer;
}

// The module wrap policy's outer_modules when it is written units (the policy checks its value).
const ConfigNode* outer_units(const Choice& wrap) {
  const ConfigNode* o = wrap.settings.is_map() ? wrap.settings.find("outer_modules") : nullptr;
  return o != nullptr && o->is_scalar() && o->scalar == "units" ? o : nullptr;
}

// A key that takes true / false or a count: true = 1, false = 0.
std::int64_t bool_or_count(const Reader& r, std::string_view key, std::int64_t max) {
  const ConfigNode* n = r.node(key);
  if (n == nullptr) return r.boolean(key) ? 1 : 0;
  if (n->is_scalar()) {
    const std::string s = n->scalar;
    if (s == "true" || s == "false" || s == "yes" || s == "no" || s == "on" || s == "off") return r.boolean(key) ? 1 : 0;
    if (!s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) != 0 || s[0] == '-')) return r.integer(key, 0, max);
  }
  r.fail(key, fmt::format("expected true, false or a count from 0 to {}; got {}", max, n->describe()));
}

Zero3Config read_zero3(const Reader& fsdp, bool zero3, std::vector<ConfigWarning>& warnings) {
  ConfigNode scratch;
  Reader r(section(fsdp, "zero3", scratch), "fsdp.zero3", kZero3Schema);
  Zero3Config z;
  z.prefetch_bucket_size = r.integer("prefetch_bucket_size");
  z.max_live_parameters = r.integer("max_live_parameters");
  z.max_reuse_distance = r.integer("max_reuse_distance");
  z.param_persistence_threshold = r.integer("param_persistence_threshold");
  z.reduce_bucket_size = r.integer("reduce_bucket_size");
  z.overlap_comm = r.boolean("overlap_comm");
  // DeepSpeed's config nests the device and its buffers (offload_optimizer: {device: nvme, ...});
  // a scenario names the device and keeps each knob as a key of its own, so a sweep can vary it.
  const auto flat = [&r](std::string_view key, std::string_view knobs) {
    if (const ConfigNode* n = r.node(key); n != nullptr && n->is_map()) {
      r.fail(key, fmt::format("expected none, cpu or nvme (DeepSpeed's {0}.device; its other settings are keys of fsdp.zero3: {1}); "
                              "got a mapping",
                              key, knobs));
    }
  };
  flat("offload_optimizer", "buffer_count as optimizer_buffer_count, pipeline_read, pipeline_write");
  flat("offload_param", "buffer_count as param_buffer_count, buffer_size as param_buffer_size");
  z.offload_optimizer = {pick<OffloadDevice>(r, "offload_optimizer"), r.where("offload_optimizer")};
  z.offload_param = {pick<OffloadDevice>(r, "offload_param"), r.where("offload_param")};
  z.sub_group_size = r.integer("sub_group_size");
  if (zero3 && r.has("sub_group_size") && z.offload_optimizer.value == OffloadDevice::none) {
    warnings.push_back({r.where("sub_group_size"), "fsdp.zero3.sub_group_size",
                        "modelled as the offloaded optimizer's unit of stepping and swapping (offload_optimizer: cpu or nvme); "
                        "with the optimizer on the GPU it is ignored"});
  }
  z.optimizer_buffer_count = {r.integer("optimizer_buffer_count"), r.where("optimizer_buffer_count")};
  z.pipeline_read = r.boolean("pipeline_read");
  z.pipeline_write = r.boolean("pipeline_write");
  z.param_buffer_count = r.integer("param_buffer_count");
  z.param_buffer_size = r.integer("param_buffer_size");
  const auto needs = [&](std::string_view key, const Located<OffloadDevice>& device, std::string_view setting) {
    if (zero3 && r.has(key) && device.value != OffloadDevice::nvme) {
      warnings.push_back({r.where(key), r.path_of(key), fmt::format("applies to {}: nvme only; it is ignored", setting)});
    }
  };
  for (const char* key : {"optimizer_buffer_count", "pipeline_read", "pipeline_write"})
    needs(key, z.offload_optimizer, "offload_optimizer");
  for (const char* key : {"param_buffer_count", "param_buffer_size"}) needs(key, z.offload_param, "offload_param");
  z.cpu_checkpointing = {r.boolean("cpu_checkpointing"), r.where("cpu_checkpointing")};
  r.finish();
  return z;
}

// A setting written for a configuration it does not apply to is never silently ignored: a sweep
// over it would print identical rows, a run a plausible result for something other than what was
// asked. Where the combination comes naturally from sweeping another key (fsdp.version over a
// scenario with FSDP1 settings, fsdp.sharding over one with a DDP bucket) it is a warning, which
// the run prints and the sweep records per point; what cannot be modelled is an error.
void check_applies(const Reader& r, const FsdpConfig& f, std::vector<ConfigWarning>& warnings) {
  const auto warn = [&](std::string_view key, std::string message) {
    if (r.has(key)) warnings.push_back({r.where(key), r.path_of(key), std::move(message) + "; it is ignored"});
  };
  if (f.sharding == Sharding::zero3) {
    if (r.has("cpu_offload") && f.cpu_offload) {
      r.fail("cpu_offload", "DeepSpeed ZeRO-3 offloads with fsdp.zero3.offload_optimizer / offload_param (cpu or nvme); expected false");
    }
    constexpr std::array kPyTorchOnly{"version",
                                      "backward_prefetch",
                                      "backward_prefetch_depth",
                                      "forward_prefetch",
                                      "limit_all_gathers",
                                      "max_inflight_all_gathers",
                                      "reshard_after_forward",
                                      "keep_last_unit_unsharded",
                                      "backward_hook_order",
                                      "bucket_size",
                                      "copy_in_stream",
                                      "reshard_root_after_forward"};
    for (const char* key : kPyTorchOnly) {
      warn(key, "a PyTorch FSDP setting, which DeepSpeed ZeRO-3 (fsdp.sharding: zero3) does not have (its own are under fsdp.zero3)");
    }
    warn("wrap", "PyTorch FSDP's units; DeepSpeed ZeRO-3 (fsdp.sharding: zero3) fetches each module's own parameters");
    return;
  }
  warn("zero3", fmt::format("DeepSpeed ZeRO-3 settings, which apply only with fsdp.sharding: zero3, not {}", to_string(f.sharding)));
  if (f.version == 2) {
    constexpr std::array kFsdp1Only{"backward_prefetch", "limit_all_gathers", "max_inflight_all_gathers", "backward_hook_order"};
    for (const char* key : kFsdp1Only) {
      warn(key,
           "an FSDP1 setting (FullyShardedDataParallel), which fully_shard (fsdp.version: 2) does not have: it prefetches in "
           "pre-backward (fsdp.backward_prefetch_depth units) and has no rate limiter");
    }
  }
  if (outer_units(f.wrap) != nullptr && !ddp_like(f.sharding)) {  // DDP's own warning below says why otherwise
    warn("reshard_root_after_forward", "the root unit's resharding; with fsdp.wrap.outer_modules: units it holds no parameters");
  }
  if (f.version == 1) {
    warn("reshard_root_after_forward", "fully_shard's (fsdp.version: 2) handling of its root; FSDP1 never reshards its root after forward");
    warn("copy_in_stream",
         "where fully_shard (fsdp.version: 2) allocates its reduce-scatter input; FSDP1 casts its flat gradient on its "
         "post-backward stream");
  }
  if (f.version == 1 && !f.limit_all_gathers) {
    warn("max_inflight_all_gathers", "the depth of the rate limiter, which fsdp.limit_all_gathers: false turns off");
  }
  const bool ddp = ddp_like(f.sharding);
  // Keeping the last unit's parameters after forward where every unit keeps them changes nothing
  // (under a pipeline check_parallelism warns).
  const bool keeps_all = keeps_every_unit(f);
  const std::string keeper = ddp || !f.reshard_after_forward ? fmt::format("fsdp.sharding: {}", to_string(f.sharding))
                                                             : std::string("fsdp.reshard_after_forward: false");
  if (keeps_all) {
    warn("keep_last_unit_unsharded", fmt::format("keeps the last unit's parameters after forward, which {} keeps for every unit", keeper));
  }
  // All-gather scheduling where backward, or the whole step, all-gathers nothing (FSDP1's keys on
  // FSDP2 have their own warning above).
  const bool none = f.sharding == Sharding::no_shard;
  const std::string why = none ? "fsdp.sharding: no_shard all-gathers no parameters"
                          : f.sharding == Sharding::shard_optimizer
                              ? "fsdp.sharding: shard_optimizer all-gathers parameters before forward only"
                              : keeper + " keeps every unit's parameters from forward to backward";
  if (keeps_all) {
    warn("backward_prefetch_depth", "backward prefetching, and " + why);
    if (f.version == 1) {
      warn("backward_prefetch", "backward prefetching, and " + why);
      warn("backward_hook_order", "where backward's all-gathers fall among its reductions, and " + why);
    }
  }
  // Nor does forward all-gather anything where the parameters are whole from the start (no_shard;
  // its casts under mixed precision are prefetched, checked with the training dtype: scenario.cpp)
  // or gathered after the optimizer step (shard_optimizer: ZeRO-1, Megatron's distributed optimizer).
  if (none || f.sharding == Sharding::shard_optimizer) {
    if (!none) warn("forward_prefetch", "forward prefetching, and " + why);
    if (f.version == 1) {
      warn("limit_all_gathers", "the rate limiter of all-gathers, and " + why);
      if (f.limit_all_gathers) warn("max_inflight_all_gathers", "the rate limiter of all-gathers, and " + why);
    }
  }
  if (f.sharding != Sharding::no_shard) {
    warn("ddp_impl", fmt::format("which DDP runs fsdp.sharding: no_shard; fsdp.sharding: {} has none (shard_optimizer is "
                                 "Megatron's distributed optimizer already)",
                                 to_string(f.sharding)));
  }
  if (!f.megatron_grad_buffer()) {
    warn("grad_accumulation_fusion",
         "how Megatron's gradient buffer is filled, which only fsdp.sharding: shard_optimizer or no_shard with fsdp.ddp_impl: "
         "megatron has");
  }
  if (!ddp) {
    warn("bucket_size",
         fmt::format("DDP's gradient bucket, used with fsdp.sharding: no_shard or shard_optimizer only, not {}", to_string(f.sharding)));
  } else {
    for (const char* key : {"reshard_after_forward", "reshard_root_after_forward"}) {
      warn(key, fmt::format("FSDP's resharding, which fsdp.sharding: {} (parameters never sharded) does not do", to_string(f.sharding)));
    }
    warn("copy_in_stream", fmt::format("where fully_shard allocates its reduce-scatter input, which fsdp.sharding: {} does not have "
                                       "(it reduces DDP buckets)",
                                       to_string(f.sharding)));
  }
}

}  // namespace

bool forward_prefetch_applies(const ScenarioConfig& s) {
  const FsdpConfig& f = s.fsdp;
  if (f.sharding == Sharding::shard_optimizer || f.sharding == Sharding::zero3) return false;
  if (f.sharding != Sharding::no_shard) return true;
  return !f.megatron_ddp && f.mixed_precision.enabled && dtype_bytes(f.mixed_precision.param) != dtype_bytes(s.training.dtype);
}

bool keeps_every_unit(const FsdpConfig& f, std::int64_t pp) {
  if (ddp_like(f.sharding)) return true;
  if (f.sharding == Sharding::zero3) return false;  // DeepSpeed releases each module's parameters after its forward
  if (f.reshard_after_forward) return f.reshard_after_forward->value == 0;
  return f.sharding == Sharding::shard_grad_op || f.sharding == Sharding::hybrid_shard_zero2 || (pp > 1 && f.version == 2);
}

FsdpConfig read_fsdp(const Reader& top, std::vector<ConfigWarning>& warnings) {
  ConfigNode scratch;
  Reader r(section(top, "fsdp", scratch), "fsdp", kFsdpSchema);
  FsdpConfig f;
  f.where = r.where("cpu_offload");
  f.version = static_cast<int>(r.integer("version"));
  f.sharding = pick<Sharding>(r, "sharding");
  f.sharding_where = r.where("sharding");
  f.wrap = read_wrap(r);
  if (const ConfigNode* o = outer_units(f.wrap); o != nullptr && f.version == 1) {
    throw ConfigError(o->where, "fsdp.wrap.outer_modules",
                      "fully_shard's wrapping of a list of modules ([norm, output]) as one unit; FSDP1 wraps one module a unit: "
                      "expected root (or fsdp.version: 2)");
  }
  f.backward_prefetch = pick<BackwardPrefetch>(r, "backward_prefetch");
  f.backward_prefetch_depth = static_cast<int>(r.integer("backward_prefetch_depth"));
  f.forward_prefetch = static_cast<int>(bool_or_count(r, "forward_prefetch", 1024));
  f.forward_prefetch_where = r.where("forward_prefetch");
  if (f.version == 1 && f.forward_prefetch > 1) {
    r.fail("forward_prefetch", "FSDP1 prefetches one unit ahead (its limit is fixed at 1); expected true or false");
  }
  if (f.version == 1 && r.has("backward_prefetch_depth") && f.backward_prefetch_depth != 1) {
    r.fail("backward_prefetch_depth", "FSDP1 prefetches one unit ahead in backward; expected 1 (use fsdp.version: 2)");
  }
  f.limit_all_gathers = r.boolean("limit_all_gathers");
  f.max_inflight_all_gathers = static_cast<int>(r.integer("max_inflight_all_gathers"));
  if (r.has("reshard_after_forward")) {
    const std::int64_t v = bool_or_count(r, "reshard_after_forward", 1 << 20);
    if (f.version == 1)
      r.fail("reshard_after_forward", "FSDP1 takes it from the sharding strategy; set fsdp.sharding (or use fsdp.version: 2)");
    f.reshard_after_forward = Located<int>{static_cast<int>(v), r.where("reshard_after_forward")};
  }
  f.keep_last_unit_unsharded = r.boolean("keep_last_unit_unsharded");
  f.keep_last_where = r.where("keep_last_unit_unsharded");
  f.reshard_root_where = r.where("reshard_root_after_forward");
  f.backward_prefetch_depth_where = r.where("backward_prefetch_depth");
  // Only fully_shard reshards (check_applies warns, and it is ignored, elsewhere).
  const bool sharded = !ddp_like(f.sharding) && f.sharding != Sharding::zero3;
  f.reshard_root_after_forward = f.version == 2 && sharded && r.boolean("reshard_root_after_forward");
  f.copy_in_on_reduce_scatter_stream = r.choice("copy_in_stream") == "reduce_scatter";
  f.backward_hook_order = pick<HookOrder>(r, "backward_hook_order");
  f.bucket_size = Bytes(r.quantity("bucket_size", Dimension::bytes));
  const bool megatron_ddp = r.choice("ddp_impl") == "megatron";
  f.megatron_ddp = megatron_ddp && f.sharding == Sharding::no_shard;
  f.grad_accumulation_fusion = r.boolean("grad_accumulation_fusion");
  f.mixed_precision = read_mixed_precision(r);
  f.cpu_offload = r.boolean("cpu_offload");
  f.zero3 = read_zero3(r, f.sharding == Sharding::zero3, warnings);
  if (f.sharding == Sharding::shard_optimizer && f.cpu_offload) {
    r.fail("cpu_offload",
           "offloading with the sharded optimizer (ZeRO-1) is not modelled; expected false (or fsdp.sharding: zero3 "
           "with fsdp.zero3.offload_optimizer)");
  }
  if (f.megatron_ddp && f.cpu_offload) {
    r.fail("cpu_offload", "Megatron-LM's DDP (fsdp.ddp_impl: megatron) does not offload; expected false (or fsdp.ddp_impl: torch)");
  }
  r.finish();
  check_applies(r, f, warnings);
  return f;
}

std::vector<Schema> fsdp_schemas() {
  return {kFsdpSchema, kMixedPrecisionSchema, kZero3Schema};
}

void check_offload(const ScenarioConfig& s) {
  const Zero3Config& z = s.fsdp.zero3;
  if (s.fsdp.sharding != Sharding::zero3) return;
  if (z.cpu_checkpointing.value && s.training.activation_checkpointing != ActivationCheckpointing::full) {
    // DeepSpeed offloads the inputs of the blocks deepspeed.checkpointing.checkpoint wraps.
    throw ConfigError(z.cpu_checkpointing.where, "fsdp.zero3.cpu_checkpointing",
                      "DeepSpeed offloads the inputs of checkpointed blocks; expected false or training.activation_checkpointing: full");
  }
  const auto& t = s.cluster.topology;
  for (const Located<OffloadDevice>* d : {&z.offload_optimizer, &z.offload_param}) {
    if (d->value != OffloadDevice::nvme || t.host.nvme.read.value() > 0) continue;
    throw ConfigError(
        d->where, d == &z.offload_optimizer ? "fsdp.zero3.offload_optimizer" : "fsdp.zero3.offload_param",
        fmt::format("the topology ({}) describes no NVMe drives (host.nvme: {{read, write, capacity}}); expected cpu or none, "
                    "or a topology with them",
                    t.name));
  }
}

}  // namespace shardsim::config

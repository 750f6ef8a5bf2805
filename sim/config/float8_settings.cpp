// training.float8: torchao's float8 training, by recipe name, as torchtitan's float8 converter
// takes it. Checked against the GPU (fp8 / MXFP8 peaks in its topology) and against FSDP (the
// float8 all-gather is FSDP2's, for tensorwise scales).
#include <fmt/format.h>

#include <array>

#include "config/sections.hpp"

namespace shardsim::config {
namespace {

constexpr std::array<std::string_view, 5> kRecipeNames{"tensorwise", "rowwise", "rowwise_with_gw_hp", "mxfp8", "none"};
// torchtitan's filter_fqns entry that turns on torchao's auto filter (components/quantization/float8.py).
constexpr std::string_view kAutoFilter = "auto_filter_small_kn";
constexpr std::array kFloat8Params{
    ParamSpec{"recipe",
              "",
              "",
              "torchao's recipe: tensorwise | rowwise | rowwise_with_gw_hp scales, or mxfp8 (Blackwell); none: bf16 linears (a sweep's "
              "baseline)",
              {},
              kRecipeNames},
    ParamSpec{"fsdp_float8_all_gather", "bool", "false",
              "FSDP2 casts converted weights to float8 on their shards and all-gathers 1 byte per parameter (tensorwise only)"},
    ParamSpec{"precompute_scales", "bool", "false",
              "with fsdp_float8_all_gather: one amax all-reduce for all weights after the optimizer step instead of one per weight "
              "before each all-gather"},
    ParamSpec{"force_recompute_weight_in_backward", "bool", "true",
              "recompute the float8 weight in backward instead of saving the unsharded one (torchtitan sets it); only true is modelled"},
    ParamSpec{"skip", "list of names", "[output]",
              "linears whose module name contains one of these stay in high precision; auto_filter_small_kn (torchtitan's entry) "
              "also keeps those whose weight is too small to gain from float8 by torchao's thresholds (tensorwise, rowwise)"},
};
constexpr Schema kFloat8Schema{"training.float8", "float8 training of the linears (torchao)", kFloat8Params};

}  // namespace

Float8Config read_float8(const Reader& training) {
  Float8Config f;
  const ConfigNode* node = training.node("float8");
  if (node == nullptr) return f;
  if (!node->is_map()) training.fail("float8", fmt::format("expected a mapping {{recipe: tensorwise, ...}}; got {}", node->describe()));
  Reader r(*node, "training.float8", kFloat8Schema);
  r.finish();
  f.enabled = true;
  f.where = training.where("float8");
  if (!r.has("recipe")) r.fail("recipe", "missing required key (expected tensorwise, rowwise, rowwise_with_gw_hp, mxfp8 or none)");
  f.recipe = {pick<Float8RecipeName>(r, "recipe", kRecipeNames), r.where("recipe")};
  if (f.recipe.value == Float8RecipeName::none) {
    // No linear converted: the other keys would have nothing to act on.
    for (std::string_view key : {"fsdp_float8_all_gather", "precompute_scales"}) {
      if (r.boolean(key)) r.fail(key, "applies to float8 linears, but recipe is none; expected false");
    }
    f.enabled = false;
    return f;
  }
  f.fsdp_float8_all_gather = {r.boolean("fsdp_float8_all_gather"), r.where("fsdp_float8_all_gather")};
  f.precompute_scales = {r.boolean("precompute_scales"), r.where("precompute_scales")};
  if (!r.boolean("force_recompute_weight_in_backward")) {
    r.fail("force_recompute_weight_in_backward",
           "saving the unsharded float8 weights for backward is not modelled (torchtitan recomputes them); expected true");
  }
  if (const ConfigNode* skip = r.node("skip")) {
    if (!skip->is_sequence()) r.fail("skip", fmt::format("expected a list of module names, e.g. [output]; got {}", skip->describe()));
    f.skip.clear();
    for (std::size_t i = 0; i < skip->items.size(); ++i) {
      const ConfigNode& item = skip->items[i];
      if (!item.is_scalar() || item.scalar.empty()) {
        throw ConfigError(item.where, fmt::format("training.float8.skip[{}]", i),
                          fmt::format("expected a module name; got {}", item.describe()));
      }
      if (item.scalar == kAutoFilter) {
        f.auto_filter = true;
      } else {
        f.skip.push_back(item.scalar);
      }
    }
    f.skip_where = r.where("skip");
    if (f.auto_filter && f.recipe.value != Float8RecipeName::tensorwise && f.recipe.value != Float8RecipeName::rowwise) {
      // torchao's _auto_filter_for_recipe raises for rowwise_with_gw_hp; torchtitan's MX converter has no auto filter.
      r.fail("skip", fmt::format("{} has thresholds for the tensorwise and rowwise recipes only (torchao's _auto_filter_for_recipe); "
                                 "expected recipe: tensorwise or rowwise, or the linears to keep named",
                                 kAutoFilter));
    }
  } else {
    f.skip_where = f.where;
  }
  return f;
}

void check_float8(ScenarioConfig& s) {
  const Float8Config& f = s.training.float8;
  if (!f.enabled) return;
  const GpuSpec& gpu = s.cluster.topology.gpu;
  const bool mx = f.recipe.value == Float8RecipeName::mxfp8;
  if ((mx ? gpu.peak_mxfp8.value() : gpu.peak_fp8.value()) <= 0) {
    throw ConfigError(f.recipe.where, "training.float8.recipe",
                      fmt::format("the GPU {} has no {} GEMMs (its topology gives no gpu.peak_flops.{}); expected a GPU with {} "
                                  "(e.g. {}) or no training.float8",
                                  gpu.model, mx ? "MXFP8" : "float8", mx ? "mxfp8" : "fp8", mx ? "them" : "float8 tensor cores",
                                  mx ? "Blackwell" : "Hopper, Blackwell"));
  }
  const MixedPrecision& mp = s.fsdp.mixed_precision;
  const DType compute = mp.enabled ? mp.param : s.training.dtype;
  if (compute != DType::bf16) {
    throw ConfigError(f.where, "training.float8",
                      "float8 training is modelled from bf16 activations and weights (torchao casts from the compute dtype); expected "
                      "fsdp.mixed_precision.param: bf16 or training.dtype: bf16");
  }
  if (f.fsdp_float8_all_gather.value) {
    const char* why = nullptr;
    if (f.recipe.value != Float8RecipeName::tensorwise) {
      why = "torchao's float8 all-gather exists for tensorwise scales only; expected false or recipe: tensorwise";
    } else if (s.fsdp.version != 2 || s.fsdp.sharding == Sharding::zero3) {
      why = "the float8 all-gather is FSDP2's (fsdp_pre_all_gather); expected false or fsdp.version: 2";
    } else if (s.fsdp.sharding == Sharding::no_shard) {
      why = "no_shard does not all-gather parameters; expected false";
    } else if (s.fsdp.sharding == Sharding::shard_optimizer) {
      why = "shard_optimizer all-gathers the updated parameters in their own dtype; expected false";
    }
    if (why != nullptr) throw ConfigError(f.fsdp_float8_all_gather.where, "training.float8.fsdp_float8_all_gather", why);
  }
  if (f.precompute_scales.value && !f.fsdp_float8_all_gather.value) {
    throw ConfigError(f.precompute_scales.where, "training.float8.precompute_scales",
                      "the scales it precomputes are those of the float8 all-gather; expected false or fsdp_float8_all_gather: true");
  }
  if (!s.training.compile.value) {
    s.warnings.push_back({f.where, "training.float8",
                          "without training.compile the float8 casts run as separate kernels (torchao expects torch.compile to fuse "
                          "them): modelled unfused, which is still a lower bound of eager's cost"});
  }
}

std::string_view to_string(Float8RecipeName r) {
  return kRecipeNames[static_cast<std::size_t>(r)];
}

std::vector<Schema> float8_schemas() {
  return {kFloat8Schema};
}

}  // namespace shardsim::config

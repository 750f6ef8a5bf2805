#include "config/calibration.hpp"

#include <fmt/format.h>

#include "config/yaml_load.hpp"
#include "core/reader.hpp"

namespace shardsim::config {
namespace {

constexpr std::array kCalibrationParams{
    ParamSpec{"name", "string", "-", "what was measured, e.g. \"H200 SXM, cuBLAS bf16, NCCL 2.28\""},
    ParamSpec{"description", "string", "-", "notes: how and when it was measured"},
    ParamSpec{"compute", "mapping", "{}", "measured compute rates (see calibration.compute)"},
    ParamSpec{"collectives", "mapping {nvlink, nic}", "{}", "measured collective costs per link class (see calibration.collectives)"},
};
constexpr std::array kComputeParams{
    ParamSpec{"gemm", "mapping {rate, half_rate_flops}", "-", "GEMM time (F + half_rate_flops) / rate"},
    ParamSpec{"attention_forward", "mapping {rate}", "-", "attention forward FLOP rate"},
    ParamSpec{"attention_backward", "mapping {rate}", "-", "attention backward FLOP rate"},
    ParamSpec{"memory_bandwidth", "bandwidth", "-", "achieved HBM bandwidth of memory-bound kernels"},
    ParamSpec{"kernel_launch", "duration", "-", "fixed cost per kernel"},
};
constexpr std::array kGemmParams{
    ParamSpec{"rate", "compute rate", "", "FLOP rate of large GEMMs"},
    ParamSpec{"half_rate_flops", "FLOPs", "0FLOP", "GEMM size at which half that rate is reached"},
};
constexpr std::array kRateParams{
    ParamSpec{"rate", "compute rate", "", "achieved FLOP rate"},
};
constexpr std::array kLinkClassParams{
    ParamSpec{"all_gather", "mapping", "-", "ring all-gather cost (see calibration.collective)"},
    ParamSpec{"reduce_scatter", "mapping", "-", "ring reduce-scatter cost"},
    ParamSpec{"all_reduce", "mapping", "-", "ring all-reduce cost"},
};
constexpr std::array kCollectiveParams{
    ParamSpec{"base_latency", "duration", "", "fixed latency of one collective"},
    ParamSpec{"hop_latency", "duration", "0s", "latency added per ring step"},
    ParamSpec{"bus_bandwidth", "bandwidth", "", "nccl-tests bus bandwidth: S (n-1)/n / t (2(n-1)/n for all-reduce)"},
};
constexpr std::array kLinkClassesParams{
    ParamSpec{"nvlink", "mapping", "-", "collectives inside a node"},
    ParamSpec{"nic", "mapping", "-", "collectives across nodes (bus bandwidth of the whole ring)"},
};

constexpr Schema kCalibrationSchema{"calibration", "measured rates that replace the topology's figures", kCalibrationParams};
constexpr Schema kComputeSchema{"calibration.compute", "measured compute rates", kComputeParams};
constexpr Schema kGemmSchema{"calibration.compute.gemm", "GEMM efficiency curve", kGemmParams};
constexpr Schema kRateSchema{"calibration.compute.attention_*", "an achieved FLOP rate", kRateParams};
constexpr Schema kLinkClassesSchema{"calibration.collectives", "per link class", kLinkClassesParams};
constexpr Schema kLinkClassSchema{"calibration.collectives.<link>", "per collective", kLinkClassParams};
constexpr Schema kCollectiveSchema{"calibration.collective", "alpha-beta cost of one ring collective", kCollectiveParams};

double positive(const Reader& r, std::string_view key, Dimension d) {
  const double v = r.quantity(key, d);
  if (v <= 0) r.fail(key, fmt::format("expected a {} above zero", dimension_name(d)));
  return v;
}

double rate_of(const Reader& parent, std::string_view key) {
  Reader r(*parent.node(key), parent.path_of(key), kRateSchema);
  const double v = positive(r, "rate", Dimension::flop_rate);
  r.finish();
  return v;
}

void read_compute(const Reader& top, CalibrationConfig& c) {
  const ConfigNode* node = top.node("compute");
  if (node == nullptr) return;
  Reader r(*node, "compute", kComputeSchema);
  if (const ConfigNode* g = r.node("gemm")) {
    Reader gr(*g, "compute.gemm", kGemmSchema);
    GemmCalibration gc;
    gc.rate = positive(gr, "rate", Dimension::flop_rate);
    gc.half_rate_flops = gr.quantity("half_rate_flops", Dimension::flops);
    if (gc.half_rate_flops < 0) gr.fail("half_rate_flops", "expected FLOPs >= 0");
    gr.finish();
    c.gemm = gc;
  }
  if (r.has("attention_forward")) c.attention_forward_rate = rate_of(r, "attention_forward");
  if (r.has("attention_backward")) c.attention_backward_rate = rate_of(r, "attention_backward");
  if (r.has("memory_bandwidth")) c.memory_bandwidth = positive(r, "memory_bandwidth", Dimension::byte_rate);
  if (r.has("kernel_launch")) {
    c.kernel_launch = r.quantity("kernel_launch", Dimension::seconds);
    if (*c.kernel_launch < 0) r.fail("kernel_launch", "expected a duration >= 0");
  }
  r.finish();
}

void read_collectives(const Reader& top, CalibrationConfig& c) {
  const ConfigNode* node = top.node("collectives");
  if (node == nullptr) return;
  Reader classes(*node, "collectives", kLinkClassesSchema);
  for (int l = 0; l < kLinkClasses; ++l) {
    const std::string_view link = to_string(static_cast<LinkClass>(l));
    const ConfigNode* ln = classes.node(link);
    if (ln == nullptr) continue;
    Reader kinds(*ln, classes.path_of(link), kLinkClassSchema);
    for (int k = 0; k < kCollectiveKinds; ++k) {
      const std::string_view kind = kCollectiveKindNames[static_cast<std::size_t>(k)];
      const ConfigNode* kn = kinds.node(kind);
      if (kn == nullptr) continue;
      Reader r(*kn, kinds.path_of(kind), kCollectiveSchema);
      CollectiveCalibration cc;
      cc.base_latency = r.quantity("base_latency", Dimension::seconds);
      cc.hop_latency = r.quantity("hop_latency", Dimension::seconds);
      if (cc.base_latency < 0) r.fail("base_latency", "expected a duration >= 0");
      if (cc.hop_latency < 0) r.fail("hop_latency", "expected a duration >= 0");
      cc.bus_bandwidth = positive(r, "bus_bandwidth", Dimension::byte_rate);
      r.finish();
      c.collectives[static_cast<std::size_t>(l)][static_cast<std::size_t>(k)] = cc;
    }
    kinds.finish();
  }
  classes.finish();
}

}  // namespace

std::string_view to_string(LinkClass c) {
  return c == LinkClass::nvlink ? "nvlink" : "nic";
}

bool CalibrationConfig::has_collectives() const {
  for (const auto& link : collectives) {
    for (const auto& k : link) {
      if (k) return true;
    }
  }
  return false;
}

CalibrationConfig load_calibration(const std::filesystem::path& file) {
  ConfigNode root = load_yaml_file(file);
  if (root.is_null()) {
    throw ConfigError(Location{file.string(), 0, 0}, "", "empty file; expected a calibration mapping (compute, collectives)");
  }
  Reader top(root, "", kCalibrationSchema);
  CalibrationConfig c;
  c.file = file;
  c.name = top.has("name") ? top.text("name") : file.stem().string();
  if (top.has("description")) (void)top.text("description");
  read_compute(top, c);
  read_collectives(top, c);
  top.finish();
  return c;
}

std::vector<Schema> calibration_schemas() {
  return {kCalibrationSchema, kComputeSchema, kGemmSchema, kRateSchema, kLinkClassesSchema, kLinkClassSchema, kCollectiveSchema};
}

}  // namespace shardsim::config

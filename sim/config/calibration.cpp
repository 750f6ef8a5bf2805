#include "config/calibration.hpp"

#include <fmt/format.h>

#include "config/yaml_load.hpp"
#include "core/reader.hpp"

namespace shardsim::config {
namespace {

constexpr Range kLatencyRange{0, 1, Dimension::seconds};  // a measured latency past a second is a mistake

constexpr std::array kCalibrationParams{
    ParamSpec{"name", "string", "-", "what was measured, e.g. \"H200 SXM, cuBLAS bf16, NCCL 2.28\""},
    ParamSpec{"description", "string", "-", "notes: how and when it was measured"},
    ParamSpec{"compute", "mapping", "{}", "measured compute rates (see calibration.compute)"},
    ParamSpec{"collectives", "mapping {nvlink, nic}", "{}", "measured collective costs per link class (see calibration.collectives)"},
};
constexpr std::array kComputeParams{
    ParamSpec{"gemm", "mapping {rate, half_rate_flops}", "-", "bf16 / fp16 GEMM time (F + half_rate_flops) / rate"},
    ParamSpec{"gemm_fp8", "mapping {rate, half_rate_flops}", "-",
              "float8 (e4m3, tensorwise scales, fast accumulation) GEMM time (F + half_rate_flops) / rate; rowwise forward and "
              "MXFP8 stay nominal"},
    ParamSpec{"gemm_fp8_precise", "mapping {rate, half_rate_flops}", "-",
              "the same with precise accumulation (torchao's gradient GEMMs, tensorwise and rowwise); unset: gemm_fp8 at the "
              "topology's precise / fast ratio"},
    ParamSpec{"attention_forward", "mapping {rate}", "-", "attention forward FLOP rate"},
    ParamSpec{"attention_backward", "mapping {rate}", "-", "attention backward FLOP rate"},
    ParamSpec{"memory_bandwidth", "bandwidth", "-", "achieved HBM bandwidth of memory-bound kernels"},
    ParamSpec{"kernel_launch", "duration", "-", "fixed cost per kernel", kLatencyRange},
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
    ParamSpec{"base_latency", "duration", "", "fixed latency of one collective", kLatencyRange},
    ParamSpec{"hop_latency", "duration", "0s", "latency added per ring step", kLatencyRange},
    ParamSpec{"bus_bandwidth", "bandwidth", "", "nccl-tests bus bandwidth: S (n-1)/n / t (2(n-1)/n for all-reduce)"},
    ParamSpec{"sizes", "list of pieces", "-",
              "size-aware form instead of the three figures: pieces by size (see calibration.collective.sizes[])"},
};
constexpr std::array kPieceParams{
    ParamSpec{"from", "bytes", "", "the piece prices sizes from this one up to the next piece's (below the first: the topology's model)"},
    ParamSpec{"base_latency", "duration", "0s", "fixed time of one collective at these sizes (an intercept of the measured curve)",
              kLatencyRange},
    ParamSpec{"hop_latency", "duration", "0s", "time added per ring step", kLatencyRange},
    ParamSpec{"bus_bandwidth", "bandwidth", "", "bus bandwidth at these sizes"},
};
constexpr std::array kLinkClassesParams{
    ParamSpec{"nvlink", "mapping", "-", "collectives inside a node"},
    ParamSpec{"nic", "mapping", "-", "collectives across nodes (bus bandwidth of the whole ring)"},
};

constexpr Schema kCalibrationSchema{"calibration", "measured rates that replace the topology's figures", kCalibrationParams};
constexpr Schema kComputeSchema{"calibration.compute", "measured compute rates", kComputeParams};
constexpr Schema kGemmSchema{"calibration.compute.gemm", "GEMM efficiency curve", kGemmParams};
constexpr Schema kGemmFp8Schema{"calibration.compute.gemm_fp8", "float8 GEMM efficiency curve", kGemmParams};
constexpr Schema kGemmFp8PreciseSchema{"calibration.compute.gemm_fp8_precise", "float8 GEMM (precise accumulation) efficiency curve",
                                       kGemmParams};
constexpr Schema kRateSchema{"calibration.compute.attention_*", "an achieved FLOP rate", kRateParams};
constexpr Schema kLinkClassesSchema{"calibration.collectives", "per link class", kLinkClassesParams};
constexpr Schema kLinkClassSchema{"calibration.collectives.<link>", "per collective", kLinkClassParams};
constexpr Schema kCollectiveSchema{"calibration.collective", "alpha-beta cost of one ring collective", kCollectiveParams};
constexpr Schema kPieceSchema{"calibration.collective.sizes[]", "the alpha-beta cost of a range of sizes", kPieceParams};

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

GemmCalibration gemm_of(const ConfigNode& g, const std::string& path, const Schema& schema) {
  Reader gr(g, path, schema);
  GemmCalibration gc;
  gc.rate = positive(gr, "rate", Dimension::flop_rate);
  gc.half_rate_flops = gr.quantity("half_rate_flops", Dimension::flops);
  if (gc.half_rate_flops < 0) gr.fail("half_rate_flops", "expected FLOPs >= 0");
  gr.finish();
  return gc;
}

void read_compute(const Reader& top, CalibrationConfig& c) {
  const ConfigNode* node = top.node("compute");
  if (node == nullptr) return;
  Reader r(*node, "compute", kComputeSchema);
  if (const ConfigNode* g = r.node("gemm")) c.gemm = gemm_of(*g, "compute.gemm", kGemmSchema);
  if (const ConfigNode* g = r.node("gemm_fp8")) c.gemm_fp8 = gemm_of(*g, "compute.gemm_fp8", kGemmFp8Schema);
  if (const ConfigNode* g = r.node("gemm_fp8_precise")) c.gemm_fp8_precise = gemm_of(*g, "compute.gemm_fp8_precise", kGemmFp8PreciseSchema);
  if (r.has("attention_forward")) c.attention_forward_rate = rate_of(r, "attention_forward");
  if (r.has("attention_backward")) c.attention_backward_rate = rate_of(r, "attention_backward");
  if (r.has("memory_bandwidth")) c.memory_bandwidth = positive(r, "memory_bandwidth", Dimension::byte_rate);
  if (r.has("kernel_launch")) {
    c.kernel_launch = r.quantity("kernel_launch", Dimension::seconds);
    if (*c.kernel_launch < 0) r.fail("kernel_launch", "expected a duration >= 0");
  }
  r.finish();
}

CollectiveCalibration read_figures(const Reader& r) {
  CollectiveCalibration cc;
  cc.base_latency = r.quantity("base_latency", Dimension::seconds);
  cc.hop_latency = r.quantity("hop_latency", Dimension::seconds);
  if (cc.base_latency < 0) r.fail("base_latency", "expected a duration >= 0");
  if (cc.hop_latency < 0) r.fail("hop_latency", "expected a duration >= 0");
  cc.bus_bandwidth = positive(r, "bus_bandwidth", Dimension::byte_rate);
  return cc;
}

// `sizes: [{from, base_latency, hop_latency, bus_bandwidth}, ...]`, by increasing `from`.
CollectiveCalibration read_pieces(const Reader& r) {
  for (const char* key : {"base_latency", "hop_latency", "bus_bandwidth"}) {
    if (r.has(key)) r.fail(key, "expected either sizes or base_latency / hop_latency / bus_bandwidth, not both");
  }
  const ConfigNode& list = *r.node("sizes");
  if (!list.is_sequence() || list.items.empty()) {
    r.fail("sizes", fmt::format("expected a list of {{from, base_latency, hop_latency, bus_bandwidth}} pieces; got {}", list.describe()));
  }
  CollectiveCalibration cc;
  for (std::size_t i = 0; i < list.items.size(); ++i) {
    Reader p(list.items[i], fmt::format("{}[{}]", r.path_of("sizes"), i), kPieceSchema);
    CollectivePiece piece;
    piece.from_bytes = p.quantity("from", Dimension::bytes);
    if (piece.from_bytes < 0) p.fail("from", "expected a size >= 0");
    if (!cc.sizes.empty() && piece.from_bytes <= cc.sizes.back().from_bytes) {
      p.fail("from", fmt::format("expected pieces by increasing size; the previous piece starts at {}",
                                 format_bytes(Bytes{cc.sizes.back().from_bytes})));
    }
    piece.base_latency = p.quantity("base_latency", Dimension::seconds);
    piece.hop_latency = p.quantity("hop_latency", Dimension::seconds);
    if (piece.base_latency < 0) p.fail("base_latency", "expected a duration >= 0");
    if (piece.hop_latency < 0) p.fail("hop_latency", "expected a duration >= 0");
    piece.bus_bandwidth = positive(p, "bus_bandwidth", Dimension::byte_rate);
    p.finish();
    cc.sizes.push_back(piece);
  }
  return cc;
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
      CollectiveCalibration cc = r.has("sizes") ? read_pieces(r) : read_figures(r);
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

std::optional<CollectivePiece> CollectiveCalibration::at(double bytes) const {
  if (sizes.empty()) return CollectivePiece{0, base_latency, hop_latency, bus_bandwidth};
  std::optional<CollectivePiece> out;
  for (const auto& p : sizes) {
    if (p.from_bytes <= bytes) out = p;
  }
  return out;
}

std::string calibration_coverage(const CalibrationConfig& c) {
  std::vector<std::string> compute;
  if (c.gemm) compute.emplace_back("gemm");
  if (c.gemm_fp8) compute.emplace_back("float8 gemm");
  if (c.gemm_fp8_precise) compute.emplace_back("float8 gemm (precise accumulation)");
  if (c.attention_forward_rate || c.attention_backward_rate) compute.emplace_back("attention");
  if (c.memory_bandwidth) compute.emplace_back("memory bandwidth");
  if (c.kernel_launch) compute.emplace_back("kernel launch");
  std::vector<std::string> collectives;
  for (int l = 0; l < kLinkClasses; ++l) {
    for (int k = 0; k < kCollectiveKinds; ++k) {
      const auto& e = c.collectives[static_cast<std::size_t>(l)][static_cast<std::size_t>(k)];
      if (!e) continue;
      std::string item = fmt::format("{} over {}", kCollectiveKindNames[static_cast<std::size_t>(k)], to_string(static_cast<LinkClass>(l)));
      if (!e->sizes.empty()) item += fmt::format(" (from {})", format_bytes(Bytes(e->sizes.front().from_bytes)));
      collectives.push_back(std::move(item));
    }
  }
  auto join_all = [](const std::vector<std::string>& v) {
    std::string out;
    for (const auto& x : v) out += (out.empty() ? "" : ", ") + x;
    return out;
  };
  std::string out = join_all(compute);
  if (!collectives.empty()) out += (out.empty() ? "" : "; ") + join_all(collectives);
  return out.empty() ? std::string("nothing") : out;
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
  return {kCalibrationSchema, kComputeSchema,   kGemmSchema,       kRateSchema,
          kLinkClassesSchema, kLinkClassSchema, kCollectiveSchema, kPieceSchema};
}

}  // namespace shardsim::config

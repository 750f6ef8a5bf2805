#include "cli/gemm_check.hpp"

#include <fmt/format.h>

#include <map>
#include <tuple>

#include "engine/compute_model.hpp"

namespace shardsim::cli {

GemmCheck check_gemms(const validate::BenchResults& bench, const config::TopologyConfig& topology) {
  const engine::RooflineModel model(topology, true);  // bf16 / fp16 compute: the harness's GEMMs
  const bool has_fp8 = model.rates().gemm_fp8 > 0;
  GemmCheck out;
  using Shape = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>;
  std::map<Shape, std::pair<const GemmCheckRow*, const GemmCheckRow*>> by_shape;  // {bf16, float8}
  out.rows.reserve(bench.gemms.size());
  for (const auto& s : bench.gemms) {
    GemmCheckRow r{s.m, s.n, s.k, s.batch, s.fp8, s.seconds, 0.0};
    if (!s.fp8 || has_fp8) {
      const graph::Gemm g{s.m, s.n, s.k, s.fp8 ? graph::GemmType::fp8 : graph::GemmType::high};
      r.modelled = static_cast<double>(s.batch) * model.gemm_seconds(g);
    }
    out.rows.push_back(r);
  }
  for (const auto& r : out.rows) {
    auto& pair = by_shape[{r.m, r.n, r.k, r.batch}];
    (r.fp8 ? pair.second : pair.first) = &r;
  }
  for (const auto& [shape, pair] : by_shape) {
    const auto [bf16, fp8] = pair;
    if (bf16 == nullptr || fp8 == nullptr || fp8->modelled <= 0) continue;
    const auto [m, n, k, batch] = shape;
    out.speedups.push_back({m, n, k, batch, bf16->measured / fp8->measured, bf16->modelled / fp8->modelled});
  }
  return out;
}

std::string gemm_check_text(const GemmCheck& check, const std::string& topology_name) {
  std::string out = fmt::format("GEMMs measured beside {}'s nominal model (measured / modelled time):\n", topology_name);
  for (const auto& r : check.rows) {
    const std::string shape = fmt::format("{} x {} x {}{}", r.m, r.n, r.k, r.batch > 1 ? fmt::format(" (x{})", r.batch) : "");
    const double tflops = 2.0 * static_cast<double>(r.batch * r.m) * static_cast<double>(r.n) * static_cast<double>(r.k) / 1e12;
    if (r.modelled <= 0) {
      out += fmt::format("  {:<5} {:<28} {:>9.1f} TFLOPS  (the topology gives no float8 rate)\n", r.fp8 ? "fp8" : "bf16", shape,
                         tflops / r.measured);
      continue;
    }
    out += fmt::format("  {:<5} {:<28} {:>9.1f} TFLOPS measured, {:>9.1f} modelled  x{:.3f}\n", r.fp8 ? "fp8" : "bf16", shape,
                       tflops / r.measured, tflops / r.modelled, r.measured / r.modelled);
  }
  if (!check.speedups.empty()) {
    out += "float8 over bf16, shapes timed in both (bf16 time / float8 time):\n";
    for (const auto& s : check.speedups) {
      out += fmt::format("  {} x {} x {}{}  measured x{:.3f}, modelled x{:.3f}\n", s.m, s.n, s.k,
                         s.batch > 1 ? fmt::format(" (x{})", s.batch) : "", s.measured, s.modelled);
    }
  }
  return out;
}

}  // namespace shardsim::cli

#include "cli/gemm_check.hpp"

#include <fmt/format.h>

#include <map>
#include <tuple>

#include "engine/compute_model.hpp"

namespace shardsim::cli {
namespace {

using validate::GemmPrecision;
using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, GemmPrecision>;

// The reference block's rates, if every one of its GEMMs was timed in all three variants.
std::optional<ReferenceBlockCheck> check_reference(const std::map<Key, const GemmCheckRow*>& rows, const config::TopologyConfig& topology) {
  double flops = 0, gradient_flops = 0;
  double bf16 = 0, fp8 = 0, gradients_fast = 0, gradients_precise = 0;  // seconds
  for (const auto& [g, gradient] : graph::reference_block()) {
    const auto find = [&](GemmPrecision v) {
      const auto it = rows.find({g.m, g.n, g.k, 1, v});
      return it == rows.end() ? nullptr : it->second;
    };
    const GemmCheckRow* b = find(GemmPrecision::bf16);
    const GemmCheckRow* f = find(GemmPrecision::fp8);
    const GemmCheckRow* p = find(GemmPrecision::fp8_precise);
    if (b == nullptr || f == nullptr || p == nullptr) return std::nullopt;
    flops += g.flops();
    bf16 += b->measured;
    fp8 += f->measured;
    if (gradient) {
      gradient_flops += g.flops();
      gradients_fast += f->measured;
      gradients_precise += p->measured;
    }
  }
  ReferenceBlockCheck r{flops / bf16, flops / fp8, gradient_flops / gradients_fast, gradient_flops / gradients_precise, 0, 0};
  const auto& gpu = topology.gpu;
  if (gpu.peak_fp8.value() > 0) r.fp8_share = (r.fp8 / gpu.peak_fp8.value()) / (r.bf16 / gpu.peak_bf16.value());
  r.precise_share = r.gradients_precise / r.gradients_fast;
  return r;
}

}  // namespace

GemmCheck check_gemms(const validate::BenchResults& bench, const config::TopologyConfig& topology) {
  const engine::RooflineModel model(topology, true);  // bf16 / fp16 compute: the harness's GEMMs
  const bool has_fp8 = model.rates().gemm_fp8.rate > 0;
  GemmCheck out;
  out.rows.reserve(bench.gemms.size());
  for (const auto& s : bench.gemms) {
    GemmCheckRow r{s.m, s.n, s.k, s.batch, s.precision, s.seconds, 0.0, s.flops()};
    if (!is_fp8(s.precision) || has_fp8)
      r.modelled = static_cast<double>(s.batch) * model.gemm_seconds(validate::graph_gemm(s.m, s.n, s.k, s.precision));
    out.rows.push_back(r);
  }
  std::map<Key, const GemmCheckRow*> by_key;
  for (const auto& r : out.rows) by_key[{r.m, r.n, r.k, r.batch, r.precision}] = &r;
  for (const auto& [key, row] : by_key) {
    const auto [m, n, k, batch, v] = key;
    if (v == GemmPrecision::bf16 || row->modelled <= 0) continue;
    const auto bf16 = by_key.find({m, n, k, batch, GemmPrecision::bf16});
    if (bf16 == by_key.end()) continue;
    out.speedups.push_back({m, n, k, batch, v, bf16->second->measured / row->measured, bf16->second->modelled / row->modelled});
  }
  out.reference = check_reference(by_key, topology);
  return out;
}

std::string gemm_check_text(const GemmCheck& check, const config::TopologyConfig& topology) {
  std::string out = fmt::format("GEMMs measured beside {}'s nominal model (measured / modelled time):\n", topology.name);
  for (const auto& r : check.rows) {
    const std::string shape = fmt::format("{} x {} x {}{}", r.m, r.n, r.k, r.batch > 1 ? fmt::format(" (x{})", r.batch) : "");
    const double tflops = r.flops / 1e12;
    if (r.modelled <= 0) {
      out += fmt::format("  {:<11} {:<28} {:>9.1f} TFLOPS  (the topology gives no float8 rate)\n", validate::label(r.precision), shape,
                         tflops / r.measured);
      continue;
    }
    out += fmt::format("  {:<11} {:<28} {:>9.1f} TFLOPS measured, {:>9.1f} modelled  x{:.3f}\n", validate::label(r.precision), shape,
                       tflops / r.measured, tflops / r.modelled, r.measured / r.modelled);
  }
  if (!check.speedups.empty()) {
    out += "float8 over bf16, shapes timed in both (bf16 time / float8 time):\n";
    for (const auto& s : check.speedups) {
      out += fmt::format("  {:<11} {} x {} x {}{}  measured x{:.3f}, modelled x{:.3f}\n", validate::label(s.precision), s.m, s.n, s.k,
                         s.batch > 1 ? fmt::format(" (x{})", s.batch) : "", s.measured, s.modelled);
    }
  }
  if (const auto& r = check.reference) {
    const auto& gpu = topology.gpu;
    out += fmt::format(
        "reference block (Llama 3 8B at 16,384 tokens, the GEMMs gpu.efficiency.matmul averages): bf16 {:.1f} TFLOPS ({:.3f} of "
        "the bf16 peak)",
        r->bf16 / 1e12, r->bf16 / gpu.peak_bf16.value());
    if (gpu.peak_fp8.value() > 0) {
      out += fmt::format(", float8 {:.1f} TFLOPS ({:.3f} of the float8 peak)\n  gpu.efficiency.matmul_fp8 = matmul x {:.3f}", r->fp8 / 1e12,
                         r->fp8 / gpu.peak_fp8.value(), r->fp8_share);
    }
    out += fmt::format(
        "\n  its gradient GEMMs in float8: {:.1f} TFLOPS with fast accumulation, {:.1f} with precise: "
        "gpu.efficiency.matmul_fp8_precise = matmul_fp8 x {:.3f}\n",
        r->gradients_fast / 1e12, r->gradients_precise / 1e12, r->precise_share);
  }
  return out;
}

}  // namespace shardsim::cli

#include "engine/compute_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "config/scenario.hpp"  // to_string(AttentionKernel)
#include "core/error.hpp"
#include "engine/gemm_tiles.hpp"

namespace shardsim::engine {

ComputeRates ComputeRates::nominal(const config::TopologyConfig& topo, bool low_precision, config::AttentionKernel attention) {
  const auto& g = topo.gpu;
  const double peak = low_precision ? g.peak_bf16.value() : g.peak_fp32.value();
  ComputeRates r;
  r.gemm = peak * g.efficiency.matmul;
  r.gemm_element_bytes = low_precision ? 2 : 4;
  r.gemm_output_exposed = g.gemm_output_exposed;
  r.gemm_fp8.rate = g.peak_fp8.value() * g.efficiency.fp8();
  r.gemm_fp8_precise.rate = g.peak_fp8.value() * g.efficiency.fp8_precise();
  r.gemm_fp8_rowwise = g.peak_fp8.value() * g.efficiency.fp8_rowwise();
  r.gemm_mxfp8 = g.peak_mxfp8.value() * g.efficiency.mxfp8();
  // cudnn and flash3 are refused where the topology gives no rates for them (graph/prepare.cpp).
  const auto [forward, backward] = config::attention_efficiency(g.efficiency, attention);
  if (forward <= 0 || backward <= 0) {
    throw std::logic_error(fmt::format("no {} attention rates for {}", config::to_string(attention), g.model));
  }
  r.attention_forward = peak * forward;
  r.attention_backward = peak * backward;
  r.attention_half_keys = g.attention_half_keys;
  r.memory = g.hbm_bandwidth.value() * g.efficiency.memory;
  r.memory_column_cast = g.hbm_bandwidth.value() * g.efficiency.memory_column_cast;
  r.kernel_launch = g.kernel_launch.value();
  r.sms = g.sms;
  r.pcie = topo.node.pcie.bandwidth.value();
  r.pcie_latency = topo.node.pcie.latency.value();
  // The node's GPUs step their offloaded optimizers and swap at the same time in a data-parallel
  // step: each rank's process gets an equal share of the node's DRAM and NVMe bandwidth.
  r.host_memory = topo.host.memory_bandwidth.value() / topo.node.gpus;
  r.nvme_read = topo.host.nvme.read.value() / topo.node.gpus;
  r.nvme_write = topo.host.nvme.write.value() / topo.node.gpus;
  r.comm_interference = g.comm_interference;
  return r;
}

RooflineModel::RooflineModel(const ComputeRates& rates)
    : r_(rates), reference_fill_(rates.sms > 0 ? reference_tile_fill(rates.sms) : 1.0) {}

GemmCurve RooflineModel::gemm_curve(const graph::Gemm& gemm) const {
  GemmCurve c;
  switch (gemm.type) {
    case graph::GemmType::high:
      c = {r_.gemm, r_.gemm_half_flops, r_.gemm_measured};
      break;
    case graph::GemmType::fp8:
    case graph::GemmType::fp8_rowwise:
      // torchao runs a rowwise recipe's precise GEMMs on cuBLAS's tensorwise kernel too
      // (float8_ops.py, addmm_float8_unwrapped), so they share tensorwise's precise rate.
      if (gemm.precise_accum) {
        c = r_.gemm_fp8_precise;
      } else if (gemm.type == graph::GemmType::fp8) {
        c = r_.gemm_fp8;
      } else {
        c = {r_.gemm_fp8_rowwise, 0, false};
      }
      break;
    case graph::GemmType::mxfp8:
      c = {r_.gemm_mxfp8, 0, false};
      break;
  }
  // training.float8 is refused on a GPU without the type's peak (config/float8_settings.cpp).
  if (c.rate <= 0) throw std::logic_error(fmt::format("no rate for {} GEMMs on this GPU", graph::gemm_type_name(gemm.type)));
  return c;
}

double RooflineModel::reference_k() {
  return graph::reference_block_mean([](const graph::Gemm& g) { return static_cast<double>(g.k); });
}

double RooflineModel::gemm_seconds(const graph::Gemm& gemm) const {
  const double m = static_cast<double>(gemm.m);
  const double n = static_cast<double>(gemm.n);
  const double k = static_cast<double>(gemm.k);
  const double operand = gemm.type == graph::GemmType::high ? r_.gemm_element_bytes : 1.0;  // float8 operands: 1 byte
  const double output = r_.gemm_element_bytes * m * n;
  const double bytes = operand * (m * k + k * n) + output;
  const GemmCurve curve = gemm_curve(gemm);
  const double rate = curve.rate;
  // A measured float8 curve prices the GEMMs it timed by their FLOPs alone, their write included
  // (a bf16 calibration sets gemm_output_exposed to 0 itself).
  const double output_exposed = curve.measured ? 0.0 : r_.gemm_output_exposed;
  double flop_rate = rate;
  double exposed_write = 0;
  if (output_exposed > 0) {
    // `rate` is what the reference block's GEMMs average, write included; the FLOPs proper run at
    // rate / (1 - k0 / K_ref), k0 the reduction length whose FLOPs at `rate` take as long as the
    // exposed write of their output (106 for bf16 on an H100).
    static const double k_ref = reference_k();
    const double k0 = output_exposed * rate * r_.gemm_element_bytes / (2 * r_.memory);
    // The topology refuses k0 above 1,000 (config/topology.cpp); a calibration's memory bandwidth
    // can still make it so.
    if (k0 >= k_ref / 2)
      throw RuntimeError(
          fmt::format("{} GEMMs at {:.0f} TFLOPS against memory-bound kernels at {:.0f} GB/s: the exposed output write "
                      "(gpu.gemm_output_exposed) would cost more than the FLOPs; check the calibration's "
                      "memory_bandwidth or lower gpu.gemm_output_exposed",
                      graph::gemm_type_name(gemm.type), rate / 1e12, r_.memory / 1e9));
    flop_rate = rate / (1 - k0 / k_ref);
    exposed_write = output_exposed * output / r_.memory;
  }
  // The tiles' fill against the reference block's, which the rate already includes.
  const double tile_time = r_.sms > 0 && !curve.measured && gemm.m > 0 && gemm.n > 0 && gemm.k > 0
                               ? reference_fill_ / gemm_tile_fill(gemm.m, gemm.n, gemm.k, r_.sms).fill
                               : 1.0;
  const double compute = (gemm.flops() * tile_time + curve.half_flops) / flop_rate + exposed_write;
  return std::max(compute, bytes / r_.memory);
}

double RooflineModel::attention_seconds(const graph::AttentionCall& a) const {
  const double rate = a.backward ? r_.attention_backward : r_.attention_forward;
  const double keys = a.keys_per_query();
  return keys > 0 ? a.flops() / rate * (1 + r_.attention_half_keys / keys) : 0.0;  // no keys: no work
}

graph::ComputeSplit RooflineModel::split(const graph::Op& op) const {
  const graph::Work& w = op.work;
  graph::ComputeSplit s;
  for (const graph::Gemm& gemm : w.gemms) s.gemm += gemm_seconds(gemm);
  for (const graph::AttentionCall& a : w.attention) s.attention += attention_seconds(a);
  s.memory = w.memory_bytes / r_.memory + w.column_cast_bytes / r_.memory_column_cast;
  s.launch = w.launches * r_.kernel_launch;
  s.other = (w.pcie_bytes > 0 ? w.pcie_bytes / r_.pcie + r_.pcie_latency : 0.0) + w.host_bytes / r_.host_memory;
  if (w.nvme_read_bytes > 0 || w.nvme_write_bytes > 0) {
    // NVMe offload is refused on a topology without drives (config/fsdp_settings.cpp).
    if (r_.nvme_read <= 0 || r_.nvme_write <= 0) throw std::logic_error("NVMe traffic on a topology without NVMe drives");
    s.other += w.nvme_read_bytes / r_.nvme_read + w.nvme_write_bytes / r_.nvme_write;
  }
  return s;
}

void register_builtin_compute_models(ComputeModelRegistry& registry) {
  registry.add({"roofline",
                "each kind of work at its achievable rate: GEMM FLOPs (over their tiles' waves where gpu.sms is given) and attention "
                "FLOPs, memory-bound bytes, launches",
                [](const ComputeRates& rates) { return std::make_unique<RooflineModel>(rates); }});
}

}  // namespace shardsim::engine

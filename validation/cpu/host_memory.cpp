#include "cpu/host_memory.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "core/args.hpp"
#include "core/units.hpp"
#include "cpu/cpu_kernels.hpp"
#include "replay/kernel_plan.hpp"

namespace shardsim::replay {

double cpu_replay_bytes_per_rank(const graph::StepGraph& g, CpuScale scale) {
  // As the executor reserves them: a workspace per stream sized by its largest kernels, and per
  // communicator (stream and group) send and receive buffers of its largest collective.
  std::map<graph::Stream, KernelFootprint> footprint;
  std::map<std::pair<graph::Stream, graph::Group>, double> collective;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const graph::Op& op = g.op(static_cast<int>(i));
    if (op.is_collective()) {
      auto& c = collective[{op.stream, op.group}];
      c = std::max(c, op.bytes);
    } else if (op.kind != graph::OpKind::cpu_wait) {
      for (const auto& k : compute_kernels(op.work)) footprint[op.stream].add(k);
    }
  }
  double bytes = 0;
  for (const auto& [stream, f] : footprint) bytes += CpuWorkspace::bytes_for(f, scale.compute);
  for (const auto& [key, max] : collective) bytes += 2 * max * scale.bytes;
  return bytes;
}

double available_host_memory() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    double kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") return kib * 1024;
  }
  return -1;
}

void check_cpu_replay_fits(const graph::StepGraph& g, CpuScale scale, int ranks, double available, const std::string& graph_file,
                           double fraction) {
  if (available < 0) return;
  const double per_rank = cpu_replay_bytes_per_rank(g, scale);
  const double need = per_rank * ranks;
  const double budget = available * fraction;
  if (need <= budget) return;
  // GEMM buffers shrink with scale^(2/3), collective buffers with the bytes scale: shrink the
  // bytes scale by f and the compute scale by f^(3/2), with f found by bisection (fixed-size parts
  // of the buffers do not shrink), then round down to two significant digits.
  auto at = [&](double f) { return CpuScale{scale.compute * std::pow(f, 1.5), scale.bytes * f}; };
  double lo = 0, hi = 1;
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    (cpu_replay_bytes_per_rank(g, at(mid)) * ranks <= budget ? lo : hi) = mid;
  }
  auto down = [](double v) {
    if (v <= 0) return 0.0;
    const double p = std::pow(10.0, std::floor(std::log10(v)) - 1);
    return std::floor(v / p) * p;
  };
  const double compute = down(at(lo).compute);
  const double bytes = down(at(lo).bytes);
  throw UsageError(fmt::format(
      "{}: the CPU replay needs about {} of host memory ({} ranks x {}), but this machine has {} available; expected a smaller "
      "scale, e.g. --compute-scale {:g} --bytes-scale {:g} (or a graph of fewer GPUs or layers)",
      graph_file, format_bytes(Bytes(need)), ranks, format_bytes(Bytes(per_rank)), format_bytes(Bytes(available)), compute, bytes));
}

}  // namespace shardsim::replay

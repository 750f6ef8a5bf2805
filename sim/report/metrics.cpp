#include "report/metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "fsdp/model_state.hpp"
#include "report/blas_workspace.hpp"
#include "report/error_band.hpp"
#include "report/exposure.hpp"
#include "report/pipeline_bubble.hpp"
#include "report/spans.hpp"

namespace shardsim::report {
namespace {

using graph::OpKind;

bool on_compute_stream(const graph::Op& op) {
  return op.stream == graph::Stream::compute;
}

// Offload work besides the GPU's: 0 PCIe copies, 1 CPU work (not the CPU's waits), 2 NVMe; -1 none.
int offload_index(const graph::Op& op) {
  switch (op.stream) {
    case graph::Stream::h2d:
    case graph::Stream::d2h:
      return 0;
    case graph::Stream::cpu:
      return op.kind == OpKind::cpu_wait ? -1 : 1;
    case graph::Stream::nvme:
      return 2;
    default:
      return -1;
  }
}

// Total length of the union of intervals.
double union_length(std::vector<std::pair<double, double>>& v) {
  std::sort(v.begin(), v.end());
  double total = 0;
  double cur_start = 0;
  double cur_end = -1;
  for (const auto& [s, e] : v) {
    if (s > cur_end) {
      if (cur_end > cur_start) total += cur_end - cur_start;
      cur_start = s;
      cur_end = e;
    } else {
      cur_end = std::max(cur_end, e);
    }
  }
  if (cur_end > cur_start) total += cur_end - cur_start;
  return total;
}

// Length of a minus b, where both are unions of intervals.
double exposed_length(std::vector<std::pair<double, double>> comm, std::vector<std::pair<double, double>> compute) {
  std::vector<std::pair<double, double>> both = comm;
  both.insert(both.end(), compute.begin(), compute.end());
  return union_length(both) - union_length(compute);
}

std::pair<double, double> clip(const graph::Interval& i, double lo, double hi) {
  return {std::clamp(i.start, lo, hi), std::clamp(i.end, lo, hi)};
}

}  // namespace

std::vector<int> sampled_ranks(int simulated, const config::Stragglers& stragglers) {
  constexpr int kSample = 256;  // summaries stay O(ops) per rank at 16,384 GPUs
  std::vector<int> out;
  if (simulated <= kSample) {
    for (int r = 0; r < simulated; ++r) out.push_back(r);
    return out;
  }
  for (int i = 0; i < kSample; ++i) out.push_back(static_cast<int>(static_cast<std::int64_t>(i) * simulated / kSample));
  for (const auto& s : stragglers.slow_gpus) out.push_back(static_cast<int>(s.rank));
  for (const auto& d : stragglers.degraded_links) out.push_back(static_cast<int>(d.rank));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {

// The intervals clipped to [lo, hi], sorted and merged into disjoint ones.
std::vector<Span> merged(const std::vector<graph::Interval>& intervals, double lo, double hi) {
  std::vector<Span> v;
  for (const auto& i : intervals) v.push_back(clip(i, lo, hi));
  return report::merged(std::move(v));
}

double length(const std::vector<std::pair<double, double>>& disjoint) {
  double t = 0;
  for (const auto& [a, b] : disjoint) t += b - a;
  return t;
}

// Length of the intersection of two sets of disjoint sorted intervals.
double overlap(const std::vector<std::pair<double, double>>& a, const std::vector<std::pair<double, double>>& b) {
  double t = 0;
  for (std::size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    t += std::max(0.0, std::min(a[i].second, b[j].second) - std::max(a[i].first, b[j].first));
    if (a[i].second < b[j].second) {
      ++i;
    } else {
      ++j;
    }
  }
  return t;
}

}  // namespace

std::vector<RankWait> rank_waits(const graph::Timeline& t, const std::vector<std::vector<graph::Interval>>& waiting,
                                 const std::vector<std::vector<graph::Interval>>& holding, double start, double end) {
  std::vector<RankWait> out;
  for (std::size_t r = 0; r < holding.size(); ++r) {
    const double held = length(merged(holding[r], start, end));
    if (held > 0) {
      const auto cls = static_cast<std::size_t>(t.class_of(static_cast<int>(r)));
      out.push_back(RankWait{static_cast<int>(r), length(merged(waiting[cls], start, end)), held, 0, 0});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const RankWait& a, const RankWait& b) { return a.caused_s != b.caused_s ? a.caused_s > b.caused_s : a.rank < b.rank; });
  if (out.size() > 5) out.resize(5);
  // How long each other rank waited while this one held collectives up: the part of its waiting
  // that falls in the times this one held them; a class's ranks waited alike.
  std::vector<std::vector<std::pair<double, double>>> waits(waiting.size());
  for (std::size_t c = 0; c < waiting.size(); ++c) waits[c] = merged(waiting[c], start, end);
  std::vector<int> class_size(waiting.size(), 0);
  for (int r = 0; r < t.world(); ++r) ++class_size[static_cast<std::size_t>(t.class_of(r))];
  for (auto& w : out) {
    const auto held = merged(holding[static_cast<std::size_t>(w.rank)], start, end);
    const int own = t.class_of(w.rank);
    double sum = 0;
    for (std::size_t c = 0; c < waits.size(); ++c) {
      const int others = class_size[c] - (static_cast<int>(c) == own ? 1 : 0);
      if (others == 0) continue;
      const double o = overlap(waits[c], held);
      sum += o * others;
      w.others_waited_max_s = std::max(w.others_waited_max_s, o);
    }
    w.others_waited_mean_s = t.world() > 1 ? sum / static_cast<double>(t.world() - 1) : 0;
  }
  return out;
}

Summary summarize(const SummaryInput& in) {
  const auto& g = in.graph;
  const auto& t = in.timeline;
  Summary s;
  s.scenario = in.scenario.name;
  s.model_name = in.model.spec.name;
  s.params_total = in.model.total_params();
  s.params_non_embedding = in.model.total_params() - in.model.embedding_params();
  s.flops_per_token = in.model.mfu_flops_per_token();
  if (in.model.spec.sliding_window < in.scenario.training.seq_len) s.sliding_window = in.model.spec.sliding_window;
  s.world_size = g.info.world_size;
  s.simulated_ranks = t.simulated();
  // Ranks whose timelines are alike give alike figures: one of each is enough.
  std::vector<int> ranks;
  {
    std::vector<char> seen(static_cast<std::size_t>(t.classes()), 0);
    for (int r : sampled_ranks(t.world(), in.scenario.stragglers)) {
      if (std::exchange(seen[static_cast<std::size_t>(t.class_of(r))], 1) == 0) ranks.push_back(r);
    }
  }
  s.reported_step = g.info.steps - 1;
  s.gpu_memory = in.scenario.cluster.topology.gpu.memory.value();
  s.outside = graph::outside_allocator(
      g.info, in.scenario.cluster.topology,
      in.communicators != nullptr ? std::span<const graph::CommunicatorUse>(*in.communicators) : std::span<const graph::CommunicatorUse>());
  if (const auto& cal = in.scenario.calibration) {
    s.calibration = cal->file.string();
    s.calibration_name = cal->name;
    s.calibration_covers = config::calibration_coverage(*cal);
  }

  // The reported step runs from the end of the previous optimizer step to the end of its own.
  double start = 0;
  double end = 0;
  for (std::size_t o = 0; o < g.size(); ++o) {
    const graph::Op& op = g.op(static_cast<int>(o));
    if (op.kind != OpKind::optimizer) continue;
    for (int c = 0; c < t.classes(); ++c) {
      const double e = t.at_class(op.id, c).end;
      if (op.step == s.reported_step - 1) start = std::max(start, e);
      if (op.step == s.reported_step) end = std::max(end, e);
    }
  }
  s.step_start = start;
  s.step_time = end - start;
  const bool with_split = in.compute_split != nullptr && in.compute_split->size() == g.size();
  s.pp_stages = g.info.pp_group;
  // Per pipeline stage (one without pipelining); the busiest stage's are reported.
  std::vector<Summary> per_stage(static_cast<std::size_t>(s.pp_stages));
  bool cpu_step = false;  // the optimizer steps on the CPU (CPU offload, ZeRO-Offload)
  for (std::size_t o = 0; o < g.size(); ++o) {
    const graph::Op& op = g.op(static_cast<int>(o));
    if (op.step != s.reported_step) continue;
    cpu_step |= op.kind == OpKind::optimizer && op.stream == graph::Stream::cpu;
    for (int st = 0; st < s.pp_stages; ++st) {
      if (!op.runs_on_stage(st)) continue;
      Summary& x = per_stage[static_cast<std::size_t>(st)];
      if (with_split && !op.is_collective() && on_compute_stream(op)) {
        x.compute_split += (*in.compute_split)[o];
        if (op.kind == OpKind::optimizer) x.optimizer_s += (*in.compute_split)[o].total();
      }
      if (op.kind == OpKind::all_gather && dimension_of(op) == Dimension::dp) x.all_gather_bytes += op.bytes;
      for (const auto& gemm : op.work.gemms) {
        x.gemm_flops += gemm.flops();
        if (gemm.type != graph::GemmType::high) x.gemm_flops_float8 += gemm.flops();
      }
    }
  }
  const auto busier = [](const Summary& a, const Summary& b) {
    return a.compute_split.total() != b.compute_split.total() ? a.compute_split.total() < b.compute_split.total()
                                                              : a.gemm_flops < b.gemm_flops;
  };
  s.busiest_stage = static_cast<int>(std::max_element(per_stage.begin(), per_stage.end(), busier) - per_stage.begin());
  const Summary& busiest = per_stage[static_cast<std::size_t>(s.busiest_stage)];
  s.compute_split = busiest.compute_split;
  s.optimizer_s = busiest.optimizer_s;
  s.optimizer_impl = cpu_step ? "cpu" : fsdp::fused_optimizer(in.scenario) ? "fused" : "foreach";
  s.all_gather_bytes = busiest.all_gather_bytes;
  s.gemm_flops = busiest.gemm_flops;
  s.gemm_flops_float8 = busiest.gemm_flops_float8;
  const auto& topo = in.scenario.cluster.topology;
  s.gpus_per_node = topo.node.gpus;
  s.host_memory_capacity = topo.host.memory.value();
  s.nvme_bytes_per_node = g.info.nvme_bytes * topo.node.gpus;
  s.nvme_capacity = topo.host.nvme.capacity.value();
  if (const auto& f8 = in.scenario.training.float8; f8.enabled) {
    s.float8_recipe = config::to_string(f8.recipe.value);
    s.float8_all_gather = f8.fsdp_float8_all_gather.value;
  }
  model::for_each_module(in.model.root, "", [&](const model::Module& m, const std::string&) {
    for (const auto& item : m.program) {
      if (item.child >= 0 || item.kernel.kind != model::KernelKind::matmul) continue;
      ++s.linears;
      if (item.kernel.float8 != model::Float8Recipe::none) ++s.float8_linears;
    }
  });
  s.tokens_per_step_per_gpu = static_cast<double>(g.info.tokens_per_micro_step) * g.info.micro_steps;
  s.tokens_per_s_per_gpu = s.step_time > 0 ? s.tokens_per_step_per_gpu / s.step_time : 0;
  const double flops = in.model.mfu_flops_per_token() * s.tokens_per_s_per_gpu;
  s.tflops_per_gpu = flops / 1e12;
  const bool low_precision = in.scenario.fsdp.mixed_precision.enabled ? in.scenario.fsdp.mixed_precision.param != config::DType::fp32
                                                                      : in.scenario.training.dtype != config::DType::fp32;
  const auto& gpu = in.scenario.cluster.topology.gpu;
  s.mfu = flops / (low_precision ? gpu.peak_bf16.value() : gpu.peak_fp32.value());

  const Deadline no_deadline;
  const Deadline& deadline = in.deadline != nullptr ? *in.deadline : no_deadline;
  s.exposed_comm_s = -1;
  for (int r : ranks) {
    deadline.check(fmt::format("while summarising the communication of rank {}", r));
    std::vector<std::pair<double, double>> compute;
    std::vector<std::pair<double, double>> comm;
    std::array<std::vector<std::pair<double, double>>, kDimensions> by_dimension;
    std::array<std::vector<std::pair<double, double>>, 3> offload;  // PCIe, CPU, NVMe
    for (const int id : g.ops_on_stage(g.info.stage_of(r))) {
      const graph::Op& op = g.op(id);
      // Offload streams count whatever runs in the step's window: the swap-out of the previous
      // step's optimizer state overlaps this step.
      const int offload_kind = offload_index(op);
      if (op.step != s.reported_step && offload_kind < 0) continue;
      const auto iv = clip(t.at(op.id, r), start, end);
      if (iv.second <= iv.first) continue;
      if (op.is_collective()) {
        comm.push_back(iv);
        by_dimension[static_cast<std::size_t>(dimension_of(op))].push_back(iv);
      } else if (on_compute_stream(op)) {
        compute.push_back(iv);
      } else if (offload_kind >= 0) {
        offload[static_cast<std::size_t>(offload_kind)].push_back(iv);
      }
    }
    const double exposed = exposed_length(comm, compute);
    if (exposed > s.exposed_comm_s) {
      s.exposed_comm_s = exposed;
      s.exposed_rank = r;
      s.compute_s = union_length(compute);
      s.comm_s = union_length(comm);
      const auto of = [&by_dimension](Dimension d) { return union_length(by_dimension[static_cast<std::size_t>(d)]); };
      s.tp_comm_s = of(Dimension::tp);
      s.pp_comm_s = of(Dimension::pp);
      s.dp_comm_s = of(Dimension::dp);
      s.cp_comm_s = of(Dimension::cp);
      const ExposedComm by = exposed_comm(g, t, r, s.reported_step, start, end);  // what compute waited for
      s.dp_exposed_comm_s = by.of(Dimension::dp);
      s.tp_exposed_comm_s = by.of(Dimension::tp);
      s.pp_exposed_comm_s = by.of(Dimension::pp);
      s.cp_exposed_comm_s = by.of(Dimension::cp);
      s.pcie_s = union_length(offload[0]);
      s.cpu_s = union_length(offload[1]);
      s.nvme_s = union_length(offload[2]);
      // The GPU neither computing nor communicating while some offload stream works: the step
      // waits for the host (a partition on its way from NVMe, the CPU's optimizer step).
      std::vector<std::pair<double, double>> busy = compute;
      busy.insert(busy.end(), comm.begin(), comm.end());
      std::vector<std::pair<double, double>> host;
      for (const auto& kind : offload) host.insert(host.end(), kind.begin(), kind.end());
      s.offload_exposed_s = exposed_length(host, busy);
    }
  }

  // The error band of runs in this one's regime (report/error_band.hpp), which includes whether
  // its step is communication-bound.
  if (const ErrorBand band = error_band(builtin_residuals(), regime_of(in.scenario, std::max(s.exposed_comm_s, 0.0), s.step_time));
      band.runs > 0) {
    // predicted = measured x (1 + error)
    s.tokens_range_low = s.tokens_per_s_per_gpu / (1 + band.error_high);
    s.tokens_range_high = s.tokens_per_s_per_gpu / (1 + band.error_low);
    s.range_runs = band.runs;
    s.range_basis = band.basis;
    s.range_gpu_runs = band.gpu_runs;
  }

  if (s.pp_stages > 1) {
    // One rank per stage (the first met), its bubble over the step, averaged over the stages.
    std::vector<double> bubble(static_cast<std::size_t>(s.pp_stages), -1);
    for (int r : ranks) {
      double& b = bubble[static_cast<std::size_t>(g.info.stage_of(r))];
      if (b < 0) b = pipeline_bubble(g, t, r, start, end);
    }
    double sum = 0;
    int n = 0;
    for (double b : bubble) {
      if (b >= 0) sum += b, ++n;
    }
    s.bubble_fraction = n > 0 && s.step_time > 0 ? sum / n / s.step_time : 0;
  }

  const auto& topology = in.scenario.cluster.topology;
  const std::vector<graph::MemEffect> workspaces = blas_workspaces(topology.gpu);
  if (s.pp_stages > 1) {
    s.reserved_by_stage.assign(static_cast<std::size_t>(s.pp_stages), 0);
    s.allocated_by_stage.assign(static_cast<std::size_t>(s.pp_stages), 0);
  }
  for (int r : ranks) {
    MemoryTimeline m = memory_timeline(g, t, r, {topology.gpu.launch_queue, topology.host.kernel_dispatch.value()},
                                       {s.allocator_memory(), in.scenario.training.expandable_segments}, deadline, workspaces);
    s.oom = s.oom || m.alloc_failures > 0;
    s.alloc_retries = std::max(s.alloc_retries, m.alloc_retries);
    if (s.pp_stages > 1) {
      const auto stage = static_cast<std::size_t>(g.info.stage_of(r));
      s.reserved_by_stage[stage] = std::max(s.reserved_by_stage[stage], m.peak_reserved);
      s.allocated_by_stage[stage] = std::max(s.allocated_by_stage[stage], m.peak);
    }
    if (r == 0 || m.peak_reserved > s.memory.peak_reserved) s.memory = std::move(m);
  }
  // The peak memory's 90% ranges, as the throughput's (predicted = measured x (1 + error)).
  const bool pipelined = in.scenario.parallelism.pp > 1;
  const auto memory_range = [pipelined](double predicted, Measure m) {
    const ErrorBand band = memory_band(builtin_residuals(), m, pipelined);
    if (band.runs == 0 || predicted <= 0) return Summary::MemoryRange{};
    return Summary::MemoryRange{predicted / (1 + band.error_high), predicted / (1 + band.error_low), band.runs, band.basis};
  };
  s.reserved_range = memory_range(s.memory.peak_reserved, Measure::reserved);
  s.allocated_range = memory_range(s.memory.peak, Measure::allocated);
  for (const int id : g.ops_on_stage(g.info.stage_of(s.exposed_rank))) {
    const graph::Op& op = g.op(id);
    if (op.cpu_s <= 0) continue;
    const double at = t.at(op.id, s.exposed_rank).start;
    if (at >= start && at < end) s.hooks_cpu_s += op.cpu_s;
  }
  if (in.waiting_for_cpu != nullptr && !in.waiting_for_cpu->empty()) {
    s.waiting_for_cpu_s = length(merged((*in.waiting_for_cpu)[static_cast<std::size_t>(t.class_of(s.exposed_rank))], start, end));
  }
  if (in.waiting != nullptr && in.holding != nullptr) s.waits = rank_waits(t, *in.waiting, *in.holding, start, end);
  if (in.job_ends != nullptr && in.job_ends->size() > 1) s.job_ends = *in.job_ends;
  for (const auto& w : in.scenario.warnings) s.warnings.push_back(w.str());
  return s;
}

}  // namespace shardsim::report

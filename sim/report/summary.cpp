#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "graph/op.hpp"
#include "report/outputs.hpp"

namespace shardsim::report {
namespace {

constexpr std::array<const char*, graph::kMemCategories> kCategoryLabels{
    "sharded parameters", "unsharded parameters", "gradients (unsharded)", "reduce buffers",  "gradient shards",
    "optimizer state",    "activations",          "logits and loss",       "GEMM workspaces", "pipeline receive buffers"};
constexpr std::array<const char*, graph::kPools> kPoolLabels{"compute stream", "all-gather stream", "reduce-scatter stream",
                                                             "all-reduce stream", "host"};

// 8030261248 -> "8,030,261,248".
std::string grouped(std::int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<std::size_t>(i), ",");
  return n < 0 ? "-" + digits : digits;
}

std::string gib(double bytes) {
  return fmt::format("{:.2f} GiB", bytes / kGiB);
}

}  // namespace

// Who shares one data-parallel rank's micro-batch: a GPU, or a group of the parallel dimensions.
static std::string unit_of_batch(const config::ScenarioConfig& scenario) {
  const auto& p = scenario.parallelism;
  std::vector<std::string> dims;
  if (p.pp > 1) dims.emplace_back("pipeline");
  if (p.cp > 1) dims.emplace_back("context-parallel");
  if (p.tp > 1) dims.emplace_back("tensor-parallel");
  if (dims.empty()) return "GPU";
  std::string joined = dims.front();
  for (std::size_t i = 1; i < dims.size(); ++i) joined += (i + 1 == dims.size() ? " and " : ", ") + dims[i];
  return fmt::format("data-parallel rank (its {} group{})", joined, dims.size() > 1 ? "s" : "");
}

std::string summary_text(const Summary& s, const config::ScenarioConfig& scenario) {
  const auto& topo = scenario.cluster.topology;
  std::string out;
  out += fmt::format("shardsim: {}\n", s.scenario);
  const std::string strategy = scenario.fsdp.sharding == config::Sharding::zero3
                                   ? std::string("DeepSpeed ZeRO-3")
                                   : fmt::format("FSDP{} {}", scenario.fsdp.version, config::to_string(scenario.fsdp.sharding));
  const std::string per_job = scenario.cluster.jobs > 1 ? fmt::format(" per job, {} jobs", scenario.cluster.jobs) : std::string();
  const int tp = scenario.parallelism.tp;
  out += fmt::format("  {} GPUs ({} node{} x {} {}{}), {}, {} x {} tokens per {} per step\n", s.world_size, scenario.cluster.nodes,
                     scenario.cluster.nodes == 1 ? "" : "s", topo.node.gpus, topo.gpu.model, per_job, strategy,
                     scenario.training.micro_batch * scenario.training.grad_accum, scenario.training.seq_len, unit_of_batch(scenario));
  if (const auto& f = topo.fabric; f.routing == config::Routing::ecmp && scenario.cluster.nodes > f.nodes_per_leaf) {
    const int lanes = topo.ecmp_lanes();
    out += fmt::format(
        "  fabric: ECMP over {} spines ({} node{} a leaf): {} flow{} a NIC-to-NIC connection, each pinned to the spine it hashes "
        "to (fabric.ecmp_seed {})\n",
        f.spines, f.nodes_per_leaf, f.nodes_per_leaf == 1 ? "" : "s", lanes, lanes == 1 ? "" : "s", f.ecmp_seed);
  }
  if (tp > 1) {
    out += fmt::format("  tensor parallel {}{} x data parallel {} (ranks r..r+{} split each block's matmuls)\n", tp,
                       scenario.parallelism.sequence_parallel ? " with sequence parallelism" : "",
                       s.world_size / tp / scenario.parallelism.pp / scenario.parallelism.cp, tp - 1);
  }
  if (const int cp = scenario.parallelism.cp; cp > 1) {
    out += fmt::format("  context parallel {}: each {}-token sequence split over {} ranks ({} tokens each), K and V {} per attention\n", cp,
                       scenario.training.seq_len, cp, scenario.training.seq_len / cp,
                       scenario.parallelism.cp_alltoall ? "passed around the ring" : "gathered");
  }
  if (const auto& p = scenario.parallelism; p.pp > 1) {
    const std::int64_t mb = p.pp_microbatches > 0 ? p.pp_microbatches : scenario.training.micro_batch;
    const std::string schedule = p.pp_schedule == config::PpSchedule::gpipe         ? std::string("GPipe")
                                 : p.pp_schedule == config::PpSchedule::one_f_one_b ? std::string("1F1B")
                                 : p.pp_schedule == config::PpSchedule::zbv ? std::string("ZB-V zero bubble, 2 stages per rank in a V")
                                 : p.pp_schedule == config::PpSchedule::interleaved_zb
                                     ? fmt::format("interleaved zero bubble (ZB1P), {} stages per rank", p.pp_stages_per_rank)
                                     : fmt::format("interleaved 1F1B, {} stages per rank", p.pp_stages_per_rank);
    out += fmt::format(
        "  pipeline parallel {} ranks ({}, {} micro-batches of {} sequence(s); pipeline rank s holds ranks s x {} ..); the "
        "compute split and GEMM FLOPs are pipeline rank {}'s, the busiest\n",
        p.pp, schedule, mb, scenario.training.micro_batch / mb, s.world_size / p.pp, s.busiest_stage);
  }
  out += fmt::format("  model {}: {} parameters ({} without embeddings), {:.4g} FLOPs per token\n", s.model_name, grouped(s.params_total),
                     grouped(s.params_non_embedding), s.flops_per_token);
  if (s.sliding_window > 0) {
    graph::AttentionCall call;
    call.seq = scenario.training.seq_len;
    call.window = s.sliding_window;
    out += fmt::format(
        "  sliding-window attention of {} tokens: a query attends to {} keys on average at {} tokens, which the attention's time "
        "counts; the FLOPs per token above count all before it (the MFU convention)\n",
        grouped(s.sliding_window), grouped(std::llround(call.keys_per_query())), grouped(scenario.training.seq_len));
  }
  if (!s.float8_recipe.empty()) {
    out += fmt::format("  float8 {} (torchao): {} of {} linears, {:.1f} % of the step's GEMM FLOPs; FSDP all-gathers {}\n", s.float8_recipe,
                       s.float8_linears, s.linears, s.gemm_flops > 0 ? 100 * s.gemm_flops_float8 / s.gemm_flops : 0.0,
                       s.float8_all_gather ? "converted weights in float8" : "in the parameter dtype");
  }
  out += "\n";
  if (!s.calibration.empty()) {
    out += fmt::format("  calibration in use: {} ({}): {}\n", s.calibration_name, s.calibration, s.calibration_covers);
    if (scenario.calibration && scenario.calibration->has_collectives()) {
      out += "  (with calibrated collectives every collective runs as NCCL's ring, Simple protocol, priced by the calibration)\n";
    }
    out += "\n";
  }
  auto row = [&](std::string_view k, const std::string& v) { out += fmt::format("  {:<34} {}\n", k, v); };
  // A range wholly on one side of its prediction: the published runs like this job all erred one way.
  const auto outside = [](double predicted, double low, double high) -> std::string {
    if (predicted < low) return "  ->  all above the prediction: such runs measured more than modelled";
    if (predicted > high) return "  ->  all below the prediction: such runs measured less than modelled";
    return "";
  };
  row("step time", fmt::format("{:.4f} s  (step {} of {})", s.step_time, s.reported_step + 1, s.reported_step + 1));
  row("tokens/s per GPU", fmt::format("{:.0f}", s.tokens_per_s_per_gpu));
  if (s.range_runs > 0) {
    row("  90% range", fmt::format("{} - {}  (from the errors on {} published runs: {}; docs/fidelity.md){}",
                                   grouped(std::llround(s.tokens_range_low)), grouped(std::llround(s.tokens_range_high)), s.range_runs,
                                   s.range_basis, outside(s.tokens_per_s_per_gpu, s.tokens_range_low, s.tokens_range_high)));
    if (s.range_gpu_runs == 0) {
      row("  not validated on this GPU",
          fmt::format("no published run on {} GPUs is scored (make validate): the range is from other GPUs' runs, and the figures its "
                      "topology marks [assumed] are unchecked",
                      config::kGpuArchNames[static_cast<std::size_t>(scenario.cluster.topology.gpu.arch)]));
    }
  }
  row("TFLOPS per GPU", fmt::format("{:.1f}  (model FLOPs: 6N + 12 l h q s per token)", s.tflops_per_gpu));
  row("MFU", fmt::format("{:.1f} %", 100 * s.mfu));
  row("compute busy", fmt::format("{:.4f} s", s.compute_s));
  if (s.gpu_pace > 1 + 1e-9) {
    row("  at the slowest GPU's pace",
        fmt::format("x {:.4f}  (the slowest of {} GPUs that vary by {:.1f} %: gpu.variation, docs/fidelity.md)", s.gpu_pace, s.world_size,
                    100 * scenario.cluster.topology.gpu.variation));
  }
  if (const auto& c = s.compute_split; c.total() > 0) {
    row("  of which GEMM / attention", fmt::format("{:.4f} s / {:.4f} s  (the compute model's, alone on the GPU)", c.gemm, c.attention));
    row("  memory-bound / launches",
        fmt::format("{:.4f} s / {:.4f} s{}", c.memory, c.launch,
                    c.other > 0 ? fmt::format("  (and {:.4f} s of PCIe and host work)", c.other) : std::string()));
    if (s.optimizer_s > 0) {
      row("  of which optimizer step", fmt::format("{:.4f} s  ({} {}: training.optimizer_impl)", s.optimizer_s,
                                                   config::to_string(scenario.training.optimizer), s.optimizer_impl));
    }
  }
  const auto& host = scenario.cluster.topology.host;
  if (host.kernel_dispatch.value() > 0 || s.waiting_for_cpu_s > 0) {
    std::string why;
    if (host.kernel_dispatch.value() > 0) why = fmt::format("{:.3g} us of CPU per kernel, ", 1e6 * host.kernel_dispatch.value());
    if (s.hooks_cpu_s > 0) why += fmt::format("FSDP's hooks {:.1f} ms of CPU, ", 1e3 * s.hooks_cpu_s);
    row("compute waiting for the CPU",
        fmt::format("{:.4f} s  (kernels not yet issued: {}rank {})", s.waiting_for_cpu_s, why, s.exposed_rank));
  }
  row("communication", fmt::format("{:.4f} s", s.comm_s));
  if (!s.float8_recipe.empty()) row("  parameter all-gathers", fmt::format("{} per GPU per step", gib(s.all_gather_bytes)));
  // Each dimension's collectives on their own: they run side by side, so these need not add up.
  const bool several = tp > 1 || scenario.parallelism.cp > 1 || s.pp_stages > 1;
  if (several) row("  of which data parallel", fmt::format("{:.4f} s", s.dp_comm_s));
  if (tp > 1) row("  of which tensor parallel", fmt::format("{:.4f} s", s.tp_comm_s));
  if (s.pp_stages > 1) row("  of which pipeline sends", fmt::format("{:.4f} s", s.pp_comm_s));
  if (scenario.parallelism.cp > 1) row("  of which context parallel", fmt::format("{:.4f} s", s.cp_comm_s));
  if (s.pcie_s > 0 || s.cpu_s > 0 || s.nvme_s > 0) {
    row("offload: PCIe / CPU / NVMe busy", fmt::format("{:.4f} s / {:.4f} s / {:.4f} s", s.pcie_s, s.cpu_s, s.nvme_s));
    row("  exposed", fmt::format("{:.4f} s  ({:.1f} % of the step: the GPU idle, waiting for the host)", s.offload_exposed_s,
                                 s.step_time > 0 ? 100 * s.offload_exposed_s / s.step_time : 0.0));
  }
  row("exposed communication", fmt::format("{:.4f} s  ({:.1f} % of the step, rank {})", s.exposed_comm_s,
                                           s.step_time > 0 ? 100 * s.exposed_comm_s / s.step_time : 0.0, s.exposed_rank));
  // By what the compute stream waited for (report/exposure.hpp): the lines add up to the total.
  if (several) row("  of which data parallel", fmt::format("{:.4f} s", s.dp_exposed_comm_s));
  if (tp > 1) row("  of which tensor parallel", fmt::format("{:.4f} s  (on the critical path: compute waits for it)", s.tp_exposed_comm_s));
  if (scenario.parallelism.cp > 1)
    row("  of which context parallel",
        fmt::format("{:.4f} s  (attention waiting for K and V, or for its K and V gradients back around the ring)", s.cp_exposed_comm_s));
  if (s.pp_stages > 1) {
    row("  of which pipeline sends", fmt::format("{:.4f} s", s.pp_exposed_comm_s));
    row("pipeline bubble", fmt::format("{:.1f} % of the step  (stages idle waiting for other stages, mean of {} stages)",
                                       100 * s.bubble_fraction, s.pp_stages));
  }
  out += "\n";
  const std::string verdict = s.oom ? std::string("OUT OF MEMORY")
                              : s.alloc_retries > 0
                                  ? fmt::format(
                                        "fits only by releasing the allocator's cache {} time{} (each a cudaFree and a synchronize: "
                                        "slower than simulated)",
                                        s.alloc_retries, s.alloc_retries == 1 ? "" : "s")
                                  : std::string("fits");
  row("peak memory (reserved)", fmt::format("{} of {} left to PyTorch on rank {}  ->  {}", gib(s.memory.peak_reserved),
                                            gib(s.allocator_memory()), s.memory.rank, verdict));
  const auto memory_range = [&](const Summary::MemoryRange& r, double predicted, std::string_view note) {
    if (r.runs == 0) return;
    row("  90% range", fmt::format("{:.1f} - {:.1f} GiB  (from the errors on {} published runs: {}; docs/fidelity.md){}{}", r.low / kGiB,
                                   r.high / kGiB, r.runs, r.basis, outside(predicted, r.low, r.high), note));
  };
  // A verdict of "fits" with the range's upper end past what PyTorch may use is not a sure one.
  const bool may_not_fit = !s.oom && s.reserved_range.high > s.allocator_memory();
  memory_range(s.reserved_range, s.memory.peak_reserved, may_not_fit ? "  ->  it may not fit" : "");
  for (std::size_t p = 0; p + 1 < kPoolLabels.size(); ++p) {
    if (s.memory.reserved_by_pool[p] > 0) row(fmt::format("  {} pool", kPoolLabels[p]), gib(s.memory.reserved_by_pool[p]));
  }
  if (!s.reserved_by_stage.empty()) {
    const auto list = [](const std::vector<double>& bytes) {
      std::string text;
      for (double b : bytes) text += fmt::format("{}{:.2f}", text.empty() ? "" : " / ", b / kGiB);
      return text;
    };
    row("  by pipeline stage", fmt::format("{} GiB  (allocated {} GiB)", list(s.reserved_by_stage), list(s.allocated_by_stage)));
  }
  std::string parts;  // the NCCL buffers that are not a ring's
  for (const auto& [bytes, what] : {std::pair{s.outside.tree, "trees"}, {s.outside.nvls, "NVLS"}, {s.outside.p2p, "pipeline sends"}}) {
    if (bytes > 0) parts += fmt::format("{}{} {}", parts.empty() ? "; " : ", ", what, gib(bytes));
  }
  const std::string nccl = s.outside.communicators > 0
                               ? fmt::format(", NCCL buffers {} for {} communicator{} x {} channels{}", gib(s.outside.nccl),
                                             s.outside.communicators, s.outside.communicators == 1 ? "" : "s", s.outside.channels, parts)
                               : std::string();
  row("outside PyTorch's allocator",
      fmt::format("{} of the GPU's {}  (CUDA context {}{})", gib(s.outside.total()), gib(s.gpu_memory), gib(s.outside.context), nccl));
  row("peak memory (allocated)", fmt::format("{} at {}", gib(s.memory.peak), s.memory.peak_op));
  memory_range(s.allocated_range, s.memory.peak, "");
  for (std::size_t c = 0; c < kCategoryLabels.size(); ++c) {
    // A pipeline's receive buffers only where there is a pipeline.
    if (c == static_cast<std::size_t>(graph::MemCategory::pipeline_buffers) && s.pp_stages < 2) continue;
    row(fmt::format("  {}", kCategoryLabels[c]), gib(s.memory.at_peak[c]));
  }
  if (s.memory.peak_host > 0) {
    // Every rank of a node offloads alike: the node holds gpus x one rank's peak.
    const double node = s.memory.peak_host * s.gpus_per_node;
    row("host memory (offload)",
        fmt::format("{} per GPU, {} per node{}", gib(s.memory.peak_host), gib(node),
                    s.host_memory_capacity > 0 ? fmt::format(" of {}  ->  {}", gib(s.host_memory_capacity),
                                                             node <= s.host_memory_capacity ? "fits" : "DOES NOT FIT")
                                               : std::string("  (the topology gives no host.memory to check it against)")));
  }
  if (s.nvme_bytes_per_node > 0) {
    row("NVMe (ZeRO-Infinity)", fmt::format("{} per node of {}  ->  {}", gib(s.nvme_bytes_per_node), gib(s.nvme_capacity),
                                            s.nvme_bytes_per_node <= s.nvme_capacity ? "fits" : "DOES NOT FIT"));
  }
  if (s.simulated_ranks == 1 && s.world_size > 1) {
    out += fmt::format("\n  symmetric mode: rank 0 simulated for all {} ranks (every rank does the same)\n", s.world_size);
  } else if (s.simulated_ranks < s.world_size) {
    out += fmt::format(
        "\n  symmetric mode: the first rank of each of the {} pipeline stages simulated for all {} ranks (every rank "
        "of a stage does the same)\n",
        s.simulated_ranks, s.world_size);
  }
  if (s.job_ends.size() > 1) {
    const auto [first, last] = std::minmax_element(s.job_ends.begin(), s.job_ends.end());
    const std::string ends = fmt::format("{:.4f}", *first) == fmt::format("{:.4f}", *last)
                                 ? fmt::format("every job's run ends at {:.4f} s", *first)
                                 : fmt::format("the jobs' runs end between {:.4f} s and {:.4f} s", *first, *last);
    out += fmt::format("\n  {} jobs share the fabric ({} placement): the figures are job 0's; {}\n", s.job_ends.size(),
                       scenario.cluster.placement == config::Placement::packed ? "packed" : "interleaved", ends);
  }
  if (!s.waits.empty() && s.waits.front().caused_s > 1e-3 * s.step_time) {
    out += "\n  who waits for whom (collectives started late because these ranks arrived last):\n";
    if (s.step_time_without_stragglers > 0) {
      out += fmt::format("    the stragglers cost the step {:.4f} s ({:.1f} %): {:.4f} s, against {:.4f} s with every rank alike\n",
                         s.step_time - s.step_time_without_stragglers, 100 * (s.step_time / s.step_time_without_stragglers - 1),
                         s.step_time, s.step_time_without_stragglers);
    }
    for (const auto& w : s.waits) {
      out += fmt::format(
          "    rank {:<6} collectives waited for it during {:.4f} s of the step; each other rank waited for it {:.4f} s on average, "
          "{:.4f} s at most (on streams that may have had other work); it waited {:.4f} s itself\n",
          w.rank, w.caused_s, w.others_waited_mean_s, w.others_waited_max_s, w.waited_s);
    }
  }
  return out;
}

nlohmann::json summary_json(const Summary& s) {
  nlohmann::json waits = nlohmann::json::array();
  for (const auto& w : s.waits) {
    waits.push_back({{"rank", w.rank},
                     {"waited_s", w.waited_s},
                     {"caused_s", w.caused_s},
                     {"others_waited_mean_s", w.others_waited_mean_s},
                     {"others_waited_max_s", w.others_waited_max_s}});
  }
  const auto range_json = [](const Summary::MemoryRange& r) {
    return r.runs > 0 ? nlohmann::json::array({r.low, r.high}) : nlohmann::json(nullptr);
  };
  nlohmann::json pools = nlohmann::json::object();
  for (int p = 0; p + 1 < graph::kPools; ++p) {
    pools[std::string(graph::to_string(static_cast<graph::Pool>(p)))] = s.memory.reserved_by_pool[static_cast<std::size_t>(p)];
  }
  nlohmann::json breakdown = nlohmann::json::object();
  for (int c = 0; c < graph::kMemCategories; ++c) {
    breakdown[std::string(graph::to_string(static_cast<graph::MemCategory>(c)))] = s.memory.at_peak[static_cast<std::size_t>(c)];
  }
  return nlohmann::json{
      {"scenario", s.scenario},
      {"world_size", s.world_size},
      {"reported_step", s.reported_step},
      {"model",
       {{"name", s.model_name},
        {"params_total", s.params_total},
        {"params_non_embedding", s.params_non_embedding},
        {"flops_per_token", s.flops_per_token},
        {"sliding_window", s.sliding_window > 0 ? nlohmann::json(s.sliding_window) : nlohmann::json(nullptr)}}},
      {"step_time_s", s.step_time},
      {"tokens_per_step_per_gpu", s.tokens_per_step_per_gpu},
      {"tokens_per_s_per_gpu", s.tokens_per_s_per_gpu},
      {"tokens_per_s_per_gpu_range",
       s.range_runs > 0 ? nlohmann::json::array({s.tokens_range_low, s.tokens_range_high}) : nlohmann::json(nullptr)},
      {"step_time_s_range",
       s.range_runs > 0 && s.tokens_range_low > 0
           ? nlohmann::json::array({s.tokens_per_step_per_gpu / s.tokens_range_high, s.tokens_per_step_per_gpu / s.tokens_range_low})
           : nlohmann::json(nullptr)},
      {"range_basis", s.range_runs > 0
                          ? nlohmann::json{{"runs", s.range_runs},
                                           {"regime", s.range_basis},
                                           {"gpu_runs", s.range_gpu_runs >= 0 ? nlohmann::json(s.range_gpu_runs) : nlohmann::json(nullptr)}}
                          : nlohmann::json(nullptr)},
      {"tflops_per_gpu", s.tflops_per_gpu},
      {"mfu", s.mfu},
      {"compute_s", s.compute_s},
      {"gpu_variation_pace", s.gpu_pace},
      {"comm_s", s.comm_s},
      {"exposed_comm_s", s.exposed_comm_s},
      {"tp_comm_s", s.tp_comm_s},
      {"compute_split_s",
       {{"gemm", s.compute_split.gemm},
        {"attention", s.compute_split.attention},
        {"memory_bound", s.compute_split.memory},
        {"launch", s.compute_split.launch},
        {"other", s.compute_split.other}}},
      {"optimizer_s", s.optimizer_s},
      {"optimizer_impl", s.optimizer_impl},
      {"tp_exposed_comm_s", s.tp_exposed_comm_s},
      {"comm_s_by_dimension", {{"dp", s.dp_comm_s}, {"tp", s.tp_comm_s}, {"pp", s.pp_comm_s}, {"cp", s.cp_comm_s}}},
      {"exposed_comm_s_by_dimension",
       {{"dp", s.dp_exposed_comm_s}, {"tp", s.tp_exposed_comm_s}, {"pp", s.pp_exposed_comm_s}, {"cp", s.cp_exposed_comm_s}}},
      {"pp_stages", s.pp_stages},
      {"pp_comm_s", s.pp_comm_s},
      {"pp_exposed_comm_s", s.pp_exposed_comm_s},
      {"bubble_fraction", s.bubble_fraction},
      {"busiest_stage", s.busiest_stage},
      {"all_gather_bytes", s.all_gather_bytes},
      {"gemm_flops", s.gemm_flops},
      {"gemm_flops_float8", s.gemm_flops_float8},
      {"float8", s.float8_recipe.empty() ? nlohmann::json(nullptr)
                                         : nlohmann::json{{"recipe", s.float8_recipe},
                                                          {"linears", s.float8_linears},
                                                          {"linears_total", s.linears},
                                                          {"fsdp_float8_all_gather", s.float8_all_gather}}},
      {"peak_memory_bytes", s.memory.peak_reserved},
      {"peak_memory_bytes_range", range_json(s.reserved_range)},
      {"memory_range_basis",
       {{"reserved", s.reserved_range.runs > 0 ? nlohmann::json(s.reserved_range.basis) : nlohmann::json(nullptr)},
        {"allocated", s.allocated_range.runs > 0 ? nlohmann::json(s.allocated_range.basis) : nlohmann::json(nullptr)}}},
      {"peak_allocated_bytes", s.memory.peak},
      {"peak_allocated_bytes_range", range_json(s.allocated_range)},
      {"reserved_by_pool", pools},
      {"peak_host_memory_bytes", s.memory.peak_host},
      {"host_memory_per_node_bytes", s.memory.peak_host * s.gpus_per_node},
      {"nvme_bytes_per_node", s.nvme_bytes_per_node},
      {"offload_busy_s", {{"pcie", s.pcie_s}, {"cpu", s.cpu_s}, {"nvme", s.nvme_s}}},
      {"offload_exposed_s", s.offload_exposed_s},
      {"waiting_for_cpu_s", s.waiting_for_cpu_s},
      {"fsdp_hooks_cpu_s", s.hooks_cpu_s},
      {"peak_memory_rank", s.memory.rank},
      {"peak_memory_bytes_by_stage", s.reserved_by_stage},
      {"peak_allocated_bytes_by_stage", s.allocated_by_stage},
      {"peak_memory_op", s.memory.peak_op},
      {"gpu_memory_bytes", s.gpu_memory},
      {"outside_allocator_bytes",
       {{"cuda_context", s.outside.context},
        {"nccl", s.outside.nccl},
        {"nccl_tree", s.outside.tree},
        {"nccl_nvls", s.outside.nvls},
        {"nccl_pipeline_sends", s.outside.p2p},
        {"nccl_communicators", s.outside.communicators},
        {"nccl_channels", s.outside.channels}}},
      {"oom", s.oom},
      {"alloc_retries", s.alloc_retries},
      {"memory_breakdown", breakdown},
      {"simulated_ranks", s.simulated_ranks},
      {"waits", waits},
      {"step_time_without_stragglers_s",
       s.step_time_without_stragglers > 0 ? nlohmann::json(s.step_time_without_stragglers) : nlohmann::json(nullptr)},
      {"job_ends_s", s.job_ends},
      {"warnings", s.warnings},
      {"calibration", s.calibration.empty()
                          ? nlohmann::json(nullptr)
                          : nlohmann::json{{"file", s.calibration}, {"name", s.calibration_name}, {"covers", s.calibration_covers}}},
  };
}

}  // namespace shardsim::report

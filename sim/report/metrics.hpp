// The figures users read: step time, throughput, MFU, exposed communication and memory, computed
// from the graph and the timeline the engine (or the replay harness) produced.
#pragma once

#include <algorithm>
#include <array>
#include <limits>
#include <string>
#include <vector>

#include "config/scenario.hpp"
#include "core/deadline.hpp"
#include "graph/outside_allocator.hpp"
#include "graph/step_graph.hpp"
#include "graph/timeline.hpp"
#include "model/transformer.hpp"
#include "report/caching_allocator.hpp"
#include "report/cpu_issue.hpp"

namespace shardsim::report {

using Categories = std::array<double, graph::kMemCategories>;
using Pools = std::array<double, graph::kPools>;

struct MemoryPoint {
  double time = 0;
  Categories bytes{};   // allocated on the GPU, by category
  double reserved = 0;  // held by the caching allocator (sum of the pools' high-water marks)
  [[nodiscard]] double total() const;
};

// One rank's memory over the simulated steps, from the ops' allocation and free effects, with
// reserved memory from a model of PyTorch's caching allocator (caching_allocator.hpp): per-stream
// pools, block rounding, best-fit reuse with splitting, segments kept until the end.
struct MemoryTimeline {
  int rank = 0;
  std::vector<MemoryPoint> points;  // after each change, in time order
  double peak = 0;                  // allocated
  double peak_time = 0;
  std::string peak_op;  // the op whose start or end reached the allocated peak
  Categories at_peak{};
  double peak_reserved = 0;
  Pools reserved_by_pool{};  // high-water mark of each GPU pool
  double peak_host = 0;      // CPU memory (CPU offload)
  int unpaired_frees = 0;    // frees that matched no allocation of their size (should be 0)
  int alloc_retries = 0;     // allocations that released the allocator's cache first (capacity)
  int alloc_failures = 0;    // allocations that failed even then: CUDA out of memory
};

// `issue`: gpu.launch_queue and host.kernel_dispatch, which bound how far ahead of the GPU the
// CPU makes the allocations marked at_issue (report/cpu_issue.hpp). `allocator`: the GPU's memory, which the
// caching allocator keeps reserved memory under by releasing its cache, and its segments' mode
// (caching_allocator.hpp).
// `deadline`: checked as the ops are replayed (a model of 100,000 layers has millions).
// `runtime`: what the process holds through the allocator besides the graph's own tensors (the
// GEMM library's workspaces, blas_workspace.hpp), allocated before the step's first op.
[[nodiscard]] MemoryTimeline memory_timeline(const graph::StepGraph& g, const graph::Timeline& t, int rank, const IssueRules& issue = {},
                                             const AllocatorSettings& allocator = {}, const Deadline& deadline = {},
                                             const std::vector<graph::MemEffect>& runtime = {});

// A rank that made others wait at collectives (stragglers), within the reported step. Each figure
// is a length of time, never a sum over concurrent waits: at most the step time.
struct RankWait {
  int rank = 0;
  double waited_s = 0;              // time it waited at some collective for the group's last rank
  double caused_s = 0;              // time some rank waited at a collective for this one, the last to arrive
  double others_waited_mean_s = 0;  // the other ranks' time waiting for it, on average
  double others_waited_max_s = 0;   // and the most any of them waited for it
};

struct Summary {
  std::string scenario;
  // The model as built, to check against its model card (an HF config.json read as intended).
  std::string model_name;
  std::int64_t params_total = 0;
  std::int64_t params_non_embedding = 0;  // N of the MFU convention
  double flops_per_token = 0;             // model FLOPs per token, 6N + 12 l h q s (MFU convention)
  std::int64_t sliding_window = 0;        // the attention's window where shorter than the sequence; 0: none
  int world_size = 0;
  int simulated_ranks = 0;  // world_size, or in symmetric mode 1 (one per pipeline stage)
  int reported_step = 0;
  double step_start = 0;
  double step_time = 0;  // seconds
  double tokens_per_step_per_gpu = 0;
  double tokens_per_s_per_gpu = 0;
  double tflops_per_gpu = 0;  // model FLOPs (MFU convention) per second, in TFLOPS
  double mfu = 0;
  double compute_s = 0;          // time the compute stream is busy in the step (the exposed-comm rank)
  double gpu_pace = 1;           // every rank's compute slowed by the fleet's GPU-to-GPU variation (engine/variation.hpp)
  double comm_s = 0;             // time some collective runs in the step
  double exposed_comm_s = 0;     // collectives running while the compute stream is idle (max over ranks)
  double tp_comm_s = 0;          // of comm_s: tensor-parallel collectives (the exposed-comm rank)
  double tp_exposed_comm_s = 0;  // of exposed_comm_s: tensor-parallel collectives
  // Pipeline parallelism: stages, the sends between them (of comm_s and exposed_comm_s), and the
  // bubble: the share of the step a stage's compute stream waits for another stage, averaged
  // over the stages (report/pipeline_bubble.hpp). The per-op figures below (compute split, GEMM
  // FLOPs, all-gather bytes) are then those of `busiest_stage`, the stage with the most compute.
  int pp_stages = 1;
  double dp_comm_s = 0;  // of comm_s: the data-parallel collectives (FSDP, DDP, ZeRO), neither TP nor PP
  double dp_exposed_comm_s = 0;
  double cp_comm_s = 0;  // of comm_s: context parallelism's K/V gathers and their gradients' reduce-scatters
  double cp_exposed_comm_s = 0;
  double pp_comm_s = 0;
  double pp_exposed_comm_s = 0;
  double bubble_fraction = 0;
  int busiest_stage = 0;
  // Pipeline parallelism: each stage's peak reserved and allocated memory (its simulated ranks'
  // highest), as a run logging one rank (torchtitan logs rank 0, the first stage) reports it.
  std::vector<double> reserved_by_stage;
  std::vector<double> allocated_by_stage;
  // The reported step's compute-stream work of one rank by kind, as the compute model prices it
  // alone (without the slow-down collectives cause or stragglers); zero without the engine's split.
  graph::ComputeSplit compute_split;
  // Of compute_split: the optimizer step on the GPU (0 where it runs on the CPU), and how it runs
  // (training.optimizer_impl as resolved: "foreach" or "fused"; "cpu" where the CPU steps it).
  double optimizer_s = 0;
  std::string optimizer_impl;
  // What float8 training changes, in the reported step on one rank: the bytes of the parameter
  // all-gathers (FSDP / ZeRO-3, not tensor parallelism's activations or context parallelism's K and V) and the GEMM FLOPs, all and in
  // float8.
  double all_gather_bytes = 0;
  double gemm_flops = 0;
  double gemm_flops_float8 = 0;
  int float8_linears = 0;  // linears converted (training.float8), of `linears`
  int linears = 0;
  std::string float8_recipe;  // training.float8's recipe, empty without
  bool float8_all_gather = false;
  // Offloading (FSDP CPU offload, ZeRO-Infinity): busy time of the PCIe copy streams, the CPU and
  // the NVMe stream in the reported step (the exposed-comm rank), and what a node holds.
  double pcie_s = 0;
  double cpu_s = 0;
  double nvme_s = 0;
  double offload_exposed_s = 0;  // of those, while the GPU neither computes nor communicates
  // The exposed-communication rank's compute stream idle for the CPU to issue kernels (FSDP's
  // hooks, host.kernel_dispatch): before an op's first, and within an op before its last.
  double waiting_for_cpu_s = 0;
  double hooks_cpu_s = 0;  // of the same rank's CPU in the step, FSDP's hooks (op.cpu_s)
  int gpus_per_node = 1;
  double host_memory_capacity = 0;  // per node (topology host.memory), 0: not given
  double nvme_bytes_per_node = 0;
  double nvme_capacity = 0;  // per node (topology host.nvme.capacity)
  // How far off shardsim has been on published runs like this one (report/error_band.hpp): the
  // 90% range of the measured value around this prediction; range_runs == 0: none.
  double tokens_range_low = 0;
  double tokens_range_high = 0;
  int range_runs = 0;
  std::string range_basis;
  int range_gpu_runs = -1;  // of those, on this GPU generation, where fewer than five are (ErrorBand::gpu_runs); -1: enough
  // The same for the peak memory figures, from every published run's memory error (runs == 0: none).
  struct MemoryRange {
    double low = 0;
    double high = 0;
    int runs = 0;
    std::string basis;  // "reserved memory of runs without a pipeline", ...
  };
  MemoryRange reserved_range;
  MemoryRange allocated_range;
  int exposed_rank = 0;
  double gpu_memory = 0;
  graph::OutsideAllocator outside;           // the CUDA context and NCCL's buffers
  MemoryTimeline memory;                     // of the rank with the highest peak reserved memory
  bool oom = false;                          // some rank's allocation failed even after releasing the cache
  int alloc_retries = 0;                     // the most allocator retries on one rank (each slows the run)
  std::vector<RankWait> waits;               // the ranks that caused the most waiting, most first (at most 5)
  double step_time_without_stragglers = -1;  // the same run with every rank alike (stragglers only; -1: not run)
  std::vector<double> job_ends;              // cluster.jobs > 1: when each job's run ended (the figures are job 0's)
  std::vector<std::string> warnings;         // settings that did not apply (ConfigWarning::str())
  std::string calibration;                   // the calibration file in use (scenario key calibration), empty without one
  std::string calibration_name;              // its name: key
  std::string calibration_covers;            // what it replaces (config::calibration_coverage)

  // What the GPU leaves to PyTorch's caching allocator once the CUDA context and NCCL hold theirs.
  [[nodiscard]] double allocator_memory() const { return std::max(0.0, gpu_memory - outside.total()); }
};

struct SummaryInput {
  const config::ScenarioConfig& scenario;
  const model::Model& model;
  const graph::StepGraph& graph;
  const graph::Timeline& timeline;
  // Per timeline class (waiting) and per simulated rank (holding), as SimulationResult has
  // them (engine/simulator.hpp); optional.
  const std::vector<std::vector<graph::Interval>>* waiting = nullptr;
  const std::vector<std::vector<graph::Interval>>* holding = nullptr;
  const std::vector<std::vector<graph::Interval>>* waiting_for_cpu = nullptr;  // per timeline class (engine), optional
  const std::vector<double>* job_ends = nullptr;                               // per job (engine), optional
  const Deadline* deadline = nullptr;                                          // simulation.max_wall_time, optional
  const std::vector<graph::ComputeSplit>* compute_split = nullptr;             // per op (engine), optional
  const std::vector<graph::CommunicatorUse>* communicators = nullptr;          // the engine's, optional (rings alone)
};

// The ranks summaries look at: all of them up to 256, else 256 spread evenly plus the stragglers.
[[nodiscard]] std::vector<int> sampled_ranks(int simulated, const config::Stragglers& stragglers);

// The ranks that held collectives up in [start, end], most first (at most 5). `waiting` is per
// class of `t` (ranks of a class waited alike), `holding` per rank.
[[nodiscard]] std::vector<RankWait> rank_waits(const graph::Timeline& t, const std::vector<std::vector<graph::Interval>>& waiting,
                                               const std::vector<std::vector<graph::Interval>>& holding, double start, double end);

[[nodiscard]] Summary summarize(const SummaryInput& in);

}  // namespace shardsim::report

// make validate's shared pieces: one simulated run's figures (each in a child process, SimGrid
// initialising once per process, and each scenario-and-settings simulated once), and the settings
// the ledger (validate_main.cpp) and the qualitative checks (qualitative_effects.cpp) apply on top
// of a scenario.
#pragma once

#include <string>
#include <vector>

namespace shardsim::published {

struct Figures {
  double tokens_per_s = 0;
  double tflops = 0;
  double mfu = 0;
  double reserved_gib = 0;
  double allocated_gib = 0;  // peak allocated (torch.cuda.max_memory_allocated)
  // Rank 0's peak allocated, which KempnerForge logs (metrics/tracker.py on the main rank): under a
  // pipeline the first stage's, else the same as allocated_gib.
  double allocated_rank0_gib = 0;
  double step_s = 0;
  bool fits = false;  // no out-of-memory and no allocator retries
  // The reported step taken apart (one rank, its busiest stage's compute): the compute stream's
  // work by kind as the compute model prices it, communication that leaves it idle by kind, the
  // pipeline bubble, the waits the slowest ranks cause and those for the CPU.
  double gemm_s = 0;
  double attention_s = 0;
  double memory_bound_s = 0;
  double launch_s = 0;
  double other_s = 0;  // host copies, CPU and NVMe work
  double exposed_dp_s = 0;
  double exposed_tp_s = 0;
  double exposed_pp_s = 0;
  double exposed_cp_s = 0;
  double exposed_s = 0;  // all exposed communication (the summary's), for the case's bound
  double bubble = 0;     // fraction of the step
  double waits_s = 0;    // the longest a rank held others up at collectives
  double cpu_s = 0;      // the compute stream idle for the CPU to issue its next op (host.kernel_dispatch)
};

// One line: where the simulated step goes.
std::string decomposition(const Figures& f);

// The scenario (a path under the source tree) with `sets` applied, simulated once per process.
Figures simulate(const std::string& scenario, const std::vector<std::string>& sets);

// The qualitative effects the published sources report (direction and size), printed.
void print_qualitative_effects();

inline constexpr const char* kAsync = "parallelism.tp_async=true";
inline constexpr const char* kMi300x = "cluster.topology=mi300x_8x_ib400";
inline constexpr const char* kCp2 = "parallelism.cp=2";
inline constexpr const char* kCp4 = "parallelism.cp=4";
inline constexpr const char* kCp8 = "parallelism.cp=8";
inline constexpr const char* kSeq64k = "training.seq_len=65536";
inline constexpr const char* kSeq128k = "training.seq_len=131072";
inline constexpr const char* kSeq256k = "training.seq_len=262144";
inline constexpr const char* k16Hosts = "cluster.nodes=16";
inline constexpr const char* k8Hosts = "cluster.nodes=8";
inline constexpr const char* k4Hosts = "cluster.nodes=4";
inline constexpr const char* k2Hosts = "cluster.nodes=2";
inline constexpr const char* k2Gpus = "cluster.overrides.node.gpus=2";
inline constexpr const char* k2Nics = "cluster.overrides.node.nics=2";
// Two GPUs of a 4-GPU HGX H200 board: the one NVLink pair between them, a third of a GPU's 450 GB/s.
inline constexpr const char* kPairLink = "cluster.overrides.node.nvlink.bandwidth=150GB/s";
inline constexpr const char* kTp4 = "parallelism.tp=4";
// KempnerForge's rows 1 and 2 run local batch 2 with 4 accumulation steps (benchmarks/mfu_scaling/mfu_bench.sh).
inline constexpr const char* kBatch2 = "training.micro_batch=2";
inline constexpr const char* kAccum4 = "training.grad_accum=4";
// KempnerForge's config-validation runs (2026-04-06): configs/train/7b.toml's local batch 8, and
// 7b_12gpu_tp4.toml's 3 nodes with 8 accumulation steps.
inline constexpr const char* kBatch8 = "training.micro_batch=8";
inline constexpr const char* k3Hosts = "cluster.nodes=3";
inline constexpr const char* kAccum8 = "training.grad_accum=8";
// torchtitan#165: FSDP1 reshards every block after forward, FSDP2 there kept the last unsharded.
inline constexpr const char* kV11 = "validation/published/v11_llama2-7b_8xh100_fsdp2_sac.yaml";
inline constexpr double kV11Gib = 95.0396;  // the GPU memory its log's percentages are of
inline constexpr const char* kFsdp1 = "fsdp.version=1";
inline constexpr const char* kReshardLast = "fsdp.keep_last_unit_unsharded=false";
inline constexpr const char* kFullAc = "training.activation_checkpointing=full";
inline constexpr const char* kCompile = "training.compile=true";
// torchtitan compiles the loss with training.compile only from bbb1b616 (2025-04-02).
inline constexpr const char* kEagerLoss = "training.compile_loss=false";
// P4's 3D job and the settings of torchtitan's 2024-12 table 5 on it.
inline constexpr const char* kP4 = "validation/published/p4_llama3.1-405b_512xh100_tp8_pp8.yaml";
inline constexpr const char* kSeq8k = "training.seq_len=8192";
inline constexpr const char* kBatch32 = "training.micro_batch=32";
inline constexpr const char* kInterleaved = "parallelism.pp_schedule=interleaved_1f1b";
inline constexpr const char* kTwoStages = "parallelism.pp_stages_per_rank=2";
inline constexpr const char* kSplit16 = "parallelism.pp_split_points=[7, 15, 23, 31, 39, 47, 55, 63, 71, 79, 87, 95, 103, 111, 119]";
// P1's rowwise job, and torchtitan's auto filter on its linears (filter_fqns "auto_filter_small_kn").
inline constexpr const char* kP1Rowwise = "validation/published/p1_llama3-70b_256xh100_tp8_float8_rowwise.yaml";
inline constexpr const char* kAutoFilter = "training.float8.skip=[output, auto_filter_small_kn]";

}  // namespace shardsim::published

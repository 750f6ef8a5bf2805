// make validate: predictions against published runs (shared/reference/published-runs.md and
// the held-out torchtitan A100 runs), and the qualitative effects those sources report. Each
// simulation runs in a child process (one SimGrid engine per process). Prints a table; the
// exit code is 0 whatever the errors (this reports, tests decide).
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "config/scenario.hpp"
#include "published_runs.hpp"
#include "report/error_band.hpp"

using namespace shardsim::published;

namespace {

struct Case {
  const char* id;
  const char* scenario;
  // "tokens/s", "TFLOPS", "GiB reserved" (the highest over the ranks), "GiB allocated", "GiB alloc
  // rank 0" (the rank KempnerForge logs: a pipeline's first stage)
  const char* metric;
  double measured;
  const char* source;
  // The |relative error| this case may have before `--check` fails: today's error plus about two
  // points (a regression guard; the fidelity work is to bring them down, not to widen them).
  double bound;
  std::vector<std::string> sets = {};  // settings on top of the scenario (the same job's async-TP row)
};

double pick(const Figures& f, const std::string& metric) {
  if (metric == "tokens/s") return f.tokens_per_s;
  if (metric == "TFLOPS") return f.tflops;
  if (metric == "GiB allocated") return f.allocated_gib;
  if (metric == "GiB alloc rank 0") return f.allocated_rank0_gib;
  return f.reserved_gib;
}

// The regime a case belongs to for error bands (report/error_band.hpp): its GPU generation,
// float8 recipe class and whether its simulated step is communication-bound.
shardsim::report::Regime regime_of(const std::string& scenario, const std::vector<std::string>& sets, const Figures& f) {
  const auto s = shardsim::config::load_scenario(std::string(SHARDSIM_SOURCE_DIR) + "/" + scenario, sets);
  return shardsim::report::regime_of(s, f.exposed_s, f.step_s);
}

// Tokens/s per GPU of a Megatron-LM run reported in TFLOPS per GPU by its paper's count
// (Narayanan et al., SC'21, eq. 3, full recomputation included): 96 B s l h^2 (1 + s/6h + V/16lh)
// FLOPs per batch of B sequences of s tokens, i.e. 96 l h^2 (1 + s/6h + V/16lh) per token.
double megatron_tokens_per_s(double tflops, double layers, double hidden, double seq, double vocab) {
  const double per_token = 96 * layers * hidden * hidden * (1 + seq / (6 * hidden) + vocab / (16 * layers * hidden));
  return tflops * 1e12 / per_token;
}

// Megatron-Core's count (megatron/training/training.py num_floating_point_operations, 2024):
// 12 B s l h^2 (1 + g/n + s/h + f/h + V / 2lh) for a GPT with multi-head attention (g = n) and an
// MLP of f = 4h, no recomputation counted: per token 12 l h^2 (6 + s/h) + 6 h V.
double megatron_core_tokens_per_s(double tflops, double layers, double hidden, double seq, double vocab) {
  const double per_token = 12 * layers * hidden * hidden * (6 + seq / hidden) + 6 * hidden * vocab;
  return tflops * 1e12 / per_token;
}

// The ledger in three figures: mean |error| and signed mean error over the throughput cases, and
// the signed mean of the communication- and compute-bound ones (issue 13's targets are stated so).
void print_error_summary(const std::vector<shardsim::report::Residual>& residuals) {
  struct Sum {
    int n = 0;
    double signed_sum = 0;
    double abs_sum = 0;
    void add(double e) {
      ++n;
      signed_sum += e;
      abs_sum += std::abs(e);
    }
    [[nodiscard]] double mean() const { return n > 0 ? 100 * signed_sum / n : 0; }
  };
  Sum all;
  Sum communication;
  Sum compute;
  for (const auto& r : residuals) {
    if (shardsim::report::measure_of(r.metric) != shardsim::report::Measure::throughput) continue;
    all.add(r.error);
    (r.regime.bound == "communication" ? communication : compute).add(r.error);
  }
  if (all.n == 0) return;
  std::printf("%d throughput cases: mean |error| %.2f%%, signed mean %+.2f%%; %d communication-bound %+.1f%%, %d compute-bound %+.1f%%\n",
              all.n, 100 * all.abs_sum / all.n, all.mean(), communication.n, communication.mean(), compute.n, compute.mean());
}

}  // namespace

int main(int argc, char** argv) {
  // --check: only the table, and exit 1 when a case is outside its bound (ctest -L validation)
  // or validation/residuals.csv no longer holds today's errors. --residuals FILE: write them.
  const bool check = argc > 1 && std::string(argv[1]) == "--check";
  const std::string residuals_out = argc > 2 && std::string(argv[1]) == "--residuals" ? argv[2] : "";
  const std::vector<Case> cases{
      {"D1", "scenarios/llama3.1-8b_8xh100.yaml", "tokens/s", 5762, "torchtitan docs/performance.md (2024-12)", 0.09},
      {"D1", "scenarios/llama3.1-8b_8xh100.yaml", "GiB reserved", 82.4, "same run, max reserved", 0.06},
      {"D2", "validation/published/d2_llama2-7b_128xa100.yaml", "tokens/s", 3700, "IBM/Meta FSDP blog (2024)", 0.07},
      {"D3", "validation/published/d3_llama2-13b_h100.yaml", "tokens/s", 3800, "IBM/Meta FSDP blog (2024)", 0.21},
      {"D4", "validation/published/d4_gpt3-175b_128xa100.yaml", "TFLOPS", 173, "FSDP paper, VLDB 2023, section 5", 0.15},
      {"V1", "validation/published/tt_llama2-13b_64xa100.yaml", "tokens/s", 2162, "torchtitan, A100 table (held out)", 0.05},
      {"V2", "validation/published/tt_llama3-70b_64xa100.yaml", "tokens/s", 331, "torchtitan, A100 table (held out)", 0.03},
      {"V3", "validation/published/fms_llama2-13b_128xa100.yaml", "tokens/s", 1700, "fms-fsdp README, 13b HSDP (held out)", 0.06},
      {"V4", "validation/published/fms_llama2-34b_128xa100.yaml", "tokens/s", 772, "fms-fsdp README, 34b (held out)", 0.09},
      {"V5", "validation/published/fms_llama2-70b_128xa100.yaml", "tokens/s", 380, "fms-fsdp README, 70b (held out)", 0.08},
      // FSDP x TP (shared/reference/published-runs-2.md), compiled runs. Since DTensor's layout
      // copies around the sequence-parallel collectives (parallelism.tp_activation_layout: bsh) the
      // vanilla-TP rows of P1 and P3 (full checkpointing, 500 W H100s, the D1 hosts, which D1
      // under-predicts too) are 6-11 % low, where the async-TP rows, which have no such copies, are
      // 3-4 % low: their bounds widened to match (docs/fidelity.md).
      {"P1", "validation/published/p1_llama3-70b_256xh100_tp8.yaml", "tokens/s", 597.3,
       "torchtitan asyncTP benchmark, vanilla TP, compiled", 0.13},
      {"P2", "validation/published/p2_llama3-8b_64xh100_tp8.yaml", "tokens/s", 4378, "torchtitan asyncTP benchmark, vanilla TP, compiled",
       0.04},
      {"P3", "validation/published/p3_llama3.1-405b_128xh100_tp8.yaml", "tokens/s", 109,
       "torchtitan docs/performance.md (2024-08), compiled", 0.08},
      // torch.compile (published-runs-2.md F3): eager and compiled runs of one job.
      {"F3", "validation/published/f3_llama3-8b_32xh100_p5_eager.yaml", "tokens/s", 6475, "AWS ML blog, torchtitan on p5, eager", 0.06},
      {"F3", "validation/published/f3_llama3-8b_32xh100_p5_compile.yaml", "tokens/s", 7166, "same, + torch.compile", 0.11},
      // Float8 training (published-runs-2.md F1-F3, P1-P3 Float8 rows; torchao recipes). Rowwise's
      // column-wise casts at their measured rate (gpu.efficiency.memory_column_cast) brought P1 / P2
      // rowwise from +19.5 / +31.6 % to +9.8 / +14.1 %, and F1 / F2 rowwise (no TP) from +0.8 / -2.8
      // to -9.1 / -12.4 %: the two H100 runs of Llama 3 8B that disagree with the kernel measurement,
      // torchao's own rowwise table and the same job on B200 (docs/float8.md); their bounds say so.
      {"F1", "validation/published/f1_llama3-8b_8xh100_bf16.yaml", "tokens/s", 6150, "torchao float8 README (2025-03), bf16", 0.06},
      {"F1", "validation/published/f1_llama3-8b_8xh100_float8_tensorwise.yaml", "tokens/s", 7689.5, "same, tensorwise + float8 all-gather",
       0.05},
      {"F1", "validation/published/f1_llama3-8b_8xh100_float8_rowwise.yaml", "tokens/s", 6768, "same, rowwise + bf16 all-gather", 0.11},
      // Their memory: parse_torchtitan_logs.py's "Max Memory Usage", the largest of torchtitan's
      // logged "memory: ...GiB" (max reserved) over the run.
      {"F1", "validation/published/f1_llama3-8b_8xh100_bf16.yaml", "GiB reserved", 47.65, "same, bf16, peak reserved", 0.04},
      {"F1", "validation/published/f1_llama3-8b_8xh100_float8_tensorwise.yaml", "GiB reserved", 47.77, "same, tensorwise, peak reserved",
       0.04},
      {"F1", "validation/published/f1_llama3-8b_8xh100_float8_rowwise.yaml", "GiB reserved", 47.79, "same, rowwise, peak reserved", 0.03},
      {"F2", "validation/published/f1_llama3-8b_8xh100_float8_rowwise.yaml", "tokens/s", 7020, "torchao pretraining tutorial, rowwise",
       0.14},
      {"F2", "validation/published/f2_llama3-8b_8xh100_float8_tensorwise.yaml", "tokens/s", 7640, "same, tensorwise, bf16 all-gather",
       0.08},
      {"F3", "validation/published/f3_llama3-8b_32xh100_p5_float8.yaml", "tokens/s", 8624, "AWS ML blog, + Float8 linears", 0.11},
      {"F3", "validation/published/f3_llama3-8b_32xh100_p5_float8_allgather.yaml", "tokens/s", 8950, "same, + float8 all-gather", 0.11},
      {"P1", "validation/published/p1_llama3-70b_256xh100_tp8_float8_tensorwise.yaml", "tokens/s", 809.8,
       "torchtitan asyncTP benchmark, Float8 tensorwise", 0.05},
      {"P1", "validation/published/p1_llama3-70b_256xh100_tp8_float8_rowwise.yaml", "tokens/s", 599.6, "same, Float8 rowwise", 0.05},
      {"P2", "validation/published/p2_llama3-8b_64xh100_tp8_float8_tensorwise.yaml", "tokens/s", 5078.1,
       "same, Llama 3 8B, Float8 tensorwise", 0.11},
      {"P2", "validation/published/p2_llama3-8b_64xh100_tp8_float8_rowwise.yaml", "tokens/s", 3708.5, "same, Float8 rowwise", 0.08},
      {"P3", "validation/published/p3_llama3.1-405b_128xh100_tp8_float8.yaml", "tokens/s", 177,
       "torchtitan docs/performance.md (2024-08), Float8", 0.12},
      // Async TP (parallelism.tp_async) rows of the same jobs.
      // clang-format off
      {"P1", "validation/published/p1_llama3-70b_256xh100_tp8.yaml", "tokens/s", 652.4, "torchtitan asyncTP benchmark, async TP", 0.08, {kAsync}},
      {"P1", "validation/published/p1_llama3-70b_256xh100_tp8_float8_tensorwise.yaml", "tokens/s", 942.4, "same, Float8 tensorwise + async TP", 0.09, {kAsync}},
      {"P1", "validation/published/p1_llama3-70b_256xh100_tp8_float8_rowwise.yaml", "tokens/s", 624.8, "same, Float8 rowwise + async TP", 0.05, {kAsync}},
      {"P2", "validation/published/p2_llama3-8b_64xh100_tp8.yaml", "tokens/s", 4809.4, "same, Llama 3 8B, async TP", 0.07, {kAsync}},
      {"P2", "validation/published/p2_llama3-8b_64xh100_tp8_float8_tensorwise.yaml", "tokens/s", 5570.1, "same, Float8 tensorwise + async TP", 0.11, {kAsync}},
      {"P2", "validation/published/p2_llama3-8b_64xh100_tp8_float8_rowwise.yaml", "tokens/s", 3914.9, "same, Float8 rowwise + async TP", 0.05, {kAsync}},
      {"P3", "validation/published/p3_llama3.1-405b_128xh100_tp8_float8.yaml", "tokens/s", 185, "torchtitan docs/performance.md, Float8 + async TP", 0.07, {kAsync}},
      // TP x PP x FSDP (micro-batches not published: torchtitan's default then, the pipeline degree).
      {"P4", kP4, "tokens/s", 76, "torchtitan 405B benchmark (2024-12), TP 8 x PP 8", 0.06},
      {"P4", kP4, "GiB reserved", 75.3, "same run, peak memory, the most of any GPU (the table's footnote 1)", 0.15},
      // Its FSDP x CP rows (the same job, the sequence grown with CP).
      {"P4", kP4, "tokens/s", 47, "same, FSDP 4 x CP 2, 64K", 0.17, {kCp2, kSeq64k}},
      {"P4", kP4, "tokens/s", 31, "same, FSDP 2 x CP 4, 128K", 0.14, {kCp4, kSeq128k}},
      {"P4", kP4, "tokens/s", 16, "same, FSDP 1 x CP 8, 256K", 0.26, {kCp8, kSeq256k}},
      {"P4", kP4, "GiB reserved", 75.9, "same, CP 2, peak memory", 0.16, {kCp2, kSeq64k}},
      {"P4", kP4, "GiB reserved", 77.1, "same, CP 4, peak memory", 0.17, {kCp4, kSeq128k}},
      {"P4", kP4, "GiB reserved", 84.9, "same, CP 8, peak memory", 0.25, {kCp8, kSeq256k}},  // -23.4 %: with expandable segments the four rows hold about the same 65 GiB (32K tokens a rank each)
      // FSDP2 x CP on one host (the first row; the others at cp = 2, 4, 8 with the sequence grown alike).
      {"P5", "validation/published/p5_llama3.1-8b_8xh100_cp.yaml", "tokens/s", 3890, "torchtitan 8B benchmark (2024-12), FSDP 8, 32K", 0.09},
      {"P5", "validation/published/p5_llama3.1-8b_8xh100_cp.yaml", "tokens/s", 2540, "same, FSDP 4 x CP 2, 64K", 0.06, {kCp2, kSeq64k}},
      {"P5", "validation/published/p5_llama3.1-8b_8xh100_cp.yaml", "tokens/s", 1071, "same, FSDP 2 x CP 4, 128K", 0.31, {kCp4, kSeq128k}},
      {"P5", "validation/published/p5_llama3.1-8b_8xh100_cp.yaml", "tokens/s", 548, "same, FSDP 1 x CP 8, 256K", 0.37, {kCp8, kSeq256k}},
      {"P5", "validation/published/p5_llama3.1-8b_8xh100_cp.yaml", "GiB reserved", 83.9, "same, FSDP 8, 32K, peak memory", 0.04},
      {"P5", "validation/published/p5_llama3.1-8b_8xh100_cp.yaml", "GiB reserved", 84.5, "same, FSDP 1 x CP 8, 256K, peak memory", 0.05, {kCp8, kSeq256k}},
      // FSDP2 x TP on nodes of 4 H200 (KempnerForge; InfiniBand bandwidth assumed).
      // KempnerForge's runs as they ran: cuDNN's attention, which SDPA picked there (its H200 profile,
      // benchmarks/profiling/13b_24gpu_profiling.md), and a gather per column-parallel linear (its
      // distributed/tensor_parallel.py: parallelism.tp_input_gather: linear).
      {"P8", "validation/published/p8_llama3-8b_tp2_4xh200.yaml", "tokens/s", 6495, "KempnerForge mfu_scaling (2026-04), 8B TP 2 x FSDP 2", 0.04},
      {"P8", "validation/published/p8_llama3-8b_tp4_8xh200.yaml", "tokens/s", 5537, "same, 8B TP 4 x FSDP 2", 0.08},
      {"P8", "validation/published/p8_llama3-8b_tp4_32xh200.yaml", "tokens/s", 4872, "same, 8B TP 4 x FSDP 8", 0.15},
      {"P8", "validation/published/p8_llama3-13b_tp4_32xh200.yaml", "tokens/s", 3260, "same, 13B TP 4 x FSDP 8", 0.06},
      {"P8", "validation/published/p8_llama3-70b_tp4_32xh200.yaml", "tokens/s", 552, "same, 70B TP 4 x FSDP 8", 0.33},
      // Their peak allocated memory (the log's mem=, max_memory_allocated in GiB).
      {"P8", "validation/published/p8_llama3-8b_tp2_4xh200.yaml", "GiB allocated", 45.9, "same, 8B TP 2 x FSDP 2, peak allocated", 0.03},
      {"P8", "validation/published/p8_llama3-8b_tp4_8xh200.yaml", "GiB allocated", 32.7, "same, 8B TP 4 x FSDP 2, peak allocated", 0.03},
      {"P8", "validation/published/p8_llama3-8b_tp4_32xh200.yaml", "GiB allocated", 27.6, "same, 8B TP 4 x FSDP 8, peak allocated", 0.03},
      {"P8", "validation/published/p8_llama3-13b_tp4_32xh200.yaml", "GiB allocated", 36.3, "same, 13B TP 4 x FSDP 8, peak allocated", 0.03},
      {"P8", "validation/published/p8_llama3-70b_tp4_32xh200.yaml", "GiB allocated", 93.2, "same, 70B TP 4 x FSDP 8, peak allocated", 0.03},
      // Megatron-LM TP x PP x DP on Selene (published-runs-2.md P6; SC'21 table 1, run_table_1.sh),
      // published in TFLOPS by the paper's count with V = 51,200: as tokens/s per GPU.
      {"P6", "validation/published/p6_gpt-1.7b_32xa100.yaml", "tokens/s", megatron_tokens_per_s(137, 24, 2304, 2048, 51200), "Megatron-LM SC'21 table 1, GPT 1.7B, DP 32", 0.13},
      {"P6", "validation/published/p6_gpt-7.5b_128xa100.yaml", "tokens/s", megatron_tokens_per_s(142, 36, 4096, 2048, 51200), "same, 7.5B, TP 4 x DP 32", 0.08},
      {"P6", "validation/published/p6_gpt-39b_512xa100.yaml", "tokens/s", megatron_tokens_per_s(138, 48, 8192, 2048, 51200), "same, 39B, TP 8 x PP 2 x DP 32", 0.05},
      {"P6", "validation/published/p6_gpt-145b_1536xa100.yaml", "tokens/s", megatron_tokens_per_s(148, 80, 12288, 2048, 51200), "same, 145B, TP 8 x PP 8 x DP 24, interleaved", 0.09},
      {"P6", "validation/published/p6_gpt-530b_2520xa100.yaml", "tokens/s", megatron_tokens_per_s(163, 105, 20480, 2048, 51200), "same, 530B, TP 8 x PP 35 x DP 9, interleaved", 0.10},
      // Megatron-Core on DGX H100 (published-runs-2.md P7; Megatron-LM README 2024-07), in TFLOPS by
      // Megatron-Core's count: as tokens/s per GPU. The PP rows stay out (their interleaving is not
      // published): docs/fidelity.md.
      {"P7", "validation/published/p7_gpt-1.7b_48xh100.yaml", "tokens/s", megatron_core_tokens_per_s(408.8, 24, 2048, 4096, 131072), "Megatron-Core README (2024-07), GPT 1.7B, DP 48", 0.23},
      {"P7", "validation/published/p7_gpt-16b_192xh100.yaml", "tokens/s", megatron_core_tokens_per_s(489.1, 32, 6144, 4096, 131072), "same, 16B, TP 4 x DP 48, TE's TP overlap", 0.05},  // 0.03 until Megatron's fp32 gradient buffer was priced (-2.3 -> -3.6 %)
      // F1's bf16 job on 8 MI300X (mi300x_8x_ib400: matmul from a measured MAMF, attention from a measured FlashAttention-2 (CK), the other kernels assumed).
      {"F1", "validation/published/f1_llama3-8b_8xh100_bf16.yaml", "tokens/s", 5376.5, "torchao float8 README (2025-08), 8 x MI300X bf16", 0.26, {kMi300x}},
      // Held out (never used to set a default): torchtitan's 2024-12 benchmark tables 1, 3 and 4
      // (the D1 job compiled and in Float8, on 8 and 128 GPUs; 70B FSDP x TP in Float8) and Trainy's
      // 2025-06 H200 runs (torchtitan benchmarks/).
      {"V6", "validation/published/v6_llama3.1-8b_8xh100_compile.yaml", "tokens/s", 6667, "torchtitan 2024-12 table 1, D1 + torch.compile (held out)", 0.08},
      {"V6", "validation/published/v6_llama3.1-8b_8xh100_compile.yaml", "GiB reserved", 77.0, "same run, max reserved", 0.05},
      {"V6", "validation/published/v6_llama3.1-8b_8xh100_compile_float8.yaml", "tokens/s", 8532, "same, + Float8 (held out)", 0.09},
      {"V6", "validation/published/v6_llama3.1-8b_8xh100_compile_float8.yaml", "GiB reserved", 76.8, "same run, max reserved", 0.05},
      {"V7", "scenarios/llama3.1-8b_8xh100.yaml", "tokens/s", 5605, "torchtitan 2024-12 table 3, D1 on 128 GPUs (held out)", 0.07, {k16Hosts}},
      {"V7", "scenarios/llama3.1-8b_8xh100.yaml", "GiB reserved", 67.0, "same run, max reserved", 0.05, {k16Hosts}},
      {"V7", "validation/published/v6_llama3.1-8b_8xh100_compile.yaml", "tokens/s", 6514, "same, + torch.compile (held out)", 0.06, {k16Hosts}},
      {"V7", "validation/published/v6_llama3.1-8b_8xh100_compile.yaml", "GiB reserved", 62.0, "same run, max reserved", 0.05, {k16Hosts}},
      {"V7", "validation/published/v6_llama3.1-8b_8xh100_compile_float8.yaml", "tokens/s", 8380, "same, + Float8 (held out)", 0.07, {k16Hosts}},
      {"V7", "validation/published/v6_llama3.1-8b_8xh100_compile_float8.yaml", "GiB reserved", 61.8, "same run, max reserved", 0.05, {k16Hosts}},
      {"V8", "validation/published/v8_llama3.1-70b_256xh100_tp8_float8.yaml", "tokens/s", 829, "torchtitan 2024-12 table 4, 70B FSDP 32 x TP 8, Float8 (held out)", 0.08},
      {"V8", "validation/published/v8_llama3.1-70b_256xh100_tp8_float8.yaml", "GiB reserved", 71.9, "same run, max reserved", 0.11},
      {"V8", "validation/published/v8_llama3.1-70b_256xh100_tp8_float8.yaml", "tokens/s", 876, "same, + async TP (held out)", 0.08, {kAsync}},
      {"V8", "validation/published/v8_llama3.1-70b_256xh100_tp8_float8.yaml", "GiB reserved", 67.6, "same run, max reserved", 0.05, {kAsync}},
      {"V9", "validation/published/v9_llama3.1-8b_32xh200_float8.yaml", "tokens/s", 10938, "Trainy torchtitan 2025-06, 8B Float8 on 32 H200 (held out)", 0.04},
      {"V9", "validation/published/v9_llama3.1-8b_32xh200_float8.yaml", "GiB reserved", 47.96, "same run, memory at step 100", 0.05},
      {"V9", "validation/published/v9_llama3.1-8b_32xh200_float8.yaml", "tokens/s", 10753, "same on 64 H200 (held out)", 0.05, {k8Hosts}},
      {"V9", "validation/published/v9_llama3.1-8b_32xh200_float8.yaml", "GiB reserved", 46.97, "same run, memory at step 100", 0.05, {k8Hosts}},
      // KempnerForge's mfu_scaling rows that P8 leaves out (held out): FSDP alone in one node, TP
      // alone, 13B FSDP 8 across two nodes (eager), and the 8 / 16 GPU TP 4 x FSDP rows.
      {"V10", "validation/published/v10_llama3-8b_fsdp4_4xh200.yaml", "tokens/s", 9364, "KempnerForge mfu_scaling row 2, 8B FSDP 2 (held out)", 0.12, {k2Gpus, k2Nics, kPairLink, kBatch2, kAccum4}},
      {"V10", "validation/published/v10_llama3-8b_fsdp4_4xh200.yaml", "GiB allocated", 62.4, "same run, peak allocated", 0.03, {k2Gpus, k2Nics, kPairLink, kBatch2, kAccum4}},
      {"V10", "validation/published/v10_llama3-8b_fsdp4_4xh200.yaml", "tokens/s", 9745.75, "same, row 4, 8B FSDP 4 (held out)", 0.12},
      {"V10", "validation/published/v10_llama3-8b_fsdp4_4xh200.yaml", "GiB allocated", 61.1, "same run, peak allocated", 0.03},
      {"V10", "validation/published/p8_llama3-8b_tp2_4xh200.yaml", "tokens/s", 6581.5, "same, row 3, 8B TP 2 on 2 GPUs (held out)", 0.03, {k2Gpus, k2Nics, kPairLink}},
      {"V10", "validation/published/p8_llama3-8b_tp2_4xh200.yaml", "GiB allocated", 57.8, "same run, peak allocated", 0.03, {k2Gpus, k2Nics, kPairLink}},
      {"V10", "validation/published/p8_llama3-8b_tp2_4xh200.yaml", "tokens/s", 6283.75, "same, row 5, 8B TP 4 (held out)", 0.06, {kTp4}},
      {"V10", "validation/published/p8_llama3-8b_tp2_4xh200.yaml", "GiB allocated", 39.4, "same run, peak allocated", 0.03, {kTp4}},
      {"V10", "validation/published/v10_llama3-13b_fsdp8_8xh200.yaml", "tokens/s", 4425.625, "same, row 8, 13B FSDP 8, 2 nodes, eager (held out)", 0.08},
      {"V10", "validation/published/v10_llama3-13b_fsdp8_8xh200.yaml", "GiB allocated", 88.5, "same run, peak allocated", 0.03},
      {"V10", "validation/published/p8_llama3-13b_tp4_32xh200.yaml", "tokens/s", 3418.125, "same, row 9, 13B TP 4 x FSDP 2 (held out)", 0.08, {k2Hosts}},
      {"V10", "validation/published/p8_llama3-13b_tp4_32xh200.yaml", "GiB allocated", 45.1, "same run, peak allocated", 0.03, {k2Hosts}},
      {"V10", "validation/published/p8_llama3-8b_tp4_32xh200.yaml", "tokens/s", 5186.75, "same, row 10, 8B TP 4 x FSDP 4 (held out)", 0.12, {k4Hosts}},
      {"V10", "validation/published/p8_llama3-8b_tp4_32xh200.yaml", "GiB allocated", 29.4, "same run, peak allocated", 0.03, {k4Hosts}},
      {"V10", "validation/published/p8_llama3-13b_tp4_32xh200.yaml", "tokens/s", 3363.375, "same, row 11, 13B TP 4 x FSDP 4 (held out)", 0.08, {k4Hosts}},
      {"V10", "validation/published/p8_llama3-13b_tp4_32xh200.yaml", "GiB allocated", 39.2, "same run, peak allocated", 0.03, {k4Hosts}},
      // KempnerForge's config-validation report (benchmarks/config_validation, 2026-04-06, the
      // configs of 5d3e723, torch 2.11.0+cu128 in its uv.lock; last 5 of 10 steps), held out: 8B
      // FSDP 4 in one node at local batch 8 x 4 (7b.toml), 8B FSDP 32 on 8 nodes (7b_32gpu_fsdp.toml),
      // 8B TP 4 x FSDP 3 (7b_12gpu_tp4.toml); its tok/s over the world, mem= as peak allocated GiB.
      // Its 70B TP 4 x FSDP 8 row is P8's job (555 against P8's 552) and its pipeline rows use
      // KempnerForge's own pipeline stage (TP without sequence parallelism, eager): not here.
      {"V15", "validation/published/v10_llama3-8b_fsdp4_4xh200.yaml", "tokens/s", 38858.0 / 4, "KempnerForge config validation (2026-04), 8B FSDP 4, batch 8 x 4 (held out)", 0.09, {kBatch8, kAccum4}},
      {"V15", "validation/published/v10_llama3-8b_fsdp4_4xh200.yaml", "GiB allocated", 81.0, "same run, peak allocated", 0.03, {kBatch8, kAccum4}},
      {"V15", "validation/published/v10_llama3-8b_fsdp4_4xh200.yaml", "tokens/s", 297384.0 / 32, "same, 8B FSDP 32 on 8 nodes, batch 4 x 4 (held out)", 0.09, {k8Hosts, kAccum4}},
      {"V15", "validation/published/v10_llama3-8b_fsdp4_4xh200.yaml", "GiB allocated", 51.3, "same run, peak allocated", 0.03, {k8Hosts, kAccum4}},
      {"V15", "validation/published/p8_llama3-8b_tp4_32xh200.yaml", "tokens/s", 67045.0 / 12, "same, 8B TP 4 x FSDP 3 on 3 nodes, batch 4 x 8 (held out)", 0.09, {k3Hosts, kAccum8}},
      {"V15", "validation/published/p8_llama3-8b_tp4_32xh200.yaml", "GiB allocated", 30.4, "same run, peak allocated", 0.03, {k3Hosts, kAccum8}},
      // The same report's pipeline runs (held out): KempnerForge's own pipeline stages (TP without
      // sequence parallelism, the output layer whole on every TP rank, FSDP2 resharding after
      // forward, eager, 1F1B over grad_accum_steps micro-batches). Their memory (Mem/GPU, the
      // tracker's max_memory_allocated / 2^30 on the main rank) is rank 0's: the first stage's.
      {"V16", "validation/published/v16_llama3-13b_tp4_pp2_32xh200.yaml", "tokens/s", 52739.0 / 32, "same report, 13B TP 4 x PP 2 x FSDP 4, eager (held out)", 0.22},
      {"V16", "validation/published/v16_llama3-13b_tp4_pp2_32xh200.yaml", "GiB alloc rank 0", 24.0, "same run, the first stage's peak allocated", 0.10},
      {"V16", "validation/published/v16_llama3-29b_tp4_pp2_32xh200.yaml", "tokens/s", 22631.0 / 32, "same, 29B TP 4 x PP 2 x FSDP 4, batch 1 x 8 (held out)", 0.52},
      {"V16", "validation/published/v16_llama3-29b_tp4_pp2_32xh200.yaml", "GiB alloc rank 0", 32.8, "same run, the first stage's peak allocated", 0.04},
      {"V16", "validation/published/v16_llama3-70b_tp4_pp4_32xh200.yaml", "tokens/s", 8212.0 / 32, "same, 70B TP 4 x PP 4 x FSDP 2, batch 1 x 4 (held out)", 0.26},
      {"V16", "validation/published/v16_llama3-70b_tp4_pp4_32xh200.yaml", "GiB alloc rank 0", 51.0, "same run, the first stage's peak allocated", 0.03},
      // KempnerForge's 175B benchmark (benchmarks/175b_360gpu/README.md, 2026-07-03, git 5666d0d),
      // held out: TP 4 x FSDP 90 on 360 H200, local batch 8, no accumulation; the median over the
      // back half of 2,000 steps, 154,523 tokens/s over the world; mem= as peak allocated GiB.
      {"V17", "validation/published/v17_llama3-175b_tp4_360xh200.yaml", "tokens/s", 154523.0 / 360, "KempnerForge 175B (2026-07), TP 4 x FSDP 90 on 360 H200 (held out)", 0.21},
      {"V17", "validation/published/v17_llama3-175b_tp4_360xh200.yaml", "GiB allocated", 53.8, "same run, peak allocated", 0.03},
      // torchtitan#165's FSDP1 / FSDP2 parity runs (Llama 2 7B, 8 H100 96 GB, eager), held out:
      // tokens/s the midpoint of the log's WPS range, reserved and active memory its % of 95.0396 GiB
      // (peak active bytes: the allocated blocks' sizes, compared with the peak allocated).
      {"V11", kV11, "tokens/s", 6700, "torchtitan#165 (2024-03), Llama 2 7B FSDP2, selective AC (held out)", 0.03},
      {"V11", kV11, "GiB reserved", 0.6251 * kV11Gib, "same run, peak reserved", 0.05},
      {"V11", kV11, "GiB allocated", 0.5213 * kV11Gib, "same run, peak active", 0.03},
      {"V11", kV11, "tokens/s", 6200, "same, FSDP2, full AC (held out)", 0.07, {kFullAc}},
      {"V11", kV11, "GiB reserved", 0.3264 * kV11Gib, "same run, peak reserved", 0.05, {kFullAc}},
      {"V11", kV11, "GiB allocated", 0.2392 * kV11Gib, "same run, peak active", 0.03, {kFullAc}},
      {"V11", kV11, "tokens/s", 6600, "same, FSDP1, selective AC (held out)", 0.05, {kFsdp1, kReshardLast}},
      {"V11", kV11, "GiB reserved", 0.6723 * kV11Gib, "same run, peak reserved", 0.14, {kFsdp1, kReshardLast}},
      {"V11", kV11, "GiB allocated", 0.5298 * kV11Gib, "same run, peak active", 0.03, {kFsdp1, kReshardLast}},
      {"V11", kV11, "tokens/s", 6150, "same, FSDP1, full AC (held out)", 0.07, {kFsdp1, kReshardLast, kFullAc}},
      {"V11", kV11, "GiB reserved", 0.3382 * kV11Gib, "same run, peak reserved", 0.10, {kFsdp1, kReshardLast, kFullAc}},
      {"V11", kV11, "GiB allocated", 0.2481 * kV11Gib, "same run, peak active", 0.04, {kFsdp1, kReshardLast, kFullAc}},
      {"V11", kV11, "tokens/s", 8250, "same, FSDP2 compiled, selective AC (held out)", 0.03, {kCompile}},
      {"V11", kV11, "GiB reserved", 0.5664 * kV11Gib, "same run, peak reserved", 0.09, {kCompile}},
      {"V11", kV11, "tokens/s", 7350, "same, FSDP2 compiled, full AC (held out)", 0.05, {kCompile, kFullAc}},
      {"V11", kV11, "GiB reserved", 0.3040 * kV11Gib, "same run, peak reserved", 0.13, {kCompile, kFullAc}},
      // torchtitan's 2024-12 table 5 (held out): P4's job (405B, FSDP 8 x TP 8 x PP 8, 512 H100, the
      // same code) at local batch 32 x 8,192 tokens, 8 micro-batches: 1F1B and interleaved 1F1B
      // (2 stages a rank, torchtitan's default cut of 16 stages: 7, 8 x 14, 7 layers).
      {"V13", kP4, "tokens/s", 100, "torchtitan 2024-12 table 5, 405B 3D, 1F1B (held out)", 0.09, {kSeq8k, kBatch32}},
      {"V13", kP4, "GiB reserved", 82.5, "same run, peak memory", 0.22, {kSeq8k, kBatch32}},
      {"V13", kP4, "tokens/s", 128, "same, interleaved 1F1B (held out)", 0.11, {kSeq8k, kBatch32, kInterleaved, kTwoStages, kSplit16}},
      {"V13", kP4, "GiB reserved", 72.7, "same run, peak memory", 0.20, {kSeq8k, kBatch32, kInterleaved, kTwoStages, kSplit16}},
      // pytorch/torchtitan#1319 (2025-07, commit b0902b29a's message): P1's job (Llama 3 70B, FSDP 32 x
      // TP 8, 256 H100) in rowwise float8 with attention.wk and .wv left in bf16, as the auto filter
      // leaves them: ~660 tokens/s, ~695 with async TP (with them converted ~600 / ~625, P1's rows).
      {"V12", kP1Rowwise, "tokens/s", 660, "torchtitan#1319, P1 rowwise with wk, wv in bf16 (held out)", 0.12, {kAutoFilter}},
      {"V12", kP1Rowwise, "tokens/s", 695, "same, + async TP (held out)", 0.10, {kAutoFilter, kAsync}},
      // pytorch/pytorch#149990 (2025-03-25): P1's job on half the GPUs (Llama 3 70B, FSDP 16 x TP 8,
      // 128 H100, full AC, compiled; local batch not stated, P1's 16 assumed), before torchtitan
      // compiled the loss. Its rowwise row (540) is left out: the issue itself calls that vanilla-TP
      // figure "unexpectedly low", torchtitan#1207's bug, fixed before P1's runs; its memory too
      // (bf16 71.51, tensorwise 55.26 "GB": 16 apart where the model has them equal).
      {"V14", "validation/published/p1_llama3-70b_256xh100_tp8.yaml", "tokens/s", 598, "pytorch#149990, P1 on 128 H100, vanilla TP (held out)", 0.14, {k16Hosts, kEagerLoss}},
      {"V14", "validation/published/p1_llama3-70b_256xh100_tp8.yaml", "tokens/s", 673, "same, async TP (held out)", 0.12, {k16Hosts, kEagerLoss, kAsync}},
      {"V14", "validation/published/p1_llama3-70b_256xh100_tp8_float8_tensorwise.yaml", "tokens/s", 820, "same, Float8 tensorwise (held out)", 0.07, {k16Hosts, kEagerLoss}},
      {"V14", "validation/published/p1_llama3-70b_256xh100_tp8_float8_tensorwise.yaml", "tokens/s", 950, "same, Float8 tensorwise + async TP (held out)", 0.09, {k16Hosts, kEagerLoss, kAsync}},
      // clang-format on
  };
  std::printf("Published runs: predicted vs measured\n");
  std::printf("  %-3s %-14s %10s %10s %8s  %s\n", "run", "metric", "predicted", "measured", "error", "source");
  int outside = 0;
  std::vector<shardsim::report::Residual> residuals;
  for (const auto& c : cases) {
    const Figures f = simulate(c.scenario, c.sets);
    const double predicted = pick(f, c.metric);
    const double error = predicted / c.measured - 1;
    const bool memory = std::string(c.metric).starts_with("GiB");
    residuals.push_back({c.id, c.metric, regime_of(c.scenario, c.sets, f), error});
    const bool within = std::abs(error) <= c.bound;
    outside += within ? 0 : 1;
    std::printf("  %-3s %-14s %10.1f %10.1f %+7.1f%%  %s%s\n", c.id, c.metric, predicted, c.measured, 100 * error, c.source,
                within ? "" : fmt::format("  OUTSIDE its bound of {:.0f}%", 100 * c.bound).c_str());
    if (!check && !memory) std::printf("        %s\n", decomposition(f).c_str());
  }
  // Leave-one-out: each case's 90% range from the others, and whether its measured value is in it;
  // throughput by regime, peak memory by what it measures (reserved or allocated).
  using shardsim::report::Measure;
  for (const Measure measure : {Measure::throughput, Measure::reserved, Measure::allocated}) {
    int inside = 0;
    int n = 0;
    std::string missed;  // the cases outside their range
    for (std::size_t i = 0; i < residuals.size(); ++i) {
      if (shardsim::report::measure_of(residuals[i].metric) != measure) continue;
      ++n;
      auto others = residuals;
      others.erase(others.begin() + static_cast<std::ptrdiff_t>(i));
      const auto band = measure == Measure::throughput
                            ? shardsim::report::error_band(others, residuals[i].regime)
                            : shardsim::report::memory_band(others, measure, residuals[i].regime.pipeline == "pp");
      const double e = residuals[i].error;  // predicted = measured x (1 + e): inside when e within the band's errors
      if (e >= band.error_low && e <= band.error_high) {
        ++inside;
      } else {
        missed += fmt::format("{}{} {:+.1f}%", missed.empty() ? "" : ", ", residuals[i].id, 100 * e);
      }
    }
    const char* what = measure == Measure::throughput ? "measured values"
                       : measure == Measure::reserved ? "reserved memories"
                                                      : "allocated memories";
    std::printf("leave-one-out: %d of %d %s inside the 90%% range the other runs give%s\n", inside, n, what,
                missed.empty() ? "" : fmt::format(" (outside: {})", missed).c_str());
  }
  print_error_summary(residuals);
  const std::string csv = shardsim::report::residuals_csv(residuals);
  if (!residuals_out.empty()) {
    std::ofstream(residuals_out) << csv;
    std::printf("wrote %s\n", residuals_out.c_str());
  }
  if (check) {
    std::printf("%d of %zu cases outside their bounds\n", outside, cases.size());
    const auto stored = shardsim::report::builtin_residuals();
    bool current = stored.size() == residuals.size();
    for (std::size_t i = 0; current && i < stored.size(); ++i) {
      current = stored[i].id == residuals[i].id && std::abs(stored[i].error - residuals[i].error) < 0.005;
    }
    if (!current) {
      std::printf(
          "validation/residuals.csv is stale (the error bands use it): regenerate it with shardsim_published --residuals "
          "validation/residuals.csv\n");
    }
    return outside == 0 && current ? 0 : 1;
  }

  print_qualitative_effects();
  return 0;
}

// make validate's qualitative checks: effects the published sources report as a direction and a
// size (compile over eager, scaling out, float8 and async-TP speed-ups, prefetch, FSDP1 vs FSDP2
// memory, the all-gather rate limiter), each from a pair of simulated runs.
#include <fmt/format.h>

#include <array>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "cli/pipeline.hpp"
#include "engine/float8_microbench.hpp"
#include "published_runs.hpp"

namespace shardsim::published {

void print_qualitative_effects() {
  std::printf("\nQualitative effects (direction and size)\n");
  const Figures eager = simulate("validation/published/f3_llama3-8b_32xh100_p5_eager.yaml", {});
  const Figures compiled = simulate("validation/published/f3_llama3-8b_32xh100_p5_compile.yaml", {});
  std::printf("  torch.compile vs eager, F3 Llama 3 8B on 32 H100 (published: +10.7%%): %+.1f%% tokens/s\n",
              100 * (compiled.tokens_per_s / eager.tokens_per_s - 1));
  // torchtitan's 2024-12 tables 1 and 3: the same jobs on 8 and on 128 GPUs (held-out V6, V7).
  struct Scaling {
    const char* what;
    const char* scenario;
    double published;  // percent, 128 GPUs against 8
  };
  const std::vector<Scaling> scaling{
      {"eager", "scenarios/llama3.1-8b_8xh100.yaml", 100 * (5605.0 / 5762 - 1)},
      {"compiled", "validation/published/v6_llama3.1-8b_8xh100_compile.yaml", 100 * (6514.0 / 6667 - 1)},
      {"Float8", "validation/published/v6_llama3.1-8b_8xh100_compile_float8.yaml", 100 * (8380.0 / 8532 - 1)}};
  std::vector<std::array<Figures, 2>> on_8_and_128;
  for (const auto& sc : scaling) {
    on_8_and_128.push_back({simulate(sc.scenario, {}), simulate(sc.scenario, {k16Hosts})});
    std::printf("  8 -> 128 GPUs, torchtitan Llama 3.1 8B %s (published: %+.1f%%): %+.1f%% tokens/s per GPU\n", sc.what, sc.published,
                100 * (on_8_and_128.back()[1].tokens_per_s / on_8_and_128.back()[0].tokens_per_s - 1));
  }
  // KempnerForge's weak-scaling campaign (benchmarks/weak_scaling_160gpu/README.md, 2026-06-30, git
  // 3ad9d9a): P8's 13B and 70B jobs, TP 4 in the node, FSDP over 8 to 40 nodes of 4 H200, tokens/s
  // over the world at each size (the 160-GPU ones the mean of two runs). Its 32-GPU figures differ
  // from P8's (2026-04) by 6 %; the ratio to 32 GPUs within the campaign is compared.
  struct WeakScaling {
    const char* what;
    const char* scenario;
    std::vector<std::pair<int, double>> gpus_tokens;  // the first is the 32-GPU baseline
  };
  for (const WeakScaling& w : {WeakScaling{"13B",
                                           "validation/published/p8_llama3-13b_tp4_32xh200.yaml",
                                           {{32, 110373.0}, {64, 216507.0}, {128, 423306.0}, {160, 534644.0}}},
                               WeakScaling{"70B",
                                           "validation/published/p8_llama3-70b_tp4_32xh200.yaml",
                                           {{32, 18688.0}, {64, 35824.0}, {96, 52190.0}, {128, 69985.0}, {160, 85571.0}}}}) {
    const auto [base_gpus, base_tokens] = w.gpus_tokens.front();
    const Figures base = simulate(w.scenario, {});
    for (std::size_t i = 1; i < w.gpus_tokens.size(); ++i) {
      const auto [gpus, tokens] = w.gpus_tokens[i];
      const Figures f = simulate(w.scenario, {fmt::format("cluster.nodes={}", gpus / 4)});
      std::printf("  %d -> %d H200, KempnerForge %s TP 4 x FSDP (published: %+.1f%%): %+.1f%% tokens/s per GPU\n", base_gpus, gpus, w.what,
                  100 * (tokens / gpus / (base_tokens / base_gpus) - 1), 100 * (f.tokens_per_s / base.tokens_per_s - 1));
    }
  }
  // The 175B benchmark's job at local batch 1 (benchmarks/175b_360gpu/README.md: "only 8.1% MFU",
  // against 47.7 % at batch 8, V17): a step of 1,024 tokens a GPU that cannot hide FSDP's traffic.
  {
    const char* v17 = "validation/published/v17_llama3-175b_tp4_360xh200.yaml";
    const Figures batch1 = simulate(v17, {"training.micro_batch=1"});
    const Figures batch8 = simulate(v17, {});
    std::printf("  MFU at local batch 1 over batch 8, KempnerForge 175B on 360 H200 (published: 8.1 / 47.7%%): %.1f / %.1f%%\n",
                100 * batch1.mfu, 100 * batch8.mfu);
  }
  const std::array<double, 2> published_compile{100 * (6667.0 / 5762 - 1), 100 * (6514.0 / 5605 - 1)};
  for (std::size_t i = 0; i < 2; ++i) {
    std::printf("  torch.compile vs eager, torchtitan Llama 3.1 8B on %d GPUs (published: %+.1f%%): %+.1f%% tokens/s\n", i == 0 ? 8 : 128,
                published_compile[i], 100 * (on_8_and_128[1][i].tokens_per_s / on_8_and_128[0][i].tokens_per_s - 1));
  }
  // torchtitan#165's FSDP2 runs, eager and compiled (the midpoints of its WPS ranges).
  for (const bool full : {false, true}) {
    std::vector<std::string> eager_sets;
    if (full) eager_sets.emplace_back(kFullAc);
    std::vector<std::string> compiled_sets = eager_sets;
    compiled_sets.emplace_back(kCompile);
    const double published = full ? 100 * (7350.0 / 6200 - 1) : 100 * (8250.0 / 6700 - 1);
    std::printf("  torch.compile vs eager, torchtitan#165 Llama 2 7B FSDP2, %s AC (published: %+.1f%%): %+.1f%% tokens/s\n",
                full ? "full" : "selective", published,
                100 * (simulate(kV11, compiled_sets).tokens_per_s / simulate(kV11, eager_sets).tokens_per_s - 1));
  }
  // Float8 over bf16 (or the float8 all-gather over float8 linears), each pair one job; `both`
  // applies to both runs of the pair, `with_only` to the float8 one.
  struct Speedup {
    const char* what;
    const char* base;
    const char* with;
    double published;  // percent
    std::vector<std::string> both;
    std::vector<std::string> with_only;
  };
  const std::vector<std::string> b200{"cluster.topology=b200_8x_ib400"};
  const std::vector<Speedup> speedups{
      {"F1 tensorwise + float8 all-gather", "f1_llama3-8b_8xh100_bf16.yaml", "f1_llama3-8b_8xh100_float8_tensorwise.yaml", 25.03, {}, {}},
      {"F1 rowwise", "f1_llama3-8b_8xh100_bf16.yaml", "f1_llama3-8b_8xh100_float8_rowwise.yaml", 10.05, {}, {}},
      {"F3 Float8 linears over compile", "f3_llama3-8b_32xh100_p5_compile.yaml", "f3_llama3-8b_32xh100_p5_float8.yaml", 20.3, {}, {}},
      {"F3 float8 all-gather over that",
       "f3_llama3-8b_32xh100_p5_float8.yaml",
       "f3_llama3-8b_32xh100_p5_float8_allgather.yaml",
       3.8,
       {},
       {}},
      {"P1 tensorwise (70B, TP 8)", "p1_llama3-70b_256xh100_tp8.yaml", "p1_llama3-70b_256xh100_tp8_float8_tensorwise.yaml", 35.6, {}, {}},
      {"P2 tensorwise (8B, TP 8)", "p2_llama3-8b_64xh100_tp8.yaml", "p2_llama3-8b_64xh100_tp8_float8_tensorwise.yaml", 16.0, {}, {}},
      {"P3 tensorwise (405B, TP 8)", "p3_llama3.1-405b_128xh100_tp8.yaml", "p3_llama3.1-405b_128xh100_tp8_float8.yaml", 62.4, {}, {}},
      // V14 (held out, pytorch/pytorch#149990): P1's job on 128 GPUs, the loss not compiled;
      // 598 -> 820 tokens/s vanilla TP.
      {"V14 tensorwise (70B on 128 H100)",
       "p1_llama3-70b_256xh100_tp8.yaml",
       "p1_llama3-70b_256xh100_tp8_float8_tensorwise.yaml",
       100 * (820.0 / 598 - 1),
       {k16Hosts, kEagerLoss},
       {}},
      // F1 on 8 power-limited B200 (b200_8x_ib400: assumed efficiencies, absolute figures not comparable).
      {"F1 B200 tensorwise + float8 all-gather",
       "f1_llama3-8b_8xh100_bf16.yaml",
       "f1_llama3-8b_8xh100_float8_tensorwise.yaml",
       25.4,
       b200,
       {}},
      {"F1 B200 MXFP8",
       "f1_llama3-8b_8xh100_bf16.yaml",
       "f1_llama3-8b_8xh100_float8_rowwise.yaml",
       20.0,
       b200,
       {"training.float8.recipe=mxfp8"}},
      {"F1 B200 rowwise", "f1_llama3-8b_8xh100_bf16.yaml", "f1_llama3-8b_8xh100_float8_rowwise.yaml", 4.0, b200, {}},
      // F1 on 8 MI300X (fp8 GEMMs at the bf16 fraction of their peak: assumed).
      {"F1 MI300X tensorwise + float8 all-gather",
       "f1_llama3-8b_8xh100_bf16.yaml",
       "f1_llama3-8b_8xh100_float8_tensorwise.yaml",
       14.7,
       {kMi300x},
       {}},
      {"F1 MI300X rowwise", "f1_llama3-8b_8xh100_bf16.yaml", "f1_llama3-8b_8xh100_float8_rowwise.yaml", 9.6, {kMi300x}, {}},
      // pytorch/torchtitan#1207 (2025-05, torch 2.8.0a0): Llama 3 8B on 4 H100, FSDP 2 x TP 2, per-op
      // selective checkpointing: bf16 5,378 tokens/s, rowwise 5,189. The rest as F1 (compiled, one
      // sequence of 8,192 tokens, Meta's 96 GB H100): assumed; the model's compiled bf16 run is
      // within 4.4 % of the published one, its eager one 16.7 % below.
      {"torchtitan#1207 rowwise, FSDP 2 x TP 2 on 4 H100",
       "f1_llama3-8b_8xh100_bf16.yaml",
       "f1_llama3-8b_8xh100_float8_rowwise.yaml",
       100 * (5189.0 / 5378 - 1),
       {"cluster.overrides.node.gpus=4", "parallelism.tp=2"},
       {}},
  };
  // Each pair: the base run with `both`, the other with `both` and `with_only`.
  const auto print_speedups = [](const char* kind, const std::vector<Speedup>& list) {
    for (const auto& sp : list) {
      const std::string dir = "validation/published/";
      auto with_sets = sp.both;
      with_sets.insert(with_sets.end(), sp.with_only.begin(), sp.with_only.end());
      const Figures a = simulate(dir + sp.base, sp.both);
      const Figures b = simulate(dir + sp.with, with_sets);
      std::printf("  %s speed-up, %s (published: %+.1f%%): %+.1f%% tokens/s\n", kind, sp.what, sp.published,
                  100 * (b.tokens_per_s / a.tokens_per_s - 1));
    }
  };
  print_speedups("float8", speedups);
  // Async TP over vanilla TP, each pair one job (published-runs-2.md P1-P3).
  const std::vector<Speedup> async_tp{
      {"P1 bf16 (70B, TP 8)", "p1_llama3-70b_256xh100_tp8.yaml", "p1_llama3-70b_256xh100_tp8.yaml", 9.2, {}, {kAsync}},
      {"P1 Float8 tensorwise",
       "p1_llama3-70b_256xh100_tp8_float8_tensorwise.yaml",
       "p1_llama3-70b_256xh100_tp8_float8_tensorwise.yaml",
       16.4,
       {},
       {kAsync}},
      {"P2 bf16 (8B, TP 8)", "p2_llama3-8b_64xh100_tp8.yaml", "p2_llama3-8b_64xh100_tp8.yaml", 9.9, {}, {kAsync}},
      {"P2 Float8 tensorwise",
       "p2_llama3-8b_64xh100_tp8_float8_tensorwise.yaml",
       "p2_llama3-8b_64xh100_tp8_float8_tensorwise.yaml",
       9.7,
       {},
       {kAsync}},
      {"P3 Float8 (405B, TP 8)",
       "p3_llama3.1-405b_128xh100_tp8_float8.yaml",
       "p3_llama3.1-405b_128xh100_tp8_float8.yaml",
       4.5,
       {},
       {kAsync}},
      // V14 (held out, pytorch/pytorch#149990): 598 -> 673 bf16, 820 -> 950 tensorwise.
      {"V14 bf16 (70B on 128 H100)",
       "p1_llama3-70b_256xh100_tp8.yaml",
       "p1_llama3-70b_256xh100_tp8.yaml",
       100 * (673.0 / 598 - 1),
       {k16Hosts, kEagerLoss},
       {kAsync}},
      {"V14 Float8 tensorwise",
       "p1_llama3-70b_256xh100_tp8_float8_tensorwise.yaml",
       "p1_llama3-70b_256xh100_tp8_float8_tensorwise.yaml",
       100 * (950.0 / 820 - 1),
       {k16Hosts, kEagerLoss},
       {kAsync}},
  };
  print_speedups("async TP", async_tp);
  // pytorch/torchtitan#881 (2025-02, making fused AdamW the default): Llama 3 8B, +2.24 % with
  // FSDP eager, +1.63 % compiled (setup not given beyond that; F1's 8-GPU FSDP job at batch 1).
  const std::vector<Speedup> fused_adamw{
      {"torchtitan#881 Llama 3 8B FSDP eager",
       "f1_llama3-8b_8xh100_bf16.yaml",
       "f1_llama3-8b_8xh100_bf16.yaml",
       2.24,
       {"training.compile=false", "training.optimizer_impl=foreach"},
       {"training.optimizer_impl=fused"}},
      {"torchtitan#881 Llama 3 8B FSDP compiled",
       "f1_llama3-8b_8xh100_bf16.yaml",
       "f1_llama3-8b_8xh100_bf16.yaml",
       1.63,
       {"training.optimizer_impl=foreach"},
       {"training.optimizer_impl=fused"}},
  };
  print_speedups("fused AdamW", fused_adamw);
  // pytorch/torchtitan#1319: P1's rowwise job with attention.wk and .wv left in bf16 (the auto
  // filter's choice) against converted: ~660 / ~600 tokens/s, async TP ~695 / ~625.
  for (const bool async : {false, true}) {
    std::vector<std::string> converted;
    if (async) converted.emplace_back(kAsync);
    std::vector<std::string> filtered = converted;
    filtered.emplace_back(kAutoFilter);
    std::printf("  float8 rowwise, wk and wv kept in bf16 over converted, P1%s (torchtitan#1319: %+.1f%%): %+.1f%% tokens/s\n",
                async ? " + async TP" : "", async ? 100 * (695.0 / 625 - 1) : 100 * (660.0 / 600 - 1),
                100 * (simulate(kP1Rowwise, filtered).tokens_per_s / simulate(kP1Rowwise, converted).tokens_per_s - 1));
  }
  // torchao's rowwise table (pytorch/ao#2312, H100, 2025-06; tests/data): the casts and GEMMs of
  // one float8 linear against the measured speed-ups, on the DGX H100 topology (h100_sxm_8x_ib400,
  // through the tests' tiny Llama scenario: tests/unit/cli/float8_test.cpp checks the same figures).
  {
    const std::string source = SHARDSIM_SOURCE_DIR;
    const auto topology = cli::prepare(source + "/tests/data/tiny_llama.yaml", {}).scenario.cluster.topology;
    const auto table = engine::read_speedup_table(source + "/tests/data/torchao_rowwise_speedups.txt");
    const engine::SpeedupFit fit = engine::fit_speedups(engine::RooflineModel(topology, true), table, model::Float8Recipe::rowwise, 4096);
    std::printf(
        "  float8 rowwise LayerNorm -> Linear -> Sigmoid, %d shapes with M, K, N >= 4,096 (torchao's table): speed-ups %+.1f%% "
        "above it on average, worst %+.1f%%\n",
        fit.cells, 100 * fit.mean, 100 * fit.worst);
  }
  // torchtitan's 2024-12 table 5: interleaved 1F1B over 1F1B on P4's 3D job (128 / 100 tokens/s).
  std::printf("  interleaved 1F1B over 1F1B, 405B FSDP 8 x TP 8 x PP 8 (torchtitan 2024-12: %+.1f%%): %+.1f%% tokens/s\n",
              100 * (128.0 / 100 - 1),
              100 * (simulate(kP4, {kSeq8k, kBatch32, kInterleaved, kTwoStages, kSplit16}).tokens_per_s /
                         simulate(kP4, {kSeq8k, kBatch32}).tokens_per_s -
                     1));
  const auto d4 = "validation/published/d4_gpt3-175b_128xa100.yaml";
  const Figures pre = simulate(d4, {"fsdp.backward_prefetch=pre"});
  const Figures none = simulate(d4, {"fsdp.backward_prefetch=none"});
  std::printf("  backward prefetch on vs off, GPT-175B (paper: about +18%%): %+.1f%% TFLOPS\n", 100 * (pre.tflops / none.tflops - 1));
  const auto d1 = "scenarios/llama3.1-8b_8xh100.yaml";
  auto with = [&](std::vector<std::string> base, const char* extra) {
    base.emplace_back(extra);
    return base;
  };
  const Figures v1 = simulate(kV11, {kFsdp1, kReshardLast});
  const Figures v2 = simulate(kV11, {});
  std::printf("  FSDP2 vs FSDP1 peak reserved, Llama 2 7B on 8 H100, selective AC (torchtitan#165: -7.0%%): %+.1f%%\n",
              100 * (v2.reserved_gib / v1.reserved_gib - 1));
  const std::vector<std::string> slow{"model.preset=llama2-13b", "training.seq_len=2048", "cluster.nodes=4", "fsdp.version=1",
                                      "cluster.overrides.node.nic.bandwidth=15Gbps"};
  const Figures limited = simulate(d1, with(slow, "fsdp.limit_all_gathers=true"));
  const Figures unlimited = simulate(d1, with(slow, "fsdp.limit_all_gathers=false"));
  std::printf(
      "  rate limiter on vs off, FSDP1 13B over ~120 Gb/s per node, micro-batch 2: %+.1f%% throughput, peak reserved %.1f vs %.1f GiB\n",
      100 * (limited.tokens_per_s / unlimited.tokens_per_s - 1), limited.reserved_gib, unlimited.reserved_gib);
  // The limiter's gain comes through memory (D6: batch 20 -> 50, scaling efficiency 20% -> 75%):
  // without it the CPU allocates all-gather buffers far ahead, so a smaller batch fits. The
  // largest micro-batch that fits the GPU (96 GiB) without out-of-memory or allocator retries,
  // and the throughput there, with and without.
  auto largest_fitting = [&](const char* limiter) {
    Figures best;
    int batch = 0;
    for (int b = 1; b <= 64; ++b) {
      const Figures f = simulate(d1, with(with(slow, limiter), fmt::format("training.micro_batch={}", b).c_str()));
      if (!f.fits) break;
      best = f;
      batch = b;
    }
    return std::pair{batch, best};
  };
  const auto [batch_on, on] = largest_fitting("fsdp.limit_all_gathers=true");
  const auto [batch_off, off] = largest_fitting("fsdp.limit_all_gathers=false");
  std::printf(
      "  rate limiter on vs off, same, largest micro-batch that fits 96 GiB (D6: batch 20 -> 50 on T5-11B): %d vs %d, "
      "%+.1f%% throughput\n",
      batch_on, batch_off, 100 * (on.tokens_per_s / off.tokens_per_s - 1));
  // ZeRO-Infinity's throughput at scale: "over 25 petaflops on 512 NVIDIA V100 GPUs" (Rajbhandari
  // et al., SC'21, abstract), a 1T-parameter GPT among its runs; docs/fsdp.md has the breakdown.
  const Figures infinity = simulate("scenarios/zero-infinity_gpt-1t_512xv100.yaml", {});
  std::printf(
      "  ZeRO-Infinity, GPT 1T on 512 V100, state and parameters on NVMe, checkpoints in CPU memory (paper: over 25 PFLOPS): %.1f PFLOPS, "
      "peak %.1f GiB reserved\n",
      infinity.tflops * 512 / 1000, infinity.reserved_gib);
  // Its talk's scaling figure: the 1T model's throughput from 64 to 512 GPUs grows faster than the
  // GPUs (each node brings its own drives and PCIe, and each GPU's share of the state shrinks).
  const Figures infinity64 = simulate("scenarios/zero-infinity_gpt-1t_512xv100.yaml", {"cluster.nodes=4"});
  std::printf("  ZeRO-Infinity, GPT 1T from 64 to 512 V100 (paper: super-linear): %.1f -> %.1f PFLOPS, x%.1f for 8x the GPUs\n",
              infinity64.tflops * 64 / 1000, infinity.tflops * 512 / 1000, infinity.tflops * 512 / (infinity64.tflops * 64));
}

}  // namespace shardsim::published

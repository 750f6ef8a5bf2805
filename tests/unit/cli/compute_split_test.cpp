// Where a step's compute time goes (summary "of which GEMM / attention", JSON compute_split_s),
// checked against the roofline worked from the step's own work and the topology's figures.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <map>

#include "cli/pipeline.hpp"
#include "test_support.hpp"

using namespace shardsim;

TEST_CASE("the step's compute splits into GEMM, attention, memory-bound and launches at the topology's rates") {
  const auto p = cli::prepare(test::source_dir() / "tests/data/tiny_llama.yaml", std::vector<std::string>{"fsdp.version=2"});
  const auto s = cli::simulate(p).summary;
  // The step's compute-stream work, summed from the graph.
  double gemm = 0;
  // Attention: each call's FLOPs at the topology's rate, its per-query-tile cost on top
  // (1 + attention_half_keys / keys per query; engine/compute_model.hpp).
  const auto& gpu = p.scenario.cluster.topology.gpu;
  const double peak = gpu.peak_bf16.value();
  REQUIRE(gpu.sms == 132);  // the H100's, so that GEMMs' tiles are priced
  // GEMMs: FLOPs at rate / (1 - k0 / K_ref), over their tiles' fill relative to the reference
  // block's (0.976741 on 132 SMs, tests/unit/engine/gemm_tiles_test.cpp), plus the exposed share of
  // the output write, or the operand and output bytes at the memory rate if slower. The tiny
  // Llama's shapes by hand (engine/gemm_tiles.hpp): 128 x 128 tiles fill best in every one, in one
  // wave of 132 SMs. 512 x 512: 16 tiles, K 512 or 1,000 too short to split (< 2 x 512): 16/132;
  // at K 1,376 split 2 ways: 32/132. 512 x 1,376 and 1,376 x 512: 4 x 11 = 44 tiles (1,376 padded
  // to 1,408), 512 x 1,376 / (132 x 128^2) = 0.325758. 512 x 1,000 and 1,000 x 512: 4 x 8 = 32
  // tiles, 512,000 / (132 x 128^2) = 0.236742.
  const std::map<std::array<std::int64_t, 3>, double> fill{{{512, 512, 512}, 16.0 / 132},          {{512, 512, 1000}, 16.0 / 132},
                                                           {{512, 512, 1376}, 32.0 / 132},         {{512, 1376, 512}, 704512.0 / 2162688},
                                                           {{1376, 512, 512}, 704512.0 / 2162688}, {{512, 1000, 512}, 512000.0 / 2162688},
                                                           {{1000, 512, 512}, 512000.0 / 2162688}};
  const double rate = peak * gpu.efficiency.matmul;
  const double mem = gpu.hbm_bandwidth.value() * gpu.efficiency.memory;
  const double k0 = gpu.gemm_output_exposed * rate / mem;
  double attention = 0;
  double memory_bytes = 0;
  int launches = 0;
  for (std::size_t i = 0; i < p.graph.size(); ++i) {
    const auto& op = p.graph.op(static_cast<int>(i));
    if (op.step != s.reported_step || op.is_collective() || op.stream != graph::Stream::compute) continue;
    for (const auto& g : op.work.gemms) {
      const double out = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n);
      const double bytes = 2.0 * static_cast<double>(g.m * g.k + g.k * g.n) + out;
      const auto f = fill.find({g.m, g.n, g.k});
      REQUIRE(f != fill.end());
      const double tiles = 0.976741 / f->second;
      const double t = g.flops() * tiles / rate * (1 - k0 / 6870.71) + gpu.gemm_output_exposed * out / mem;
      gemm += std::max(t, bytes / mem);
    }
    for (const auto& a : op.work.attention) {
      const double eff = a.backward ? gpu.efficiency.attention_backward : gpu.efficiency.attention_forward;
      attention += a.flops() / (peak * eff) * (1 + gpu.attention_half_keys / a.keys_per_query());
    }
    memory_bytes += op.work.memory_bytes;
    launches += op.work.launches;
  }
  // Roofline (engine/compute_model.hpp): bf16 peak x the topology's efficiency per kind of work.
  CHECK(s.compute_split.gemm == doctest::Approx(gemm).epsilon(1e-5).scale(0));
  CHECK(s.compute_split.attention == doctest::Approx(attention).scale(0));
  CHECK(gpu.attention_half_keys == 240);
  CHECK(s.compute_split.memory == doctest::Approx(memory_bytes / (gpu.hbm_bandwidth.value() * gpu.efficiency.memory)).scale(0));
  CHECK(s.compute_split.launch == doctest::Approx(launches * gpu.kernel_launch.value()).scale(0));
  CHECK(s.compute_split.other == 0);
  // Alone on the GPU the split is at most what the compute stream was busy (collectives slow it).
  CHECK(s.compute_split.total() <= s.compute_s * (1 + 1e-9));
  CHECK(s.compute_split.total() > 0.8 * s.compute_s);
}

TEST_CASE("the optimizer step's share of the compute split is its bytes and launches at the topology's rates") {
  // foreach AdamW over fp32 shards: 92 bytes a parameter of the rank's shard (fsdp/model_state.hpp)
  // at the memory rate, 8 launches per wrapped unit (tiny Llama: 4 blocks and the root).
  const auto p = cli::prepare(test::source_dir() / "tests/data/tiny_llama.yaml",
                              std::vector<std::string>{"fsdp.version=2", "training.optimizer_impl=foreach"});
  const auto s = cli::simulate(p).summary;
  const auto& gpu = p.scenario.cluster.topology.gpu;
  double shard = 0;
  for (const auto& u : p.plan.units) shard += static_cast<double>(u.shard_numel);
  const double expected = 92 * shard / (gpu.hbm_bandwidth.value() * gpu.efficiency.memory) + 8 * 5 * gpu.kernel_launch.value();
  CHECK(p.plan.units.size() == 5);
  CHECK(s.optimizer_impl == "foreach");
  CHECK(s.optimizer_s == doctest::Approx(expected).scale(0));
  CHECK(s.optimizer_s < s.compute_split.memory + s.compute_split.launch);
}

TEST_CASE("a CPU-offloaded optimizer step is reported as the CPU's, with no GPU time") {
  // FSDP's CPU offload steps the optimizer on the CPU thread: no GPU kernels whose
  // implementation (foreach or fused) would apply.
  const auto p =
      cli::prepare(test::source_dir() / "tests/data/tiny_llama.yaml", std::vector<std::string>{"fsdp.version=2", "fsdp.cpu_offload=true"});
  const auto s = cli::simulate(p).summary;
  CHECK(s.optimizer_impl == "cpu");
  CHECK(s.optimizer_s == 0);
}

#include "report/blas_workspace.hpp"

#include <doctest/doctest.h>

#include "report/metrics.hpp"
#include "report_fixtures.hpp"

using namespace shardsim;

namespace {
constexpr double KiB = 1024;
constexpr double MiB = 1024 * KiB;
}  // namespace

TEST_CASE("PyTorch's default GEMM workspace by GPU generation") {
  // aten/src/ATen/cuda/CublasHandlePool.cpp, parseChosenWorkspaceSize with CUBLAS_WORKSPACE_CONFIG
  // unset: ":4096:8" on sm_90, ":4096:2:16:8" elsewhere; ROCm gfx94x 128 MiB, plus hipBLASLt's 76 MiB.
  CHECK(config::default_blas_workspace(config::GpuArch::hopper) == 33554432.0);
  CHECK(config::default_blas_workspace(config::GpuArch::ampere) == 8519680.0);
  CHECK(config::default_blas_workspace(config::GpuArch::blackwell) == 8519680.0);
  CHECK(config::default_blas_workspace(config::GpuArch::cdna3) == 213909504.0);
}

TEST_CASE("the forward and the backward thread each hold a workspace on the compute stream") {
  config::GpuSpec gpu;
  gpu.blas_workspace = Bytes(32 * MiB);
  const auto w = report::blas_workspaces(gpu);
  REQUIRE(w.size() == 2);
  for (const auto& m : w) {
    CHECK(m.category == graph::MemCategory::workspaces);
    CHECK(m.pool == graph::Pool::compute);
    CHECK(m.bytes == 32 * MiB);
  }
  gpu.blas_workspace = Bytes(0);
  CHECK(report::blas_workspaces(gpu).empty());
}

TEST_CASE("the workspaces count in allocated and reserved memory from before the step") {
  graph::StepGraph g;
  g.info.world_size = 1;
  g.info.tokens_per_micro_step = 1000;
  g.info.initial_memory = {{graph::MemCategory::sharded_params, 100 * MiB, false, graph::Pool::compute}};
  graph::Op a;
  a.kind = graph::OpKind::forward;
  a.name = "FWD a";
  a.memory = {{graph::MemCategory::activations, 10 * MiB, false}, {graph::MemCategory::activations, -10 * MiB, true}};
  g.add_op(a);
  graph::Op opt;
  opt.kind = graph::OpKind::optimizer;
  opt.name = "optimizer";
  g.add_op(opt);
  graph::Timeline t(2, 1);
  t.at(0, 0) = {0, 1};
  t.at(1, 0) = {1, 2};
  config::ScenarioConfig s;
  s.cluster.topology = test::minimal_topology();
  s.cluster.topology.gpu.blas_workspace = Bytes(32 * MiB);
  model::Model m;
  const auto sum = report::summarize({s, m, g, t});
  // 100 MiB of shards + 2 x 32 MiB of workspaces + 10 MiB of activations, each its own segment
  // (requests of 10 MiB and more get segments of their size).
  CHECK(sum.memory.peak == doctest::Approx(174 * MiB).scale(0));
  CHECK(sum.memory.peak_reserved == doctest::Approx(174 * MiB).scale(0));
  CHECK(sum.memory.at_peak[static_cast<std::size_t>(graph::MemCategory::workspaces)] == doctest::Approx(64 * MiB).scale(0));
}

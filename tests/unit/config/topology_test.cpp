#include "config/topology.hpp"

#include <doctest/doctest.h>

#include "test_support.hpp"

using namespace shardsim;

TEST_CASE("the shipped DGX H100 topology reads as documented") {
  const auto t = config::load_topology(test::source_dir() / "topologies/h100_sxm_8x_ib400.yaml", ConfigNode{}, "");
  CHECK(t.node.gpus == 8);
  CHECK(t.gpu.peak_bf16.value() == doctest::Approx(989e12));
  CHECK(t.node.nvlink.bandwidth.value() == doctest::Approx(450e9));
  CHECK(t.node.nic.bandwidth.value() == doctest::Approx(50e9));  // 400 Gb/s
  CHECK(t.fabric.kind.name == "rail_optimized_fat_tree");
}

TEST_CASE("a link without a unit is rejected with the expected form") {
  test::TempFile bad("topo.yaml", R"(name: x
gpu: {model: X, memory: 80GiB, peak_flops: {bf16: 1TFLOPS, fp32: 1TFLOPS}, hbm_bandwidth: 1TB/s}
node:
  gpus: 8
  nvlink: {bandwidth: 450}
  nic: {bandwidth: 400Gbps}
)");
  CHECK_THROWS_WITH_AS(
      config::load_topology(bad.path(), ConfigNode{}, ""),
      (bad.str() + ":5:23: error: node.nvlink.bandwidth: expected a bandwidth such as 400Gbps or 450GB/s; got \"450\" without a unit")
          .c_str(),
      ConfigError);
}

#include "config/topology.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "test_support.hpp"

using namespace shardsim;

TEST_CASE("the shipped DGX H100 topology reads as documented") {
  const auto t = config::load_topology(test::source_dir() / "topologies/h100_sxm_8x_ib400.yaml", ConfigNode{}, "");
  CHECK(t.node.gpus == 8);
  CHECK(t.gpu.peak_bf16.value() == doctest::Approx(989e12).scale(0));
  CHECK(t.node.nvlink.bandwidth.value() == doctest::Approx(450e9).scale(0));
  CHECK(t.node.nic.bandwidth.value() == doctest::Approx(50e9).scale(0));  // 400 Gb/s
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

namespace {

// The shipped H100 topology (with the GPU file it extends) and a file that extends it, in memory.
config::MemoryFiles extending(const std::string& child) {
  config::MemoryFiles files;
  files.add("topologies/h100.yaml", test::read_text(test::source_dir() / "topologies/h100_sxm_8x_ib400.yaml"));
  files.add("topologies/gpus/h100_sxm.yaml", test::read_text(test::source_dir() / "topologies/gpus/h100_sxm.yaml"));
  files.add("topologies/child.yaml", child);
  return files;
}

}  // namespace

TEST_CASE("a topology that extends another starts from its keys: mappings merge, other values replace") {
  const auto files = extending(R"(name: H200 nodes
extends: h100.yaml
gpu:
  model: H200-SXM
  memory: 141GB
node:
  nic: {bandwidth: 200Gbps}
)");
  const auto t = config::load_topology("topologies/child.yaml", ConfigNode{}, "", files, std::nullopt);
  CHECK(t.name == "H200 nodes");
  CHECK(t.gpu.model == "H200-SXM");
  CHECK(t.gpu.memory.value() == doctest::Approx(141e9).scale(0));
  CHECK(t.gpu.peak_bf16.value() == doctest::Approx(989e12).scale(0));         // inherited
  CHECK(t.gpu.efficiency.matmul == doctest::Approx(0.68).scale(0));           // inherited, nested
  CHECK(t.node.nic.bandwidth.value() == doctest::Approx(25e9).scale(0));      // replaced
  CHECK(t.node.nic.latency.value() == 0);                                     // the NIC mapping merges: latency inherited (0 us)
  CHECK(t.node.nic.efficiency == doctest::Approx(0.95).scale(0));             // ... and efficiency inherited
  CHECK(t.node.nvlink.bandwidth.value() == doctest::Approx(450e9).scale(0));  // inherited
  CHECK(t.fabric.kind.name == "rail_optimized_fat_tree");                     // inherited
}

TEST_CASE("the shipped H200 topology extends the H100 one") {
  const auto h200 = config::load_topology(test::source_dir() / "topologies/h200_sxm_8x_ib400.yaml", ConfigNode{}, "");
  const auto h100 = config::load_topology(test::source_dir() / "topologies/h100_sxm_8x_ib400.yaml", ConfigNode{}, "");
  CHECK(h200.gpu.memory.value() == doctest::Approx(141e9).scale(0));
  CHECK(h200.gpu.hbm_bandwidth.value() == doctest::Approx(4.8e12).scale(0));
  CHECK(h200.gpu.peak_bf16 == h100.gpu.peak_bf16);
  CHECK(h200.node.nic.bandwidth == h100.node.nic.bandwidth);
}

TEST_CASE("an error in an inherited value is reported in the file that holds it") {
  config::MemoryFiles files;
  files.add("base.yaml", "name: base\nnode:\n  gpus: 8\n  nvlink: {bandwidth: 450}\n");
  files.add(
      "child.yaml",
      "name: child\nextends: base.yaml\ngpu: {model: X, memory: 1GiB, peak_flops: {bf16: 1TFLOPS, fp32: 1TFLOPS}, hbm_bandwidth: 1TB/s}\n");
  CHECK_THROWS_WITH_AS(
      config::load_topology("child.yaml", ConfigNode{}, "", files, std::nullopt),
      "base.yaml:4:23: error: node.nvlink.bandwidth: expected a bandwidth such as 400Gbps or 450GB/s; got \"450\" without a unit",
      ConfigError);
}

TEST_CASE("cycles and overlong chains of extends are errors that show the chain") {
  config::MemoryFiles files;
  files.add("a.yaml", "name: a\nextends: b.yaml\n");
  files.add("b.yaml", "name: b\nextends: sub/../c.yaml\n");
  files.add("c.yaml", "name: c\nextends: a.yaml\n");
  CHECK_THROWS_WITH_AS(
      config::load_topology("a.yaml", ConfigNode{}, "", files, std::nullopt),
      "c.yaml:2:10: error: extends: cyclic reference: a.yaml -> b.yaml -> c.yaml -> a.yaml; expected a chain of topologies that ends",
      ConfigError);
  config::MemoryFiles chain;
  for (int i = 0; i < 20; ++i) chain.add(fmt::format("t{}.yaml", i), fmt::format("name: t{}\nextends: t{}.yaml\n", i, i + 1));
  CHECK_THROWS_WITH_AS(
      config::load_topology("t0.yaml", ConfigNode{}, "", chain, std::nullopt),
      "t15.yaml:2:10: error: extends: more than 16 topology files extend one another (t0.yaml -> ...); expected a shorter chain",
      ConfigError);
}

TEST_CASE("ECMP routing: needs a fat tree and its spines, and its settings are refused under adaptive routing") {
  const auto load = [](const std::string& fabric) {
    test::TempFile f("topo.yaml",
                     "extends: " + (test::source_dir() / "topologies/h100_sxm_8x_ib400.yaml").string() + "\nfabric: " + fabric + "\n");
    return config::load_topology(f.path(), ConfigNode{}, "");
  };
  const auto t = load("{kind: fat_tree, routing: ecmp, spines: 8, qps_per_connection: 4, ecmp_seed: 3}");
  CHECK(t.fabric.routing == config::Routing::ecmp);
  CHECK(t.fabric.spines == 8);
  CHECK(t.fabric.qps_per_connection == 4);
  CHECK(t.fabric.ecmp_seed == 3);
  CHECK(load("{kind: fat_tree}").fabric.routing == config::Routing::adaptive);
  CHECK_THROWS_WITH_AS(load("{kind: rail_optimized_fat_tree, routing: ecmp, spines: 4}"),
                       doctest::Contains("fabric.routing: ECMP hashes flows over a fat tree's spines; fabric.kind is "
                                         "rail_optimized_fat_tree (expected fat_tree, or routing: adaptive)"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(load("{kind: fat_tree, routing: ecmp}"), doctest::Contains("routing: ecmp needs fabric.spines"), ConfigError);
  CHECK(load("{kind: fat_tree, spines: 4}").fabric.routing == config::Routing::adaptive);  // the fabric's, whatever the routing
  CHECK_THROWS_WITH_AS(
      load("{kind: fat_tree, qps_per_connection: 4}"),
      doctest::Contains("fabric.qps_per_connection: fabric.qps_per_connection applies to routing: ecmp; routing is adaptive"), ConfigError);
  CHECK_THROWS_WITH_AS(load("{kind: fat_tree, routing: hashed}"), doctest::Contains("fabric.routing"), ConfigError);
}

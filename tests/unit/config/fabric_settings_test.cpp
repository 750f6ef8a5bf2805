// The settings the fabric adds: the scenario's collectives section and the topology's node.nics,
// node.nvls, gpu.arch and host.cpu, with the exact messages of their mistakes.
#include <doctest/doctest.h>

#include <string>

#include "config/scenario.hpp"
#include "test_support.hpp"

using namespace shardsim;
using shardsim::test::TempFile;

namespace {

std::string topology_text(const std::string& node_extra = "", const std::string& gpu_extra = "") {
  return R"(name: test cluster
gpu:
  model: X
  memory: 80GiB
  peak_flops: {bf16: 989TFLOPS, fp32: 67TFLOPS}
  hbm_bandwidth: 3.35TB/s
)" + gpu_extra +
         R"(node:
  gpus: 8
  nvlink: {bandwidth: 450GB/s}
  nic: {bandwidth: 400Gbps}
)" + node_extra;
}

std::string scenario_text(const std::string& extra) {
  return R"(cluster: {topology: topo.yaml, nodes: 2}
model: {preset: llama3.1-8b}
training: {seq_len: 4096}
)" + extra;
}

}  // namespace

TEST_CASE("collectives: auto by default, one forced algorithm for all kinds, or one per kind") {
  TempFile topo("topo.yaml", topology_text());
  {
    TempFile scen("s.yaml", scenario_text(""));
    const auto s = config::load_scenario(scen.path());
    CHECK(s.collectives.all_gather.name == "auto");
    CHECK(s.collectives.all_reduce.name == "auto");
    CHECK(s.collectives.protocol.name == "auto");
  }
  {
    TempFile scen("s.yaml", scenario_text("collectives: {algorithm: ring, protocol: ll128}\n"));
    const auto s = config::load_scenario(scen.path());
    CHECK(s.collectives.all_gather.name == "ring");
    CHECK(s.collectives.reduce_scatter.name == "ring");
    CHECK(s.collectives.all_reduce.name == "ring");
    CHECK(s.collectives.protocol.name == "ll128");
    CHECK(s.collectives.all_reduce.where.line == 4);
  }
  {
    TempFile scen("s.yaml", scenario_text("collectives:\n  algorithm: {all_reduce: tree}\n"));
    const auto s = config::load_scenario(scen.path());
    CHECK(s.collectives.all_gather.name == "auto");
    CHECK(s.collectives.all_reduce.name == "tree");
    CHECK(s.collectives.all_reduce.path == "collectives.algorithm.all_reduce");
  }
  const auto s =
      config::load_scenario(TempFile("s.yaml", scenario_text("")).path(), std::vector<std::string>{"collectives.algorithm=nvls"});
  CHECK(s.collectives.all_gather.name == "nvls");
}

TEST_CASE("collectives: mistakes name the key, the valid choices and the likely intent") {
  TempFile topo("topo.yaml", topology_text());
  TempFile protocol("s.yaml", scenario_text("collectives: {protocol: simpel}\n"));
  CHECK_THROWS_WITH_AS(config::load_scenario(protocol.path()),
                       (protocol.str() + ":4:25: error: collectives.protocol: expected one of auto, ll, ll128, simple; got "
                                         "\"simpel\" (did you mean \"simple\"?)")
                           .c_str(),
                       ConfigError);
  TempFile kind("s.yaml", scenario_text("collectives: {algorithm: {allreduce: tree}}\n"));
  CHECK_THROWS_WITH_AS(
      config::load_scenario(kind.path()),
      (kind.str() + ":4:27: error: collectives.algorithm.allreduce: unknown key in collectives.algorithm settings (did you "
                    "mean \"all_reduce\"?)")
          .c_str(),
      ConfigError);
}

TEST_CASE("node.nics: one NIC per GPU by default, fewer must divide the GPUs") {
  {
    TempFile topo("topo.yaml", topology_text());
    const auto t = config::load_topology(topo.path(), ConfigNode{}, "");
    CHECK(t.node.nics == 8);
    CHECK_FALSE(t.node.nvls);
    CHECK(t.gpu.arch == config::GpuArch::hopper);
    CHECK(t.host.cpu == config::CpuVendor::intel);
  }
  {
    TempFile topo("topo.yaml", topology_text("  nics: 2\n  nvls: true\n") + "host: {cpu: amd}\n");
    const auto t = config::load_topology(topo.path(), ConfigNode{}, "");
    CHECK(t.node.nics == 2);
    CHECK(t.node.nvls);
    CHECK(t.host.cpu == config::CpuVendor::amd);
  }
  TempFile bad("topo.yaml", topology_text("  nics: 3\n"));
  CHECK_THROWS_WITH_AS(
      config::load_topology(bad.path(), ConfigNode{}, ""),
      (bad.str() + ":11:9: error: node.nics: expected a divisor of node.gpus (8) so that as many GPUs share each NIC; got 3").c_str(),
      ConfigError);
}

TEST_CASE("node.nvls needs an NVSwitch that reduces: Hopper or later") {
  TempFile topo("topo.yaml", topology_text("  nvls: true\n", "  arch: ampere\n"));
  CHECK_THROWS_WITH_AS(
      config::load_topology(topo.path(), ConfigNode{}, ""),
      (topo.str() + ":12:9: error: node.nvls: NVLink SHARP needs NVSwitch 3 (Hopper or later); gpu.arch is ampere").c_str(), ConfigError);
  // AMD's MI300 GPUs have no NVSwitch at all (an Infinity Fabric mesh).
  TempFile amd("topo.yaml", topology_text("  nvls: true\n", "  arch: cdna3\n"));
  CHECK_THROWS_WITH_AS(config::load_topology(amd.path(), ConfigNode{}, ""),
                       (amd.str() + ":12:9: error: node.nvls: NVLink SHARP needs NVSwitch 3 (Hopper or later); gpu.arch is cdna3").c_str(),
                       ConfigError);
  TempFile arch("topo.yaml", topology_text("", "  arch: hoper\n"));
  CHECK_THROWS_WITH_AS(
      config::load_topology(arch.path(), ConfigNode{}, ""),
      (arch.str() + ":7:9: error: gpu.arch: expected one of volta, ampere, hopper, blackwell, cdna3; got \"hoper\" (did you "
                    "mean \"hopper\"?)")
          .c_str(),
      ConfigError);
}

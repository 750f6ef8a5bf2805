#include "config/scenario.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "test_support.hpp"

using namespace shardsim;
using shardsim::test::TempFile;

namespace {

const char* kTopology = R"(name: test cluster
gpu:
  model: H100-SXM
  memory: 80GiB
  peak_flops: {bf16: 989TFLOPS, fp32: 67TFLOPS}
  hbm_bandwidth: 3.35TB/s
node:
  gpus: 8
  nvlink: {bandwidth: 450GB/s, latency: 1us}
  nic: {bandwidth: 400Gbps, latency: 2us}
)";

std::string scenario_text(const std::string& fsdp_extra = "") {
  return R"(name: test
cluster:
  topology: topo.yaml
  nodes: 2
model:
  preset: llama3.1-8b
training:
  seq_len: 4096
  micro_batch: 1
fsdp:
  backward_prefetch: pre
)" + fsdp_extra;
}

}  // namespace

TEST_CASE("a scenario loads with its topology, relative to the scenario file") {
  TempFile topo("topo.yaml", kTopology);
  TempFile scen("scenario.yaml", scenario_text());
  const auto s = config::load_scenario(scen.path());
  CHECK(s.name == "test");
  CHECK(s.cluster.nodes == 2);
  CHECK(s.world_size() == 16);
  CHECK(s.cluster.topology.gpu.memory.value() == doctest::Approx(80.0 * (1 << 30)).scale(0));
  CHECK(s.cluster.topology.node.nic.bandwidth.value() == doctest::Approx(50e9).scale(0));
  CHECK(s.training.seq_len == 4096);
  CHECK(s.fsdp.version == 2);  // default
  CHECK(s.fsdp.wrap.name == "module");
  CHECK_FALSE(s.fsdp.mixed_precision.enabled);
}

TEST_CASE("--set overrides any key, including topology keys through cluster.overrides") {
  TempFile topo("topo.yaml", kTopology);
  TempFile scen("scenario.yaml", scenario_text());
  const std::vector<std::string> sets{"fsdp.backward_prefetch=post", "cluster.nodes=4", "cluster.overrides.gpu.memory=96GiB",
                                      "fsdp.mixed_precision={param: bf16, reduce: fp32}"};
  const auto s = config::load_scenario(scen.path(), sets);
  CHECK(s.fsdp.backward_prefetch == config::BackwardPrefetch::post);
  CHECK(s.cluster.nodes == 4);
  CHECK(s.cluster.topology.gpu.memory.value() == doctest::Approx(96.0 * (1 << 30)).scale(0));
  CHECK(s.fsdp.mixed_precision.enabled);
  CHECK(s.fsdp.mixed_precision.reduce == config::DType::fp32);
}

TEST_CASE("a topology setting whose description offers 0 takes 0") {
  // gpu.gemm_output_exposed: "0: GEMMs by FLOPs alone"; gpu.variation: "0: every GPU alike".
  TempFile topo("topo.yaml", kTopology);
  TempFile scen("scenario.yaml", scenario_text());
  const std::vector<std::string> sets{"cluster.overrides.gpu.gemm_output_exposed=0", "cluster.overrides.gpu.variation=0"};
  const auto s = config::load_scenario(scen.path(), sets);
  CHECK(s.cluster.topology.gpu.gemm_output_exposed == 0);
  CHECK(s.cluster.topology.gpu.variation == 0);
}

TEST_CASE("errors name the file, line, column and key, and suggest the intended word") {
  TempFile topo("topo.yaml", kTopology);
  TempFile scen("scenario.yaml", scenario_text("  sharding: ful_shard\n"));
  CHECK_THROWS_WITH_AS(config::load_scenario(scen.path()),
                       (scen.str() + ":12:13: error: fsdp.sharding: expected one of full_shard, shard_grad_op, no_shard, hybrid_shard, "
                                     "hybrid_shard_zero2, zero3, shard_optimizer; got \"ful_shard\" (did you mean \"full_shard\"?)")
                           .c_str(),
                       ConfigError);
  TempFile typo("typo.yaml", scenario_text("  limit_allgathers: true\n"));
  CHECK_THROWS_WITH_AS(
      config::load_scenario(typo.path()),
      (typo.str() + ":12:3: error: fsdp.limit_allgathers: unknown key in fsdp settings (did you mean \"limit_all_gathers\"?)").c_str(),
      ConfigError);
}

TEST_CASE("a bad --set value is reported as coming from the command line") {
  TempFile topo("topo.yaml", kTopology);
  TempFile scen("scenario.yaml", scenario_text());
  const std::vector<std::string> sets{"training.seq_len=0"};
  CHECK_THROWS_WITH_AS(config::load_scenario(scen.path(), sets),
                       "--set training.seq_len=0: error: training.seq_len: expected an integer between 1 and 16777216; got \"0\"",
                       ConfigError);
}

TEST_CASE("a topology override with a typo is caught where the override is written") {
  TempFile topo("topo.yaml", kTopology);
  TempFile scen("scenario.yaml", scenario_text() + "");
  const std::string text = R"(cluster:
  topology: topo.yaml
  overrides:
    gpu.memroy: 96GiB
model: {preset: llama3.1-8b}
training: {seq_len: 1024}
)";
  TempFile bad("bad.yaml", text);
  CHECK_THROWS_WITH_AS(config::load_scenario(bad.path()),
                       (bad.str() + ":4:5: error: gpu.memroy: unknown key in gpu settings (did you mean \"memory\"?)").c_str(),
                       ConfigError);
}

TEST_CASE("YAML syntax errors and missing files are located") {
  TempFile broken("broken.yaml", "cluster: [unclosed\n");
  CHECK_THROWS_AS(config::load_scenario(broken.path()), ConfigError);
  try {
    (void)config::load_scenario(broken.path());
  } catch (const ConfigError& e) {
    CHECK(e.where().file == broken.str());
    CHECK(e.where().line >= 1);
  }
  TempFile scen("missing_topo.yaml", "cluster: {topology: nowhere.yaml}\nmodel: {preset: llama2-7b}\ntraining: {seq_len: 8}\n");
  CHECK_THROWS_WITH_AS(
      config::load_scenario(scen.path()),
      (scen.str() + ":1:21: error: cluster.topology: no such file: " + (scen.path().parent_path() / "nowhere.yaml").string()).c_str(),
      ConfigError);
}

// Settings that do not apply to the configuration they are written in are never silently
// ignored: a warning with the place they are written (the run prints it, the sweep records it
// per point), or an error where the combination cannot be modelled.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "config/file_source.hpp"
#include "config/scenario.hpp"

using namespace shardsim;

namespace {

const char* kTopology = R"(name: test cluster
gpu: {model: H100-SXM, memory: 80GiB, peak_flops: {bf16: 989TFLOPS, fp32: 67TFLOPS}, hbm_bandwidth: 3.35TB/s}
node: {gpus: 8, nvlink: {bandwidth: 450GB/s}, nic: {bandwidth: 400Gbps}}
)";

config::ScenarioConfig load(const std::string& fsdp, const std::vector<std::string>& sets = {}) {
  config::MemoryFiles files;
  files.add("topo.yaml", kTopology);
  files.add("s.yaml", "cluster: {topology: topo.yaml}\nmodel: {preset: llama3.1-8b}\ntraining: {seq_len: 1024}\nfsdp:\n" + fsdp);
  return config::load_scenario("s.yaml", sets, files);
}

std::vector<std::string> warnings(const config::ScenarioConfig& s) {
  std::vector<std::string> out;
  for (const auto& w : s.warnings) out.push_back(w.str());
  return out;
}

}  // namespace

TEST_CASE("FSDP1 settings on FSDP2 are warnings naming where they are written") {
  const auto s = load("  version: 2\n  backward_prefetch: post\n  limit_all_gathers: false\n");
  const auto w = warnings(s);
  REQUIRE(w.size() == 2);
  CHECK(w[0] ==
        "s.yaml:6:22: warning: fsdp.backward_prefetch: an FSDP1 setting (FullyShardedDataParallel), which fully_shard (fsdp.version: 2) "
        "does not have: it prefetches in pre-backward (fsdp.backward_prefetch_depth units) and has no rate limiter; it is ignored");
  CHECK(w[1].rfind("s.yaml:7:22: warning: fsdp.limit_all_gathers: an FSDP1 setting", 0) == 0);
  // The same settings on FSDP1 apply: no warning.
  CHECK(load("  version: 1\n  backward_prefetch: post\n  limit_all_gathers: false\n").warnings.empty());
  // From the command line, the warning says so.
  const auto set = warnings(load("  version: 2\n", {"fsdp.backward_prefetch=none"}));
  REQUIRE(set.size() == 1);
  CHECK(set[0].rfind("--set fsdp.backward_prefetch=none: warning: fsdp.backward_prefetch: ", 0) == 0);
}

TEST_CASE("ZeRO-3 settings on PyTorch FSDP, FSDP settings on ZeRO-3, DDP buckets on sharded runs, a limiter depth without limiter") {
  CHECK(warnings(load("  zero3: {overlap_comm: false}\n")).at(0).rfind(
            "s.yaml:5:10: warning: fsdp.zero3: DeepSpeed ZeRO-3 settings, which apply only with fsdp.sharding: zero3, not full_shard", 0) == 0);
  CHECK(warnings(load("  sharding: zero3\n  forward_prefetch: 2\n")).at(0).rfind(
            "s.yaml:6:21: warning: fsdp.forward_prefetch: a PyTorch FSDP setting, which DeepSpeed ZeRO-3", 0) == 0);
  CHECK(warnings(load("  bucket_size: 50MB\n")).at(0).rfind("s.yaml:5:16: warning: fsdp.bucket_size: DDP's gradient bucket", 0) == 0);
  CHECK(load("  sharding: no_shard\n  bucket_size: 50MB\n").warnings.empty());
  CHECK(warnings(load("  version: 1\n  limit_all_gathers: false\n  max_inflight_all_gathers: 4\n"))
            .at(0)
            .rfind("s.yaml:7:29: warning: fsdp.max_inflight_all_gathers: the depth of the rate limiter", 0) == 0);
}

TEST_CASE("ZeRO-3 with cpu_offload is refused: DeepSpeed offloads with its own keys") {
  CHECK_THROWS_WITH_AS((void)load("  sharding: zero3\n  cpu_offload: true\n"),
                       "s.yaml:6:16: error: fsdp.cpu_offload: DeepSpeed ZeRO-3 offloads with fsdp.zero3.offload_optimizer / "
                       "offload_param (cpu or nvme); expected false",
                       ConfigError);
}

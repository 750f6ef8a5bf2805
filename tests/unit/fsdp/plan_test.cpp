#include "fsdp/plan.hpp"

#include <doctest/doctest.h>

#include "model/transformer.hpp"

using namespace shardsim;

namespace {

model::Model preset(const std::string& name) {
  for (const auto& p : model::presets()) {
    if (p.name == name) return model::build_model(p, 1024, 2);
  }
  return {};
}

config::ScenarioConfig scenario(int nodes, const std::string& policy, ConfigNode settings = {}) {
  config::ScenarioConfig s;
  s.cluster.nodes = nodes;
  s.cluster.topology.node.gpus = 8;
  s.training.seq_len = 1024;
  s.fsdp.version = 1;
  s.fsdp.wrap = config::Choice{policy, "fsdp.wrap", Location{"s.yaml", 5, 3}, std::move(settings)};
  return s;
}

fsdp::Plan plan_for(const model::Model& m, const config::ScenarioConfig& s) {
  fsdp::WrapPolicyRegistry r;
  fsdp::register_builtin_wrap_policies(r);
  return fsdp::make_plan(m, s, r);
}

ConfigNode settings(std::initializer_list<std::pair<const char*, const char*>> kv) {
  ConfigNode n = ConfigNode::make_map(Location{"s.yaml", 5, 3});
  for (const auto& [k, v] : kv) n.set(k, ConfigNode::make_scalar(v, Location{"s.yaml", 5, 20}), Location{"s.yaml", 5, 10});
  return n;
}

}  // namespace

TEST_CASE("module wrap: one unit per block plus the root with embedding, norm and head") {
  const auto m = preset("llama3.1-8b");
  const auto p = plan_for(m, scenario(1, "module"));
  REQUIRE(p.units.size() == 33);
  CHECK(p.units[0].is_root);
  CHECK(p.units[0].numel == 1'050'677'248);
  CHECK(p.units[1].name == "layers.0");
  CHECK(p.units[1].numel == 218'112'000);
  CHECK(p.units[1].padded_numel == 218'112'000);  // divisible by 8
  CHECK(p.units[1].shard_numel == 218'112'000 / 8);
  CHECK(p.total_numel() == m.total_params());
}

TEST_CASE("blocks_per_unit groups consecutive blocks") {
  const auto m = preset("llama3.1-8b");
  const auto p = plan_for(m, scenario(1, "module", settings({{"policy", "module"}, {"blocks_per_unit", "4"}})));
  REQUIRE(p.units.size() == 1 + 8);
  CHECK(p.units[1].name == "layers.0-3");
  CHECK(p.units[1].numel == 4 * 218'112'000);
}

TEST_CASE("outer_modules units: the embedding one unit, final norm and head another, the root none (torchtitan since #1094)") {
  // torchtitan's apply_fsdp: fully_shard(tok_embeddings), each block, fully_shard([norm, output]),
  // then the root, which is left no parameters. Llama 3.1 8B: the embedding and the head are
  // 128,256 x 4,096 = 525,336,576 each, the norm 4,096.
  const auto m = preset("llama3.1-8b");
  const auto p = plan_for(m, scenario(1, "module", settings({{"policy", "module"}, {"outer_modules", "units"}})));
  REQUIRE(p.units.size() == 1 + 1 + 32 + 1);
  CHECK(p.units[0].numel == 0);
  CHECK(p.units[1].name == "tok_embeddings");
  CHECK(p.units[1].numel == 525'336'576);
  CHECK(p.units[2].name == "layers.0");
  CHECK(p.units[34].name == "norm-output");
  CHECK(p.units[34].numel == 525'336'576 + 4'096);
  CHECK(p.total_numel() == m.total_params());
  // A head tied to the embedding computes with its weight: torchtitan then wraps [tok_embeddings,
  // norm, output] as one unit. GPT-2: wte 50,257 x 768 = 38,597,376, wpe 1,024 x 768 = 786,432,
  // ln_f 2 x 768 = 1,536, the head no weight of its own.
  const auto gpt = plan_for(preset("gpt2"), scenario(1, "module", settings({{"policy", "module"}, {"outer_modules", "units"}})));
  REQUIRE(gpt.units.size() == 1 + 1 + 12);
  CHECK(gpt.units[0].numel == 0);
  CHECK(gpt.units[1].modules == std::vector<std::string>{"wte", "wpe", "ln_f", "lm_head"});
  CHECK(gpt.units[1].numel == 38'597'376 + 786'432 + 1'536);
  CHECK_THROWS_WITH_AS(
      (void)plan_for(m, scenario(1, "module", settings({{"policy", "module"}, {"module", "Linear"}, {"outer_modules", "units"}}))),
      "s.yaml:5:20: error: fsdp.wrap.outer_modules: only applies with module: block", ConfigError);
}

TEST_CASE("size-based wrap follows FSDP1's recursive rule on the seed's SimpleTransformer") {
  // min 1e7: each decoder layer (12.6M) is wrapped; inside it neither MultiheadAttention (4.2M,
  // and a forced leaf) nor the linears (2.1M) reach 1e7; the ModuleList is never wrapped; the
  // embedding (51.2M) and lm_head (51.25M) are wrapped on their own. The root keeps nothing.
  const auto m = preset("seed-simple-transformer");
  const auto p = plan_for(m, scenario(1, "size", settings({{"policy", "size"}, {"min_params", "1e7"}})));
  REQUIRE(p.units.size() == 1 + 1 + 12 + 1);
  CHECK(p.units[1].name == "embedding");
  CHECK(p.units[2].name == "layers.0");
  CHECK(p.units[2].numel == 12'600'320);
  CHECK(p.units[14].name == "lm_head");
  CHECK(p.units[0].numel == 0);
  // min 2e8: only the whole model would qualify, and the root is never wrapped by the policy.
  const auto big = plan_for(m, scenario(1, "size", settings({{"policy", "size"}, {"min_params", "2e8"}})));
  CHECK(big.units.size() == 1);
}

TEST_CASE("hybrid sharding shards within a node and replicates across nodes") {
  const auto m = preset("llama2-7b");
  auto s = scenario(4, "module");
  s.fsdp.sharding = config::Sharding::hybrid_shard;
  const auto p = plan_for(m, s);
  CHECK(p.world_size == 32);
  CHECK(p.shard_group == 8);
  CHECK(p.replicate_group == 4);
  CHECK(p.units[1].shard_numel == p.units[1].padded_numel / 8);
}

TEST_CASE("an unknown wrap policy lists the valid ones") {
  const auto m = preset("gpt2");
  CHECK_THROWS_WITH_AS((void)plan_for(m, scenario(1, "transformer")),
                       "s.yaml:5:3: error: fsdp.wrap.policy: unknown wrap policy \"transformer\"; expected one of module, size, none",
                       ConfigError);
}

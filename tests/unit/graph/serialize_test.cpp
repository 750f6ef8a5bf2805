#include "graph/serialize.hpp"

#include <doctest/doctest.h>

#include "fixtures/fixtures.hpp"

using namespace shardsim;

TEST_CASE("the exported graph reads back identically") {
  const auto p = test::prepared("tests/data/tiny_llama.yaml");
  const auto j = graph::to_json(p.graph);
  const auto g = graph::from_json(j, "graph.json");
  REQUIRE(g.size() == p.graph.size());
  CHECK(g.edge_count() == p.graph.edge_count());
  CHECK(g.info.world_size == 8);
  for (std::size_t i = 0; i < g.size(); ++i) {
    const auto& a = g.op(static_cast<int>(i));
    const auto& b = p.graph.op(static_cast<int>(i));
    CHECK(a.name == b.name);
    CHECK(a.bytes == b.bytes);
    CHECK(a.work.gemm_flops() == b.work.gemm_flops());
    CHECK(a.memory.size() == b.memory.size());
    CHECK(a.cpu_s == b.cpu_s);  // FSDP's hooks (the tiny Llama's all-gathers: 9 x 20 us a block)
  }
  CHECK(graph::to_json(g) == j);
}

TEST_CASE("a graph from another program or version is refused") {
  CHECK_THROWS_AS((void)graph::from_json(nlohmann::json{{"format", "other"}}, "x.json"), ConfigError);
  CHECK_THROWS_AS((void)graph::from_json(nlohmann::json{{"format", "shardsim-graph"}, {"format_version", 99}}, "x.json"), ConfigError);
}

TEST_CASE("float8 GEMMs keep their type and accumulation through export and a wrong type is refused") {
  const auto p = test::prepared("tests/data/tiny_llama.yaml", {"training.float8={recipe: rowwise_with_gw_hp}"});
  auto j = graph::to_json(p.graph);
  const auto g = graph::from_json(j, "graph.json");
  int fp8 = 0;
  int high = 0;
  int precise = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const auto& a = g.op(static_cast<int>(i)).work.gemms;
    const auto& b = p.graph.op(static_cast<int>(i)).work.gemms;
    REQUIRE(a.size() == b.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
      CHECK(a[k].type == b[k].type);
      CHECK(a[k].precise_accum == b[k].precise_accum);
      fp8 += a[k].type == graph::GemmType::fp8_rowwise ? 1 : 0;
      high += a[k].type == graph::GemmType::high ? 1 : 0;
      precise += a[k].precise_accum ? 1 : 0;
    }
  }
  CHECK(fp8 > 0);
  CHECK(high > 0);     // grad_weight stays bf16 in this recipe, and the output layer
  CHECK(precise > 0);  // grad_input
  CHECK(precise < fp8);
  SUBCASE("a type that is not a GEMM type") {
    for (auto& op : j["ops"]) {
      if (!op.contains("work")) continue;
      for (auto& gemm : op["work"]["gemms"]) {
        if (gemm.size() >= 4) gemm[3] = "fp4";
      }
    }
    CHECK_THROWS_AS((void)graph::from_json(j, "graph.json"), ConfigError);
  }
  SUBCASE("an accumulation that is not fast or precise, or on a bf16 GEMM") {
    nlohmann::json* shape = nullptr;
    nlohmann::json* plain = nullptr;
    for (auto& op : j["ops"]) {
      if (!op.contains("work")) continue;
      for (auto& gemm : op["work"]["gemms"]) {
        if (gemm.size() == 5 && shape == nullptr) shape = &gemm;
        if (gemm.size() == 3 && plain == nullptr) plain = &gemm;
      }
    }
    REQUIRE(shape != nullptr);
    REQUIRE(plain != nullptr);
    CHECK((*shape)[4] == "precise");
    (*shape)[4] = "slow";
    CHECK_THROWS_WITH_AS((void)graph::from_json(j, "graph.json"), doctest::Contains("expected fast or precise; got \"slow\""), ConfigError);
    (*shape)[4] = "precise";
    plain->push_back("high");
    plain->push_back("precise");
    CHECK_THROWS_AS((void)graph::from_json(j, "graph.json"), ConfigError);
  }
}

TEST_CASE("rowwise float8's column-wise cast bytes survive export") {
  const auto p = test::prepared("tests/data/tiny_llama.yaml", {"training.float8={recipe: rowwise}"});
  const auto g = graph::from_json(graph::to_json(p.graph), "graph.json");
  double exported = 0;
  double built = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    exported += g.op(static_cast<int>(i)).work.column_cast_bytes;
    built += p.graph.op(static_cast<int>(i)).work.column_cast_bytes;
  }
  CHECK(built > 0);
  CHECK(exported == built);
}

TEST_CASE("a sliding window survives export, and one on a ring attention step is refused") {
  // The tiny Llama at 512 tokens with a window of 128: every attention call carries it, and its
  // FLOPs (128 - 128^2 / 1024 = 112 keys a query against 256 without) read back the same.
  const auto p = test::prepared("tests/data/tiny_llama.yaml", {"model.sliding_window=128"});
  auto j = graph::to_json(p.graph);
  const auto g = graph::from_json(j, "graph.json");
  int calls = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const auto& a = g.op(static_cast<int>(i)).work.attention;
    const auto& b = p.graph.op(static_cast<int>(i)).work.attention;
    REQUIRE(a.size() == b.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
      CHECK(a[k].window == 128);
      CHECK(a[k].keys_per_query() == 112);
      CHECK(a[k].flops() == b[k].flops());
      ++calls;
    }
  }
  CHECK(calls > 0);
  nlohmann::json* call = nullptr;
  for (auto& op : j["ops"]) {
    if (op.contains("work") && !op["work"]["attention"].empty()) call = &op["work"]["attention"][0];
  }
  REQUIRE(call != nullptr);
  (*call)["cp"] = 2;
  CHECK_THROWS_WITH_AS((void)graph::from_json(j, "graph.json"),
                       doctest::Contains("a sliding window applies to causal attention without context parallelism"), ConfigError);
}

TEST_CASE("an FSDP2 all-gather's program-order allocation survives export and names an op of the graph") {
  const auto p = test::prepared("tests/data/tiny_llama.yaml", {"fsdp.version=2"});
  auto j = graph::to_json(p.graph);
  const auto g = graph::from_json(j, "graph.json");
  int named = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const auto& a = g.op(static_cast<int>(i)).memory;
    const auto& b = p.graph.op(static_cast<int>(i)).memory;
    REQUIRE(a.size() == b.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
      CHECK(a[k].not_before == b[k].not_before);
      named += a[k].not_before >= 0 ? 1 : 0;
    }
  }
  CHECK(named > 0);
  nlohmann::json* effect = nullptr;
  for (auto& op : j["ops"]) {
    for (auto& m : op["memory"]) {
      if (m.contains("not_before") && effect == nullptr) effect = &m;
    }
  }
  REQUIRE(effect != nullptr);
  (*effect)["not_before"] = static_cast<int>(g.size());  // one past the last op
  CHECK_THROWS_WITH_AS((void)graph::from_json(j, "graph.json"), doctest::Contains("not_before"), ConfigError);
}

TEST_CASE("a pipeline's per-stage memory and the optimizer's first-step state survive export") {
  // The tiny Llama in 2 stages (FSDP2): each stage's parameters and receive buffers are its own
  // initial memory, and the optimizer's moments are made at the first step.
  const auto p = test::prepared("tests/data/tiny_llama.yaml", {"fsdp.version=2", "parallelism.pp=2", "training.micro_batch=4"});
  REQUIRE(p.graph.info.stage_initial_memory.size() == 2);
  auto j = graph::to_json(p.graph);
  const auto g = graph::from_json(j, "graph.json");
  REQUIRE(g.info.stage_initial_memory.size() == 2);
  for (std::size_t s = 0; s < 2; ++s) CHECK(g.info.stage_initial_memory[s].size() == p.graph.info.stage_initial_memory[s].size());
  int first_step = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    for (const auto& m : g.op(static_cast<int>(i)).memory) first_step += m.first_step_only;
  }
  CHECK(first_step > 0);
  CHECK(graph::to_json(g) == j);
  // One list per stage, or the graph is refused.
  j["info"]["stage_initial_memory"].erase(1);
  CHECK_THROWS_AS((void)graph::from_json(j, "graph.json"), ConfigError);
}

TEST_CASE("the graph written piece by piece is the text of its document") {
  // shardsim export streams the graph (write_json); the text must be to_json(g).dump(1), byte for
  // byte, for graphs with and without pipeline stages' own initial memory, TP and CP ops, and for
  // one op without edges.
  for (const auto& sets :
       std::vector<std::vector<std::string>>{{},
                                             {"fsdp.version=2", "parallelism.tp=2", "parallelism.cp=2", "training.seq_len=1024"},
                                             {"fsdp.version=2", "parallelism.pp=2", "parallelism.pp_schedule=interleaved_1f1b",
                                              "parallelism.pp_stages_per_rank=2", "training.micro_batch=4"}}) {
    const auto p = test::prepared("tests/data/tiny_llama.yaml", sets);
    std::string text;
    int pieces = 0;
    graph::write_json(p.graph, [&](std::string_view piece) {
      text += piece;
      ++pieces;
    });
    CHECK(pieces >= 1);
    CHECK(text == graph::to_json(p.graph).dump(1));
  }
  graph::StepGraph one;
  graph::Op op;
  op.name = "FWD x";
  one.add_op(op);
  std::string text;
  graph::write_json(one, [&](std::string_view piece) { text += piece; });
  CHECK(text == graph::to_json(one).dump(1));
}

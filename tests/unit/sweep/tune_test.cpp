// What tune searches, how it ranks, and the YAML it prints.
#include "sweep/tune.hpp"

#include <doctest/doctest.h>

#include <algorithm>

#include "config/scenario.hpp"
#include "config/yaml_load.hpp"
#include "core/args.hpp"
#include "graph/prepare.hpp"
#include "test_support.hpp"

using namespace shardsim;

namespace {

config::ScenarioConfig tiny(const std::vector<std::string>& sets) {
  return config::load_scenario(test::source_dir() / "tests/data/tiny_llama.yaml", sets);
}

sweep::PointResult result(std::size_t index, double tps, double gib, bool oom = false) {
  sweep::PointResult r;
  r.index = index;
  r.assignments = {"p=" + std::to_string(index)};
  r.metrics = {{"tokens_per_s_per_gpu", tps}, {"peak_memory_bytes", gib * 1024 * 1024 * 1024}, {"oom", oom}};
  return r;
}

}  // namespace

TEST_CASE(
    "tune searches 3 checkpointing x batch divisors, then sharding x 4 wraps (5 for FSDP2) on the best, then prefetching: FSDP1's and "
    "the limiter, FSDP2's depths") {
  // tiny_llama: FSDP1, one node, micro_batch 1 x grad_accum 1.
  const auto one_node = sweep::tune_space(tiny({}), std::nullopt);
  REQUIRE(one_node.shape.size() == 2);
  CHECK(one_node.shape[1].size() == 1);  // batch 1: micro_batch 1 only
  REQUIRE(one_node.fsdp.size() == 2);
  CHECK(one_node.fsdp[0].size() == 4);  // hybrid sharding needs more than one node
  CHECK(sweep::stage1_points(one_node, false).size() == 3 * 1 + 1);
  CHECK(sweep::stage1_points(one_node, true).size() == 3 * 1 * 4 * 4 + 1);
  CHECK(one_node.prefetch.size() == 2);

  // Two nodes and 12 sequences per GPU per step: micro-batches 1, 2, 3, 4, 6, 12 with grad_accum 12 / m.
  const auto two = sweep::tune_space(tiny({"cluster.nodes=2"}), 12);
  CHECK(two.shape[1].label() == "training.micro_batch / training.grad_accum");
  std::vector<std::string> pairs;
  for (std::size_t i = 0; i < two.shape[1].size(); ++i) pairs.push_back(two.shape[1].value_label(i));
  CHECK(pairs == std::vector<std::string>{"1 / 12", "2 / 6", "3 / 4", "4 / 3", "6 / 2", "12 / 1"});
  CHECK(two.fsdp[0].size() == 6);
  CHECK(sweep::stage1_points(two, false).size() == 3 * 6 + 1);
  CHECK(sweep::stage1_points(two, true).size() == 3 * 6 * 6 * 4 + 1);
  CHECK(sweep::stage1_points(two, false).back().assignments.empty());  // the scenario as written, last
  // Stage 2: each shape it is given followed by each sharding x wrap.
  const auto points = sweep::stage2_points(two, {result(0, 1, 1), result(1, 1, 1)});
  REQUIRE(points.size() == 2 * 6 * 4);
  CHECK(points[0].assignments ==
        std::vector<std::string>{"p=0", "fsdp.sharding=full_shard", "fsdp.wrap={policy: module, module: block, blocks_per_unit: 1}"});
  CHECK(points[47].assignments ==
        std::vector<std::string>{"p=1", "fsdp.sharding=hybrid_shard_zero2", "fsdp.wrap={policy: size, min_params: 100000000}"});
  CHECK(points[47].index == 47);

  // FSDP2: a fifth wrap, torchtitan's units around the blocks; then its prefetch lists' lengths,
  // one or two units ahead in backward, none or one in forward.
  const auto v2 = sweep::tune_space(tiny({"fsdp.version=2"}), std::nullopt);
  REQUIRE(v2.fsdp.size() == 2);
  REQUIRE(v2.fsdp[1].size() == 5);
  CHECK(v2.fsdp[1].value_label(4) == "{policy: module, module: block, blocks_per_unit: 1, outer_modules: units}");
  REQUIRE(v2.prefetch.size() == 2);
  const auto v2_points = sweep::stage3_points(v2, {result(0, 1, 1)});
  REQUIRE(v2_points.size() == 2 * 2);
  CHECK(v2_points[0].assignments == std::vector<std::string>{"p=0", "fsdp.backward_prefetch_depth=1", "fsdp.forward_prefetch=false"});
  CHECK(v2_points[3].assignments == std::vector<std::string>{"p=0", "fsdp.backward_prefetch_depth=2", "fsdp.forward_prefetch=true"});
}

TEST_CASE("stage 2 takes the best shapes that fit and, of those faster that do not, the nearest to fitting") {
  // Limit 70 GiB. Fitting by tokens/s: 1 (300), 3 and 5 (200, the same figures: one), 0 (100).
  // Not fitting and faster than 300: 2 (400, 72 GiB), 4 (500, 90), 6 (350, 75); 7 (250, 71) is
  // slower than the best that fits, so another sharding could at best make it a slower fit.
  std::vector<sweep::PointResult> rs{result(0, 100, 10), result(1, 300, 60), result(2, 400, 72), result(3, 200, 50),
                                     result(4, 500, 90), result(5, 200, 50), result(6, 350, 75), result(7, 250, 71)};
  const double limit = 70.0 * 1024 * 1024 * 1024;
  const auto index = [](const std::vector<sweep::PointResult>& v) {
    std::vector<std::size_t> out;
    for (const auto& r : v) out.push_back(r.index);
    return out;
  };
  CHECK(index(sweep::stage2_shapes(rs, limit, 2)) == std::vector<std::size_t>{1, 3, 2, 6});
  CHECK(index(sweep::stage2_shapes(rs, limit, 4)) == std::vector<std::size_t>{1, 3, 0, 2, 6, 4});
  // Nothing fits under 5 GiB: the least peaks.
  CHECK(index(sweep::stage2_shapes(rs, 5.0 * 1024 * 1024 * 1024, 3)) == std::vector<std::size_t>{0, 3, 5});
  // 2's activations (68 GiB) and logits (3 GiB) alone exceed 70 GiB: no sharding makes it fit, so
  // 6 and 4 are taken instead. Its parameters and optimizer state do not count.
  const double gib = 1024.0 * 1024 * 1024;
  rs[2].metrics["memory_breakdown"] = {{"activations", 68 * gib}, {"loss", 3 * gib}, {"optimizer_state", 1 * gib}};
  CHECK(sweep::unshardable_bytes(rs[2]) == doctest::Approx(71 * gib).scale(gib));
  CHECK(index(sweep::stage2_shapes(rs, limit, 2)) == std::vector<std::size_t>{1, 3, 6, 4});
  rs[2].metrics["memory_breakdown"]["activations"] = 66 * gib;  // 69 GiB: a sharding might
  CHECK(index(sweep::stage2_shapes(rs, limit, 2)) == std::vector<std::size_t>{1, 3, 2, 6});
}

TEST_CASE("stage 3 tries every prefetch x limiter setting on each finalist") {
  const auto space = sweep::tune_space(tiny({}), std::nullopt);
  const auto points = sweep::stage3_points(space, {result(0, 1, 1), result(1, 1, 2)});
  REQUIRE(points.size() == 2 * 3 * 2);
  CHECK(points[0].assignments == std::vector<std::string>{"p=0", "fsdp.backward_prefetch=pre", "fsdp.limit_all_gathers=true"});
  CHECK(points[11].assignments == std::vector<std::string>{"p=1", "fsdp.backward_prefetch=none", "fsdp.limit_all_gathers=false"});
}

TEST_CASE("stage 3 leaves out the prefetch settings a finalist's own settings make moot") {
  // FSDP2: finalist 0 keeps every unit's parameters (backward prefetching moot), finalist 1 has
  // nothing moot, finalist 2 both keys moot: 2 + 4 + 0 points.
  const auto space = sweep::tune_space(tiny({"fsdp.version=2"}), std::nullopt);
  const sweep::MootKeys moot = [](const sweep::PointResult& f) {
    if (f.index == 0) return std::vector<std::string>{"fsdp.backward_prefetch_depth"};
    if (f.index == 2) return std::vector<std::string>{"fsdp.backward_prefetch_depth", "fsdp.forward_prefetch"};
    return std::vector<std::string>{};
  };
  const auto points = sweep::stage3_points(space, {result(0, 1, 1), result(1, 1, 2), result(2, 1, 3)}, moot);
  REQUIRE(points.size() == 2 + 4);
  CHECK(points[0].assignments == std::vector<std::string>{"p=0", "fsdp.forward_prefetch=false"});
  CHECK(points[1].assignments == std::vector<std::string>{"p=0", "fsdp.forward_prefetch=true"});
  CHECK(points[2].assignments == std::vector<std::string>{"p=1", "fsdp.backward_prefetch_depth=1", "fsdp.forward_prefetch=false"});
  CHECK(points[5].index == 5);

  // What the scenario says is moot: shard_grad_op keeps every unit's parameters, so fully_shard's
  // backward prefetch list has nothing to prefetch and the scenario warns of it.
  const auto sgo = tiny({"fsdp.version=2", "fsdp.sharding=shard_grad_op", "fsdp.backward_prefetch_depth=2", "fsdp.forward_prefetch=true"});
  std::vector<std::string> warned;
  for (const auto& w : sgo.warnings) warned.push_back(w.key_path);
  CHECK(std::find(warned.begin(), warned.end(), "fsdp.backward_prefetch_depth") != warned.end());
  CHECK(std::find(warned.begin(), warned.end(), "fsdp.forward_prefetch") == warned.end());
}

TEST_CASE("ranking leaves out a stage-2 setting that changed nothing, not other configurations with the same figures") {
  // 0 and 1 are stage-1 points with equal figures (both kept: other settings); 2 extends 0 and
  // changed nothing; 3 extends 0 and is faster; 4 extends 1 and changed nothing either.
  std::vector<sweep::PointResult> rs{result(0, 200, 50), result(1, 200, 50), result(2, 200, 50), result(3, 300, 50), result(4, 200, 50)};
  rs[2].assignments = {"p=0", "fsdp.forward_prefetch=false"};
  rs[3].assignments = {"p=0", "fsdp.forward_prefetch=true"};
  rs[4].assignments = {"p=1", "fsdp.forward_prefetch=false"};
  CHECK(sweep::ranked(rs, std::nullopt, 10) == std::vector<std::size_t>{3, 0, 1});
  CHECK(sweep::ranked(rs, std::nullopt, 2) == std::vector<std::size_t>{3, 0});
}

TEST_CASE("ranking: the most tokens/s within the limit (ties to less memory) and equal results are one finalist") {
  std::vector<sweep::PointResult> rs{result(0, 100, 10), result(1, 300, 75),       result(2, 200, 60),
                                     result(3, 200, 50), result(4, 400, 90, true), result(5, 200, 50)};
  // Without a limit, the GPU's (oom flag): 4 is out. 2 and 3 tie on tokens/s; 3 uses less memory.
  CHECK(sweep::ranked(rs, std::nullopt, 10) == std::vector<std::size_t>{1, 3, 5, 2, 0});
  // A 70 GiB limit also drops 1 (75 GiB).
  const double limit = 70.0 * 1024 * 1024 * 1024;
  CHECK(sweep::ranked(rs, limit, 2) == std::vector<std::size_t>{3, 5});
  CHECK(!sweep::fits(rs[1], limit));
  // 5 has the same figures as 3: the same schedule, refined once.
  const auto f = sweep::finalists(rs, limit, 3);
  REQUIRE(f.size() == 3);
  CHECK(f[0].index == 3);
  CHECK(f[1].index == 2);
  CHECK(f[2].index == 0);
}

TEST_CASE("the recommended settings are a YAML block that reads back to the same values") {
  const std::string yaml = sweep::yaml_snippet({"training.micro_batch=2", "training.grad_accum=4", "fsdp.sharding=shard_grad_op",
                                                "fsdp.wrap={policy: module, module: block, blocks_per_unit: 2}"},
                                               {"found by a test", ""});
  CHECK(yaml ==
        "# found by a test\n"
        "#\n"
        "training:\n"
        "  micro_batch: 2\n"
        "  grad_accum: 4\n"
        "fsdp:\n"
        "  sharding: shard_grad_op\n"
        "  wrap: {policy: module, module: block, blocks_per_unit: 2}\n");
  const auto node = config::parse_yaml(yaml, Location{"snippet", 0, 0});
  CHECK(node.find("training")->find("grad_accum")->scalar == "4");
  CHECK(node.find("fsdp")->find("wrap")->find("blocks_per_unit")->scalar == "2");
}

TEST_CASE("tune --tp: one layout axis of TP degree, micro-batch and accumulation that keeps the global batch") {
  // One sequence per GPU at tp 1; a TP group of t shares one data-parallel rank, so it takes t
  // sequences per step: t = 2 -> 1 x 2 or 2 x 1, t = 4 -> 1 x 4, 2 x 2, 4 x 1.
  const auto space = sweep::tune_space(tiny({}), std::nullopt, {.tp = {1, 2, 4}});
  REQUIRE(space.shape.size() == 2);
  CHECK(space.shape[1].label() == "parallelism.tp / parallelism.pp / training.micro_batch / training.grad_accum");
  std::vector<std::string> layouts;
  for (std::size_t i = 0; i < space.shape[1].size(); ++i) layouts.push_back(space.shape[1].value_label(i));
  CHECK(layouts ==
        std::vector<std::string>{"1 / 1 / 1 / 1", "2 / 1 / 1 / 2", "2 / 1 / 2 / 1", "4 / 1 / 1 / 4", "4 / 1 / 2 / 2", "4 / 1 / 4 / 1"});
  CHECK(sweep::stage1_points(space, false).size() == 3 * 6 + 1);
  CHECK(sweep::stage1_points(space, true).size() == 3 * 6 * 4 * 4 + 1);
  // Only the scenario's own degree: the batch axis as before.
  CHECK(sweep::tune_space(tiny({}), std::nullopt, {.tp = {1}}).shape[1].label() == "training.micro_batch / training.grad_accum");
}

TEST_CASE("tune refuses a layout search none of whose degrees divides the GPUs") {
  // The tiny Llama on 8 GPUs, one sequence per GPU: tp 3 and 5 divide neither 8, nor does 3 x 1.
  CHECK_THROWS_WITH_AS(sweep::tune_space(tiny({}), std::nullopt, {.tp = {3, 5}}),
                       doctest::Contains("no layout to search among tp 3, 5: a layout's tp x pp x cp group must divide the 8 GPUs"),
                       UsageError);
  // tp 2, 3: 2 divides 8, so the search keeps tp 2's layouts and leaves 3 out.
  const auto kept = sweep::tune_space(tiny({}), std::nullopt, {.tp = {2, 3}});
  REQUIRE(kept.shape.size() == 2);
  CHECK(kept.shape[1].size() == 2);  // tp 2: 1 x 2 and 2 x 1
}

TEST_CASE("tune --pp: pipelined layouts keep the global batch as one micro-step of one-sequence micro-batches") {
  // The tiny Llama on 8 GPUs, pp 1, 2, 4. One sequence per GPU at pp 1; a pipeline of p ranks
  // shares one data-parallel rank, so it runs p sequences per step, as micro_batch p (p
  // micro-batches of one sequence) and no accumulation.
  const auto base = tiny({});
  const auto space = sweep::tune_space(base, std::nullopt, {.pp = {1, 2, 4}});
  std::vector<std::string> layouts;
  for (std::size_t i = 0; i < space.shape[1].size(); ++i) layouts.push_back(space.shape[1].value_label(i));
  CHECK(layouts == std::vector<std::string>{"1 / 1 / 1 / 1", "1 / 2 / 2 / 1", "1 / 4 / 4 / 1"});
}

TEST_CASE("tune --cp and --pp-schedule: context-parallel layouts and a schedule per pipelined layout") {
  // A CP group of c shares one data-parallel rank's sequences like a TP group: c sequences per
  // step at cp c. Schedules apply to the pipelined layouts only: the others leave the key alone
  // (an empty value sets nothing).
  const auto base = tiny({});
  const auto cp = sweep::tune_space(base, std::nullopt, {.cp = {1, 2}});
  CHECK(cp.shape[1].label() == "parallelism.tp / parallelism.pp / parallelism.cp / training.micro_batch / training.grad_accum");
  std::vector<std::string> layouts;
  for (std::size_t i = 0; i < cp.shape[1].size(); ++i) layouts.push_back(cp.shape[1].value_label(i));
  CHECK(layouts == std::vector<std::string>{"1 / 1 / 1 / 1 / 1", "1 / 1 / 2 / 1 / 2", "1 / 1 / 2 / 2 / 1"});
  const auto sched = sweep::tune_space(base, std::nullopt, {.pp = {1, 2}, .pp_schedules = {"1f1b", "gpipe"}});
  const auto points = sweep::stage1_points(sched, false);
  int pipelined = 0;
  int plain = 0;
  for (const auto& p : points) {
    if (p.assignments.empty()) continue;  // the scenario as written
    const bool pp2 = std::find(p.assignments.begin(), p.assignments.end(), "parallelism.pp=2") != p.assignments.end();
    const bool has_schedule = std::any_of(p.assignments.begin(), p.assignments.end(),
                                          [](const std::string& a) { return a.rfind("parallelism.pp_schedule=", 0) == 0; });
    CHECK(has_schedule == pp2);
    (pp2 ? pipelined : plain) += 1;
  }
  CHECK(pipelined == 2 * plain);  // two schedules for the one pipelined layout, none for pp 1
  // What auto searches for the tiny Llama (512-token sequences, 8 GPUs a node): cp 1 to 8.
  CHECK(graph::context_parallel_degrees(base) == std::vector<int>{1, 2, 4, 8});
  CHECK(graph::pipeline_schedules(tiny({"training.compile=true"})) == std::vector<std::string>{"1f1b", "gpipe", "interleaved_1f1b"});
}

TEST_CASE("tune --tp-async: async TP on and off on the tensor-parallel layouts only") {
  // tp 1 and 2: tp 1 leaves tp_async as the scenario has it (one layout), tp 2 tries false and
  // true on each of its batch splits (1 x 2 and 2 x 1).
  const auto space = sweep::tune_space(tiny({}), std::nullopt, {.tp = {1, 2}, .tp_async = true});
  std::vector<std::string> layouts;
  for (std::size_t i = 0; i < space.shape[1].size(); ++i) layouts.push_back(space.shape[1].value_label(i));
  CHECK(layouts == std::vector<std::string>{"1 / 1 / 1 / 1 / ", "2 / 1 / 1 / 2 / false", "2 / 1 / 1 / 2 / true", "2 / 1 / 2 / 1 / false",
                                            "2 / 1 / 2 / 1 / true"});
}

TEST_CASE("tune leaves out the points whose FSDP units would hold more blocks than a pipeline stage has") {
  // The tiny Llama's 4 blocks over pp 1, 2, 4: a stage holds 4, 2 or 1 of them, so the wrap of
  // 4 blocks a unit fits pp 1 only and that of 2 pp 1 and 2 (the loader refuses the others). Per
  // layout 3 checkpointing modes x 4 shardings: pp 2 loses the 4-block wrap (12 points), pp 4 the
  // 2- and 4-block wraps (24): 36 of 3 x 3 x 4 x 4 = 144. The size policy holds no block count.
  auto space = sweep::tune_space(tiny({}), std::nullopt, {.pp = {1, 2, 4}, .blocks = 4});
  std::size_t left_out = 0;
  const auto points = sweep::stage1_points(space, true, &left_out);
  CHECK(left_out == 36);
  CHECK(points.size() == 144 - 36 + 1);  // and the scenario as written
  for (std::size_t i = 0; i < points.size(); ++i) CHECK(points[i].index == i);
  const auto has = [](const sweep::Point& p, const std::string& a) {
    return std::find(p.assignments.begin(), p.assignments.end(), a) != p.assignments.end();
  };
  for (const auto& p : points) {
    CHECK_FALSE((has(p, "parallelism.pp=4") && has(p, "fsdp.wrap={policy: module, module: block, blocks_per_unit: 2}")));
    CHECK_FALSE((has(p, "parallelism.pp=2") && has(p, "fsdp.wrap={policy: module, module: block, blocks_per_unit: 4}")));
  }
  // Staged, stage 1 sets no wrap and stage 2 leaves them out of each shape: pp 4's shape keeps 2
  // of the 4 wraps (one block a unit, the size policy), pp 2's 3, each with the 4 shardings.
  CHECK(sweep::stage1_points(space, false, &left_out).size() == 3 * 3 + 1);
  CHECK(left_out == 0);
  std::vector<sweep::PointResult> shapes{result(0, 1, 1), result(1, 1, 1)};
  shapes[0].assignments = {"parallelism.pp=4"};
  shapes[1].assignments = {"parallelism.pp=2"};
  CHECK(sweep::stage2_points(space, shapes, &left_out).size() == 4 * 2 + 4 * 3);
  CHECK(left_out == 4 * 2 + 4 * 1);
  // Without the model's block count nothing is left out.
  space.blocks = 0;
  CHECK(sweep::stage1_points(space, true).size() == 145);
}

TEST_CASE("tune counts the model stages of a multi-chunk schedule: two a pipeline rank") {
  // The tiny Llama's 4 blocks, pp 1, 2, 4 under 1F1B and interleaved 1F1B (two model stages a
  // rank by default): pp 4 interleaved would be 8 stages of 4 blocks, which the loader refuses,
  // so it is not a layout; pp 2 interleaved is 4 stages of one block each.
  const auto space =
      sweep::tune_space(tiny({}), std::nullopt, {.pp = {1, 2, 4}, .pp_schedules = {"1f1b", "interleaved_1f1b"}, .blocks = 4});
  std::vector<std::string> layouts;
  for (std::size_t i = 0; i < space.shape[1].size(); ++i) layouts.push_back(space.shape[1].value_label(i));
  CHECK(layouts ==
        std::vector<std::string>{"1 / 1 / 1 / 1 / ", "1 / 2 / 2 / 1 / 1f1b", "1 / 2 / 2 / 1 / interleaved_1f1b", "1 / 4 / 4 / 1 / 1f1b"});
  CHECK(space.too_deep == 1);  // counted, for tune's output to say
  // Stage 2 on pp 2: under 1F1B a stage holds 2 blocks (the 4-block wrap left out: 3 wraps x 4
  // shardings kept); interleaved, one (the 2- and 4-block wraps left out: 2 x 4 kept).
  std::vector<sweep::PointResult> shapes{result(0, 1, 1), result(1, 1, 1)};
  shapes[0].assignments = {"parallelism.pp=2", "parallelism.pp_schedule=1f1b"};
  shapes[1].assignments = {"parallelism.pp=2", "parallelism.pp_schedule=interleaved_1f1b"};
  std::size_t left_out = 0;
  CHECK(sweep::stage2_points(space, shapes, &left_out).size() == 4 * 3 + 4 * 2);
  CHECK(left_out == 4 * 1 + 4 * 2);
  // Nothing left to search when every pipelined layout is deeper than the model.
  CHECK_THROWS_WITH_AS(sweep::tune_space(tiny({}), std::nullopt, {.pp = {4}, .pp_schedules = {"interleaved_1f1b"}, .blocks = 4}),
                       doctest::Contains("more model stages (pp x stages per rank) than the model's 4 blocks"), UsageError);
}

#include "graph/timeline_io.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/error.hpp"

using namespace shardsim;

namespace {

graph::StepGraph two_ops() {
  graph::StepGraph g;
  g.info.scenario = "t";
  g.info.world_size = 3;
  graph::Op ag;
  ag.kind = graph::OpKind::all_gather;
  ag.stream = graph::Stream::all_gather;
  ag.group = graph::Group::shard;
  ag.name = "AG x";
  graph::Op fwd;
  fwd.name = "FWD x";
  fwd.step = 0;
  fwd.micro = 1;
  g.add_op(ag);
  g.add_op(fwd);
  return g;
}

std::string error_of(const nlohmann::json& j) {
  try {
    (void)graph::timeline_from_json(j, "t.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("a timeline survives to_json and back, ranks beyond the limit are left out") {
  const auto g = two_ops();
  graph::Timeline t(2, 3);
  t.at(0, 0) = {0, 1.5e-3};
  t.at(0, 1) = {0, 1.5e-3};
  t.at(1, 0) = {1.5e-3, 4e-3};
  // op 1 never ran on rank 1 (start -1): written as null
  const auto f = graph::make_timeline_file(g, t, {"measured", "cpu", "test cpu"}, {0, 1});
  const auto j = graph::to_json(f);
  CHECK(j["ranks"] == 2);
  CHECK(j["rank_ids"] == nlohmann::json::array({0, 1}));
  CHECK(j["world_size"] == 3);
  CHECK(j["ops"][1]["start"][1].is_null());
  const auto back = graph::timeline_from_json(j, "t.json");
  CHECK(back.meta.backend == "cpu");
  CHECK(back.meta.device == "test cpu");
  REQUIRE(back.ops.size() == 2);
  CHECK(back.ops[0].kind == graph::OpKind::all_gather);
  CHECK(back.ops[0].stream == graph::Stream::all_gather);
  CHECK(back.ops[1].micro == 1);
  CHECK(back.timeline.world() == 2);
  CHECK(back.ranks == std::vector<int>{0, 1});
  CHECK(back.timeline.at(1, 0).end == 4e-3);
  CHECK(back.timeline.at(1, 1).start == -1);
}

TEST_CASE("a timeline reads back ops of every stream, tensor, pipeline and context parallelism's too") {
  // run --out writes the streams of TP, PP and CP runs (tp, pp, cp) and of offload (h2d, d2h,
  // nvme); compare read only the first six and refused such a timeline.
  for (int s = 0; s < graph::kStreams; ++s) {
    auto g = two_ops();
    graph::StepGraph one;
    one.info = g.info;
    graph::Op op = g.op(1);
    op.stream = static_cast<graph::Stream>(s);
    one.add_op(op);
    graph::Timeline t(1, 1);
    t.at(0, 0) = {0, 1e-3};
    const auto back = graph::timeline_from_json(graph::to_json(graph::make_timeline_file(one, t, {}, {0})), "t.json");
    REQUIRE(back.ops.size() == 1);
    CHECK(back.ops[0].stream == static_cast<graph::Stream>(s));
  }
}

TEST_CASE("malformed timelines name the key that is wrong") {
  const auto g = two_ops();
  graph::Timeline t(2, 1);
  t.at(0, 0) = {0, 1};
  t.at(1, 0) = {1, 2};
  const auto good = graph::to_json(graph::make_timeline_file(g, t, {}, {0}));
  auto j = good;
  j["format_version"] = 7;
  CHECK(error_of(j) == "t.json: error: format_version: expected 1..2; got 7 (written by a newer shardsim?)");
  j = good;
  j["ops"][1]["end"][0] = 0.5;
  CHECK(error_of(j) == "t.json: error: ops[1].end[0]: expected 0 <= start <= end; got start 1 and end 0.5");
  j = good;
  j["ops"][0]["kind"] = "all_gathr";
  CHECK(error_of(j).find("t.json: error: ops[0].kind: expected one of all_gather, reduce_scatter") == 0);
  j = good;
  j["ops"][0]["start"] = nlohmann::json::array();
  CHECK(error_of(j) == "t.json: error: ops[0].start: expected an array of 1 times (one per rank) or nulls");
  j = good;
  j.erase("steps");
  CHECK(error_of(j) == "t.json: error: steps: missing required key");
}

TEST_CASE("a pipelined run's timeline holds ranks of every stage, named by rank_ids") {
  // 16 ranks in 4 stages of 4 (stage = rank / 4); a file of at most 8 ranks keeps the first 8 / 4 = 2
  // of every stage: 0, 1, 4, 5, 8, 9, 12, 13. Without stages it keeps 0 .. 7.
  auto g = two_ops();
  g.info.world_size = 16;
  g.info.pp_group = 4;
  graph::Timeline t(2, 16);
  for (int r = 0; r < 16; ++r) t.at(1, r) = {0.0, r + 1.0};  // rank r's op 1 ends at r + 1 s
  const std::vector<int> shown = graph::ranks_to_show(g, t, 8);
  CHECK(shown == std::vector<int>{0, 1, 4, 5, 8, 9, 12, 13});
  const auto j = graph::to_json(graph::make_timeline_file(g, t, {}, shown));
  CHECK(j["format_version"] == 2);
  CHECK(j["rank_ids"] == nlohmann::json::array({0, 1, 4, 5, 8, 9, 12, 13}));
  CHECK(j["ops"][1]["end"][4] == 9.0);  // column 4 is rank 8
  const auto back = graph::timeline_from_json(j, "t.json");
  CHECK(back.ranks == shown);
  CHECK(back.timeline.at(1, 7).end == 14.0);  // column 7 is rank 13
  // Fewer slots than stages: one rank a stage all the same.
  CHECK(graph::ranks_to_show(g, t, 2) == std::vector<int>{0, 4, 8, 12});
  g.info.pp_group = 1;
  CHECK(graph::ranks_to_show(g, t, 8) == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
}

TEST_CASE("a timeline of format 1 reads as its first ranks, and rank_ids are checked") {
  const auto g = two_ops();  // a job of 3 ranks: ranks 0 and 2 stored
  graph::Timeline t(2, 3);
  t.at(0, 0) = {0, 1};
  t.at(0, 2) = {0, 2};
  auto j = graph::to_json(graph::make_timeline_file(g, t, {}, {0, 2}));
  auto v1 = j;
  v1["format_version"] = 1;
  v1.erase("rank_ids");
  CHECK(graph::timeline_from_json(v1, "t.json").ranks == std::vector<int>{0, 1});
  auto bad = j;
  bad.erase("rank_ids");
  CHECK(error_of(bad) == "t.json: error: rank_ids: missing required key");
  bad = j;
  bad["rank_ids"] = nlohmann::json::array({2, 0});
  CHECK(error_of(bad) == "t.json: error: rank_ids[1]: expected ranks in ascending order, each once; got 0 after 2");
  bad = j;
  bad["rank_ids"] = nlohmann::json::array({0, 3});
  CHECK(error_of(bad).find("t.json: error: rank_ids[1]: ") == 0);
  bad = j;
  bad["rank_ids"] = nlohmann::json::array({0});
  CHECK(error_of(bad) == "t.json: error: rank_ids: expected an array of 2 ranks (one per stored rank, as \"ranks\" says)");
}

TEST_CASE("a timeline written piece by piece is the text of the file made in memory") {
  // run --out streams the timeline of the ranks it shows (write_timeline); the replay harness and
  // the tests make the file first (make_timeline_file, timeline_text). Ranks 0 and 2 of 3.
  const auto g = two_ops();
  graph::Timeline t(2, 3);
  for (int r = 0; r < 3; ++r) t.at(0, r) = {0.0, 0.25 * (r + 1)};
  t.at(1, 2) = {1.0, 1.5};
  std::string streamed;
  int pieces = 0;
  graph::write_timeline(g, t, {"simulated", "simgrid", ""}, {0, 2}, [&](std::string_view piece) {
    streamed += piece;
    ++pieces;
  });
  CHECK(pieces >= 1);
  CHECK(streamed == graph::timeline_text(graph::make_timeline_file(g, t, {"simulated", "simgrid", ""}, {0, 2})));
  const auto back = graph::timeline_from_json(nlohmann::json::parse(streamed), "t.json");
  CHECK(back.ranks == std::vector<int>{0, 2});
  CHECK(back.timeline.at(0, 1).end == 0.75);  // column 1 is rank 2
  CHECK(back.timeline.at(1, 0).start == -1);  // op 1 did not run on rank 0
}

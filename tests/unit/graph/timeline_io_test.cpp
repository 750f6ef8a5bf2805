#include "graph/timeline_io.hpp"

#include <doctest/doctest.h>

#include <string>

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
  const auto f = graph::make_timeline_file(g, t, {"measured", "cpu", "test cpu"}, 2);
  const auto j = graph::to_json(f);
  CHECK(j["ranks"] == 2);
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
    const auto back = graph::timeline_from_json(graph::to_json(graph::make_timeline_file(one, t, {}, 1)), "t.json");
    REQUIRE(back.ops.size() == 1);
    CHECK(back.ops[0].stream == static_cast<graph::Stream>(s));
  }
}

TEST_CASE("malformed timelines name the key that is wrong") {
  const auto g = two_ops();
  graph::Timeline t(2, 1);
  t.at(0, 0) = {0, 1};
  t.at(1, 0) = {1, 2};
  const auto good = graph::to_json(graph::make_timeline_file(g, t, {}, 1));
  auto j = good;
  j["format_version"] = 7;
  CHECK(error_of(j) == "t.json: error: format_version: expected 1..1; got 7 (written by a newer shardsim?)");
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

// The results files: a JSONL record round-trips, torn and damaged lines are recognised, CSV
// fields are quoted per RFC 4180.
#include <doctest/doctest.h>

#include <fstream>

#include "sweep/result.hpp"
#include "test_support.hpp"

using namespace shardsim;

namespace {

sweep::PointResult sample() {
  sweep::PointResult r;
  r.index = 7;
  r.assignments = {"fsdp.backward_prefetch=post", "fsdp.wrap={policy: size, min_params: 5e8}"};
  r.metrics = {
      {"step_time_s", 2.9461846}, {"tokens_per_s_per_gpu", 5561.5}, {"oom", false}, {"world_size", 8}, {"peak_memory_bytes", 7.4e10}};
  return r;
}

}  // namespace

TEST_CASE("a results.jsonl line reads back as the same record and writing it again gives the same bytes") {
  const auto r = sample();
  const std::string line = sweep::jsonl_line(r);
  CHECK(line.rfind(R"({"point":7,"set":["fsdp.backward_prefetch=post","fsdp.wrap={policy: size, min_params: 5e8}"],"status":"ok",)", 0) ==
        0);
  const auto back = sweep::parse_jsonl_line(line);
  REQUIRE(back.has_value());
  CHECK(back->index == 7);
  CHECK(back->assignments == r.assignments);
  CHECK(back->ok());
  CHECK(back->number("step_time_s") == 2.9461846);
  CHECK(sweep::jsonl_line(*back) == line);

  sweep::PointResult e;
  e.index = 3;
  e.assignments = {"cluster.nodes=0"};
  e.error = "--set cluster.nodes=0: error: cluster.nodes: expected an integer >= 1; got 0";
  const auto eb = sweep::parse_jsonl_line(sweep::jsonl_line(e));
  REQUIRE(eb.has_value());
  CHECK(!eb->ok());
  CHECK(eb->error == e.error);
}

TEST_CASE("torn and damaged lines are not records") {
  const std::string line = sweep::jsonl_line(sample());
  CHECK(!sweep::parse_jsonl_line(line.substr(0, line.size() / 2)).has_value());
  CHECK(!sweep::parse_jsonl_line(R"({"point":1,"set":[],"status":"maybe"})").has_value());
  CHECK(!sweep::parse_jsonl_line(R"({"point":1,"set":[],"status":"error"})").has_value());  // an error needs its text
  CHECK(!sweep::parse_jsonl_line(R"({"point":-1,"set":[],"status":"ok"})").has_value());
  CHECK(!sweep::parse_jsonl_line("[1, 2]").has_value());

  // Two good lines, a damaged one, and a last line cut short by a kill.
  const test::TempFile f("results.jsonl", line + "\n" + line + "\n{\"point\":\n" + line.substr(0, 20));
  const auto read = sweep::read_jsonl(f.path());
  CHECK(read.rows.size() == 2);
  CHECK(read.damaged == 1);
  CHECK(read.torn_tail);
  CHECK(sweep::read_jsonl(f.path().parent_path() / "absent.jsonl").rows.empty());
}

TEST_CASE("results.csv has a column per swept key and quotes fields with commas or quotes") {
  const std::vector<std::string> keys{"fsdp.backward_prefetch", "fsdp.wrap", "cluster.nodes"};
  CHECK(sweep::csv_header(keys) ==
        "point,fsdp.backward_prefetch,fsdp.wrap,cluster.nodes,status,step_time_s,tokens_per_s_per_gpu,tflops_per_gpu,mfu,compute_s,comm_s,"
        "exposed_comm_s,peak_memory_bytes,gpu_memory_bytes,oom,world_size,error\n");
  // Columns absent from the summary stay empty; the unset swept key (cluster.nodes) too.
  CHECK(sweep::csv_row(sample(), keys) == "7,post,\"{policy: size, min_params: 5e8}\",,ok,2.9461846,5561.5,,,,,,74000000000.0,,false,8,\n");
  sweep::PointResult e;
  e.index = 1;
  e.error = "bad \"value\", really";
  CHECK(sweep::csv_row(e, {}) == "1,error,,,,,,,,,,,,\"bad \"\"value\"\", really\"\n");
}

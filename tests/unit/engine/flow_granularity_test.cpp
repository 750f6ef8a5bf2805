// One flow per ring path (the default) against one flow per ring edge (the literal form of the
// ring): on symmetric traffic they give the same step, including when collectives of different
// groups overlap (hybrid sharding's intra-node reduce-scatter and inter-node all-reduce).
#include <doctest/doctest.h>

#include "engine/scenario_run.hpp"
#include "fixtures/fixtures.hpp"
#include "test_support.hpp"

using namespace shardsim;

namespace {

double step_time(std::vector<std::string> sets) {
  return test::in_child([&] {
    // One step (FSDP1 without forward prefetch): the step time is the makespan.
    return engine::simulate(test::prepared("tests/data/tiny_llama.yaml", sets)).timeline.makespan();
  });
}

}  // namespace

TEST_CASE("path and edge flows agree on one node") {
  const double path = step_time({"simulation.flows=path"});
  const double edge = step_time({"simulation.flows=edge"});
  CHECK(path == doctest::Approx(edge).epsilon(1e-6).scale(0));
}

TEST_CASE("path and edge flows agree across nodes with hybrid sharding") {
  const std::vector<std::string> base{"cluster.nodes=4", "fsdp.sharding=hybrid_shard"};
  auto with = [&](const char* flows) {
    auto s = base;
    s.emplace_back(flows);
    return s;
  };
  const double path = step_time(with("simulation.flows=path"));
  const double edge = step_time(with("simulation.flows=edge"));
  CHECK(path == doctest::Approx(edge).epsilon(1e-6).scale(0));
  const double full_path = step_time({"cluster.nodes=4", "simulation.flows=path"});
  const double full_edge = step_time({"cluster.nodes=4", "simulation.flows=edge"});
  CHECK(full_path == doctest::Approx(full_edge).epsilon(1e-6).scale(0));
}

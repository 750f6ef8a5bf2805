// Cohorts (engine/cohorts.hpp): ranks that run alike are simulated as one. The bookkeeping by
// hand, then the engine with cohorts against the engine with every rank on its own, on runs
// whose ranks come to differ (slow GPUs, degraded NICs, TP groups, hybrid sharding, jobs).
#include "engine/cohorts.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cmath>

#include "engine/scenario_run.hpp"
#include "fixtures/fixtures.hpp"
#include "test_support.hpp"

using namespace shardsim;
using graph::Group;

TEST_CASE("cohorts: instances counted per group kind - a split moves one instance's ranks and keeps both cohorts' state") {
  // 8 ranks, TP pairs {0 1} {2 3} {4 5} {6 7}: instance r / 2.
  const std::vector<std::int32_t> preds{0, 1, 2};
  engine::Cohorts cohorts(8, preds, 1, [](Group, int rank) { return rank / 2; });
  const int all = cohorts.add({0, 1, 2, 3, 4, 5, 6, 7}, 1.0);
  cohorts.interval(all, 0) = {0.0, 1.0};
  cohorts.remaining(all, 2) = 1;
  const auto& inst = cohorts.instances(all, Group::tp);
  REQUIRE(inst.size() == 4);
  CHECK(inst[1] == std::make_pair(1, 2));
  CHECK(cohorts.members_in(all, Group::tp, {0, 2}) == 4);

  const engine::CohortRef before = cohorts.ref(all);
  const int pair = cohorts.split(all, Group::tp, {1});
  CHECK(cohorts[pair].members == std::vector<int>{2, 3});
  CHECK(cohorts[all].members == std::vector<int>{0, 1, 4, 5, 6, 7});
  CHECK(cohorts.of(3) == pair);
  CHECK(cohorts.of(4) == all);
  // The split-off cohort starts as a copy of everything the cohort held.
  CHECK(cohorts.interval(pair, 0).end == 1.0);
  CHECK(cohorts.remaining(pair, 1) == 1);
  CHECK(cohorts.remaining(pair, 2) == 1);
  // The pools grew to make room (capacity 1 at first) without losing the first cohort's state.
  CHECK(cohorts.interval(all, 0).end == 1.0);
  CHECK(cohorts.remaining(all, 2) == 1);
  CHECK(cohorts.members_in(all, Group::tp, {1}) == 0);
  // An event recorded before the split concerns both parts; one recorded after, only its cohort.
  std::vector<int> seen;
  cohorts.expand(before, [&](int c) { seen.push_back(c); });
  CHECK(seen == std::vector<int>{all, pair});
  seen.clear();
  cohorts.expand(cohorts.ref(all), [&](int c) { seen.push_back(c); });
  CHECK(seen == std::vector<int>{all});

  // Job 0's timeline: ranks 0-3 here, two classes.
  std::vector<int> cohort_of_class;
  const graph::Timeline t = cohorts.take_timeline(4, cohort_of_class);
  CHECK(t.classes() == 2);
  CHECK(t.class_of(0) == t.class_of(1));
  CHECK(t.class_of(2) == t.class_of(3));
  CHECK(t.class_of(0) != t.class_of(2));
  CHECK(t.distinct_ranks() == std::vector<int>{0, 2});
  CHECK(t.at(0, 3).end == 1.0);
}

namespace {

// A run's figures, in a form that comes back from a child process.
struct Digest {
  double makespan = 0;
  double ends = 0;  // every (op, rank) end, weighted so that a swap between ranks shows
  double starts = 0;
  double waited = 0;  // every rank's waiting, weighted the same way
  double held = 0;
  int classes = 0;
  int world = 0;
};

Digest digest(const std::vector<std::string>& sets, bool cohorts) {
  return test::in_child([&] {
    const auto p = test::prepared("tests/data/tiny_llama.yaml", sets);
    const auto r = engine::simulate(p, {}, cohorts);
    Digest d;
    d.makespan = r.timeline.makespan();
    d.classes = r.timeline.classes();
    d.world = r.timeline.world();
    for (int rank = 0; rank < r.timeline.world(); ++rank) {
      const double w = 1 + rank % 5 + 0.1 * rank;
      for (std::size_t o = 0; o < r.timeline.ops(); ++o) {
        d.ends += w * r.timeline.at(static_cast<int>(o), rank).end;
        d.starts += w * r.timeline.at(static_cast<int>(o), rank).start;
      }
      for (const auto& i : r.waiting[static_cast<std::size_t>(r.timeline.class_of(rank))]) d.waited += w * (i.end - i.start);
      for (const auto& i : r.holding[static_cast<std::size_t>(rank)]) d.held += w * (i.end - i.start);
    }
    return d;
  });
}

}  // namespace

TEST_CASE("cohorts: the same timeline and waits as every rank simulated on its own") {
  const std::vector<std::vector<std::string>> runs{
      // FSDP1 on two nodes, a slow GPU and a NIC at half its bandwidth.
      {"cluster.nodes=2", "simulation.mode=full", "stragglers.slow_gpus=[{rank: 5, factor: 1.3}]",
       "stragglers.degraded_links=[{rank: 12, link: nic, factor: 0.5}]"},
      // FSDP2 x TP 2 with hybrid sharding: TP, shard and replicate groups cut the cohorts differently.
      {"cluster.nodes=2", "simulation.mode=full", "fsdp.version=2", "parallelism.tp=2", "fsdp.sharding=hybrid_shard",
       "stragglers.slow_gpus=[{rank: 3, factor: 1.2}]"},
      // FSDP2 resharding to pairs after forward, two slow GPUs alike.
      {"cluster.nodes=2", "simulation.mode=full", "fsdp.version=2", "fsdp.reshard_after_forward=2",
       "stragglers.slow_gpus=[{rank: 1, factor: 1.4}, {rank: 9, factor: 1.4}]"},
      // Two jobs on one fabric, a slow GPU in job 0.
      {"cluster.jobs=2", "simulation.mode=full", "stragglers.slow_gpus=[{rank: 2, factor: 1.25}]"},
  };
  for (const auto& sets : runs) {
    CAPTURE(sets.front());
    CAPTURE(sets.back());
    const Digest alone = digest(sets, false);
    const Digest together = digest(sets, true);
    CHECK(alone.classes == alone.world);
    CHECK(together.classes < together.world);
    CHECK(together.makespan == doctest::Approx(alone.makespan).epsilon(1e-12).scale(0));
    CHECK(together.ends == doctest::Approx(alone.ends).epsilon(1e-12).scale(0));
    CHECK(together.starts == doctest::Approx(alone.starts).epsilon(1e-12).scale(0));
    CHECK(together.waited == doctest::Approx(alone.waited).epsilon(1e-12).scale(0));
    CHECK(together.held == doctest::Approx(alone.held).epsilon(1e-12).scale(0));
    CHECK(together.held > 0);
    CHECK(together.waited > 0);
  }
}

TEST_CASE("cohorts: alike ranks stay one - a slow GPU in FSDP makes two") {
  // One shard group over 16 ranks: everyone but the slow rank arrives, waits and runs together.
  CHECK(digest({"cluster.nodes=2", "simulation.mode=full"}, true).classes == 1);
  CHECK(digest({"cluster.nodes=2", "simulation.mode=full", "stragglers.slow_gpus=[{rank: 5, factor: 1.3}]"}, true).classes == 2);
  // Jitter draws every rank's times: each rank is its own.
  CHECK(digest({"simulation.mode=full", "stragglers.jitter=0.05"}, true).classes == 8);
}

namespace {

struct Folded {
  Digest digest;
  double flows = 0;
};

Folded folded_run(const std::vector<std::string>& sets, bool fold) {
  return test::in_child([&] {
    const auto p = test::prepared("tests/data/tiny_llama.yaml", sets);
    const auto r = engine::simulate(p, {}, true, fold);
    Folded f;
    f.digest.makespan = r.timeline.makespan();
    for (int rank = 0; rank < r.timeline.world(); ++rank) {
      const double w = 1 + rank % 5 + 0.1 * rank;
      for (std::size_t o = 0; o < r.timeline.ops(); ++o) {
        f.digest.ends += w * r.timeline.at(static_cast<int>(o), rank).end;
        f.digest.starts += w * r.timeline.at(static_cast<int>(o), rank).start;
      }
      for (const auto& i : r.waiting[static_cast<std::size_t>(r.timeline.class_of(rank))]) f.digest.waited += w * (i.end - i.start);
    }
    f.flows = static_cast<double>(r.stats.flows);
    return f;
  });
}

}  // namespace

TEST_CASE("folding: tensor-parallel instances launched together run as one set of flows and end as each would") {
  struct Run {
    std::vector<std::string> sets;
    bool folds;  // whether fewer flows run folded
  };
  const std::vector<Run> runs{
      // TP 8 x FSDP2 on two nodes: a TP group per node on NVLink ports no other path crosses
      // (FSDP's groups take one rank per node, over the NICs).
      {{"cluster.nodes=2", "simulation.mode=full", "fsdp.version=2", "parallelism.tp=8"}, true},
      // ... with a slow GPU: its TP group launches apart from the other (its own cohort).
      {{"cluster.nodes=3", "simulation.mode=full", "fsdp.version=2", "parallelism.tp=8", "stragglers.slow_gpus=[{rank: 5, factor: 1.3}]"},
       true},
      // TP x PP: each stage's two groups fold together.
      {{"cluster.nodes=4", "simulation.mode=full", "fsdp.version=2", "parallelism.tp=8", "parallelism.pp=2", "training.micro_batch=4"},
       true},
      // TP 2: FSDP's rings cross the same NVLink ports (four of a node's ranks per group): nothing folds.
      {{"cluster.nodes=2", "simulation.mode=full", "fsdp.version=2", "parallelism.tp=2"}, false},
      // A degraded link: instances no longer alike, nothing folds.
      {{"cluster.nodes=2", "simulation.mode=full", "fsdp.version=2", "parallelism.tp=8",
        "stragglers.degraded_links=[{rank: 2, link: nvlink, factor: 0.5}]"},
       false},
  };
  for (const auto& run : runs) {
    CAPTURE(run.sets.back());
    const Folded each = folded_run(run.sets, false);
    const Folded one = folded_run(run.sets, true);
    CHECK(one.digest.makespan == doctest::Approx(each.digest.makespan).epsilon(1e-12).scale(0));
    CHECK(one.digest.ends == doctest::Approx(each.digest.ends).epsilon(1e-12).scale(0));
    CHECK(one.digest.starts == doctest::Approx(each.digest.starts).epsilon(1e-12).scale(0));
    CHECK(one.digest.waited == doctest::Approx(each.digest.waited).epsilon(1e-9).scale(1e-3));  // may be 0: a picosecond of slack
    if (run.folds) {
      CHECK(one.flows < each.flows);
    } else {
      CHECK(one.flows == each.flows);
    }
  }
}

// What the engine's timeline must respect on every rank, whatever the layout: an op starts no
// sooner than each op it reads (a data edge) or follows on its stream (a stream edge) has ended,
// and the compute stream runs one op at a time. Checked over FSDP1 and 2, hybrid sharding,
// ZeRO-3 with offload, float8, tensor parallelism (vanilla and async), context parallelism and the
// pipeline schedules. Randomized runs of the same relations over every published scenario found
// no violation (docs: README, "Layout" of the tests).
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/scenario_run.hpp"
#include "fixtures/fixtures.hpp"
#include "test_support.hpp"

using namespace shardsim;

namespace {

struct Violations {
  int edges = 0;                  // data and stream edges checked, summed over ranks
  int broken = 0;                 // of them, where the later op started before the earlier ended
  int overlaps = 0;               // compute-stream ops that overlap on a rank
  std::array<char, 240> first{};  // the first violation, for the message (in_child returns plain data)
};

Violations check_order(const std::vector<std::string>& sets) {
  return test::in_child([sets] {
    const auto p = test::prepared("tests/data/tiny_llama.yaml", sets);
    const auto r = engine::simulate(p);
    const auto& g = p.graph;
    const auto& t = r.timeline;
    Violations v;
    for (std::size_t id = 0; id < g.size(); ++id) {
      const int to = static_cast<int>(id);
      for (const auto& [from, kind] : g.predecessors(to)) {
        if (kind != graph::EdgeKind::data && kind != graph::EdgeKind::stream) continue;
        for (int rank = 0; rank < t.world(); ++rank) {
          const auto& a = t.at(from, rank);
          const auto& b = t.at(to, rank);
          if (a.start < 0 || b.start < 0) continue;  // a stage's op on another stage's rank
          ++v.edges;
          if (b.start < a.end - 1e-12) {
            if (v.broken++ == 0) {
              std::snprintf(v.first.data(), v.first.size(), "%s -> %s on rank %d", g.op(from).name.c_str(), g.op(to).name.c_str(), rank);
            }
          }
        }
      }
    }
    for (int rank = 0; rank < t.world(); ++rank) {
      std::vector<graph::Interval> busy;
      for (std::size_t id = 0; id < g.size(); ++id) {
        const auto& op = g.op(static_cast<int>(id));
        const auto& i = t.at(op.id, rank);
        if (op.stream == graph::Stream::compute && i.start >= 0 && i.end > i.start) busy.push_back(i);
      }
      std::sort(busy.begin(), busy.end(), [](const graph::Interval& a, const graph::Interval& b) { return a.start < b.start; });
      for (std::size_t k = 1; k < busy.size(); ++k) v.overlaps += busy[k].start < busy[k - 1].end - 1e-12 ? 1 : 0;
    }
    return v;
  });
}

}  // namespace

TEST_CASE("every rank's timeline respects data and stream order and runs one compute op at a time, in every layout") {
  const std::vector<std::vector<std::string>> layouts{
      {},
      {"fsdp.version=2", "fsdp.forward_prefetch=true"},
      {"cluster.nodes=2", "fsdp.sharding=hybrid_shard"},
      {"fsdp.sharding=zero3", "fsdp.zero3.offload_optimizer=cpu", "fsdp.zero3.offload_param=cpu"},
      {"fsdp.version=2", "training.compile=true", "training.float8.recipe=tensorwise", "training.float8.fsdp_float8_all_gather=true"},
      {"fsdp.version=2", "parallelism.tp=2"},
      {"fsdp.version=2", "parallelism.tp=2", "parallelism.tp_async=true", "training.compile=true"},
      {"fsdp.version=2", "parallelism.cp=2", "training.seq_len=1024"},
      {"fsdp.version=2", "parallelism.pp=2", "parallelism.pp_schedule=1f1b", "training.micro_batch=4"},
      {"fsdp.version=2", "parallelism.pp=2", "parallelism.pp_schedule=interleaved_1f1b", "parallelism.pp_stages_per_rank=2",
       "training.micro_batch=4"},
      {"fsdp.version=2", "parallelism.pp=2", "parallelism.pp_schedule=zbv", "training.micro_batch=4"},
      {"training.grad_accum=2", "training.activation_checkpointing=full"},
  };
  for (const auto& sets : layouts) {
    std::string shown;
    for (const auto& s : sets) shown += s + " ";
    CAPTURE(shown);
    const Violations v = check_order(sets);
    const std::string first = v.first.data();
    CAPTURE(first);
    CHECK(v.edges > 100);
    CHECK(v.broken == 0);
    CHECK(v.overlaps == 0);
  }
}

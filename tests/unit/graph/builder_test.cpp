#include "graph/builder.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "fixtures/fixtures.hpp"

using namespace shardsim;

namespace {

graph::Prepared tiny(const std::vector<std::string>& sets = {}) {
  return test::prepared("tests/data/tiny_llama.yaml", sets);
}

}  // namespace

TEST_CASE("one unit per block plus the root, the graph is a DAG with every op reachable") {
  const auto p = tiny();
  CHECK(p.plan.units.size() == 5);
  const auto order = p.graph.topological_order();
  CHECK(order.size() == p.graph.size());
  int ag = 0;
  int rs = 0;
  for (std::size_t i = 0; i < p.graph.size(); ++i) {
    const auto& op = p.graph.op(static_cast<int>(i));
    ag += op.kind == graph::OpKind::all_gather;
    rs += op.kind == graph::OpKind::reduce_scatter;
  }
  // Full shard: every block gathered in forward and again in backward, the root once (never
  // resharded after forward); one reduce-scatter per unit.
  CHECK(ag == 4 * 2 + 1);
  CHECK(rs == 5);
}

TEST_CASE("FSDP1 backward collective order follows backward_prefetch (fsdp-semantics.md section 3)") {
  // One NCCL stream, CPU issue order. PRE and POST both put AG(k-1) before RS(k); NONE issues
  // AG(k-1) at pre-backward(k-1), after RS(k). The root's reduce-scatter comes last.
  const std::vector<std::string> prefetched{"AG layers.3", "AG layers.2", "RS layers.3", "AG layers.1", "RS layers.2",
                                            "AG layers.0", "RS layers.1", "RS layers.0", "RS root"};
  const std::vector<std::string> none{"AG layers.3", "RS layers.3", "AG layers.2", "RS layers.2", "AG layers.1",
                                      "RS layers.1", "AG layers.0", "RS layers.0", "RS root"};
  auto backward_nccl = [](const graph::StepGraph& g) {
    std::vector<std::string> out;
    bool forward_done = false;
    for (std::size_t i = 0; i < g.size(); ++i) {
      const auto& op = g.op(static_cast<int>(i));
      if (op.kind == graph::OpKind::reduce_scatter) forward_done = true;
      if (op.kind == graph::OpKind::forward && op.name == "FWD loss") forward_done = true;
      if (forward_done && op.stream == graph::Stream::nccl && op.is_collective()) out.push_back(op.name);
    }
    return out;
  };
  CHECK(backward_nccl(tiny({"fsdp.backward_prefetch=pre"}).graph) == prefetched);
  CHECK(backward_nccl(tiny({"fsdp.backward_prefetch=post"}).graph) == prefetched);
  CHECK(backward_nccl(tiny({"fsdp.backward_prefetch=none"}).graph) == none);
}

TEST_CASE("the FSDP1 rate limiter makes AG(k) wait for the end of unit k-2's forward") {
  const auto p = tiny();
  const auto& g = p.graph;
  auto find = [&](const std::string& name) {
    for (std::size_t i = 0; i < g.size(); ++i) {
      if (g.op(static_cast<int>(i)).name == name) return static_cast<int>(i);
    }
    FAIL("no op " << name);
    return -1;
  };
  // AG layers.2 is preceded by a CPU wait on FWD layers.0.
  const int ag = find("AG layers.2");
  bool waits_on_fwd0 = false;
  for (const auto& [pred, kind] : g.predecessors(ag)) {
    if (g.op(pred).kind != graph::OpKind::cpu_wait) continue;
    for (const auto& [pp, k2] : g.predecessors(pred)) {
      waits_on_fwd0 |= (g.op(pp).name == "FWD layers.0" && k2 == graph::EdgeKind::rate_limit);
    }
  }
  CHECK(waits_on_fwd0);
  // Without the limiter there is no CPU wait at all.
  const auto free = tiny({"fsdp.limit_all_gathers=false"});
  for (std::size_t i = 0; i < free.graph.size(); ++i) CHECK(free.graph.op(static_cast<int>(i)).kind != graph::OpKind::cpu_wait);
}

TEST_CASE("memory effects balance: everything allocated in a step is freed by its end, but the optimizer's first state") {
  const auto p = tiny({"fsdp.version=2"});
  std::array<double, graph::kMemCategories> net{};
  double first_step = 0;
  for (std::size_t i = 0; i < p.graph.size(); ++i) {
    for (const auto& m : p.graph.op(static_cast<int>(i)).memory) {
      if (m.first_step_only) {
        CHECK(m.category == graph::MemCategory::optimizer_state);
        first_step += m.bytes;
        continue;
      }
      net[static_cast<std::size_t>(m.category)] += m.bytes;
    }
  }
  for (double b : net) CHECK(b == doctest::Approx(0.0).epsilon(1e-9));
  // AdamW's two fp32 moments of the rank's shard, made at the first step and kept: 2 x 4 bytes
  // per sharded element, and none of it in the memory the run starts with.
  double shard = 0;
  for (const auto& u : p.plan.units) shard += static_cast<double>(u.shard_numel);
  CHECK(first_step == doctest::Approx(8 * shard).scale(0));
  for (const auto& m : p.graph.info.initial_memory) CHECK(m.category != graph::MemCategory::optimizer_state);
}

TEST_CASE("FSDP2 adds copy-out and copy-in on the compute stream and separate AG / RS streams") {
  const auto p = tiny({"fsdp.version=2"});
  int copy_out = 0;
  int copy_in = 0;
  for (std::size_t i = 0; i < p.graph.size(); ++i) {
    const auto& op = p.graph.op(static_cast<int>(i));
    copy_out += op.name.rfind("copy-out", 0) == 0;
    copy_in += op.name.rfind("copy-in", 0) == 0;
    if (op.kind == graph::OpKind::all_gather) CHECK(op.stream == graph::Stream::all_gather);
    if (op.kind == graph::OpKind::reduce_scatter) CHECK(op.stream == graph::Stream::reduce_scatter);
  }
  CHECK(copy_out == 9);
  CHECK(copy_in == 5);
}

TEST_CASE("FSDP1's forward prefetch simulates two steps only where it has something to prefetch") {
  // FSDP1 records the forward order during the first step and prefetches from the second, so a
  // run that prefetches reports its second step; one that prefetches nothing needs no second.
  const auto steps = [](const std::vector<std::string>& sets) { return graph::steps_to_simulate(tiny(sets).scenario); };
  CHECK(steps({}) == 1);
  CHECK(steps({"fsdp.forward_prefetch=true"}) == 2);                            // the all-gathers
  CHECK(steps({"fsdp.forward_prefetch=true", "fsdp.sharding=no_shard"}) == 2);  // the bf16 casts of fp32 parameters
  CHECK(steps({"fsdp.forward_prefetch=true", "fsdp.sharding=no_shard", "fsdp.mixed_precision=none"}) == 1);
  CHECK(steps({"fsdp.forward_prefetch=true", "fsdp.sharding=shard_optimizer"}) == 1);  // gathered after the step
}

// The seed's PrefetchSimulator: 12 units, compute 0.10 s, all-gather 0.08 s. Without overlap
// 12 x (0.08 + 0.10) = 2.16 s; with prefetch 0.18 + 11 x max(0.08, 0.10) = 1.28 s (1.69x).
// tests/data/seed_prefetch/ holds a scenario whose toy GPU gives exactly those op times.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "engine/scenario_run.hpp"
#include "fixtures/fixtures.hpp"
#include "test_support.hpp"

using namespace shardsim;

namespace {

// End of the forward pass on rank 0: the seed's examples only have a forward.
double forward_time(const std::vector<std::string>& sets) {
  const auto p = test::prepared("tests/data/seed_prefetch/prefetch.yaml", sets);
  const auto r = engine::simulate(p);
  double end = 0;
  for (std::size_t i = 0; i < p.graph.size(); ++i) {
    const auto& op = p.graph.op(static_cast<int>(i));
    if (op.kind == graph::OpKind::forward) end = std::max(end, r.timeline.at(op.id, 0).end);
  }
  // Each block's forward really does take 0.10 s.
  for (std::size_t i = 0; i < p.graph.size(); ++i) {
    const auto& op = p.graph.op(static_cast<int>(i));
    if (op.name == "FWD layers.5")
      CHECK(r.timeline.at(op.id, 0).end - r.timeline.at(op.id, 0).start == doctest::Approx(0.10).epsilon(1e-3).scale(0));
    if (op.name == "AG layers.5")
      CHECK(r.timeline.at(op.id, 0).end - r.timeline.at(op.id, 0).start == doctest::Approx(0.08).epsilon(1e-3).scale(0));
  }
  return end;
}

}  // namespace

TEST_CASE("without overlap (limiter depth 1) the forward takes 12 x (0.08 + 0.10) = 2.16 s") {
  CHECK(forward_time({"fsdp.max_inflight_all_gathers=1"}) == doctest::Approx(2.16).epsilon(0.01).scale(0));
}

TEST_CASE("with prefetch (limiter depth 2) the forward takes 0.18 + 11 x 0.10 = 1.28 s") {
  const double t = forward_time({});
  CHECK(t == doctest::Approx(1.28).epsilon(0.01).scale(0));
  MESSAGE("speed-up over no overlap: " << 2.16 / t << "x (seed: 1.69x)");
}

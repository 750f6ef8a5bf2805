#include "report/caching_allocator.hpp"

#include <doctest/doctest.h>

#include "report/metrics.hpp"

using namespace shardsim;

namespace {

constexpr double MiB = 1 << 20;

graph::Op compute_op(const char* name, std::vector<graph::MemEffect> memory) {
  graph::Op o;
  o.kind = graph::OpKind::forward;
  o.stream = graph::Stream::compute;
  o.name = name;
  o.memory = std::move(memory);
  return o;
}

}  // namespace

TEST_CASE("expandable segments grow the pool's one segment from its free end instead of adding a segment") {
  // 100 MiB allocated and freed; 60 MiB then takes the cached block's first 60 MiB (best fit,
  // split: 40 MiB stay free at its end); 100 MiB more do not fit the 40.
  // Segments as c10 sizes them: requests of 10 MiB or more get their size rounded up to 2 MiB, a
  // new 100 MiB segment: 100 + 100 = 200 MiB reserved.
  // Expandable: the 40 MiB free at the segment's end are extended by 60 MiB (three 20 MiB pages):
  // 160 MiB reserved, all of it allocated. A 2 MiB request then fits the 40 MiB left free in the
  // first segment (200 MiB reserved), while the expandable segment has nothing free and maps one
  // more 20 MiB page (180).
  for (const bool expandable : {false, true}) {
    CAPTURE(expandable);
    report::CachingAllocator a({std::numeric_limits<double>::infinity(), expandable});
    a.allocate(graph::Pool::compute, 100 * MiB);
    a.free(graph::Pool::compute, 100 * MiB);
    a.allocate(graph::Pool::compute, 60 * MiB);
    a.allocate(graph::Pool::compute, 100 * MiB);
    CHECK(a.allocated() == doctest::Approx(160 * MiB).scale(0));
    CHECK(a.reserved() == doctest::Approx((expandable ? 160 : 200) * MiB).scale(0));
    a.allocate(graph::Pool::compute, 2 * MiB);
    CHECK(a.reserved() == doctest::Approx((expandable ? 180 : 200) * MiB).scale(0));
    CHECK(a.unpaired_frees() == 0);
  }
}

TEST_CASE("releasing the cache unmaps the free pages at an expandable segment's end") {
  // Capacity 100 MiB. 70 MiB allocated (four 20 MiB pages: 80 reserved), then freed, then 30 MiB
  // taken from its start: 50 MiB free from offset 30. 70 MiB more do not fit the 50: the segment
  // would grow by one page to 100 MiB, within the capacity. Then 40 MiB more: no free block, the
  // tail is allocated, 20 + 40 > 100 - 100: the cache is released (a retry), which finds no whole
  // free page at the end, and the allocation fails.
  report::CachingAllocator a({100 * MiB, true});
  a.allocate(graph::Pool::compute, 70 * MiB);
  CHECK(a.reserved() == doctest::Approx(80 * MiB).scale(0));
  a.free(graph::Pool::compute, 70 * MiB);
  a.allocate(graph::Pool::compute, 30 * MiB);
  a.allocate(graph::Pool::compute, 70 * MiB);
  CHECK(a.reserved() == doctest::Approx(100 * MiB).scale(0));
  CHECK(a.retries() == 0);
  a.allocate(graph::Pool::compute, 40 * MiB);
  CHECK(a.retries() == 1);
  CHECK(a.failures() == 1);
  // Freed, the 70 and the 40 leave 110 MiB free from offset 30 to the segment's end at 140. A
  // 20 MiB request on the reduce-scatter stream cannot use them: 140 + 20 > 100, a second retry,
  // which unmaps the free pages at the end down to the first page boundary after the 30 MiB
  // block (40 MiB mapped, 10 of them free). 40 + 20 fit: no failure.
  a.free(graph::Pool::compute, 40 * MiB);
  a.free(graph::Pool::compute, 70 * MiB);
  a.allocate(graph::Pool::reduce_scatter, 20 * MiB);
  CHECK(a.retries() == 2);
  CHECK(a.failures() == 1);
  CHECK(a.reserved(graph::Pool::compute) == doctest::Approx(40 * MiB).scale(0));
  CHECK(a.reserved() == doctest::Approx(60 * MiB).scale(0));
  // The 10 free MiB at the end still extend: 15 MiB more map one page (60 mapped).
  a.allocate(graph::Pool::compute, 15 * MiB);
  CHECK(a.reserved(graph::Pool::compute) == doctest::Approx(60 * MiB).scale(0));
  CHECK(a.unpaired_frees() == 0);
}

TEST_CASE("the optimizer state made at the first step fragments the next step unless segments expand") {
  // Step 1: 100 MiB of activations, freed; the optimizer step then creates 60 MiB of state
  // (first_step_only). A one-step run is reported as the steps after its first: the replay finds
  // the state in the activations' cached segment, so the next step's 100 MiB need a new segment:
  // 100 + 100 = 200 MiB reserved. Made before the run (as state that is not lazy), the state has
  // a segment of its own and the activations theirs: 160 MiB. Expandable segments: the state sits
  // at the start of the one segment, the activations extend it: 160 MiB either way. The allocated
  // peak is the steady state's: 160 MiB, the state live through the activations.
  const auto run = [](bool lazy, bool expandable) {
    graph::StepGraph g;
    g.info.world_size = 1;
    g.info.steps = 1;
    graph::MemEffect state{graph::MemCategory::optimizer_state, 60 * MiB, false, graph::Pool::compute};
    if (lazy) {
      state.first_step_only = true;
    } else {
      g.info.initial_memory = {state};
    }
    g.add_op(compute_op("FWD", {{graph::MemCategory::activations, 100 * MiB, false}, {graph::MemCategory::activations, -100 * MiB, true}}));
    g.add_op(compute_op("optimizer step", lazy ? std::vector<graph::MemEffect>{state} : std::vector<graph::MemEffect>{}));
    graph::Timeline t(2, 1);
    t.at(0, 0) = {0, 1};
    t.at(1, 0) = {1, 2};
    return report::memory_timeline(g, t, 0, 1024, {std::numeric_limits<double>::infinity(), expandable});
  };
  const auto lazy = run(true, false);
  CHECK(lazy.peak_reserved == doctest::Approx(200 * MiB).scale(0));
  CHECK(lazy.peak == doctest::Approx(160 * MiB).scale(0));
  CHECK(lazy.points.front().bytes[static_cast<std::size_t>(graph::MemCategory::optimizer_state)] == doctest::Approx(60 * MiB).scale(0));
  CHECK(lazy.unpaired_frees == 0);
  CHECK(run(false, false).peak_reserved == doctest::Approx(160 * MiB).scale(0));
  CHECK(run(true, true).peak_reserved == doctest::Approx(160 * MiB).scale(0));
  CHECK(run(false, true).peak_reserved == doctest::Approx(160 * MiB).scale(0));
}

TEST_CASE("the loss's logits and fp32 copy freed below its kept tensor leave a hole its second gradient does not fit") {
  // The eager loss's order (sim/model/transformer.cpp) in 20 MiB pages of one expandable segment:
  // logits 40 MiB, their fp32 copy 80, the kept log-probabilities 80 (200 MiB mapped); the copy
  // and the logits freed: 120 MiB free below the kept 80. Backward's first gradient (80) takes
  // the hole by best fit, 40 MiB left; the second (80) maps four pages at the end: 280 MiB
  // reserved for 240 allocated, the logits' 40 MiB short of a fit. As one 160 MiB block the two
  // would not fit the hole at all: eight pages more, 360 MiB.
  for (const bool apart : {true, false}) {
    CAPTURE(apart);
    report::CachingAllocator a({std::numeric_limits<double>::infinity(), true});
    a.allocate(graph::Pool::compute, 40 * MiB);
    a.allocate(graph::Pool::compute, 80 * MiB);
    a.allocate(graph::Pool::compute, 80 * MiB);
    a.free(graph::Pool::compute, 80 * MiB);
    a.free(graph::Pool::compute, 40 * MiB);
    if (apart) {
      a.allocate(graph::Pool::compute, 80 * MiB);
      a.allocate(graph::Pool::compute, 80 * MiB);
    } else {
      a.allocate(graph::Pool::compute, 160 * MiB);
    }
    CHECK(a.allocated() == doctest::Approx(240 * MiB).scale(0));
    CHECK(a.reserved() == doctest::Approx((apart ? 280 : 360) * MiB).scale(0));
  }
}

TEST_CASE("a free pairs with its own tensor's block, an unnumbered free with an unnumbered block first") {
  // Two live 30 MiB blocks: tensor 5's, allocated first, and an unnumbered one. The unnumbered free
  // must take the unnumbered block, so that tensor 5's free still finds its own: no unpaired free.
  report::CachingAllocator a;
  a.allocate(graph::Pool::compute, 30 * MiB, 5);
  a.allocate(graph::Pool::compute, 30 * MiB);
  a.free(graph::Pool::compute, 30 * MiB);
  CHECK(a.allocated() == doctest::Approx(30 * MiB).scale(0));
  a.free(graph::Pool::compute, 30 * MiB, 5);
  CHECK(a.allocated() == 0.0);
  CHECK(a.unpaired_frees() == 0);

  // With no unnumbered block of its size, an unnumbered free takes a numbered one (a graph whose
  // effects number only one side still pairs up) ...
  a.allocate(graph::Pool::compute, 30 * MiB, 9);
  a.free(graph::Pool::compute, 30 * MiB);
  CHECK(a.allocated() == 0.0);
  CHECK(a.unpaired_frees() == 0);

  // ... but a numbered free never takes another tensor's block: it is counted as unpaired.
  a.allocate(graph::Pool::compute, 30 * MiB);
  a.free(graph::Pool::compute, 30 * MiB, 3);
  CHECK(a.allocated() == doctest::Approx(30 * MiB).scale(0));
  CHECK(a.unpaired_frees() == 1);
}

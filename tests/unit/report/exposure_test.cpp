// Exposed communication charged to the dimension the compute stream waited for
// (report/exposure.hpp). Every figure below is worked by hand from the intervals given.
#include "report/exposure.hpp"

#include <doctest/doctest.h>

using namespace shardsim;

namespace {

int add(graph::StepGraph& g, graph::OpKind kind, graph::Stream stream, graph::Group group) {
  graph::Op o;
  o.kind = kind;
  o.stream = stream;
  o.group = group;
  return g.add_op(o);
}

int compute(graph::StepGraph& g) {
  return add(g, graph::OpKind::forward, graph::Stream::compute, graph::Group::none);
}

// Compute A, a TP reduce-scatter R after it, compute B after R, and an FSDP all-gather G that B
// does not wait for; the timeline is the test's.
struct WaitForTp {
  graph::StepGraph g;
  int a = compute(g);
  int r = add(g, graph::OpKind::reduce_scatter, graph::Stream::tp, graph::Group::tp);
  int b = compute(g);
  int ag = add(g, graph::OpKind::all_gather, graph::Stream::all_gather, graph::Group::shard);
  WaitForTp() {
    g.add_edge(a, r, graph::EdgeKind::data);
    g.add_edge(r, b, graph::EdgeKind::data);
    g.add_edge(a, b, graph::EdgeKind::stream);
  }
};

}  // namespace

TEST_CASE("idle time goes to the collective the compute stream waits for, not to one that merely runs") {
  // Compute A [0, 1]; a TP reduce-scatter R [1, 3] after A; compute B [3, 4] after R; an FSDP
  // all-gather G [0.5, 2.5] that B does not wait for. Idle [1, 3], all of it R's: TP 2 s, DP 0
  // (G's own overlap with the idle time, [1, 2.5], would say 1.5 s of it counted alone).
  WaitForTp w;
  graph::Timeline t(w.g.size(), 1);
  t.at(w.a, 0) = {0, 1};
  t.at(w.r, 0) = {1, 3};
  t.at(w.b, 0) = {3, 4};
  t.at(w.ag, 0) = {0.5, 2.5};
  const report::ExposedComm e = report::exposed_comm(w.g, t, 0, 0, 0, 4);
  CHECK(e.total == doctest::Approx(2.0).scale(0));
  CHECK(e.of(report::Dimension::tp) == doctest::Approx(2.0).scale(0));
  CHECK(e.of(report::Dimension::dp) == doctest::Approx(0.0).scale(1));
}

TEST_CASE("idle time the chain of waits leaves unexplained goes to a running collective, tensor parallel first") {
  // As above, but B starts at 3.5, half a second after R ended (it waited for something not on
  // this rank), and G runs to 3.4: [1, 3] is R's (TP 2 s); of [3, 3.5], G runs in [3, 3.4] (DP
  // 0.4 s) and nothing in [3.4, 3.5] (idle, not communication). Total 2.4 s = TP 2 + DP 0.4.
  WaitForTp w;
  const int t2 = add(w.g, graph::OpKind::all_gather, graph::Stream::tp, graph::Group::tp);  // runs below only
  graph::Timeline t(w.g.size(), 1);
  t.at(w.a, 0) = {0, 1};
  t.at(w.r, 0) = {1, 3};
  t.at(w.b, 0) = {3.5, 4};
  t.at(w.ag, 0) = {0.5, 3.4};
  const report::ExposedComm e = report::exposed_comm(w.g, t, 0, 0, 0, 4);
  CHECK(e.total == doctest::Approx(2.4).scale(0));
  CHECK(e.of(report::Dimension::tp) == doctest::Approx(2.0).scale(0));
  CHECK(e.of(report::Dimension::dp) == doctest::Approx(0.4).scale(0));

  // Where both run in the unexplained part, tensor parallel comes first: a second TP collective
  // T2 [2.9, 3.45] that B does not wait for takes [3, 3.45] from G; DP keeps nothing of it.
  t.at(t2, 0) = {2.9, 3.45};
  const report::ExposedComm both = report::exposed_comm(w.g, t, 0, 0, 0, 4);
  CHECK(both.total == doctest::Approx(2.45).scale(0));
  CHECK(both.of(report::Dimension::tp) == doctest::Approx(2.45).scale(0));
  CHECK(both.of(report::Dimension::dp) == doctest::Approx(0.0).scale(1));
}

TEST_CASE("a chain of waits passes through a collective to the one it waited for") {
  // A pipeline receive P [1, 2] feeds a TP all-gather T [2, 3] that compute B [3, 4] needs: of the
  // idle [1, 3], [2, 3] is T's (TP 1 s) and [1, 2] P's (PP 1 s), and an FSDP reduce-scatter D
  // [0, 4] running all along gets none of it.
  graph::StepGraph g;
  const int a = compute(g);
  const int p = add(g, graph::OpKind::send, graph::Stream::pp, graph::Group::pp);
  const int tp = add(g, graph::OpKind::all_gather, graph::Stream::tp, graph::Group::tp);
  const int b = compute(g);
  const int d = add(g, graph::OpKind::reduce_scatter, graph::Stream::reduce_scatter, graph::Group::shard);
  g.add_edge(p, tp, graph::EdgeKind::data);
  g.add_edge(tp, b, graph::EdgeKind::data);
  g.add_edge(a, b, graph::EdgeKind::stream);
  graph::Timeline t(g.size(), 1);
  t.at(a, 0) = {0, 1};
  t.at(p, 0) = {1, 2};
  t.at(tp, 0) = {2, 3};
  t.at(b, 0) = {3, 4};
  t.at(d, 0) = {0, 4};
  const report::ExposedComm e = report::exposed_comm(g, t, 0, 0, 0, 4);
  CHECK(e.total == doctest::Approx(2.0).scale(0));
  CHECK(e.of(report::Dimension::tp) == doctest::Approx(1.0).scale(0));
  CHECK(e.of(report::Dimension::pp) == doctest::Approx(1.0).scale(0));
  CHECK(e.of(report::Dimension::dp) == doctest::Approx(0.0).scale(1));
}

TEST_CASE("before a pipeline receive began, the stage waited for another stage: bubble, not exposed communication") {
  // Compute A [0, 1]; a pipeline receive P [2.5, 3] (the other stage sent at 2.5) that compute B
  // [3, 4] needs; an FSDP all-gather G [0.5, 2.8] that B does not wait for. Of the idle [1, 3],
  // [2.5, 3] is P's (PP 0.5 s); [1, 2.5] is the pipeline's bubble, though G runs in it: DP 0
  // (charged to the running G, as an unexplained wait, it would be 1.5 s).
  graph::StepGraph g;
  const int a = compute(g);
  const int p = add(g, graph::OpKind::send, graph::Stream::pp, graph::Group::pp);
  const int b = compute(g);
  const int ag = add(g, graph::OpKind::all_gather, graph::Stream::all_gather, graph::Group::shard);
  g.add_edge(p, b, graph::EdgeKind::data);
  g.add_edge(a, b, graph::EdgeKind::stream);
  graph::Timeline t(g.size(), 1);
  t.at(a, 0) = {0, 1};
  t.at(p, 0) = {2.5, 3};
  t.at(b, 0) = {3, 4};
  t.at(ag, 0) = {0.5, 2.8};
  const report::ExposedComm e = report::exposed_comm(g, t, 0, 0, 0, 4);
  CHECK(e.total == doctest::Approx(0.5).scale(0));
  CHECK(e.of(report::Dimension::pp) == doctest::Approx(0.5).scale(0));
  CHECK(e.of(report::Dimension::dp) == doctest::Approx(0.0).scale(1));
}

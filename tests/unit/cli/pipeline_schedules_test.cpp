// The order in which each pipeline schedule runs its micro-batches on each rank, worked by hand
// from torch.distributed.pipelining's and Megatron-LM's rules.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "graph/pipeline_builder.hpp"
#include "pipeline_support.hpp"

using namespace shardsim;
using graph::OpKind;
using test::prepare;
using test::uniform;

namespace {

std::string actions(config::PpSchedule s, int stage, int stages, int m) {
  std::string out;
  for (const auto& a : graph::pipeline_actions(s, stage, stages, m)) out += fmt::format("{}{} ", a.forward ? 'F' : 'B', a.micro);
  return out;
}

std::string interleaved(int rank, int ranks, int m, int chunks) {
  std::string out;
  for (const auto& a : graph::pipeline_actions(config::PpSchedule::interleaved_1f1b, rank, ranks, m, chunks)) {
    out += fmt::format("{}{}c{} ", a.forward ? 'F' : 'B', a.micro, a.chunk);
  }
  return out;
}

// A zero-bubble schedule's order: F forward, I input gradients, W weight gradients, chunk:micro.
std::string split_order(config::PpSchedule s, int rank, int ranks, int m, int chunks) {
  std::string out;
  for (const auto& a : graph::pipeline_actions(s, rank, ranks, m, chunks)) {
    const char kind = a.forward ? 'F' : a.part == graph::BackwardPart::input ? 'I' : 'W';
    out += fmt::format("{}{}:{} ", kind, a.chunk, a.micro);
  }
  return out;
}

}  // namespace

TEST_CASE("pipeline: the schedules' order of micro-batches per stage") {
  using config::PpSchedule;
  // PipelineSchedule1F1B: stages - stage forwards, then backward and forward in turn.
  CHECK(actions(PpSchedule::one_f_one_b, 0, 4, 8) == "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7 ");
  CHECK(actions(PpSchedule::one_f_one_b, 3, 4, 8) == "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7 ");
  CHECK(actions(PpSchedule::one_f_one_b, 1, 4, 2) == "F0 F1 B0 B1 ");
  CHECK(actions(PpSchedule::gpipe, 2, 4, 3) == "F0 F1 F2 B0 B1 B2 ");
  // Interleaved, 2 ranks x 2 chunks, 4 micro-batches, by hand from Megatron-LM's rules: rank r
  // warms up with (v-1) p + 2 (p-1-r) forwards; forwards walk micro-batches in groups of p, chunk
  // after chunk; backwards the same with the chunks reversed.
  CHECK(interleaved(0, 2, 4, 2) == "F0c0 F1c0 F0c1 F1c1 F2c0 B0c1 F3c0 B1c1 F2c1 B0c0 F3c1 B1c0 B2c1 B3c1 B2c0 B3c0 ");
  CHECK(interleaved(1, 2, 4, 2) == "F0c0 F1c0 F0c1 B0c1 F1c1 B1c1 F2c0 B0c0 F3c0 B1c0 F2c1 B2c1 F3c1 B3c1 B2c0 B3c0 ");
}

TEST_CASE("pipeline: ZB-V runs two stages per rank in a V, in torch's ScheduleZBVZeroBubble order") {
  // Worked by hand from ScheduleZBVZeroBubble._calculate_single_rank_operations for 2 ranks and
  // 4 micro-batches (chunk:micro-batch; chunk 0 is model stage r, chunk 1 stage 3 - r; I the
  // input gradients, W the weight gradients).
  const auto zbv = [](int rank) { return split_order(config::PpSchedule::zbv, rank, 2, 4, 2); };
  CHECK(zbv(0) ==
        "F0:0 F0:1 F0:2 F1:0 I1:0 W1:0 F1:1 I1:1 W1:1 F0:3 I0:0 W0:0 F1:2 I1:2 W1:2 I0:1 W0:1 F1:3 I1:3 W1:3 "
        "I0:2 W0:2 I0:3 W0:3 ");
  CHECK(zbv(1) ==
        "F0:0 F1:0 F0:1 F1:1 I1:0 W1:0 F0:2 I0:0 W0:0 F1:2 I1:1 W1:1 F0:3 I0:1 W0:1 F1:3 I1:2 W1:2 I0:2 I1:3 "
        "I0:3 W0:2 W1:3 W0:3 ");
  CHECK(graph::model_stage(config::PpSchedule::zbv, 1, 0, 4) == 7);
  CHECK(graph::rank_of_stage(config::PpSchedule::zbv, 4, 4) == 3);  // the V turns on the last rank
  // The gradient goes to the previous stage as soon as the input gradients are done: every
  // send of gradients follows an input-gradient op, never a weight-gradient one; the stages at the
  // V's turn (3 and 4, both on rank 3) exchange nothing.
  std::vector<std::string> sets = uniform(4, 8, "zbv");
  const auto p = prepare(sets);
  int grads = 0;
  for (std::size_t o = 0; o < p.graph.size(); ++o) {
    const auto& op = p.graph.op(static_cast<int>(o));
    if (op.kind != OpKind::send) continue;
    CHECK(op.stage != op.peer_stage);
    if (op.name.rfind("send grad", 0) != 0) continue;
    ++grads;
    for (const auto& [pred, kind] : p.graph.predecessors(static_cast<int>(o))) {
      if (p.graph.op(pred).kind == OpKind::backward) CHECK(p.graph.op(pred).name.rfind("BWD-I ", 0) == 0);
    }
  }
  CHECK(grads == 8 * 6);  // 8 micro-batches over the 6 stage boundaries between ranks
}

TEST_CASE("pipeline: interleaved zero bubble (ZB1P) in torch's ScheduleInterleavedZeroBubble order") {
  // Worked by hand from _get_1f1b_rank_ops(enable_zero_bubble=True) for 2 ranks, 4 micro-batches
  // (2 rounds of 2) and 2 chunks per rank: rank 0 warms up with 3 forwards and defers no weight
  // gradient, rank 1 with 2 and defers one.
  const auto zb = [](int rank) { return split_order(config::PpSchedule::interleaved_zb, rank, 2, 4, 2); };
  CHECK(zb(0) ==
        "F0:0 F0:1 F1:0 F1:1 I1:0 W1:0 F0:2 I1:1 W1:1 F0:3 I0:0 W0:0 F1:2 I0:1 W0:1 F1:3 I1:2 W1:2 I1:3 W1:3 "
        "I0:2 W0:2 I0:3 W0:3 ");
  CHECK(zb(1) ==
        "F0:0 F0:1 F1:0 I1:0 F1:1 I1:1 W1:0 F0:2 I0:0 W1:1 F0:3 I0:1 W0:0 F1:2 I1:2 W0:1 F1:3 I1:3 W1:2 I0:2 "
        "W1:3 I0:3 W0:2 W0:3 ");
}

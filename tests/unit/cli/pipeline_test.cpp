// Pipeline parallelism (parallelism.pp): stages cut at block boundaries, GPipe and 1F1B as
// torch.distributed.pipelining orders them, sends between stages, and what follows from the
// simulated schedule alone: the bubble (pp-1)/(m+pp-1) of uniform stages (Narayanan et al.,
// "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", SC'21,
// section 2.2), and 1F1B's first stage holding pp micro-batches of activations where GPipe holds m.
#include "cli/pipeline.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "graph/op_forecast.hpp"
#include "graph/pipeline_builder.hpp"
#include "model/pipeline.hpp"
#include "pipeline_support.hpp"
#include "report/metrics.hpp"
#include "test_support.hpp"

using namespace shardsim;
using graph::OpKind;
using test::prepare;
using test::uniform;

namespace {

struct PpRun {
  double step = 0;
  double bubble = 0;
  double stage0_activations = 0;  // the most activation bytes the first stage's first rank holds at once
  double tokens_per_s_per_gpu = 0;
};

PpRun run(const std::vector<std::string>& sets) {
  return test::in_child([sets] {
    const auto p = prepare(sets);
    const auto out = cli::simulate(p);
    const auto m = report::memory_timeline(p.graph, out.result.timeline, 0);
    // The activations' own high-water mark: the overall peak can come where fewer are alive
    // (the fp32 gradient accumulators grow as backward goes on).
    double activations = 0;
    for (const auto& point : m.points)
      activations = std::max(activations, point.bytes[static_cast<std::size_t>(graph::MemCategory::activations)]);
    return PpRun{out.summary.step_time, out.summary.bubble_fraction, activations, out.summary.tokens_per_s_per_gpu};
  });
}

}  // namespace

TEST_CASE("pipeline: stages take consecutive layers, evenly or from split points") {
  std::string error;
  const auto even = model::stage_spans(8, 3, {}, error);
  REQUIRE(even.size() == 3);
  CHECK(even[0].first_layer == 0);
  CHECK(even[0].end_layer == 3);  // the remainder to the earlier stages
  CHECK(even[1].end_layer == 6);
  CHECK(even[2].end_layer == 8);
  const auto given = model::stage_spans(8, 3, {2, 7}, error);
  REQUIRE(given.size() == 3);
  CHECK(given[1].first_layer == 2);
  CHECK(given[2].layers() == 1);
  CHECK(model::stage_spans(8, 3, {2, 9}, error).empty());
  CHECK(error.find("no layer") != std::string::npos);

  // The stages' FSDP plans hold the blocks once between them; the embedding is the first's, the
  // output layer the last's.
  const auto p = prepare({"fsdp.version=2", "parallelism.pp=2"});
  REQUIRE(p.stage_plans.size() == 2);
  const auto names = [](const fsdp::Plan& plan) {
    std::string out;
    for (const auto& u : plan.units) out += u.name + " ";
    return out;
  };
  CHECK(names(p.stage_plans[0]) == "root layers.0 layers.1 ");
  CHECK(names(p.stage_plans[1]) == "root layers.2 layers.3 ");
  std::int64_t numel = 0;
  for (const auto& plan : p.stage_plans) numel += plan.total_numel();
  CHECK(numel == p.model.total_params());
}

TEST_CASE("pipeline: sends carry a micro-batch's hidden states between neighbouring stages") {
  // pp 4, 8 micro-batches of one 512-token sequence, hidden 512, bf16: 512 x 512 x 2 = 512 KiB
  // per send; forward and backward, 3 stage boundaries, 8 micro-batches: 48 sends per step. With
  // TP 2 and sequence parallelism each rank sends its half of the sequence.
  for (int tp : {1, 2}) {
    CAPTURE(tp);
    const auto p = prepare({"fsdp.version=2", "parallelism.pp=4", "training.micro_batch=8", fmt::format("parallelism.tp={}", tp)});
    int sends = 0;
    for (std::size_t o = 0; o < p.graph.size(); ++o) {
      const auto& op = p.graph.op(static_cast<int>(o));
      if (op.kind != OpKind::send) continue;
      ++sends;
      CHECK(op.bytes == 512.0 * 512 * 2 / tp);
      CHECK(std::abs(op.stage - op.peer_stage) == 1);
      CHECK(op.group == graph::Group::pp);
    }
    CHECK(sends == 48);
  }
}

TEST_CASE("pipeline: Megatron's scatter/gather sends 1/tp of a micro-batch and all-gathers it at the receiver") {
  // TP 2 without sequence parallelism: each rank holds the whole 512 KiB activation. Whole sends
  // by default; with pp_scatter_gather each rank sends 256 KiB and the receiving stage's TP group
  // all-gathers the 512 KiB before using it: one all-gather per send, 48 a step.
  for (const bool scatter : {false, true}) {
    CAPTURE(scatter);
    const auto p = prepare({"fsdp.version=2", "parallelism.pp=4", "training.micro_batch=8", "parallelism.tp=2",
                            "parallelism.tp_sequence_parallel=false", fmt::format("parallelism.pp_scatter_gather={}", scatter)});
    int sends = 0;
    int gathers = 0;
    for (std::size_t o = 0; o < p.graph.size(); ++o) {
      const auto& op = p.graph.op(static_cast<int>(o));
      if (op.kind == OpKind::send) {
        ++sends;
        CHECK(op.bytes == 512.0 * 512 * 2 / (scatter ? 2 : 1));
      }
      if (op.kind == OpKind::all_gather && op.name.starts_with("TP AG received")) {
        ++gathers;
        CHECK(op.bytes == 512.0 * 512 * 2);
        CHECK(op.group == graph::Group::tp);
      }
    }
    CHECK(sends == 48);
    CHECK(gathers == (scatter ? 48 : 0));
  }
}

TEST_CASE("pipeline: FSDP2 under a pipeline all-gathers and reduce-scatters once per step, not per micro-batch") {
  // torchtitan's default with PP is reshard_after_forward = False, and the schedule turns off
  // gradient sync but for the last micro-batch: each unit one all-gather and one reduce-scatter.
  const auto p = prepare({"fsdp.version=2", "parallelism.pp=2", "training.micro_batch=4"});
  for (int st = 0; st < 2; ++st) {
    CAPTURE(st);
    int ag = 0;
    int rs = 0;
    for (std::size_t o = 0; o < p.graph.size(); ++o) {
      const auto& op = p.graph.op(static_cast<int>(o));
      if (op.stage != st) continue;
      ag += op.kind == OpKind::all_gather;
      rs += op.kind == OpKind::reduce_scatter;
    }
    const auto units = static_cast<int>(p.stage_plans[static_cast<std::size_t>(st)].units.size());
    CHECK(ag == units);
    CHECK(rs == units);
  }
}

TEST_CASE("pipeline: with reshard_after_forward FSDP2 blocks stay unsharded from each backward to the next forward") {
  // The schedule turns resharding after backward off for every micro-batch (stage.py), so a
  // forward that follows a backward finds its parameters gathered. 1F1B, 2 stages, 4
  // micro-batches, by hand: stage 0 runs F0 F1 B0 F2 B1 F3 B2 B3 and gathers a block at F0, F1,
  // B0, B1, B2 (F2 and F3 follow a backward, B3 follows B2); stage 1 runs F0 B0 F1 B1 F2 B2 F3
  // B3 and gathers at F0, B0, B1, B2, B3 (each forward after the first follows a backward, and
  // reshards after itself): 5 gathers a block on each, where resharding after backward made 8.
  const auto p = prepare({"fsdp.version=2", "parallelism.pp=2", "training.micro_batch=4", "fsdp.reshard_after_forward=true"});
  std::map<std::pair<int, int>, int> gathers;  // by (stage, unit)
  for (std::size_t o = 0; o < p.graph.size(); ++o) {
    const auto& op = p.graph.op(static_cast<int>(o));
    if (op.kind == OpKind::all_gather && op.unit >= 0) ++gathers[{op.stage, op.unit}];
  }
  int blocks = 0;
  for (const auto& [where, count] : gathers) {
    const auto& unit = p.stage_plans[static_cast<std::size_t>(where.first)].units[static_cast<std::size_t>(where.second)];
    if (!unit.reshard_after_forward) continue;
    ++blocks;
    CAPTURE(unit.name);
    CHECK(count == 5);
  }
  CHECK(blocks == 4);  // the tiny Llama's 4 blocks, 2 a stage
}

TEST_CASE("pipeline: FSDP2's reductions wait for the stage's last backward, in module order (torch's REDUCE_GRAD)") {
  // torch.distributed.pipelining runs every backward of an FSDP2 stage with gradient sync off and
  // calls each FSDP state's post_backward after the stage's last backward (stage.py
  // perform_reduce_grad): no reduce-scatter of the stage is issued, or starts, before its last
  // backward op has ended, and they go root first, then the blocks in order.
  const std::vector<std::string> sets{"fsdp.version=2", "parallelism.pp=2", "training.micro_batch=4"};
  const auto p = prepare(sets);
  struct Order {
    int last_backward[2] = {-1, -1};
    int first_rs[2] = {-1, -1};
    bool units_ascending = true;
  };
  Order o;
  int previous_unit[2] = {-1, -1};
  for (std::size_t i = 0; i < p.graph.size(); ++i) {
    const auto& op = p.graph.op(static_cast<int>(i));
    if (op.stage < 0 || op.stage > 1) continue;
    const auto st = static_cast<std::size_t>(op.stage);
    if (op.kind == OpKind::backward) o.last_backward[st] = static_cast<int>(i);
    if (op.kind != OpKind::reduce_scatter) continue;
    if (o.first_rs[st] < 0) o.first_rs[st] = static_cast<int>(i);
    o.units_ascending = o.units_ascending && op.unit > previous_unit[st];
    previous_unit[st] = op.unit;
  }
  for (std::size_t st = 0; st < 2; ++st) {
    CAPTURE(st);
    REQUIRE(o.first_rs[st] >= 0);
    CHECK(o.first_rs[st] > o.last_backward[st]);
  }
  CHECK(o.units_ascending);
  // On the timeline: each stage's first reduce-scatter starts after its last backward op ends.
  struct Times {
    double last_backward_end[2] = {0, 0};
    double first_rs_start[2] = {0, 0};
  };
  const auto t = test::in_child([sets] {
    const auto q = prepare(sets);
    const auto out = cli::simulate(q);
    Times r;
    r.first_rs_start[0] = r.first_rs_start[1] = 1e30;
    for (std::size_t i = 0; i < q.graph.size(); ++i) {
      const auto& op = q.graph.op(static_cast<int>(i));
      if (op.stage < 0 || op.stage > 1) continue;
      const auto st = static_cast<std::size_t>(op.stage);
      const auto& span = out.result.timeline.at(static_cast<int>(i), op.stage == 0 ? 0 : q.graph.info.world_size / 2);
      if (op.kind == OpKind::backward) r.last_backward_end[st] = std::max(r.last_backward_end[st], span.end);
      if (op.kind == OpKind::reduce_scatter) r.first_rs_start[st] = std::min(r.first_rs_start[st], span.start);
    }
    return r;
  });
  for (std::size_t st = 0; st < 2; ++st) {
    CAPTURE(st);
    CHECK(t.first_rs_start[st] >= t.last_backward_end[st]);
  }
}

TEST_CASE("pipeline: the last stage holds every micro-batch's logits until the step's end") {
  // torch.distributed.pipelining keeps the last stage's output of each micro-batch (output_chunks)
  // until the next step clears them. The tiny Llama, 2 stages, 4 micro-batches of one 512-token
  // sequence, vocabulary 1,000, bf16 logits: 512 x 1,000 x 2 = 1,024,000 bytes each, so when the
  // last stage's optimizer step starts its "logits and loss" memory is 4 x that (the loss's own
  // tensors are freed by its backward), and none once it has ended.
  struct Held {
    double at_optimizer = -1;
    double after = -1;
    int unpaired = -1;
  };
  const auto h = test::in_child([] {
    const auto p = prepare({"fsdp.version=2", "parallelism.pp=2", "training.micro_batch=4"});
    const auto out = cli::simulate(p);
    const int rank = p.graph.info.world_size / 2;  // the last stage's first rank
    const auto m = report::memory_timeline(p.graph, out.result.timeline, rank);
    Held r;
    r.unpaired = m.unpaired_frees;
    for (std::size_t i = 0; i < p.graph.size(); ++i) {
      const auto& op = p.graph.op(static_cast<int>(i));
      if (op.kind != OpKind::optimizer || op.stage != 1) continue;
      const auto& span = out.result.timeline.at(static_cast<int>(i), rank);
      const auto loss_at = [&](double t) {
        double bytes = 0;
        for (const auto& point : m.points) {
          if (point.time <= t) bytes = point.bytes[static_cast<std::size_t>(graph::MemCategory::loss)];
        }
        return bytes;
      };
      r.at_optimizer = loss_at(span.start);
      r.after = loss_at(span.end);
    }
    return r;
  });
  CHECK(h.unpaired == 0);
  CHECK(h.at_optimizer == doctest::Approx(4.0 * 512 * 1000 * 2).scale(0));
  CHECK(h.after == doctest::Approx(0.0).scale(1.0));
}

TEST_CASE("pipeline: the last stage merges the kept logits once its micro-batches are done, before the optimizer step") {
  // schedules.py step(): `return self._merge_outputs(self._stage.output_chunks)` on the last stage,
  // a torch.cat of its 4 kept 1,024,000-byte logits: 4,096,000 bytes made and (torchtitan drops
  // the result) freed, read and written once (8,192,000 bytes of traffic, one kernel), between
  // the stage's last backward and its optimizer step. The first stage keeps no outputs: no merge.
  const auto p = prepare({"fsdp.version=2", "parallelism.pp=2", "training.micro_batch=4"});
  int merges = 0;
  int merge = -1;
  int optimizer = -1;
  for (std::size_t i = 0; i < p.graph.size(); ++i) {
    const auto& op = p.graph.op(static_cast<int>(i));
    if (op.name == "merge outputs 0") {
      ++merges;
      merge = op.id;
      CHECK(op.stage == 1);
      CHECK(op.work.memory_bytes == doctest::Approx(2.0 * 4 * 1'024'000).scale(0));
      CHECK(op.work.launches == 1);
      REQUIRE(op.memory.size() == 2);
      CHECK(op.memory[0].bytes == doctest::Approx(4.0 * 1'024'000).scale(0));
      CHECK_FALSE(op.memory[0].at_end);
      CHECK(op.memory[1].bytes == doctest::Approx(-4.0 * 1'024'000).scale(0));
      CHECK(op.memory[1].at_end);
    }
    if (op.kind == OpKind::optimizer && op.stage == 1 && op.step == 0) optimizer = op.id;
  }
  CHECK(merges == 1);
  REQUIRE(merge >= 0);
  REQUIRE(optimizer >= 0);
  CHECK(merge < optimizer);  // issued before it, on the same compute stream
}

TEST_CASE("pipeline: torch's stages keep a receive buffer per micro-batch, Megatron's schedule none") {
  // torch.distributed.pipelining makes, at its first step, one buffer per micro-batch for a
  // stage's input and one for its output's gradient, and keeps them. The tiny Llama in 2 stages,
  // 4 micro-batches of one 512-token sequence, hidden 512, bf16: 512 x 512 x 2 = 524,288 bytes
  // each; stage 0 holds 4 for the gradients it receives, stage 1 4 for its inputs. Stage 1's first
  // block keeps its input in that buffer: its forward saves 524,288 bytes less than stage 0's
  // first block, the same block. DDP under a pipeline is run by Megatron's schedule: no buffers.
  const auto buffers = [](const graph::StepGraph& g, int stage) {
    std::vector<double> out;
    for (const auto& m : g.info.stage_initial_memory[static_cast<std::size_t>(stage)]) {
      if (m.category == graph::MemCategory::pipeline_buffers) out.push_back(m.bytes);
    }
    return out;
  };
  const auto saved = [](const graph::StepGraph& g, const std::string& name) {
    for (std::size_t i = 0; i < g.size(); ++i) {
      const auto& op = g.op(static_cast<int>(i));
      if (op.name != name || op.step != 0 || op.micro != 0) continue;
      double bytes = 0;
      for (const auto& m : op.memory) {
        if (m.category == graph::MemCategory::activations && m.bytes > 0) bytes += m.bytes;
      }
      return bytes;
    }
    return -1.0;
  };
  const auto p = prepare({"fsdp.version=2", "parallelism.pp=2", "training.micro_batch=4"});
  CHECK(buffers(p.graph, 0) == std::vector<double>(4, 524'288.0));
  CHECK(buffers(p.graph, 1) == std::vector<double>(4, 524'288.0));
  REQUIRE(saved(p.graph, "FWD layers.0") > 524'288);
  CHECK(saved(p.graph, "FWD layers.0") - saved(p.graph, "FWD layers.2") == doctest::Approx(524'288.0).scale(0));
  CHECK(saved(p.graph, "FWD layers.1") == doctest::Approx(saved(p.graph, "FWD layers.3")).scale(0));
  const auto ddp = prepare({"fsdp.version=2", "fsdp.sharding=no_shard", "parallelism.pp=2", "training.micro_batch=4"});
  CHECK(buffers(ddp.graph, 0).empty());
  CHECK(buffers(ddp.graph, 1).empty());
  CHECK(saved(ddp.graph, "FWD layers.0") == doctest::Approx(saved(ddp.graph, "FWD layers.2")).scale(0));
}

TEST_CASE("pipeline: the summary gives each stage's peak memory, the highest being the one it shows") {
  // The tiny Llama in 2 stages: one figure per stage, each its ranks' highest; the summary's own
  // peak (the rank with the most reserved memory) is the larger of the two, and no stage has
  // allocated more than it reserved.
  struct Stages {
    std::size_t n = 0;
    std::array<double, 2> reserved{};
    std::array<double, 2> allocated{};
    double peak = 0;
  };
  const auto st = test::in_child([] {
    const auto p = prepare({"fsdp.version=2", "parallelism.pp=2", "training.micro_batch=4"});
    const auto s = cli::simulate(p).summary;
    Stages r;
    r.n = s.reserved_by_stage.size();
    for (std::size_t i = 0; i < std::min<std::size_t>(r.n, 2); ++i) {
      r.reserved[i] = s.reserved_by_stage[i];
      r.allocated[i] = s.allocated_by_stage[i];
    }
    r.peak = s.memory.peak_reserved;
    return r;
  });
  REQUIRE(st.n == 2);
  CHECK(std::max(st.reserved[0], st.reserved[1]) == doctest::Approx(st.peak).scale(0));
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(st.allocated[i] > 0);
    CHECK(st.allocated[i] <= st.reserved[i]);
  }
}

TEST_CASE("pipeline: the 1F1B bubble emerges as (pp-1)/(m+pp-1) and GPipe's is the same") {
  // Uniform stages, one rank each: every stage idles (pp-1)(t_f + t_b) of (m+pp-1)(t_f + t_b).
  // What the formula leaves out: the last stage also runs the final norm, the output layer and
  // the loss (5 % more per micro-batch here, so the others wait for it m times), the sends and
  // the optimizer step: within 2.5 points of the formula.
  std::vector<double> steps;
  for (int m : {8, 16}) {
    CAPTURE(m);
    const double expected = 7.0 / (m + 7.0);
    const PpRun one = run(uniform(8, m, "1f1b"));
    const PpRun gpipe = run(uniform(8, m, "gpipe"));
    CHECK(std::abs(one.bubble - expected) < 0.025);
    CHECK(std::abs(gpipe.bubble - expected) < 0.025);
    CHECK(one.step == doctest::Approx(gpipe.step).epsilon(0.01).scale(0));
    steps.push_back(one.step);
  }
  // The step takes m + pp - 1 micro-batch times: 23 / 15 from 8 to 16 micro-batches.
  CHECK(steps[1] / steps[0] == doctest::Approx(23.0 / 15.0).epsilon(0.01).scale(0));
}

TEST_CASE("pipeline: interleaved 1F1B cuts the bubble to (pp-1)/(v m + pp - 1)") {
  // 32 uniform blocks on pp 4 with v = 1, 2, 4 stages per rank (8, 4, 2 blocks per model
  // stage), 8 micro-batches: the bubble shrinks as v m grows (Narayanan et al., section 2.2.2).
  // Interleaving sends v times as often; within 2.5 points of the formula.
  for (int v : {1, 2, 4}) {
    CAPTURE(v);
    std::vector<std::string> sets = uniform(4, 8, v == 1 ? "1f1b" : "interleaved_1f1b");
    sets.push_back("model.layers=32");
    sets.push_back(fmt::format("parallelism.pp_stages_per_rank={}", v));
    const PpRun r = run(sets);
    CHECK(std::abs(r.bubble - 3.0 / (v * 8 + 3.0)) < 0.025);
  }
}

TEST_CASE("pipeline: ZB-V fills the bubble with weight gradients") {
  // The same 8 uniform blocks on pp 4, 8 micro-batches: 1F1B idles (pp-1)/(m+pp-1) = 27 %,
  // interleaving two chunks per rank 3/19 = 16 %; ZB-V runs the deferred weight gradients where
  // the others wait (Qi et al., ICLR 2024, section 6: zero bubble when forward, input-gradient
  // and weight-gradient times are equal; here the input gradient, with attention's backward, is
  // the longest, so a little is left), with the activation memory of 1F1B.
  const PpRun one = run(uniform(4, 8, "1f1b"));
  const PpRun two = run(uniform(4, 8, "interleaved_1f1b"));
  const PpRun zbv = run(uniform(4, 8, "zbv"));
  const PpRun zb1p = run(uniform(4, 8, "interleaved_zb"));
  INFO("bubble 1F1B " << one.bubble << ", interleaved " << two.bubble << ", ZB-V " << zbv.bubble << ", ZB1P " << zb1p.bubble);
  CHECK(zbv.bubble < two.bubble);
  CHECK(zb1p.bubble < two.bubble);  // the same two chunks per rank, the weight gradients filling in
  CHECK(zbv.bubble < one.bubble / 3);
  CHECK(zbv.step < two.step);
  CHECK(zbv.stage0_activations <= one.stage0_activations * 1.05);
}

TEST_CASE("pipeline: the op forecast counts the fewest ops an action of a kind issued for each one still to come") {
  // Worked by hand: 4 forwards of kind 0 planned. The first adds 10 counted ops (3 still to
  // come: 30), the second 7 (2 to come at 7: 14), the third 12 (1 to come, still 7). Kind 1, 2
  // planned, not issued yet, counts nothing until it is.
  graph::OpForecast f(2);
  f.plan(0, 4);
  CHECK(f.ahead() == 0);
  f.issued(0, 10);
  CHECK(f.ahead() == 30);
  f.issued(0, 7);
  CHECK(f.ahead() == 14);
  f.issued(0, 12);
  CHECK(f.ahead() == 7);
  f.plan(1, 2);
  CHECK(f.ahead() == 7);
  f.issued(1, 5);
  CHECK(f.ahead() == 7 + 5);
  f.plan(0, 3);  // a later step's actions of a kind already seen
  CHECK(f.ahead() == 7 + 5 + 3 * 7);
}

TEST_CASE("pipeline: simulation.max_ops refuses a pipelined graph of more ops, never one that fits exactly") {
  // Each schedule's graph built once with room, then with max_ops at its exact op count (it must
  // build: the forecast is a lower bound, even where FSDP2 reshards after forward and unshards in
  // some forwards only) and one below (refused).
  // Also FSDP1 (whose units reshard after every forward), and TP 2 or CP 2 beside the pipeline.
  struct Case {
    const char* schedule;
    int stages_per_rank;
    const char* reshard;
    const char* extra;
  };
  for (const Case c :
       {Case{"gpipe", 1, "false", "fsdp.version=2"}, Case{"1f1b", 1, "true", "fsdp.version=2"}, Case{"1f1b", 1, "false", "fsdp.version=2"},
        Case{"interleaved_1f1b", 2, "true", "fsdp.version=2"}, Case{"zbv", 2, "true", "fsdp.version=2"},
        Case{"interleaved_zb", 2, "false", "fsdp.version=2"}, Case{"1f1b", 1, "true", "parallelism.tp=2"},
        Case{"interleaved_1f1b", 2, "true", "parallelism.cp=2"}, Case{"1f1b", 1, nullptr, "fsdp.version=1"}}) {
    INFO("schedule " << c.schedule << ", reshard_after_forward " << (c.reshard != nullptr ? c.reshard : "-") << ", " << c.extra);
    std::vector<std::string> sets = uniform(4, 8, c.schedule);
    sets.push_back(fmt::format("parallelism.pp_stages_per_rank={}", c.stages_per_rank));
    if (c.reshard != nullptr) sets.push_back(fmt::format("fsdp.reshard_after_forward={}", c.reshard));
    sets.push_back("training.activation_checkpointing=selective");
    sets.push_back(c.extra);
    const std::size_t ops = prepare(sets).graph.size();
    sets.push_back(fmt::format("simulation.max_ops={}", ops));
    CHECK(prepare(sets).graph.size() == ops);
    sets.back() = fmt::format("simulation.max_ops={}", ops - 1);
    CHECK_THROWS_WITH_AS(prepare(sets), doctest::Contains("simulation.max_ops"), ConfigError);
  }
}

TEST_CASE("pipeline: 1F1B's first stage holds pp micro-batches of activations, GPipe's all m") {
  // pp 4 (two data-parallel ranks per stage), 8 micro-batches: 1F1B keeps 4 micro-batches'
  // activations alive on stage 0, GPipe 8; a micro-batch's activations are the same in both.
  const PpRun one = run(uniform(4, 8, "1f1b"));
  const PpRun gpipe = run(uniform(4, 8, "gpipe"));
  // Each peak also holds the transients of the backward running at it (a tenth of a micro-batch's
  // activations here), so the ratio is (4 + t) / (8 + t): just above a half.
  REQUIRE(gpipe.stage0_activations > 0);
  const double ratio = one.stage0_activations / gpipe.stage0_activations;
  CHECK(ratio > 4.0 / 8.0);
  CHECK(ratio < 4.2 / 8.2);
  // Tokens per GPU: 8 sequences of 4,096 tokens per pipeline of 4 ranks.
  CHECK(one.tokens_per_s_per_gpu * one.step == doctest::Approx(8.0 * 4096 / 4).scale(0));
}

TEST_CASE("pipeline: the degrees tune --pp auto searches") {
  // Powers of two up to the layers that divide the GPUs; none where pipelining is refused.
  const auto base = prepare({}).scenario;
  CHECK(graph::pipeline_parallel_degrees(base) == std::vector<int>{1, 2, 4});  // 4 layers, 8 GPUs
  CHECK(graph::pipeline_parallel_degrees(prepare({"model.layers=3"}).scenario) == std::vector<int>{1, 2});
  auto offload = base;
  offload.fsdp.cpu_offload = true;
  CHECK(graph::pipeline_parallel_degrees(offload) == std::vector<int>{1});
}

TEST_CASE("pipeline: tied embeddings - the last stage holds a copy and the two stages all-reduce its gradient") {
  // GPT-2 (124M: vocabulary 50,257 x 768, tied) on 8 GPUs, pp 2, FSDP2 over 4 ranks per stage:
  // the last stage's lm_head gets its own 50,257 x 768 weight; per step one all-reduce between
  // stage 0 and stage 1 of the fp32 gradient shard, 50,257 x 768 x 4 B / 4.
  const std::vector<std::string> sets{"model.preset=gpt2", "training.seq_len=1024", "parallelism.pp=2", "training.micro_batch=2"};
  const auto p = cli::prepare(test::source_dir() / "scenarios/llama3.1-8b_8xh100.yaml", sets);
  std::int64_t numel = 0;
  for (const auto& plan : p.stage_plans) numel += plan.total_numel();
  CHECK(numel == p.model.total_params() + 50257LL * 768);
  int all_reduces = 0;
  for (std::size_t o = 0; o < p.graph.size(); ++o) {
    const auto& op = p.graph.op(static_cast<int>(o));
    if (op.group != graph::Group::pp || op.kind != OpKind::all_reduce) continue;
    ++all_reduces;
    CHECK(op.stage == 0);
    CHECK(op.peer_stage == 1);
    CHECK(op.bytes == 50257.0 * 768 * 4 / 4);
  }
  CHECK(all_reduces == 1);
  const double step = test::in_child(
      [sets] { return cli::simulate(cli::prepare(test::source_dir() / "scenarios/llama3.1-8b_8xh100.yaml", sets)).summary.step_time; });
  CHECK(step > 0);
}

TEST_CASE("pipeline: DDP's gradients accumulate in one buffer over the micro-batches, not one per micro-batch") {
  // Megatron-style DDP x PP: stage 0 of the tiny Llama (4 blocks over pp 2) holds the embedding
  // (1,000 x 512) and blocks 0-1 (4 x 512^2 + 3 x 1,376 x 512 + 2 x 512 = 3,163,136 each):
  // 6,838,272 parameters, their gradients in fp32 (DDP's, the master dtype): 27,353,088 bytes.
  const auto grads = [](int microbatches) {
    return test::in_child([microbatches] {
      const auto p =
          prepare({"fsdp.version=2", "fsdp.sharding=no_shard", "parallelism.pp=2", fmt::format("training.micro_batch={}", microbatches)});
      const auto out = cli::simulate(p);
      const auto m = report::memory_timeline(p.graph, out.result.timeline, 0);
      double most = 0;
      for (const auto& point : m.points) most = std::max(most, point.bytes[static_cast<std::size_t>(graph::MemCategory::grad_shards)]);
      return most;
    });
  };
  CHECK(grads(1) == doctest::Approx(27'353'088.0).scale(0));
  CHECK(grads(8) == doctest::Approx(27'353'088.0).scale(0));
}

TEST_CASE("pipeline: tokens per GPU where the pipeline does not divide a micro-batch's tokens") {
  // 4 micro-batches of one 510-token sequence over pp 4: each GPU's share is 510 / 4 = 127.5
  // tokens a micro-batch, 510 a step (not 4 x 127 = 508).
  const double tokens = test::in_child([] {
    const auto p = prepare({"fsdp.version=2", "parallelism.pp=4", "training.micro_batch=4", "training.seq_len=510"});
    return cli::simulate(p).summary.tokens_per_step_per_gpu;
  });
  CHECK(tokens == doctest::Approx(510.0).scale(0));
}

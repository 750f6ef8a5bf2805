// Async tensor parallelism (parallelism.tp_async): torch's micro-pipelined collective matmuls.
// What is checked by hand: which collectives fuse (Inductor's micro_pipeline_tp patterns), the
// bytes of each copy step ((n - 1) steps of S / n: the ring all-gather's (n-1)/n S per rank), the
// chunked GEMMs (rows / n, the same FLOPs), the reduce-scatter's sum ((n + 1) / n S of memory
// traffic), and the pipeline the simulated schedule makes of them: compute-bound, the fused
// all-gather costs only its matmul; bandwidth-bound, (n - 1) copies and one chunk.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <vector>

#include "cli/pipeline.hpp"
#include "core/error.hpp"
#include "test_support.hpp"

using namespace shardsim;
using graph::OpKind;

namespace {

// One Llama 3 8B-shaped block (hidden 4,096, 32 / 8 heads, FFN 14,336) on 8 H100 of one node,
// TP 8 with sequence parallelism, one 8,192-token sequence, compiled, no checkpointing; a
// 128-token vocabulary keeps the output layer small.
std::vector<std::string> block(bool async, std::vector<std::string> more = {}) {
  std::vector<std::string> sets{"model.hidden=4096",
                                "model.heads=32",
                                "model.kv_heads=8",
                                "model.ffn_hidden=14336",
                                "model.vocab=128",
                                "model.layers=1",
                                "training.seq_len=8192",
                                "training.compile=true",
                                "fsdp.version=2",
                                "parallelism.tp=8",
                                fmt::format("parallelism.tp_async={}", async)};
  sets.insert(sets.end(), more.begin(), more.end());
  return sets;
}

graph::Prepared prepare(const std::vector<std::string>& sets) {
  return cli::prepare(test::source_dir() / "tests/data/tiny_llama.yaml", sets);
}

std::vector<int> named(const graph::StepGraph& g, const std::string& prefix) {
  std::vector<int> out;
  for (std::size_t o = 0; o < g.size(); ++o) {
    if (g.op(static_cast<int>(o)).name.rfind(prefix, 0) == 0) out.push_back(static_cast<int>(o));
  }
  return out;
}

double gemm_flops(const graph::StepGraph& g) {
  double f = 0;
  for (std::size_t o = 0; o < g.size(); ++o) f += g.op(static_cast<int>(o)).work.gemm_flops();
  return f;
}

// The compute ops a fused all-gather's copies feed: its chunks, own shard first.
std::vector<int> chunks_after(const graph::StepGraph& g, const std::vector<int>& copies) {
  std::vector<int> out;
  for (std::size_t o = 0; o < g.size(); ++o) {
    const auto& op = g.op(static_cast<int>(o));
    if (op.name.find(" rows ") != std::string::npos && g.in_degree(static_cast<int>(o)) > 0) {
      for (const auto& [pred, kind] : g.predecessors(static_cast<int>(o))) {
        if (std::find(copies.begin(), copies.end(), pred) != copies.end()) out.push_back(static_cast<int>(o));
      }
    }
  }
  // The own shard's chunk is the one just before the first fed chunk.
  if (out.empty()) return out;
  std::vector<int> with_own{out.front() - 1};
  with_own.insert(with_own.end(), out.begin(), out.end());
  return with_own;
}

}  // namespace

TEST_CASE("async TP: all-gathers and reduce-scatters fuse with the matmuls next to them") {
  const auto vanilla = prepare(block(false));
  const auto fused = prepare(block(true));
  const auto& g = fused.graph;
  // S = 8,192 tokens x 4,096 x 2 B = 64 MiB gathered before attention.
  const double s = 8192.0 * 4096 * 2;
  const auto copies = named(g, "TP AG layers.0.attention tp_enter copy ");
  REQUIRE(copies.size() == 7);
  for (std::size_t j = 0; j < copies.size(); ++j) {
    const auto& op = g.op(copies[j]);
    CHECK(op.kind == OpKind::send);
    CHECK(op.group == graph::Group::tp);
    CHECK(op.shift == static_cast<int>(j) + 1);
    CHECK(op.bytes == doctest::Approx(s / 8).scale(0));  // 7 x S/8: the ring all-gather's (n-1)/n S per rank
  }
  // The chunks: this rank's wq (4,096 -> 512), wk and wv (4,096 -> 128) on 1,024 rows each.
  const auto chunks = chunks_after(g, copies);
  REQUIRE(chunks.size() == 8);
  for (int c : chunks) {
    const auto& w = g.op(c).work;
    REQUIRE(w.gemms.size() == 3);
    CHECK(w.gemms[0].m == 1024);
    CHECK(w.gemm_flops() == doctest::Approx(2.0 * 1024 * 4096 * (512 + 128 + 128)).scale(0));
  }
  // The reduce-scatter after wo and after w2: 7 copies of S/8 each, and the sum of 8 chunks of
  // S/8 into one: 9/8 S of memory traffic.
  for (const char* tp : {"layers.0.attention tp_leave", "layers.0.feed_forward tp_leave"}) {
    CHECK(named(g, fmt::format("TP RS {} copy ", tp)).size() == 7);
    const auto sum = named(g, fmt::format("TP RS {} sum", tp));
    REQUIRE(sum.size() == 1);
    CHECK(g.op(sum[0]).work.memory_bytes == doctest::Approx(9.0 / 8 * s).scale(0));
  }
  // No NCCL collective is left for what fused: in forward none inside the block; in backward the
  // gradients' all-gathers fuse with wo's and w2's grad_input, while the reduce-scatters after
  // wq wk wv and w1 w3 (grad_inputs summed first) stay NCCL's. The output layer's all-gather
  // and its gradient's reduce-scatter (one matmul) fuse too; the embedding's do not (no matmul).
  int nccl_in_block = 0;
  for (std::size_t o = 0; o < g.size(); ++o) {
    const auto& op = g.op(static_cast<int>(o));
    if (op.group == graph::Group::tp && op.kind != OpKind::send && op.name.find("layers.0") != std::string::npos) {
      ++nccl_in_block;
      CHECK(op.kind == OpKind::reduce_scatter);
    }
  }
  CHECK(nccl_in_block == 2);
  CHECK(named(g, "TP RS output tp_enter sum").size() == 1);
  CHECK(named(g, "TP AG output tp_enter copy ").size() == 7);
  CHECK(named(g, "TP RS tok_embeddings tp_leave").size() == 1);
  // Chunking moves the GEMMs, it does not change them.
  CHECK(gemm_flops(g) == doctest::Approx(gemm_flops(vanilla.graph)).epsilon(1e-9).scale(0));
}

namespace {

// The block's TP collectives left to NCCL (not fused), by kind.
std::map<OpKind, int> nccl_tp_ops(const graph::StepGraph& g) {
  std::map<OpKind, int> out;
  for (std::size_t o = 0; o < g.size(); ++o) {
    const auto& op = g.op(static_cast<int>(o));
    if (op.group == graph::Group::tp && op.kind != OpKind::send && op.name.find("layers.0") != std::string::npos) ++out[op.kind];
  }
  return out;
}

}  // namespace

TEST_CASE("async TP under float8: an all-gather fuses only with GEMMs that read it as it is") {
  // Inductor's pass fuses an all-gather with the mm / _scaled_mm nodes whose left operand is its
  // result (micro_pipeline_tp.py _find_consumer_matmuls). Tensorwise, torchao's float8 TP plan
  // casts before every gather: Float8ColwiseParallel the input on its shard, so wq wk wv and
  // w1 w3 read the float8 gather and fuse (7 copies of S / 8 in float8, 1 byte an element), and
  // Float8RowwiseParallel grad_output on its shard in backward (NoopFwToFloat8BwDynamic after the
  // output's redistribute), so the gradients' gathers before wo and w2 fuse too: only the 2
  // reduce-scatters of summed grad_inputs stay NCCL's, as in bf16.
  const double s = 8192.0 * 4096 * 2;
  const auto tensorwise = prepare(block(true, {"training.float8={recipe: tensorwise}"}));
  const auto copies = named(tensorwise.graph, "TP AG layers.0.attention tp_enter copy ");
  REQUIRE(copies.size() == 7);
  CHECK(tensorwise.graph.op(copies[0]).bytes == doctest::Approx(s / 8 / 2).scale(s / 16));
  auto t = nccl_tp_ops(tensorwise.graph);
  CHECK(t[OpKind::all_gather] == 0);
  CHECK(t[OpKind::reduce_scatter] == 2);
  // Rowwise (torchtitan's bf16 TP plan), the gathers are bf16 and each linear casts what they
  // gather: no matmul reads it, nothing fuses with it (pytorch/pytorch#149990), in forward or
  // backward: 2 + 2 all-gathers NCCL's. The reduce-scatters after wo and w2 still fuse with the
  // GEMM that produces them.
  const auto rowwise = prepare(block(true, {"training.float8={recipe: rowwise}"}));
  CHECK(named(rowwise.graph, "TP AG layers.0.attention tp_enter copy ").empty());
  CHECK(named(rowwise.graph, "TP RS layers.0.attention tp_leave copy ").size() == 7);
  auto r = nccl_tp_ops(rowwise.graph);
  CHECK(r[OpKind::all_gather] == 4);
  CHECK(r[OpKind::reduce_scatter] == 2);
  // bf16, the test above: only the 2 gradient reduce-scatters.
  auto b = nccl_tp_ops(prepare(block(true)).graph);
  CHECK(b[OpKind::all_gather] == 0);
  CHECK(b[OpKind::reduce_scatter] == 2);
}

TEST_CASE("async TP: the gathered tensor it returns is copied where it is read again as rows") {
  // fused_all_gather_matmul multiplies the sequence-major rows and returns A.movedim(0, 1): with
  // two sequences a rank, a strided view, which the weight-gradient GEMMs read again as [b s, h]
  // rows and which is saved for them: one copy of S each. Without checkpointing the block's two
  // gathers are saved (forward, 2 copies), and in backward the gradients' gathers before wo and w2
  // are read by their weight gradients (2). Vanilla TP copies around every collective instead:
  // 4 forward, 2 backward (compiled: the gradient reduce-scatters' copies fuse with the sums).
  // Counted against Megatron's [s, b, h] layout, which has none.
  const double s = 2 * 8192.0 * 4096 * 2;
  const auto copies = [&](bool async, std::vector<std::string> more) {
    const auto traffic = [&](const std::vector<std::string>& layout) {
      std::vector<std::string> sets = more;
      sets.insert(sets.end(), layout.begin(), layout.end());
      std::array<double, 2> out{};
      const auto p = prepare(block(async, sets));
      for (std::size_t o = 0; o < p.graph.size(); ++o) {
        const auto& op = p.graph.op(static_cast<int>(o));
        if (op.name.find("layers.0") == std::string::npos) continue;
        if (op.kind == OpKind::forward || op.kind == OpKind::backward) out[op.kind == OpKind::forward ? 0 : 1] += op.work.memory_bytes;
      }
      return out;
    };
    const auto bsh = traffic({});
    const auto sbh = traffic({"parallelism.tp_activation_layout=sbh"});
    return std::array<double, 2>{(bsh[0] - sbh[0]) / (2 * s), (bsh[1] - sbh[1]) / (2 * s)};
  };
  using Copies = std::array<double, 2>;
  CHECK(copies(true, {"training.micro_batch=2"}) == Copies{2, 2});
  CHECK(copies(false, {"training.micro_batch=2"}) == Copies{4, 2});
  // One sequence a rank: the view is contiguous, no copy.
  CHECK(copies(true, {}) == Copies{0, 0});
}

TEST_CASE("async TP: the copies and chunks pipeline as the schedule lets them") {
  // Without compute slowed by communication, so that chunk and copy times are the model's alone.
  const auto region = [](const graph::Prepared& p, const cli::Outcome& out, const std::string& tp) {
    const auto copies = named(p.graph, fmt::format("TP AG {} copy ", tp));
    const auto chunks = chunks_after(p.graph, copies);
    const auto length = [&](int op) { return out.result.timeline.at(op, 0).end - out.result.timeline.at(op, 0).start; };
    // One copy's time, one chunk's, and the span from the first chunk's start to the last's end.
    return std::array<double, 3>{length(copies.at(0)), length(chunks.at(1)),
                                 out.result.timeline.at(chunks.back(), 0).end - out.result.timeline.at(chunks.front(), 0).start};
  };
  const auto both = test::in_child([&] {
    const auto p = prepare(block(true, {"cluster.overrides={gpu.comm_interference: 0}"}));
    const auto out = cli::simulate(p);
    const auto a = region(p, out, "layers.0.attention tp_enter");
    const auto m = region(p, out, "layers.0.feed_forward tp_enter");
    return std::array<double, 6>{a[0], a[1], a[2], m[0], m[1], m[2]};
  });
  const std::array<double, 3> attention{both[0], both[1], both[2]};
  const std::array<double, 3> mlp{both[3], both[4], both[5]};
  // A copy is 8 MiB (S / 8) at 450 GB/s x 0.8: 23.3 us, plus NCCL's Simple latency for the step.
  for (double copy : {attention[0], mlp[0]}) {
    CHECK(copy >= 23.3e-6);
    CHECK(copy <= 23.3e-6 + 20e-6);
  }
  // Attention's chunk: wq, wk, wv on this rank (4,096 -> 512, 128, 128) over 1,024 rows. wq: 4.295
  // GFLOP at 989 TFLOPS x 0.68 = 6.387 us; its 1,024 x 512 output is 16 tiles of 128 x 256, split
  // 8 ways along K to fill 128 of 132 SMs, against the reference block's 0.976741: x 1.007264
  // (tests/unit/engine/gemm_tiles_test.cpp); with the output write at K = 4,096 (x (1 - 106.28 /
  // 6,870.71) on the FLOPs, 106.28 / 4,096 more; engine/compute_model.hpp): 6.500 us. wk and wv are bound by their
  // bytes: 2 x (1,024 x 4,096 + 4,096 x 128) + 1,024 x 128 x 2 = 9,699,328 B at 3.35 TB/s x 0.85,
  // 3.406 us each (their FLOPs alone 1.61 us). Plus 3 launches of 4 us: 25.27 us, at the pace of
  // the slowest of the 8 GPUs (x 1.02158, gpu.variation 0.015): 25.81 us, shorter than a copy.
  // Bandwidth-bound: each chunk waits for its copy, so the first chunk runs during the first
  // copy and the last ends one chunk after the 7th copy.
  CHECK(attention[1] == doctest::Approx((6.500e-6 + 2 * 3.406e-6 + 12e-6) * 1.02158).epsilon(0.002).scale(0));
  CHECK(attention[2] == doctest::Approx(7 * attention[0] + attention[1]).epsilon(0.01).scale(0));
  // The MLP's chunk: w1 and w3 (4,096 -> 1,792 each), 30.06 GFLOP: 44.70 us. Each 1,024 x 1,792
  // output is 56 tiles of 128 x 256, split 2 ways along K: 112 of 132 SMs, a fill of 0.848485 against
  // the reference's 0.976741, x 1.151158; with the output write, 44.70 x (0.984532 x 1.151158 +
  // 0.025947) = 51.82 us, plus 2 launches, 59.82 us, x 1.02158: 61.11 us, longer than a copy. Compute-bound: each copy
  // lands while the chunk before runs, and the 8 chunks run back to back, where NCCL's all-gather
  // would come first.
  CHECK(mlp[1] == doctest::Approx((51.82e-6 + 8e-6) * 1.02158).epsilon(0.002).scale(0));
  CHECK(mlp[2] == doctest::Approx(8 * mlp[1]).epsilon(0.01).scale(0));
}

TEST_CASE("async TP: the step overlaps TP communication with the matmuls") {
  const auto run = [](bool async) {
    return test::in_child([async] {
      const auto s = cli::simulate(prepare(block(async, {"model.layers=4", "training.micro_batch=8"}))).summary;
      return std::array<double, 3>{s.step_time, s.tp_exposed_comm_s, s.tp_comm_s};
    });
  };
  const auto vanilla = run(false);
  const auto fused = run(true);
  INFO("step " << vanilla[0] << " -> " << fused[0] << " s, exposed TP " << vanilla[1] << " -> " << fused[1] << " s");
  CHECK(fused[0] < vanilla[0]);
  CHECK(fused[1] < 0.8 * vanilla[1]);
  // What stays exposed: the NCCL reduce-scatters of backward, the first chunk's copy wait where
  // compute is short, and the sums.
  CHECK(fused[1] > 0);
}

TEST_CASE("async TP with Transformer Engine's userbuffers: the gradient reduce-scatters run beside the weight-gradient GEMMs") {
  // The same block without compile (TE needs none): the forward and the row-parallel backward fuse
  // as above, and the two NCCL reduce-scatters of backward (after wq wk wv's and w1 w3's
  // grad_inputs) start as soon as those grad_inputs are done, while their weight gradients run.
  const auto p = prepare(block(true, {"training.compile=false", "parallelism.tp_async_impl=userbuffers"}));
  const auto& g = p.graph;
  for (const auto& [tp, flops] : {std::pair{"layers.0.attention tp_enter", 2.0 * 8192 * 4096 * (512 + 128 + 128)},
                                  std::pair{"layers.0.feed_forward tp_enter", 2.0 * 8192 * 4096 * (1792 + 1792)}}) {
    const auto scatter = named(g, fmt::format("TP RS {}", tp));
    REQUIRE(scatter.size() == 1);
    // What the reduce-scatter waits for: the segment's backward without those weight gradients.
    int grads = -1;
    for (const auto& [pred, kind] : g.predecessors(scatter[0])) {
      if (g.op(pred).name.rfind("BWD ", 0) == 0) grads = pred;
    }
    REQUIRE(grads >= 0);
    // The op after it on the compute stream: the weight gradients, dW = dY^T X over all 8,192
    // tokens of this rank's columns (wq 512, wk and wv 128; w1 and w3 1,792 each), not waiting
    // for the reduce-scatter.
    // (issued right after the reduce-scatter; a unit's segments share its name).
    int wgrad = -1;
    for (int o = scatter[0] + 1; o < static_cast<int>(g.size()) && wgrad < 0; ++o) {
      if (g.op(o).name == g.op(grads).name + " (weight gradients)") wgrad = o;
    }
    REQUIRE(wgrad >= 0);
    CHECK(g.op(wgrad).work.gemm_flops() == doctest::Approx(flops).scale(0));
    for (const auto& [pred, kind] : g.predecessors(wgrad)) CHECK(pred != scatter[0]);
  }
  // Splitting the backward moves the GEMMs, it does not change them.
  CHECK(gemm_flops(g) == doctest::Approx(gemm_flops(prepare(block(true)).graph)).epsilon(1e-9).scale(0));
  // The reduce-scatters hide behind the weight gradients: less TP time exposed than with
  // Inductor's collective matmuls, which leave them on the critical path.
  const auto exposed = [](const std::vector<std::string>& more) {
    return test::in_child([more] {
      const auto s = cli::simulate(prepare(block(true, more))).summary;
      return std::array<double, 1>{s.tp_exposed_comm_s};
    })[0];
  };
  const double inductor = exposed({"model.layers=4", "training.micro_batch=8"});
  const double userbuffers = exposed({"model.layers=4", "training.micro_batch=8", "parallelism.tp_async_impl=userbuffers"});
  INFO("exposed TP " << inductor << " -> " << userbuffers << " s");
  CHECK(userbuffers < inductor);
}

TEST_CASE("async TP's implementation: userbuffers needs no compile, inductor does") {
  CHECK_NOTHROW((void)prepare(block(true, {"training.compile=false", "parallelism.tp_async_impl=userbuffers"})));
  CHECK_THROWS_AS((void)prepare(block(true, {"training.compile=false"})), ConfigError);
}

TEST_CASE("Megatron's sequence-parallel linears all-gather their input again in backward, beside the input-gradient GEMMs") {
  const auto p =
      prepare(block(true, {"training.compile=false", "parallelism.tp_async_impl=userbuffers", "parallelism.tp_save_gathered_input=false"}));
  const auto& g = p.graph;
  for (const char* tp : {"layers.0.attention tp_enter", "layers.0.feed_forward tp_enter"}) {
    const auto regather = named(g, fmt::format("TP AG {} (re-gather)", tp));
    REQUIRE(regather.size() == 1);
    // The block's input, S = 8,192 tokens x 4,096 x 2 B, gathered over the TP group as in forward.
    CHECK(g.op(regather[0]).kind == OpKind::all_gather);
    CHECK(g.op(regather[0]).bytes == doctest::Approx(8192.0 * 4096 * 2).scale(0));
    // Nothing but the weight gradients waits for it: the next op (the input-gradient GEMMs) does not.
    int waiting = 0;
    for (int o = regather[0] + 1; o < static_cast<int>(g.size()); ++o) {
      for (const auto& [pred, kind] : g.predecessors(o)) {
        if (pred != regather[0] || g.op(o).stream != graph::Stream::compute) continue;
        ++waiting;
        CHECK(g.op(o).name.find("(weight gradients)") != std::string::npos);
      }
    }
    CHECK(waiting == 1);
  }
  // Refused where it is not modelled: without TE's overlap.
  CHECK_THROWS_AS((void)prepare(block(false, {"parallelism.tp_save_gathered_input=false"})), ConfigError);
}

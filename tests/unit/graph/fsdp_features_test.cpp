// FSDP features checked against independent figures: the FSDP paper's traffic formulas, and
// counts of the collectives each setting must produce.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fixtures/fixtures.hpp"

using namespace shardsim;

namespace {

graph::Prepared tiny(const std::vector<std::string>& sets = {}) {
  return test::prepared("tests/data/tiny_llama.yaml", sets);
}

int count(const graph::StepGraph& g, graph::OpKind kind) {
  int n = 0;
  for (std::size_t i = 0; i < g.size(); ++i) n += g.op(static_cast<int>(i)).kind == kind;
  return n;
}

// Bytes one rank sends in a ring collective of n ranks: (n-1)/n S, twice for an all-reduce.
double ring_bytes(const graph::Op& op, int n) {
  const double f = op.kind == graph::OpKind::all_reduce ? 2.0 : 1.0;
  return f * (n - 1) / n * op.bytes;
}

std::vector<std::string> names_on(const graph::StepGraph& g, graph::Stream s) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const auto& op = g.op(static_cast<int>(i));
    if (op.stream == s && op.is_collective()) out.push_back(op.name);
  }
  return out;
}

}  // namespace

TEST_CASE("full shard moves 3M(W-1)/W bytes per GPU per step (FSDP paper)") {
  // The seed's SimpleTransformer with size-based wrapping leaves the root empty, so every unit
  // is gathered in forward and in backward and reduce-scattered once; fp32 everywhere, so
  // M = 4 bytes x parameters (253,653,840; each unit's numel is already a multiple of 8).
  const auto p = test::prepared("tests/data/seed_simple_size_wrap.yaml");
  double moved = 0;
  for (std::size_t i = 0; i < p.graph.size(); ++i) {
    const auto& op = p.graph.op(static_cast<int>(i));
    if (op.is_collective()) moved += ring_bytes(op, 8);
  }
  const double m = 4.0 * 253'653'840;
  CHECK(moved == doctest::Approx(3 * m * 7 / 8).scale(0));
}

TEST_CASE("hybrid sharding crosses hosts only with the all-reduce of each shard: 2(R-1)/R x M/G") {
  // 4 nodes x 8 GPUs: shards of 1/8 of each unit, all-reduced over the R = 4 replicas.
  const auto p = tiny({"cluster.nodes=4", "fsdp.sharding=hybrid_shard", "fsdp.mixed_precision=none"});
  double cross = 0;
  double m = 0;
  for (const auto& u : p.plan.units) m += 4.0 * static_cast<double>(u.padded_numel);
  for (std::size_t i = 0; i < p.graph.size(); ++i) {
    const auto& op = p.graph.op(static_cast<int>(i));
    if (op.group == graph::Group::replicate) cross += ring_bytes(op, 4);
    // Within the node, the shard group all-reduces only the gradient norm (4 bytes).
    if (op.group == graph::Group::shard && op.kind == graph::OpKind::all_reduce) CHECK(op.bytes == 4);
  }
  CHECK(cross == doctest::Approx(2.0 * 3 / 4 * m / 8).scale(0));
}

TEST_CASE("shard_grad_op gathers once per step, full shard twice, the root once") {
  CHECK(count(tiny({"fsdp.sharding=shard_grad_op"}).graph, graph::OpKind::all_gather) == 5);
  CHECK(count(tiny().graph, graph::OpKind::all_gather) == 4 * 2 + 1);
}

TEST_CASE("no_sync reduces only in the last micro-step") {
  CHECK(count(tiny({"training.grad_accum=2"}).graph, graph::OpKind::reduce_scatter) == 10);
  CHECK(count(tiny({"training.grad_accum=2", "training.no_sync=true"}).graph, graph::OpKind::reduce_scatter) == 5);
}

TEST_CASE("FSDP2 no_sync accumulates each unit's gradients in the fp32 reduce dtype (FSDPParam.to_accumulated_grad_if_needed)") {
  // Three micro-steps, bf16 parameters, fp32 reduce: after the first backward of a unit its
  // bf16 gradients are cast into an fp32 accumulator (read 2 + write 4 bytes an element), the
  // two later ones added to it (read 2 + 4, write 4) and freed; the last micro-step's copy-in
  // reads the accumulator (4 bytes an element) into the fp32 reduce-scatter buffer.
  const std::vector<std::string> v2 = {"fsdp.version=2", "training.grad_accum=3", "training.no_sync=true"};
  const auto p = tiny(v2);
  std::map<int, std::vector<const graph::Op*>> upcasts, accumulates, copy_ins;
  for (std::size_t i = 0; i < p.graph.size(); ++i) {
    const auto& op = p.graph.op(static_cast<int>(i));
    if (op.name.starts_with("grad upcast ")) upcasts[op.unit].push_back(&op);
    if (op.name.starts_with("grad accumulate ")) accumulates[op.unit].push_back(&op);
    if (op.name.starts_with("copy-in ")) copy_ins[op.unit].push_back(&op);
  }
  int units = 0;
  for (std::size_t u = 0; u < p.plan.units.size(); ++u) {
    const double numel = static_cast<double>(p.plan.units[u].numel);
    if (numel == 0) continue;
    ++units;
    const int id = static_cast<int>(u);
    REQUIRE(upcasts[id].size() == 1);
    REQUIRE(accumulates[id].size() == 2);
    REQUIRE(copy_ins[id].size() == 1);
    const graph::Op& upcast = *upcasts[id][0];
    CHECK(upcast.work.memory_bytes == doctest::Approx(6 * numel).scale(0));
    double allocated = 0;
    double freed = 0;
    for (const auto& m : upcast.memory) (m.bytes > 0 ? allocated : freed) += m.bytes;
    CHECK(allocated == doctest::Approx(4 * numel).scale(0));  // the accumulator
    CHECK(freed == doctest::Approx(-2 * numel).scale(0));     // the first micro-step's bf16 gradients
    for (const graph::Op* a : accumulates[id]) {
      CHECK(a->work.memory_bytes == doctest::Approx(10 * numel).scale(0));
      double net = 0;
      for (const auto& m : a->memory) net += m.bytes;
      CHECK(net == doctest::Approx(-2 * numel).scale(0));  // frees that micro-step's bf16 gradients
    }
    const double buffer = 4.0 * static_cast<double>(p.plan.units[u].padded_numel);
    CHECK(copy_ins[id][0]->work.memory_bytes == doctest::Approx(4 * numel + buffer).scale(0));
  }
  CHECK(units == static_cast<int>(upcasts.size()));
  // Nothing to upcast when the reduce dtype is the parameters' (the gradients accumulate in
  // place: tests/unit/graph/grad_accumulation_test.cpp), nothing at all with one micro-step.
  auto v2_bf16 = v2;
  v2_bf16.push_back("fsdp.mixed_precision.reduce=bf16");
  const auto q = tiny(v2_bf16);
  for (std::size_t i = 0; i < q.graph.size(); ++i) CHECK_FALSE(q.graph.op(static_cast<int>(i)).name.starts_with("grad upcast "));
  const auto one = tiny({"fsdp.version=2"});
  for (std::size_t i = 0; i < one.graph.size(); ++i) {
    const auto& name = one.graph.op(static_cast<int>(i)).name;
    CHECK_FALSE((name.starts_with("grad upcast ") || name.starts_with("grad accumulate ")));
  }
}

TEST_CASE("no_shard all-reduces DDP buckets of bucket_size while backward runs") {
  const auto p = tiny({"fsdp.sharding=no_shard", "fsdp.bucket_size=25MB"});
  double total = 0;
  std::vector<double> buckets;
  for (std::size_t i = 0; i < p.graph.size(); ++i) {
    const auto& op = p.graph.op(static_cast<int>(i));
    CHECK(op.kind != graph::OpKind::all_gather);
    CHECK(op.kind != graph::OpKind::reduce_scatter);
    if (op.kind == graph::OpKind::all_reduce) buckets.push_back(op.bytes);
  }
  for (double b : buckets) total += b;
  // Every gradient (fp32 reduce dtype) is all-reduced once; full buckets hold at least 25 MB.
  CHECK(total == doctest::Approx(4.0 * static_cast<double>(p.model.total_params())).scale(0));
  REQUIRE(buckets.size() >= 2);
  for (std::size_t i = 0; i + 1 < buckets.size(); ++i) CHECK(buckets[i] >= 25e6);
}

TEST_CASE("CPU offload copies each shard in before its all-gather and each gradient shard out") {
  const auto p = tiny({"fsdp.cpu_offload=true"});
  const auto& g = p.graph;
  int h2d = 0;
  int d2h = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const auto& op = g.op(static_cast<int>(i));
    if (op.kind == graph::OpKind::all_gather) {
      bool fed = false;
      for (const auto& [pred, kind] : g.predecessors(op.id))
        fed |= g.op(pred).kind == graph::OpKind::host_copy && kind == graph::EdgeKind::data;
      CHECK(fed);
    }
    h2d += op.stream == graph::Stream::h2d;
    d2h += op.stream == graph::Stream::d2h;
    if (op.kind == graph::OpKind::optimizer) {
      CHECK(op.stream == graph::Stream::cpu);
      CHECK(op.work.host_bytes > 0);
    }
  }
  CHECK(h2d == 9);
  CHECK(d2h == 5);
  for (const auto& m : g.info.initial_memory) CHECK(m.pool == graph::Pool::host);
}

TEST_CASE("FSDP2 reshard_after_forward = d gathers backward over d ranks, d must divide the shard group") {
  const auto p = tiny({"fsdp.version=2", "fsdp.reshard_after_forward=2"});
  CHECK(p.graph.info.reshard_group == 2);
  int over_d = 0;
  for (std::size_t i = 0; i < p.graph.size(); ++i) over_d += p.graph.op(static_cast<int>(i)).group == graph::Group::reshard;
  CHECK(over_d == 4);
  CHECK_THROWS_AS((void)tiny({"fsdp.version=2", "fsdp.reshard_after_forward=3"}), ConfigError);
}

TEST_CASE("FSDP1 with backward_hook_order pre_first and no prefetch still issues AG(k-1) before RS(k)") {
  // Unit k-1's pre-backward fires before unit k's post-backward, so even without prefetching
  // the next all-gather precedes the reduce-scatter on the one NCCL stream.
  const auto names = names_on(tiny({"fsdp.backward_prefetch=none", "fsdp.backward_hook_order=pre_first"}).graph, graph::Stream::nccl);
  const auto ag2 = std::find(names.begin() + 5, names.end(), "AG layers.2");
  const auto rs3 = std::find(names.begin(), names.end(), "RS layers.3");
  CHECK(ag2 < rs3);
}

TEST_CASE("FSDP2 backward_prefetch_depth = 2 issues two all-gathers at the root's pre-backward") {
  // The root's pre-backward hook is on the model's output, so it fires after the loss's backward
  // (the loss is the training loop's, outside the model) and before the output layer's.
  const auto p = tiny({"fsdp.version=2", "fsdp.backward_prefetch_depth=2"});
  std::vector<std::string> issued;  // from the forward's loss to the first block's backward
  bool forward_done = false;
  for (std::size_t i = 0; i < p.graph.size(); ++i) {
    const auto& op = p.graph.op(static_cast<int>(i));
    if (op.name.starts_with("BWD layers")) break;
    if (op.name == "FWD loss") forward_done = true;
    if (forward_done && (op.kind == graph::OpKind::all_gather || op.kind == graph::OpKind::backward)) issued.push_back(op.name);
  }
  REQUIRE(issued.size() >= 4);
  CHECK(issued[0] == "BWD loss");
  CHECK(issued[1] == "AG layers.3");
  CHECK(issued[2] == "AG layers.2");
  CHECK(issued[3] == "BWD output");
}

TEST_CASE("FSDP2's all-gather output is counted from where the CPU allocated it, in program order") {
  // The root's pre-backward prefetch of the last block runs after the loss's backward was issued:
  // its buffer is counted from the next compute-stream op the CPU issues (the output layer's
  // backward), not at the loss's peak, though the all-gather stream may run it during the
  // forward's tail. Every other FSDP2 all-gather likewise from the compute op issued after it.
  const auto p = tiny({"fsdp.version=2", "fsdp.keep_last_unit_unsharded=false"});
  int prefetch = -1;
  bool loss_backward = false;
  for (std::size_t i = 0; i < p.graph.size() && prefetch < 0; ++i) {
    const auto& op = p.graph.op(static_cast<int>(i));
    loss_backward |= op.name == "BWD loss";
    if (loss_backward && op.kind == graph::OpKind::all_gather) prefetch = static_cast<int>(i);
  }
  REQUIRE(prefetch >= 0);
  const auto& ag = p.graph.op(prefetch);
  CHECK(ag.name == "AG layers.3");
  REQUIRE(!ag.memory.empty());
  REQUIRE(ag.memory.front().not_before >= 0);
  CHECK(p.graph.op(ag.memory.front().not_before).name == "BWD output");
  // FSDP1 allocates when the CPU issues the all-gather (at_issue), not this way.
  const auto v1 = tiny({"fsdp.version=1"});
  for (std::size_t i = 0; i < v1.graph.size(); ++i) {
    for (const auto& m : v1.graph.op(static_cast<int>(i)).memory) CHECK(m.not_before == -1);
  }
}

TEST_CASE("ZeRO-3 fetches each module's own partitioned parameters, small ones stay whole") {
  // Per block: wq wk wv wo w1 w2 w3 (the norms' 512 weights are under the 1e5 threshold);
  // root: embedding and output. Two steps (the trace is recorded first).
  const int per_pass = 4 * 7 + 2;
  // stage3_max_reuse_distance 0: every module is released after its forward and fetched again
  // in backward, except the output head, used again at once (reuse distance 0).
  const auto released = tiny({"fsdp.sharding=zero3", "fsdp.zero3.max_reuse_distance=0"});
  CHECK(released.graph.info.steps == 2);
  CHECK(count(released.graph, graph::OpKind::all_gather) == 2 * (per_pass + per_pass - 1));
  // The default distance, 1e9 parameters, is more than the tiny model's twice-over numel: every
  // module is kept from its forward to its backward and fetched once per step.
  const auto kept = tiny({"fsdp.sharding=zero3"});
  CHECK(count(kept.graph, graph::OpKind::all_gather) == 2 * per_pass);
}

TEST_CASE("steps: auto simulates two steps where the first differs") {
  CHECK(tiny().graph.info.steps == 1);
  CHECK(tiny({"fsdp.forward_prefetch=true"}).graph.info.steps == 2);
  CHECK(tiny({"simulation.steps=3"}).graph.info.steps == 3);
}

TEST_CASE("a dotted wrap key on a scenario that leaves fsdp.wrap at its default sets the default policy") {
  // tests/data/tiny_llama.yaml writes no fsdp.wrap: the default is {policy: module}. Four blocks,
  // two per unit: two block units and the root.
  const auto p = tiny({"fsdp.wrap.blocks_per_unit=2"});
  CHECK(p.plan.units.size() == 3);
}

TEST_CASE("gradient clipping all-reduces the norm once a step: over the shard group and over TP") {
  // The squared norm (one fp32) is summed where the gradients are split: FSDP's shard group, then
  // the TP group; the optimizer step waits for both, and both wait for the last reduce-scatter.
  // DDP's gradients are whole on every rank: nothing to sum.
  const auto norms = [](const graph::StepGraph& g) {
    std::vector<const graph::Op*> out;
    for (std::size_t o = 0; o < g.size(); ++o) {
      const auto& op = g.op(static_cast<int>(o));
      if (op.name.starts_with("grad norm AR")) out.push_back(&op);
    }
    return out;
  };
  const auto p = tiny({"fsdp.version=2", "parallelism.tp=2"});
  const auto ars = norms(p.graph);
  REQUIRE(ars.size() == 2);
  CHECK(ars[0]->group == graph::Group::shard);
  CHECK(ars[1]->group == graph::Group::tp);
  int optimizer = -1;
  int last_rs = -1;
  for (std::size_t o = 0; o < p.graph.size(); ++o) {
    const auto& op = p.graph.op(static_cast<int>(o));
    if (op.kind == graph::OpKind::optimizer) optimizer = op.id;
    if (op.kind == graph::OpKind::reduce_scatter) last_rs = op.id;
  }
  for (const graph::Op* ar : ars) {
    CHECK(ar->kind == graph::OpKind::all_reduce);
    CHECK(ar->bytes == 4);
    CHECK(ar->id > last_rs);
    CHECK(ar->id < optimizer);
  }
  const auto preds = p.graph.predecessors(optimizer);
  CHECK(std::any_of(preds.begin(), preds.end(), [&](const auto& e) { return e.first == ars[1]->id; }));
  const auto first = p.graph.predecessors(ars[0]->id);
  CHECK(std::any_of(first.begin(), first.end(), [&](const auto& e) { return e.first == last_rs; }));
  CHECK(norms(tiny({"fsdp.sharding=no_shard"}).graph).empty());
  CHECK(norms(tiny({"training.grad_accum=2"}).graph).size() == 1);  // once a step, not per micro-step
}

namespace {

// The ids of the ops named `name`, in graph order (every step and micro-step).
std::vector<int> ops_named(const graph::Prepared& p, std::string_view name) {
  std::vector<int> out;
  for (std::size_t i = 0; i < p.graph.size(); ++i) {
    if (p.graph.op(static_cast<int>(i)).name == name) out.push_back(static_cast<int>(i));
  }
  return out;
}

// Whether op `id` waits directly for op `pred`.
bool waits_for(const graph::Prepared& p, int id, int pred) {
  bool found = false;
  for (const auto& [before, kind] : p.graph.predecessors(id)) found |= before == pred;
  return found;
}

// The work of a unit's FSDP1 post-backward op, checking that its reduce-scatter waits for it;
// nullopt where there is none.
std::optional<graph::Work> post_backward_work(const graph::Prepared& p, const std::string& unit) {
  const auto ops = ops_named(p, "post-backward " + unit);
  if (ops.empty()) return std::nullopt;
  const auto rs = ops_named(p, "RS " + unit);
  REQUIRE(!rs.empty());
  CHECK(waits_for(p, rs.back(), ops.back()));
  CHECK(p.graph.op(ops.back()).stream == graph::Stream::compute);
  return p.graph.op(ops.back()).work;
}

}  // namespace

TEST_CASE("FSDP1 concatenates a unit's gradients into its flat parameter's on the compute stream") {
  // The parameters are views of the flat parameter (torch.split, then view), so autograd's
  // SplitWithSizesBackward0 writes their bf16 gradients into the flat gradient: read 2 + write 2
  // bytes an element of the padded flat parameter (layers.1: 3,163,136 elements, 12,652,544 B),
  // before the unit's reduce-scatter, which waits for it. Under no_sync the second micro-step's
  // AccumulateGrad adds the new flat gradient to the kept one: 2 + 2 + (2 + 2 + 2) bytes.
  const auto p = tiny({"training.grad_accum=2", "training.no_sync=true"});
  std::set<std::string> units;
  for (std::size_t i = 0; i < p.graph.size(); ++i) {
    const auto& op = p.graph.op(static_cast<int>(i));
    if (op.name.starts_with("grad flatten ")) units.insert(op.name);
  }
  CHECK(units.size() == 5);  // four blocks and the root
  const auto block = ops_named(p, "grad flatten layers.1");
  REQUIRE(block.size() == 2);  // one a micro-step
  const graph::Op& first = p.graph.op(block[0]);
  const graph::Op& second = p.graph.op(block[1]);
  CHECK(first.stream == graph::Stream::compute);
  CHECK(first.work.memory_bytes == doctest::Approx(12'652'544.0).scale(0));
  CHECK(first.work.launches == 1);
  CHECK(second.work.memory_bytes == doctest::Approx(31'631'360.0).scale(0));
  CHECK(second.work.launches == 2);
  // The last micro-step's reduce-scatter of layers.1 reads the flattened gradient, through the
  // post-backward hook's cast and division (next test).
  const auto hook = ops_named(p, "post-backward layers.1");
  REQUIRE(hook.size() == 1);  // the synchronizing micro-step's only
  CHECK(waits_for(p, hook.front(), block[1]));
  CHECK(waits_for(p, ops_named(p, "RS layers.1").back(), hook.front()));
  // FSDP2's parameters are its own tensors: nothing to flatten (its copy-in reads them).
  const auto v2 = tiny({"fsdp.version=2"});
  for (std::size_t i = 0; i < v2.graph.size(); ++i) CHECK_FALSE(v2.graph.op(static_cast<int>(i)).name.starts_with("grad flatten "));
}

TEST_CASE("FSDP1 casts and divides each unit's gradient around its reduce-scatter") {
  // torch/distributed/fsdp/_runtime_utils.py: the flat gradient cast to the reduce dtype, divided
  // by the predivide factor, reduce-scattered, the shard divided by the postdivide factor and cast
  // to the sharded parameter's dtype. Over 8 ranks the factors are 4 and 2 (the largest power of
  // two f with 8 / f > f). layers.1 of the tiny Llama: 3,163,136 padded elements, 395,392 a shard.
  // bf16 gradients reduced in fp32: cast 2 + 4, predivide 4 + 4, postdivide of the shard 4 + 4
  // (1 byte an element of the unit), no shard cast (fp32 already): 15 x 3,163,136 = 47,447,040 B.
  auto w = post_backward_work(tiny(), "layers.1");
  REQUIRE(w.has_value());
  CHECK(w->memory_bytes == doctest::Approx(47'447'040.0).scale(0));
  CHECK(w->launches == 3);
  // Reduced in bf16: no cast before, predivide 2 + 2 (12,652,544 B), postdivide 2 + 2 of the
  // shard (1,581,568 B) and its cast to fp32 2 + 4 (2,372,352 B): 16,606,464 B.
  w = post_backward_work(tiny({"fsdp.mixed_precision.reduce=bf16"}), "layers.1");
  REQUIRE(w.has_value());
  CHECK(w->memory_bytes == doctest::Approx(16'606'464.0).scale(0));
  CHECK(w->launches == 3);
  // Over 2 ranks the factors are 2 and 1: no division after (18,978,816 + 25,305,088 B). Hybrid
  // sharding over 2 such nodes divides by the 4 data-parallel ranks, 2 and 2: the shard of
  // 1,581,568 elements divided again after the all-reduce (12,652,544 B more).
  w = post_backward_work(tiny({"cluster.overrides.node.gpus=2"}), "layers.1");
  REQUIRE(w.has_value());
  CHECK(w->memory_bytes == doctest::Approx(44'283'904.0).scale(0));
  CHECK(w->launches == 2);
  w = post_backward_work(tiny({"cluster.overrides.node.gpus=2", "cluster.nodes=2", "fsdp.sharding=hybrid_shard"}), "layers.1");
  REQUIRE(w.has_value());
  CHECK(w->memory_bytes == doctest::Approx(56'936'448.0).scale(0));
  CHECK(w->launches == 3);
  // FSDP2 has no such op: its copy-in casts, and it reduces bf16 and fp32 with NCCL's AVG.
  CHECK_FALSE(post_backward_work(tiny({"fsdp.version=2"}), "layers.1").has_value());
}

TEST_CASE("foreach AdamW moves 92 bytes a parameter and allocates a temporary, foreach Adam 84, fused 40 and none") {
  // torch.optim's foreach AdamW over fp32 shards: lerp 12, mul + addcmul 20, weight decay 8, sqrt /
  // div / add eps 24, addcdiv 16 = 80 B, and clipping's norm and scale 12 B; its out-of-place sqrt
  // of exp_avg_sq is one fp32 tensor per parameter (here one per unit), live for the step. Fused (_fused_adamw_):
  // read parameter, gradient, both moments (16 B), write parameter and moments (12 B), plus the
  // same 12 B of clipping, and no temporary. 8 ranks: each steps 1/8 of the parameters.
  struct Step {
    double bytes_per_param = 0;
    double temporary_per_param = 0;
  };
  const auto step = [](const char* impl, const char* optimizer = "adamw") {
    const auto p = tiny({"fsdp.version=2", std::string("training.optimizer_impl=") + impl, std::string("training.optimizer=") + optimizer});
    double shard = 0;
    for (const auto& u : p.plan.units) shard += static_cast<double>(u.shard_numel);
    Step s;
    for (std::size_t o = 0; o < p.graph.size(); ++o) {
      const auto& op = p.graph.op(static_cast<int>(o));
      if (op.kind != graph::OpKind::optimizer) continue;
      s.bytes_per_param = op.work.memory_bytes / shard;
      for (const auto& m : op.memory) {
        // The moments the first step creates are state, not the step's temporary.
        if (m.category == graph::MemCategory::optimizer_state && m.bytes > 0 && !m.at_end && !m.first_step_only)
          s.temporary_per_param += m.bytes / shard;
      }
    }
    return s;
  };
  const Step foreach = step("foreach");
  CHECK(foreach.bytes_per_param == doctest::Approx(92).scale(0));
  CHECK(foreach.temporary_per_param == doctest::Approx(4).scale(0));
  const Step fused = step("fused");
  CHECK(fused.bytes_per_param == doctest::Approx(40).scale(0));
  CHECK(fused.temporary_per_param == 0);
  // auto: torch.optim's default under FSDP.
  CHECK(step("auto").bytes_per_param == doctest::Approx(92).scale(0));
  // torch.optim.Adam's weight_decay defaults to 0, and its foreach step then skips the decay op
  // (adam.py: `if weight_decay != 0`): 80 - 8 + 12 = 84 B, the same temporary; fused alike.
  const Step adam = step("foreach", "adam");
  CHECK(adam.bytes_per_param == doctest::Approx(84).scale(0));
  CHECK(adam.temporary_per_param == doctest::Approx(4).scale(0));
  CHECK(step("fused", "adam").bytes_per_param == doctest::Approx(40).scale(0));
}

TEST_CASE("FSDP's hooks cost the CPU per parameter tensor of a unit: 20 us (FSDP1) or 41 us (FSDP2)") {
  // The topology's defaults (pytorch#96958, #133369). A Llama block holds 9 parameter tensors (wq,
  // wk, wv, wo, w1, w2, w3 and two RMSNorm weights), the root 3 (embedding, final norm, output).
  const auto hooks = [](const graph::StepGraph& g, std::string_view prefix) {
    std::vector<double> us;
    for (std::size_t i = 0; i < g.size(); ++i) {
      const auto& op = g.op(static_cast<int>(i));
      if (op.name.starts_with(prefix)) us.push_back(op.cpu_s * 1e6);
    }
    return us;
  };
  const auto all_are = [](const std::vector<double>& us, double expected) {
    return !us.empty() && std::all_of(us.begin(), us.end(), [&](double u) { return std::abs(u - expected) < 1e-9; });
  };
  const auto v1 = tiny().graph;
  CHECK(all_are(hooks(v1, "AG layers."), 9 * 20));
  CHECK(all_are(hooks(v1, "AG root"), 3 * 20));
  CHECK(all_are(hooks(v1, "RS layers."), 0));
  const auto v2 = tiny({"fsdp.version=2"}).graph;
  CHECK(all_are(hooks(v2, "AG layers."), 9 * 41));
  CHECK(all_are(hooks(v2, "copy-in layers."), 9 * 41));  // the post-backward hook, before the reduce-scatter
  CHECK(all_are(hooks(v2, "RS layers."), 0));
  // With the float8 all-gather the block's 7 linear weights add 90 us each (#133369: 1.0 ms).
  const auto f8 = tiny({"fsdp.version=2", "training.float8={recipe: tensorwise, fsdp_float8_all_gather: true}"}).graph;
  CHECK(all_are(hooks(f8, "AG layers."), 9 * 41 + 7 * 90));
  CHECK(all_are(hooks(f8, "copy-in layers."), 9 * 41));
  // DDP's buckets have no FSDP hooks.
  const auto ddp = tiny({"fsdp.sharding=no_shard"}).graph;
  for (std::size_t i = 0; i < ddp.size(); ++i) CHECK(ddp.op(static_cast<int>(i)).cpu_s == 0);
}

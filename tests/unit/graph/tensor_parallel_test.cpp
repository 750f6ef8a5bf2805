// Tensor parallelism beside FSDP, worked by hand on the tiny Llama of tests/data (4 blocks,
// hidden h = 512, 8 heads of 64, MLP f = 1376, vocab 1000, 512 tokens per micro-step, bf16
// activations a = 2) on one node of 8 GPUs with tp = 2: 4 data-parallel ranks.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "fixtures/fixtures.hpp"
#include "graph/groups.hpp"

using namespace shardsim;
using graph::Group;
using graph::OpKind;

namespace {

constexpr double kS = 512.0 * 512 * 2;  // one block's activation: tokens x h x a = 524,288 bytes

graph::Prepared tiny(const std::vector<std::string>& sets) {
  std::vector<std::string> all{"fsdp.version=2", "parallelism.tp=2"};
  all.insert(all.end(), sets.begin(), sets.end());
  return test::prepared("tests/data/tiny_llama.yaml", all);
}

struct TpOps {
  std::map<OpKind, int> count;
  double wire_bytes = 0;  // per rank: (t-1)/t of S for AG and RS, 2 (t-1)/t for AR (nccl-tests' bus factor)
};

// The tensor-parallel collectives of block 1 in the first micro-step.
TpOps block_tp_ops(const graph::Prepared& p) {
  TpOps out;
  for (std::size_t i = 0; i < p.graph.size(); ++i) {
    const auto& op = p.graph.op(static_cast<int>(i));
    if (op.group != Group::tp || op.step != 0 || op.micro != 0 || op.name.find("layers.1.") == std::string::npos) continue;
    ++out.count[op.kind];
    CHECK(op.bytes == kS);
    CHECK(op.stream == graph::Stream::tp);
    out.wire_bytes += op.bytes * (op.kind == OpKind::all_reduce ? 2.0 : 1.0) * 0.5;
  }
  return out;
}

}  // namespace

TEST_CASE("tensor parallel: ranks laid out TP innermost, data parallel over the rest") {
  const auto p = tiny({});
  CHECK(p.graph.info.tp_group == 2);
  CHECK(p.graph.info.shard_group == 4);
  CHECK(p.graph.info.replicate_group == 1);
  // A TP group shares its micro-batch: 512 tokens over 2 GPUs.
  CHECK(p.graph.info.tokens_per_micro_step == 256);
  const graph::Groups groups(p.graph.info);
  CHECK(groups.members(Group::tp, 0) == std::vector<int>{0, 1});
  CHECK(groups.members(Group::tp, 3) == std::vector<int>{6, 7});
  CHECK(groups.members(Group::shard, 0) == std::vector<int>{0, 2, 4, 6});
  CHECK(groups.members(Group::shard, 1) == std::vector<int>{1, 3, 5, 7});
  CHECK(groups.instance_of(Group::shard, 5) == 1);
  CHECK(groups.instance_of(Group::tp, 5) == 2);

  // Hybrid sharding over 2 nodes: shard groups of 8 / 2 = 4 per node, replicated over the nodes.
  const auto h = tiny({"fsdp.sharding=hybrid_shard", "cluster.nodes=2"});
  CHECK(h.graph.info.shard_group == 4);
  CHECK(h.graph.info.replicate_group == 2);
  const graph::Groups hg(h.graph.info);
  CHECK(hg.members(Group::shard, 1) == std::vector<int>{1, 3, 5, 7});
  CHECK(hg.members(Group::replicate, 1) == std::vector<int>{1, 9});
  CHECK(hg.members(Group::replicate, 6) == std::vector<int>{6, 14});
}

TEST_CASE("tensor parallel: each rank holds and all-gathers 1/tp of a block's split weights, all of its norms") {
  const auto p = tiny({});
  const auto one = test::prepared("tests/data/tiny_llama.yaml", {"fsdp.version=2"});
  // wq, wk, wv, wo: 4 h^2 = 1,048,576; w1, w2, w3: 3 h f = 2,113,536; split in 2; norms 2 h whole.
  const std::int64_t block = (1'048'576 + 2'113'536) / 2 + 2 * 512;
  for (const auto& u : p.plan.units) {
    if (u.name == "layers.1") CHECK(u.numel == block);
  }
  // The whole model is still counted whole; one rank holds its share.
  CHECK(p.model.total_params() == one.model.total_params());
  // Root: embedding 500 x 512 and output 500 x 512 (vocab 1000 split), final norm 512.
  CHECK(p.model.rank_params() == 4 * block + 2 * 500 * 512 + 512);
  for (std::size_t i = 0; i < p.graph.size(); ++i) {
    const auto& op = p.graph.op(static_cast<int>(i));
    if (op.kind == OpKind::all_gather && op.group == Group::shard && op.name == "AG layers.1" && op.step == 0) {
      CHECK(op.bytes == doctest::Approx(2.0 * block).scale(0));  // bf16, FSDP2 pads dim 0 to the 4 ranks: no padding here
    }
  }
}

TEST_CASE("tensor parallel: per block and step, 8 S (t-1)/t bytes per rank with or without sequence parallelism") {
  // With sequence parallelism (torchtitan's default): forward all-gathers before attention and the
  // MLP and reduce-scatters after them; backward the mirror images.
  auto sp = block_tp_ops(tiny({}));
  CHECK(sp.count[OpKind::all_gather] == 4);
  CHECK(sp.count[OpKind::reduce_scatter] == 4);
  CHECK(sp.count[OpKind::all_reduce] == 0);
  // Without: an all-reduce after attention and after the MLP forward, and at their inputs in backward.
  auto ar = block_tp_ops(tiny({"parallelism.tp_sequence_parallel=false"}));
  CHECK(ar.count[OpKind::all_reduce] == 4);
  CHECK(ar.count[OpKind::all_gather] + ar.count[OpKind::reduce_scatter] == 0);
  // 2 x 2 x b s h x 2 (t-1)/t  =  (4 AG + 4 RS) x b s h (t-1)/t  =  4 S with t = 2.
  CHECK(sp.wire_bytes == doctest::Approx(4 * kS).scale(0));
  CHECK(ar.wire_bytes == doctest::Approx(4 * kS).scale(0));
}

TEST_CASE("tensor parallel: checkpointing reruns forward collectives in backward") {
  // Full: every forward collective again (4 more); per-op selective: the all-gathers only, since
  // torchtitan's save list keeps reduce-scatter outputs.
  auto full = block_tp_ops(tiny({"training.activation_checkpointing=full"}));
  CHECK(full.count[OpKind::all_gather] == 6);
  CHECK(full.count[OpKind::reduce_scatter] == 6);
  auto selective = block_tp_ops(tiny({"training.activation_checkpointing=selective"}));
  CHECK(selective.count[OpKind::all_gather] == 6);
  CHECK(selective.count[OpKind::reduce_scatter] == 4);
}

TEST_CASE("tensor parallel: a gather per column-parallel linear (tp_input_gather: linear), eager and compiled") {
  // KempnerForge's plan: ColwiseParallel(input_layouts=Shard(1)) on wq, wk, wv and on w1, w3, no
  // PrepareModuleInput. Eager, each gathers the norm's output itself: 3 + 2 all-gathers forward
  // and, in backward, 3 + 2 reduce-scatters of their input gradients, beside the 2 reduce-scatters
  // after wo and w2 (forward) and their 2 all-gathers (backward): 7 and 7. Compiled, AOTAutograd's
  // CSE merges the identical forward gathers (2), the backward's stay apart: 4 and 7.
  auto eager = block_tp_ops(tiny({"parallelism.tp_input_gather=linear"}));
  CHECK(eager.count[OpKind::all_gather] == 7);
  CHECK(eager.count[OpKind::reduce_scatter] == 7);
  auto compiled = block_tp_ops(tiny({"parallelism.tp_input_gather=linear", "training.compile=true"}));
  CHECK(compiled.count[OpKind::all_gather] == 4);
  CHECK(compiled.count[OpKind::reduce_scatter] == 7);
  // Full checkpointing reruns the forward's: eager 5 all-gathers and 2 reduce-scatters more.
  auto full = block_tp_ops(tiny({"parallelism.tp_input_gather=linear", "training.activation_checkpointing=full"}));
  CHECK(full.count[OpKind::all_gather] == 12);
  CHECK(full.count[OpKind::reduce_scatter] == 9);
  // Without sequence parallelism there is nothing to gather; each linear's input gradient is
  // all-reduced apart: 3 + 2 in backward beside the 2 after wo and w2 in forward.
  auto ar = block_tp_ops(tiny({"parallelism.tp_input_gather=linear", "parallelism.tp_sequence_parallel=false"}));
  CHECK(ar.count[OpKind::all_reduce] == 7);
  // The default, one gather per module (torchtitan's PrepareModuleInput), is the test above's.
  auto module = block_tp_ops(tiny({"parallelism.tp_input_gather=module"}));
  CHECK(module.count[OpKind::all_gather] == 4);
  CHECK(module.count[OpKind::reduce_scatter] == 4);
}

namespace {

// Block 1's compute ops' memory-bound traffic and kernel launches in the first micro-step, forward
// and backward.
struct BlockTraffic {
  double forward_bytes = 0;
  double backward_bytes = 0;
  int launches = 0;
};

BlockTraffic block_traffic(const graph::Prepared& p) {
  BlockTraffic out;
  for (const graph::Op* op : test::first_ops_named(p, "FWD layers.1")) {
    out.forward_bytes += op->work.memory_bytes;
    out.launches += op->work.launches;
  }
  for (const graph::Op* op : test::first_ops_named(p, "BWD layers.1")) {
    out.backward_bytes += op->work.memory_bytes;
    out.launches += op->work.launches;
  }
  return out;
}

// The layout copies of block 1 (tp_activation_layout: bsh against sbh), in units of one copy
// (S read and S written), forward and backward; each adds one launch.
std::pair<double, double> block_reorders(const std::vector<std::string>& sets) {
  std::vector<std::string> megatron = sets;
  megatron.emplace_back("parallelism.tp_activation_layout=sbh");
  const BlockTraffic b = block_traffic(tiny(sets));
  const BlockTraffic m = block_traffic(tiny(megatron));
  const double forward = (b.forward_bytes - m.forward_bytes) / (2 * kS);
  const double backward = (b.backward_bytes - m.backward_bytes) / (2 * kS);
  CHECK(b.launches - m.launches == doctest::Approx(forward + backward).scale(1));
  return {forward, backward};
}

}  // namespace

TEST_CASE("tensor parallel: [b, s, h] activations reorder each sequence-parallel collective by a copy") {
  // PyTorch's functional collectives gather and scatter along dimension 0; DTensor's sequence
  // shards of [b, s, h] are on dimension 1, so all_gather_tensor copies its output (chunk + cat)
  // and reduce_scatter_tensor its input, S read and S written each, on the compute stream beside
  // the op next to the collective. A block eager: forward the 2 all-gathers entering attention
  // and the MLP and the 2 reduce-scatters leaving them; backward their mirrors, 2 + 2: 4 copies
  // each way, against Megatron's [s, b, h] (none).
  using Copies = std::pair<double, double>;
  CHECK(block_reorders({}) == Copies{4, 4});
  // Compiled, Inductor writes the sum of wq, wk, wv's (w1, w3's) input gradients straight into
  // the reordered layout: the 2 gradient reduce-scatters need no copy of their own.
  CHECK(block_reorders({"training.compile=true"}) == Copies{4, 2});
  // Full checkpointing reruns the forward's collectives, each with its copy.
  CHECK(block_reorders({"training.activation_checkpointing=full"}) == Copies{4, 8});
  // Gathered per linear (3 + 2 reduce-scatters of unsummed gradients), compiled: no sum to fuse into.
  CHECK(block_reorders({"parallelism.tp_input_gather=linear", "training.compile=true"}) == Copies{4, 7});
  // Without sequence parallelism the all-reduces reduce in place.
  CHECK(block_reorders({"parallelism.tp_sequence_parallel=false"}) == Copies{0, 0});
  // Transformer Engine's userbuffers default to Megatron's layout only when async TP uses them;
  // named without tp_async they are ignored (a warning), and so is their layout.
  CHECK(block_reorders({"parallelism.tp_async_impl=userbuffers"}) == Copies{4, 4});
  CHECK(test::prepared("tests/data/tiny_llama.yaml",
                       {"fsdp.version=2", "parallelism.tp=2", "parallelism.tp_async=true", "parallelism.tp_async_impl=userbuffers"})
            .scenario.parallelism.tp_sequence_leading);
}

// Activations block 1's forward (op `forward`) saves for backward in the first micro-step.
double block_saved(const graph::Prepared& p, const std::string& forward = "FWD layers.1") {
  double saved = 0;
  for (const graph::Op* op : test::first_ops_named(p, forward)) saved += test::kept_bytes(*op, {graph::MemCategory::activations});
  return saved;
}

TEST_CASE("tensor parallel: a block's saved activations, by hand") {
  // Sequence parallel, no checkpointing (sim/model/blocks.cpp): q, f and heads are per rank
  // (q = 256, f = 688, 4 heads): a (2h/t + 2h + 5q + 4f) + 4 x heads
  // = 2 (512 + 1024 + 1280 + 2752) + 16 = 11,152 bytes per token, x 512 tokens.
  CHECK(block_saved(tiny({})) == doctest::Approx(11'152.0 * 512).scale(0));
  // Without sequence parallelism the four h-wide tensors are whole: 2 (2048 + 1280 + 2752) + 16.
  CHECK(block_saved(tiny({"parallelism.tp_sequence_parallel=false"})) == doctest::Approx(12'176.0 * 512).scale(0));
  // Megatron's linears keep their input's sequence shard (tp_save_gathered_input: false, with TE's
  // overlap): the two gathered norm outputs are kept as 2h/t, 2 (512 + 512 + 1280 + 2752) + 16 =
  // 10,128 bytes per token, 2 x 512 x (1 - 1/2) x 2 = 1,024 fewer.
  CHECK(block_saved(tiny({"parallelism.tp_save_gathered_input=false", "parallelism.tp_async=true",
                          "parallelism.tp_async_impl=userbuffers"})) == doctest::Approx(10'128.0 * 512).scale(0));
}

TEST_CASE("tensor parallel: a block's GEMMs and attention are 1/tp per rank") {
  const auto p = tiny({});
  const auto one = test::prepared("tests/data/tiny_llama.yaml", {"fsdp.version=2"});
  const auto block_flops = [](const graph::Prepared& x) {
    double f = 0;
    for (std::size_t i = 0; i < x.graph.size(); ++i) {
      const auto& op = x.graph.op(static_cast<int>(i));
      if (op.name == "FWD layers.1" && op.step == 0 && op.micro == 0) f += op.work.gemm_flops() + op.work.attention_flops(false);
    }
    return f;
  };
  CHECK(block_flops(p) == doctest::Approx(block_flops(one) / 2).scale(0));
}

TEST_CASE("tensor parallel: the degrees tune searches are the node's divisors the model allows") {
  // tiny Llama: 8 heads, 8 kv heads, MLP 1376 = 32 x 43, 512 tokens: every divisor of 8 GPUs.
  CHECK(graph::tensor_parallel_degrees(test::scenario("tests/data/tiny_llama.yaml")) == std::vector<int>{1, 2, 4, 8});
  // 4 kv heads rule out 8; a GPT model or ZeRO-3 any TP.
  CHECK(graph::tensor_parallel_degrees(test::scenario("tests/data/tiny_llama.yaml", {"model.kv_heads=4"})) == std::vector<int>{1, 2, 4});
  CHECK(graph::tensor_parallel_degrees(test::scenario("tests/data/tiny_llama.yaml", {"fsdp.sharding=zero3"})) == std::vector<int>{1});
}

// The same tiny model as a GPT (LayerNorm, c_attn / c_proj, GELU MLP of f = 1376, biases,
// embedding tied to the output): Megatron-LM's split, c_attn and c_fc column-parallel with their
// biases, the c_proj layers row-parallel with their biases whole.
graph::Prepared tiny_gpt(const std::vector<std::string>& sets) {
  std::vector<std::string> all{"model.arch=gpt"};
  all.insert(all.end(), sets.begin(), sets.end());
  return tiny(all);
}

TEST_CASE("tensor parallel GPT: a rank's block weights and activations by hand") {
  const auto p = tiny_gpt({});
  const auto one = test::prepared("tests/data/tiny_llama.yaml", {"fsdp.version=2", "model.arch=gpt"});
  // c_attn 512 x 768 + 768, c_proj 256 x 512 + 512, c_fc 512 x 688 + 688, c_proj 688 x 512 + 512,
  // two LayerNorms 2 x 1024: 393,984 + 131,584 + 352,944 + 352,768 + 2,048.
  int found = 0;
  for (const auto& u : p.plan.units) {
    if (u.name != "h.1") continue;
    CHECK(u.numel == 1'233'328);
    ++found;
  }
  CHECK(found == 1);
  CHECK(p.model.total_params() == one.model.total_params());
  // Saved per token, no checkpointing, w = h/t = 256, f = 688, 4 heads (lse 16 bytes):
  // sequence parallel a (2h/t + 2h + 5w + 2f) + 16 = 2 (512 + 1024 + 1280 + 1376) + 16 = 8,400;
  // without it a (4h + 5w + 2f) + 16 = 2 (2048 + 1280 + 1376) + 16 = 9,424.
  CHECK(block_saved(p, "FWD h.1") == doctest::Approx(8'400.0 * 512).scale(0));
  CHECK(block_saved(tiny_gpt({"parallelism.tp_sequence_parallel=false"}), "FWD h.1") == doctest::Approx(9'424.0 * 512).scale(0));
}

TEST_CASE("tensor parallel GPT: the same collectives per block as llama and half the GEMM FLOPs") {
  const auto p = tiny_gpt({});
  int ag = 0;
  int rs = 0;
  double flops = 0;
  for (std::size_t i = 0; i < p.graph.size(); ++i) {
    const auto& op = p.graph.op(static_cast<int>(i));
    if (op.step != 0 || op.micro != 0 || op.name.find("h.1") == std::string::npos) continue;
    if (op.group == Group::tp) {
      CHECK(op.bytes == kS);
      ag += op.kind == OpKind::all_gather ? 1 : 0;
      rs += op.kind == OpKind::reduce_scatter ? 1 : 0;
    }
    if (op.name == "FWD h.1") flops += op.work.gemm_flops();
  }
  CHECK(ag == 4);
  CHECK(rs == 4);
  // 2 x 512 tokens x (512 x 1536 + 512 x 512 + 2 x 512 x 1376) / 2.
  CHECK(flops == doctest::Approx(2.0 * 512 * (512.0 * 1536 + 512.0 * 512 + 2 * 512.0 * 1376) / 2).scale(0));
}

namespace {

// Bytes the root's forward ops (embedding, final norm, output, loss) keep, in the first micro-step.
// What the training loop holds of the first micro-step's output: allocated on its forward op
// and the previous copy freed at the op's end (graph::hold_loop_output), so it is the op's
// allocations that its end does not free (not its own numbered tensors: the loss's logits and
// their copy, which it frees itself).
double root_held(const graph::Prepared& p) {
  double held = 0;
  for (std::size_t i = 0; i < p.graph.size(); ++i) {
    const auto& op = p.graph.op(static_cast<int>(i));
    if (op.kind != OpKind::forward || op.step != 0 || op.micro != 0) continue;
    for (const auto& m : op.memory) {
      if (m.category == graph::MemCategory::loss && m.at_end && m.bytes < 0 && m.tensor < 0) held -= m.bytes;
    }
  }
  return held;
}

double root_saved(const graph::Prepared& p) {
  double saved = 0;
  for (std::size_t i = 0; i < p.graph.size(); ++i) {
    const auto& op = p.graph.op(static_cast<int>(i));
    if (op.kind != OpKind::forward || op.step != 0 || op.micro != 0 || op.name.find("layers.") != std::string::npos) continue;
    saved += test::kept_bytes(op, {graph::MemCategory::activations, graph::MemCategory::loss});
  }
  return saved;
}

// The tensor-parallel collectives outside the blocks in the first micro-step, by kind and bytes.
std::map<std::pair<OpKind, double>, int> root_tp_ops(const graph::Prepared& p) {
  std::map<std::pair<OpKind, double>, int> out;
  for (std::size_t i = 0; i < p.graph.size(); ++i) {
    const auto& op = p.graph.op(static_cast<int>(i));
    if (op.group != Group::tp || op.step != 0 || op.micro != 0 || op.name.find("layers.") != std::string::npos) continue;
    ++out[{op.kind, op.bytes}];
  }
  return out;
}

}  // namespace

TEST_CASE("tensor parallel: the loss on all of the vocabulary, a whole embedding, bf16 loss and logits held, by hand") {
  // 512 tokens a micro-step, vocabulary V = 1000 (500 a rank), bf16 logits (a = 2).
  const auto base = tiny({});
  const auto gathered = tiny({"parallelism.tp_loss_parallel=false"});
  // loss_parallel: the softmax statistics all-reduced (8 bytes a token); without it the logits
  // all-gathered over the vocabulary (512 x 1000 x 2 bytes), nothing in backward.
  const auto lp = root_tp_ops(base);
  const auto ag = root_tp_ops(gathered);
  CHECK(lp.count({OpKind::all_reduce, 512.0 * 8}) == 1);
  CHECK(ag.count({OpKind::all_reduce, 512.0 * 8}) == 0);
  CHECK(ag.at({OpKind::all_gather, 512.0 * 1000 * 2}) == 1);
  CHECK(lp.count({OpKind::all_gather, 512.0 * 1000 * 2}) == 0);
  // The fp32 log-softmax output (4 bytes an element) the loss keeps now spans 1000, not 500 rows.
  CHECK(root_saved(gathered) - root_saved(base) == doctest::Approx(4.0 * 500 * 512).scale(0));
  // Without the upcast it is bf16; held logits are the bf16 logits themselves, which the loop
  // holds beside what the ops save (and the previous micro-step's, freed when this forward ends,
  // the last step's on the first: the initial memory).
  const auto bf16 = tiny({"parallelism.tp_loss_parallel=false", "training.loss_upcast=false"});
  CHECK(root_saved(gathered) - root_saved(bf16) == doctest::Approx(2.0 * 1000 * 512).scale(0));
  const auto held = tiny({"parallelism.tp_loss_parallel=false", "training.loss_upcast=false", "training.keep_logits=true"});
  CHECK(root_saved(held) == root_saved(bf16));
  CHECK(root_held(bf16) == 0);
  CHECK(root_held(held) == doctest::Approx(2.0 * 1000 * 512).scale(0));
  double before_step = 0;
  for (const auto& m : held.graph.info.initial_memory) before_step += m.category == graph::MemCategory::loss ? m.bytes : 0;
  CHECK(before_step == doctest::Approx(2.0 * 1000 * 512).scale(0));
  // A model that returns its logits upcast (keep_logits: fp32, torchtitan's 2024-03 Transformer):
  // the loop holds them in fp32, 4 bytes an element, beside the fp32 loss.
  const auto held32 = tiny({"parallelism.tp_loss_parallel=false", "training.keep_logits=fp32"});
  CHECK(root_held(held32) == doctest::Approx(4.0 * 1000 * 512).scale(0));
  // A whole embedding: 1000 x 512 on every TP rank instead of 500 x 512, and instead of the
  // reduce-scatter of its partial rows to sequence shards, the shards' gradients all-gathered back.
  const auto whole = tiny({"parallelism.tp_shard_embedding=false"});
  CHECK(whole.model.rank_params() - base.model.rank_params() == 500 * 512);
  CHECK(whole.model.total_params() == base.model.total_params());
  const auto sharded_ops = root_tp_ops(base);
  const auto whole_ops = root_tp_ops(whole);
  CHECK(sharded_ops.at({OpKind::reduce_scatter, kS}) - whole_ops.at({OpKind::reduce_scatter, kS}) == 1);
  CHECK(whole_ops.at({OpKind::all_gather, kS}) == sharded_ops.at({OpKind::all_gather, kS}));
}

TEST_CASE("tensor parallel: an output layer left out of the plan (tp_shard_output: false), whole on every rank, by hand") {
  // Without sequence parallelism (what a whole output layer needs), 512 tokens, V = 1000.
  const auto gathered = tiny({"parallelism.tp_sequence_parallel=false", "parallelism.tp_loss_parallel=false"});
  const auto whole = tiny({"parallelism.tp_sequence_parallel=false", "parallelism.tp_shard_output=false"});
  // Its weight whole on every TP rank: 1000 x 512 instead of 500 x 512.
  CHECK(whole.model.rank_params() - gathered.model.rank_params() == 500 * 512);
  CHECK(whole.model.total_params() == gathered.model.total_params());
  // Its forward GEMM over all 1000 logits: 2 x 512 x 512 x 1000 FLOPs, twice the shard's.
  const auto output_flops = [](const graph::Prepared& p) {
    double f = 0;
    for (const graph::Op* op : test::first_ops_named(p, "FWD output")) f += op->work.gemm_flops();
    return f;
  };
  CHECK(output_flops(whole) == doctest::Approx(2.0 * 512 * 512 * 1000).scale(0));
  CHECK(output_flops(gathered) == doctest::Approx(2.0 * 512 * 512 * 500).scale(0));
  // No collective of its own: neither the logits' all-gather (512 x 1000 x 2 bytes) nor, in
  // backward, the all-reduce of its input's gradient that ColwiseParallel on a whole input needs.
  const auto g_ops = root_tp_ops(gathered);
  const auto w_ops = root_tp_ops(whole);
  CHECK(g_ops.at({OpKind::all_gather, 512.0 * 1000 * 2}) == 1);
  CHECK(w_ops.count({OpKind::all_gather, 512.0 * 1000 * 2}) == 0);
  CHECK(g_ops.at({OpKind::all_reduce, kS}) - w_ops.at({OpKind::all_reduce, kS}) == 1);
}

namespace {

// What the loss's backward holds beside what its forward kept, in the first micro-step.
double loss_backward_held(const graph::Prepared& p) {
  double held = 0;
  for (const graph::Op* op : test::first_ops_named(p, "BWD loss")) {
    for (const auto& m : op->memory) {
      if (m.category == graph::MemCategory::loss && m.bytes > 0 && !m.at_end) held += m.bytes;
    }
  }
  return held;
}

}  // namespace

TEST_CASE("tensor parallel: loss_parallel's backward holds three vocabulary-wide fp32 tensors where aten's kernels hold two") {
  // 512 tokens, V = 1,000 (500 a rank under loss_parallel), fp32 log-probabilities (4 bytes).
  // DTensor's _nll_loss_and_log_softmax_backward computes (zeros_like(x) + exp(x)) * grad_output
  // on its 500 columns: the one-hot, the sum and the product beside the kept x (exp(x) is freed
  // by then), 3 x 4 x 500 bytes a token; without loss_parallel aten's nll_loss and log_softmax
  // backward kernels hold the one-hot and the result over all 1,000, 2 x 4 x 1,000.
  CHECK(loss_backward_held(tiny({})) == doctest::Approx(3.0 * 4 * 500 * 512).scale(0));
  CHECK(loss_backward_held(tiny({"parallelism.tp_loss_parallel=false"})) == doctest::Approx(2.0 * 4 * 1000 * 512).scale(0));
}

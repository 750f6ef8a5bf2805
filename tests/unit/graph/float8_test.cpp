// Float8 training (training.float8), worked by hand: the cast traffic torchao's float8 roofline
// gives each recipe (sim/model/float8.hpp), which linears convert, and what FSDP2's float8
// all-gather moves, on the tiny Llama of tests/data (h = 512, no GQA, f = 1376, 4 blocks,
// vocabulary 1,000, 512 tokens per micro-step).
#include "model/float8.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "fixtures/fixtures.hpp"
#include "model/kernels.hpp"

using namespace shardsim;

namespace {

// Llama 3 8B's w1 at 8,192 tokens: M = 8,192, K = 4,096, N = 14,336, so X = M K = 33,554,432,
// W = N K = 58,720,256 and G = M N = 117,440,512 elements.
model::Float8Casts casts(model::Float8Recipe recipe, bool fused, bool gathered = false) {
  model::Kernel k = model::matmul_kernel("w1", 14'336, 4'096);
  k.float8 = recipe;
  k.float8_fused_casts = fused;
  k.float8_weight_gathered = gathered;
  return model::float8_casts(k, 8'192);
}

const graph::Op& op_named(const graph::StepGraph& g, const std::string& name) {
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (g.op(static_cast<int>(i)).name == name) return g.op(static_cast<int>(i));
  }
  FAIL("no op " << name);
  return g.op(0);
}

// The matmul kernel of layers.0.<module>.<linear>.
template <typename Prepared>
const model::Kernel& matmul_in(const Prepared& p, const std::string& module, const std::string& linear) {
  for (const auto& layers : p.model.root.children) {
    if (layers.name != "layers") continue;
    for (const auto& m : layers.children.front().children) {
      if (m.name != module) continue;
      for (const auto& l : m.children) {
        if (l.name != linear) continue;
        for (const auto& item : l.program) {
          if (item.child < 0 && item.kernel.kind == model::KernelKind::matmul) return item.kernel;
        }
      }
    }
  }
  FAIL("no layers.0." << module << "." << linear);
  return p.model.root.program.front().kernel;
}

template <typename Prepared>
double prepared_share(const Prepared& p, const std::string& module, const std::string& linear) {
  return matmul_in(p, module, linear).float8_prepared_input;
}

template <typename Prepared>
double input_share(const Prepared& p, const std::string& module, const std::string& linear) {
  return matmul_in(p, module, linear).float8_input_share;
}

int ops_starting(const graph::StepGraph& g, const std::string& prefix) {
  int n = 0;
  for (std::size_t i = 0; i < g.size(); ++i) n += g.op(static_cast<int>(i)).name.rfind(prefix, 0) == 0 ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("float8 cast traffic of one linear per recipe (torchao's roofline)") {
  // tensorwise, eager: input amax 2X + cast 2X + 2 x 1X (two layouts) = 6X; weight amax 2W and
  // cast 3W in forward, 3W in backward; grad_output 6G.
  auto c = casts(model::Float8Recipe::tensorwise, false);
  CHECK(c.forward_bytes == 494'927'872.0);   // 6 x 33,554,432 + 5 x 58,720,256
  CHECK(c.backward_bytes == 880'803'840.0);  // 6 x 117,440,512 + 3 x 58,720,256
  CHECK(c.forward_launches == 6);
  // Compiled: the amax reads of input and grad_output fuse into their producers (-2X, -2G).
  c = casts(model::Float8Recipe::tensorwise, true);
  CHECK(c.forward_bytes == 427'819'008.0);   // 4X + 5W
  CHECK(c.backward_bytes == 645'922'816.0);  // 4G + 3W
  // ... which is the roofline's total 4X + 8W + 4G = 1,073,741,824.
  CHECK(c.forward_bytes + c.backward_bytes == 1'073'741'824.0);
  // The weight arrives in float8 from FSDP2's all-gather: only its float8 transpose in backward.
  c = casts(model::Float8Recipe::tensorwise, true, true);
  CHECK(c.forward_bytes == 134'217'728.0);   // 4X
  CHECK(c.backward_bytes == 587'202'560.0);  // 4G + 2W
  // rowwise: input 1X + 2X (fused first pass) + 3X; weight 3W | 4W + 3W; grad_output as input;
  // the two slow-accumulation backward GEMMs' outputs rescaled in place (torchao's cuBLAS
  // workaround): read 2 + write 2 bytes per element of grad_input (X) and grad_weight (W). The
  // column-wise casts (3X, 3G, and the weight's 3W in backward) are counted apart, for their rate;
  // the input's, with its transposed copy (2X), in backward, where torchao makes it.
  c = casts(model::Float8Recipe::rowwise, true);
  CHECK(c.forward_bytes == 209'715'200.0);  // 1X + 3W
  CHECK(c.forward_column_bytes == 0);
  CHECK(c.forward_launches == 2);                   // the input's row-wise cast, the weight's
  CHECK(c.backward_bytes == 1'023'410'176.0);       // 3G + 4W + 4X + 4W + 2X
  CHECK(c.backward_column_bytes == 629'145'600.0);  // 3G + 3W + 3X
  // In all, the roofline's 6X + 3W forward and 6G + 7W + 4X + 4W backward.
  CHECK(c.forward_bytes + c.backward_bytes + c.backward_column_bytes == 377'487'360.0 + 1'484'783'616.0);
  CHECK(c.backward_launches == 7);  // 5 casts + 2 rescales
  // rowwise_with_gw_hp: one float8 layout of input and grad_output; weight 3W each way.
  c = casts(model::Float8Recipe::rowwise_with_gw_hp, true);
  CHECK(c.forward_bytes == 209'715'200.0);   // X + 3W
  CHECK(c.backward_bytes == 293'601'280.0);  // G + 3W
  // mxfp8: both layouts in one kernel (2X), weight 3W each way.
  c = casts(model::Float8Recipe::mxfp8, true);
  CHECK(c.forward_bytes == 243'269'632.0);   // 2X + 3W
  CHECK(c.backward_bytes == 411'041'792.0);  // 2G + 3W
}

TEST_CASE("float8 converts every block linear - the output layer stays by name or by shape") {
  auto p = test::prepared("tests/data/tiny_llama.yaml", {"training.float8={recipe: tensorwise}"});
  CHECK(p.float8.linears == 28);  // 4 blocks x 7
  REQUIRE(p.float8.skip_matches.size() == 1);
  CHECK(p.float8.skip_matches[0] == 1);  // "output"
  CHECK(p.float8.skipped_by_shape == 0);
  // Weights converted: per block 4 x 512 x 512 + 3 x 1,376 x 512 = 3,162,112.
  CHECK(p.float8.params == 4 * 3'162'112);
  // With nothing skipped by name the output layer (1,000 rows, not a multiple of 16) stays anyway.
  p = test::prepared("tests/data/tiny_llama.yaml", {"training.float8={recipe: tensorwise, skip: []}"});
  CHECK(p.float8.linears == 28);
  CHECK(p.float8.skipped_by_shape == 1);
  // Not compiled: a warning that the casts run unfused.
  bool warned = false;
  for (const auto& w : p.scenario.warnings) warned = warned || w.key_path == "training.float8";
  CHECK(warned);
}

TEST_CASE("torchao's auto filter: the thresholds of _auto_filter_for_recipe, at their edges") {
  // torchao/float8/float8_linear_utils.py (pytorch/ao#2410), weight N x K = out x in features.
  // Rowwise: N <= 2,048, or K <= 1,024, or N <= 4,096 and K <= 2,048 stay in bf16.
  using model::Float8Recipe;
  CHECK(model::too_small_to_gain(Float8Recipe::rowwise, 2'048, 16'384));
  CHECK_FALSE(model::too_small_to_gain(Float8Recipe::rowwise, 2'064, 16'384));
  CHECK(model::too_small_to_gain(Float8Recipe::rowwise, 16'384, 1'024));
  CHECK_FALSE(model::too_small_to_gain(Float8Recipe::rowwise, 16'384, 1'040));
  CHECK(model::too_small_to_gain(Float8Recipe::rowwise, 4'096, 2'048));
  CHECK_FALSE(model::too_small_to_gain(Float8Recipe::rowwise, 4'096, 2'064));
  CHECK_FALSE(model::too_small_to_gain(Float8Recipe::rowwise, 4'112, 2'048));
  // Tensorwise: K <= 4,096 and N <= 1,024.
  CHECK(model::too_small_to_gain(Float8Recipe::tensorwise, 1'024, 4'096));
  CHECK_FALSE(model::too_small_to_gain(Float8Recipe::tensorwise, 1'040, 4'096));
  CHECK_FALSE(model::too_small_to_gain(Float8Recipe::tensorwise, 1'024, 4'112));
  // No thresholds for the others.
  CHECK_FALSE(model::too_small_to_gain(Float8Recipe::mxfp8, 128, 128));
}

TEST_CASE("auto_filter_small_kn keeps wk and wv of Llama 3 in bf16, judged on the model's shapes, not the TP shards") {
  // Llama 3 8B: wq, wo 4,096 x 4,096, wk, wv 1,024 x 4,096, w1, w3 14,336 x 4,096, w2 4,096 x
  // 14,336 (N x K). Both recipes' thresholds catch wk and wv only: 2 of 7 linears in 32 blocks.
  for (const char* recipe : {"rowwise", "tensorwise"}) {
    CAPTURE(recipe);
    auto p = test::prepared(
        "scenarios/llama3.1-8b_8xh100.yaml",
        {"training.compile=true", fmt::format("training.float8={{recipe: {}, skip: [output, auto_filter_small_kn]}}", recipe)});
    CHECK(p.float8.skipped_as_small == 64);
    CHECK(p.float8.linears == 160);
    REQUIRE(p.float8.skip_matches.size() == 1);  // "output"; the flag is not a name
    for (const auto& w : p.scenario.warnings) CHECK(w.key_path != "training.float8.skip");
  }
  // Llama 3.1 70B under TP 8: each rank's wk and wv are 128 x 8,192, but torchtitan converts
  // before parallelizing, so the filter sees 1,024 x 8,192: rowwise keeps them (N <= 2,048),
  // tensorwise converts them (K > 4,096); 80 blocks. (torchtitan#1319: on P1's job rowwise ran at
  // ~600 tokens/s with wk and wv converted and ~660 without.)
  auto p = test::prepared(
      "scenarios/llama3.1-70b_1024xh100.yaml",
      {"parallelism.tp=8", "training.compile=true", "training.float8={recipe: rowwise, skip: [output, auto_filter_small_kn]}"});
  CHECK(p.float8.skipped_as_small == 160);
  CHECK(p.float8.linears == 400);
  p = test::prepared(
      "scenarios/llama3.1-70b_1024xh100.yaml",
      {"parallelism.tp=8", "training.compile=true", "training.float8={recipe: tensorwise, skip: [output, auto_filter_small_kn]}"});
  CHECK(p.float8.skipped_as_small == 0);
  CHECK(p.float8.linears == 560);
}

TEST_CASE("a block's forward under float8: float8 GEMMs with unchanged FLOPs plus the casts' bytes") {
  const auto bf16 = test::prepared("tests/data/tiny_llama.yaml");
  const auto f8 = test::prepared("tests/data/tiny_llama.yaml", {"training.float8={recipe: tensorwise}"});
  const graph::Op& a = op_named(bf16.graph, "FWD layers.1");
  const graph::Op& b = op_named(f8.graph, "FWD layers.1");
  CHECK(a.work.gemm_flops() == b.work.gemm_flops());
  for (const auto& g : b.work.gemms) CHECK(g.type == graph::GemmType::fp8);
  // Eager casts, 6X + 5W per linear at 512 tokens: wq, wk, wv, wo 4 x 11 x 262,144; w1, w3
  // 2 x (6 x 262,144 + 5 x 704,512); w2 11 x 704,512: 29,474,816 bytes, 6 kernels each.
  CHECK(b.work.memory_bytes - a.work.memory_bytes == doctest::Approx(29'474'816.0).scale(0));
  CHECK(b.work.launches - a.work.launches == 42);
}

TEST_CASE("torchao's GEMM configs: the output GEMM accumulates fast, the two gradient GEMMs precisely, MXFP8 has no switch") {
  // Float8LinearConfig: gemm_config_output use_fast_accum=True, gemm_config_grad_input and
  // gemm_config_grad_weight the default False, for every recipe from_recipe_name builds.
  for (const char* recipe : {"tensorwise", "rowwise"}) {
    CAPTURE(recipe);
    const auto f8 = test::prepared("tests/data/tiny_llama.yaml", {fmt::format("training.float8={{recipe: {}}}", recipe)});
    for (const auto& g : op_named(f8.graph, "FWD layers.1").work.gemms) CHECK_FALSE(g.precise_accum);
    const auto& bwd = op_named(f8.graph, "BWD layers.1").work.gemms;
    REQUIRE(bwd.size() == 14);  // 7 linears x (grad_input, grad_weight)
    for (const auto& g : bwd) CHECK(g.precise_accum);
  }
  const auto mx = test::prepared(
      "tests/data/tiny_llama.yaml",
      {"cluster.topology=" + (test::source_dir() / "topologies/b200_8x_ib400.yaml").string(), "training.float8={recipe: mxfp8}"});
  for (const auto& g : op_named(mx.graph, "BWD layers.1").work.gemms) CHECK_FALSE(g.precise_accum);
}

TEST_CASE("FSDP2's float8 all-gather moves the converted weights at 1 byte with their amax all-reduces") {
  const std::vector<std::string> f8ag{"fsdp.version=2", "training.compile=true",
                                      "training.float8={recipe: tensorwise, fsdp_float8_all_gather: true}"};
  const auto bf16 = test::prepared("tests/data/tiny_llama.yaml", {"fsdp.version=2"});
  const auto f8 = test::prepared("tests/data/tiny_llama.yaml", f8ag);
  // A block: 3,162,112 linear weights and 2 x 512 norm weights, no padding over 8 ranks.
  CHECK(op_named(bf16.graph, "AG layers.1").bytes == 2.0 * 3'163'136);
  CHECK(op_named(f8.graph, "AG layers.1").bytes == 3'162'112.0 + 2.0 * 1'024);
  // Without precomputed scales each of the block's 7 float8 weights has its amax all-reduced
  // before each all-gather of the block (forward and backward).
  CHECK(ops_starting(f8.graph, "amax AR layers.1 (") == 2 * 7);
  CHECK(op_named(f8.graph, "amax AR layers.1 (1/7)").bytes == 4.0);
  // With them, one all-reduce of every weight's amax after the optimizer step.
  auto pre = f8ag;
  pre.back() = "training.float8={recipe: tensorwise, fsdp_float8_all_gather: true, precompute_scales: true}";
  const auto f8p = test::prepared("tests/data/tiny_llama.yaml", pre);
  CHECK(ops_starting(f8p.graph, "amax AR") == 0);
  CHECK(op_named(f8p.graph, "float8 scales AR 0").bytes == 4.0 * 28);
}

TEST_CASE("tensorwise float8 with tensor parallelism all-gathers the sequence shards in float8") {
  const std::vector<std::string> tp{"fsdp.version=2", "parallelism.tp=2"};
  auto with_f8 = tp;
  with_f8.emplace_back("training.float8={recipe: tensorwise}");
  const auto bf16 = test::prepared("tests/data/tiny_llama.yaml", tp);
  const auto f8 = test::prepared("tests/data/tiny_llama.yaml", with_f8);
  // Entering attention all-gathers the 512 x 512 activation: 524,288 bytes in bf16, half in float8
  // (Float8ColwiseParallel); leaving it reduce-scatters in bf16 either way.
  CHECK(op_named(bf16.graph, "TP AG layers.1.attention tp_enter").bytes == 524'288.0);
  CHECK(op_named(f8.graph, "TP AG layers.1.attention tp_enter").bytes == 262'144.0);
  CHECK(op_named(f8.graph, "TP RS layers.1.attention tp_leave").bytes == 524'288.0);
  // rowwise keeps torchtitan's plain TP plan: bf16 all-gathers.
  with_f8.back() = "training.float8={recipe: rowwise}";
  CHECK(op_named(test::prepared("tests/data/tiny_llama.yaml", with_f8).graph, "TP AG layers.1.attention tp_enter").bytes == 524'288.0);
}

TEST_CASE("tensorwise float8 under tensor parallelism casts a module's input once, on its sequence shard") {
  // torchao's PrepareFloat8ModuleInput: w1 of Llama 3 8B under TP 8 (N = 14,336 / 8 = 1,792,
  // K = 4,096) at 8,192 tokens, compiled: X = 33,554,432, W = 7,340,032, G = 14,680,064 elements.
  model::Kernel w1 = model::matmul_kernel("w1", 1'792, 4'096);
  w1.float8 = model::Float8Recipe::tensorwise;
  w1.float8_fused_casts = true;
  w1.float8_prepared_input = 1.0 / 8;  // the first reader: the cast of the rank's eighth of X
  auto c = model::float8_casts(w1, 8'192);
  CHECK(c.forward_bytes == 49'283'072.0);    // 3 X / 8 (amax read fused, read 2 + write 1) + 5W
  CHECK(c.forward_launches == 5);            // amax and cast, and the weight's three
  CHECK(c.backward_bytes == 147'849'216.0);  // the gathered X transposed 2X + 4G + 3W
  // w3 reads the same float8 input: no cast of its own, its own transpose (the walker shares that
  // too when compiled: the next test).
  w1.float8_prepared_input = 0;
  c = model::float8_casts(w1, 8'192);
  CHECK(c.forward_bytes == 36'700'160.0);  // 5W
  CHECK(c.forward_launches == 3);
  CHECK(c.backward_bytes == 147'849'216.0);
  // Against its own cast (4X + 5W = 170,917,888 forward): the eight ranks' X is cast once.

  // Which linears read a prepared input: the column-parallel ones (wq, wk, wv; w1, w3), the first
  // of each module carrying the cast (1 / tp of it with sequence parallelism).
  const auto p =
      test::prepared("tests/data/tiny_llama.yaml", {"fsdp.version=2", "parallelism.tp=2", "training.float8={recipe: tensorwise}"});
  CHECK(prepared_share(p, "attention", "wq") == 0.5);
  CHECK(prepared_share(p, "attention", "wk") == 0.0);
  CHECK(prepared_share(p, "attention", "wv") == 0.0);
  CHECK(prepared_share(p, "attention", "wo") == -1.0);  // row-parallel: casts its own local input
  CHECK(prepared_share(p, "feed_forward", "w1") == 0.5);
  CHECK(prepared_share(p, "feed_forward", "w3") == 0.0);
  CHECK(prepared_share(p, "feed_forward", "w2") == -1.0);
  // A plan that gathers per linear (Float8ColwiseParallel on each, tp_input_gather: linear): each
  // casts its own shard before its own gather, eager; compiled, CSE leaves the first's cast alone.
  const auto each =
      test::prepared("tests/data/tiny_llama.yaml",
                     {"fsdp.version=2", "parallelism.tp=2", "training.float8={recipe: tensorwise}", "parallelism.tp_input_gather=linear"});
  for (const char* linear : {"wq", "wk", "wv"}) CHECK(prepared_share(each, "attention", linear) == 0.5);
  for (const char* linear : {"w1", "w3"}) CHECK(prepared_share(each, "feed_forward", linear) == 0.5);
  const auto merged =
      test::prepared("tests/data/tiny_llama.yaml", {"fsdp.version=2", "parallelism.tp=2", "training.float8={recipe: tensorwise}",
                                                    "parallelism.tp_input_gather=linear", "training.compile=true"});
  CHECK(prepared_share(merged, "attention", "wq") == 0.5);
  CHECK(prepared_share(merged, "attention", "wk") == 0.0);
  CHECK(prepared_share(merged, "feed_forward", "w3") == 0.0);
  // rowwise keeps torchtitan's plain TP plan: every linear casts its own input.
  const auto r = test::prepared("tests/data/tiny_llama.yaml", {"fsdp.version=2", "parallelism.tp=2", "training.float8={recipe: rowwise}"});
  CHECK(prepared_share(r, "attention", "wq") == -1.0);
  CHECK(prepared_share(r, "feed_forward", "w1") == -1.0);
}

TEST_CASE("tensorwise float8 under sequence parallelism casts a row-parallel linear's grad_output on its shard") {
  // torchao's Float8RowwiseParallel applies NoopFwToFloat8BwDynamic after the output's
  // redistribute, so in backward grad_output is cast on the rank's sequence shard before the
  // gradient's all-gather (which moves float8). wo of Llama 3 8B under TP 8 (N = 4,096,
  // K = 4,096 / 8 = 512) at 8,192 tokens, compiled: X = 4,194,304, W = 2,097,152,
  // G = 33,554,432 elements.
  model::Kernel wo = model::matmul_kernel("wo", 4'096, 512);
  wo.float8 = model::Float8Recipe::tensorwise;
  wo.float8_fused_casts = true;
  const auto own = model::float8_casts(wo, 8'192);
  CHECK(own.backward_bytes == 140'509'184.0);  // 4G + 3W: its own cast of the gathered gradient
  CHECK(own.backward_launches == 3);
  wo.float8_prepared_grad = 1.0 / 8;
  const auto prepared = model::float8_casts(wo, 8'192);
  CHECK(prepared.backward_bytes == 85'983'232.0);  // 3G / 8 (amax read fused, read 2 + write 1) + 2G (transpose) + 3W
  CHECK(prepared.backward_launches == 4);          // amax and cast on the shard, the transpose, the weight's
  CHECK(prepared.forward_bytes == own.forward_bytes);
  // Which linears: the row-parallel ones (wo, w2) with sequence parallelism, tensorwise only.
  const auto p =
      test::prepared("tests/data/tiny_llama.yaml", {"fsdp.version=2", "parallelism.tp=2", "training.float8={recipe: tensorwise}"});
  CHECK(matmul_in(p, "attention", "wo").float8_prepared_grad == 0.5);
  CHECK(matmul_in(p, "feed_forward", "w2").float8_prepared_grad == 0.5);
  CHECK(matmul_in(p, "attention", "wq").float8_prepared_grad == -1.0);
  CHECK(matmul_in(p, "feed_forward", "w1").float8_prepared_grad == -1.0);
  const auto no_sp = test::prepared(
      "tests/data/tiny_llama.yaml",
      {"fsdp.version=2", "parallelism.tp=2", "training.float8={recipe: tensorwise}", "parallelism.tp_sequence_parallel=false"});
  CHECK(matmul_in(no_sp, "attention", "wo").float8_prepared_grad == -1.0);  // the gradient arrives whole
  const auto r = test::prepared("tests/data/tiny_llama.yaml", {"fsdp.version=2", "parallelism.tp=2", "training.float8={recipe: rowwise}"});
  CHECK(matmul_in(r, "attention", "wo").float8_prepared_grad == -1.0);
}

TEST_CASE("compiled, the linears that read one tensor cast it once (AOTAutograd's CSE)") {
  // Which linears share: wq, wk, wv read the attention norm's output, w1 and w3 the feed-forward
  // norm's (called back to back in the compiled block); wo and w2 read their own inputs. Eager,
  // every linear casts its own.
  const auto eager = test::prepared("tests/data/tiny_llama.yaml", {"fsdp.version=2", "training.float8={recipe: rowwise}"});
  for (const char* l : {"wq", "wk", "wv", "wo"}) CHECK(input_share(eager, "attention", l) == 1.0);
  for (const char* l : {"w1", "w3", "w2"}) CHECK(input_share(eager, "feed_forward", l) == 1.0);
  const auto compiled =
      test::prepared("tests/data/tiny_llama.yaml", {"fsdp.version=2", "training.compile=true", "training.float8={recipe: rowwise}"});
  CHECK(input_share(compiled, "attention", "wq") == 1.0);
  CHECK(input_share(compiled, "attention", "wk") == 0.0);
  CHECK(input_share(compiled, "attention", "wv") == 0.0);
  CHECK(input_share(compiled, "attention", "wo") == 1.0);
  CHECK(input_share(compiled, "feed_forward", "w1") == 1.0);
  CHECK(input_share(compiled, "feed_forward", "w3") == 0.0);
  CHECK(input_share(compiled, "feed_forward", "w2") == 1.0);
  // Under TP with tensorwise scales the module's prepared float8 input is also one tensor: its
  // transposed copy for the weight gradients is made once, by the first reader.
  const auto tp = test::prepared("tests/data/tiny_llama.yaml",
                                 {"fsdp.version=2", "training.compile=true", "parallelism.tp=2", "training.float8={recipe: tensorwise}"});
  CHECK(input_share(tp, "attention", "wq") == 1.0);
  CHECK(input_share(tp, "attention", "wv") == 0.0);

  // By hand, Llama 3 8B's w3 at 8,192 tokens behind w1, compiled (X = 33,554,432, W = 58,720,256,
  // G = 117,440,512 elements): only its weight's and grad_output's casts are its own.
  model::Kernel w3 = model::matmul_kernel("w3", 14'336, 4'096);
  w3.float8_fused_casts = true;
  w3.float8_input_share = 0;
  w3.float8 = model::Float8Recipe::tensorwise;
  auto c = model::float8_casts(w3, 8'192);
  CHECK(c.forward_bytes == 293'601'280.0);   // 5W (w1 carries the 4X)
  CHECK(c.forward_launches == 3);            // the weight's amax and cast
  CHECK(c.backward_bytes == 645'922'816.0);  // 4G + 3W, as before
  w3.float8 = model::Float8Recipe::rowwise;
  c = model::float8_casts(w3, 8'192);
  CHECK(c.forward_bytes == 176'160'768.0);  // 3W (w1 carries the input's casts)
  CHECK(c.forward_launches == 1);
  CHECK(c.forward_column_bytes == 0);
  CHECK(c.backward_bytes + c.backward_column_bytes == 1'484'783'616.0);  // 6G + 7W + 4X + 4W: its own grad_input is rescaled
  // The prepared input's reader that is not first: no cast, no transpose.
  w3 = model::matmul_kernel("w3", 1'792, 4'096);
  w3.float8 = model::Float8Recipe::tensorwise;
  w3.float8_fused_casts = true;
  w3.float8_prepared_input = 0;
  w3.float8_input_share = 0;
  c = model::float8_casts(w3, 8'192);
  CHECK(c.forward_bytes == 36'700'160.0);   // 5W
  CHECK(c.backward_bytes == 80'740'352.0);  // 4G + 3W: the 2X transpose is w1's
}

TEST_CASE("per-op selective checkpointing recomputes every float8 matmul and not its casts") {
  // torchtitan's save list names aten.mm, not aten._scaled_mm: in bf16 every second matmul of a
  // block is recomputed (wk, wo, w3), in float8 all seven; compiled, the float8 inputs are kept,
  // so the recompute adds GEMMs only. The extra: the forward GEMMs of wq, wv (2 x 512 x 512 x 512
  // each) and w1, w2 (2 x 512 x 1,376 x 512 each) = 1,979,711,488 FLOPs.
  const std::vector<std::string> sac{"fsdp.version=2", "training.compile=true", "training.activation_checkpointing=selective"};
  auto f8 = sac;
  f8.emplace_back("training.float8={recipe: tensorwise}");
  auto f8_none = sac;
  f8_none.emplace_back("training.activation_checkpointing=none");
  f8_none.emplace_back("training.float8={recipe: tensorwise}");
  const auto a = test::prepared("tests/data/tiny_llama.yaml", sac);
  const auto b = test::prepared("tests/data/tiny_llama.yaml", f8);
  const auto c = test::prepared("tests/data/tiny_llama.yaml", f8_none);
  const graph::Op& bf16_bwd = op_named(a.graph, "BWD layers.1");
  const graph::Op& f8_bwd = op_named(b.graph, "BWD layers.1");
  CHECK(f8_bwd.work.gemm_flops() - bf16_bwd.work.gemm_flops() == doctest::Approx(1'979'711'488.0).scale(0));
  // The float8 backward's cast bytes are those of no checkpointing (nothing recast); its memory
  // kernels' recompute is the same as bf16's.
  const graph::Op& plain_bwd = op_named(c.graph, "BWD layers.1");
  CHECK(f8_bwd.work.memory_bytes - bf16_bwd.work.memory_bytes ==
        doctest::Approx(
            plain_bwd.work.memory_bytes -
            op_named(test::prepared("tests/data/tiny_llama.yaml", {"fsdp.version=2", "training.compile=true"}).graph, "BWD layers.1")
                .work.memory_bytes)
            .scale(0));
}

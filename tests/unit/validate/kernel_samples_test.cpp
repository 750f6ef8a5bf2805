// GEMM and attention samples out of profiler traces for `shardsim calibrate`: kernels tied to the
// operator that launched them, shapes and causality read from the operator's recorded inputs.
#include "validate/kernel_samples.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <numeric>
#include <string>

#include "core/error.hpp"
#include "real_data.hpp"
#include "test_support.hpp"
#include "validate/calibrate.hpp"
#include "validate/kineto_events.hpp"

using namespace shardsim;

namespace {

std::string cpu_op(const std::string& name, int tid, double ts, double dur, const std::string& dims, const std::string& types,
                   const std::string& concrete) {
  return fmt::format(
      R"({{"ph": "X", "cat": "cpu_op", "name": "{}", "pid": 1, "tid": {}, "ts": {}, "dur": {}, "args": {{"External id": 1, "Input Dims": {}, "Input type": {}, "Concrete Inputs": {}}}}})",
      name, tid, ts, dur, dims, types, concrete);
}

// A runtime launch on thread `tid` at `ts` and the kernel it launched, of `dur` microseconds.
std::string launch(int tid, double ts, int correlation, double dur) {
  return fmt::format(
      R"({{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": {0}, "ts": {1}, "dur": 2, "args": {{"correlation": {2}}}}},
{{"ph": "X", "cat": "kernel", "name": "k{2}", "pid": 0, "tid": 7, "ts": {3}, "dur": {4}, "args": {{"stream": 7, "correlation": {2}}}}})",
      tid, ts, correlation, ts + 5, dur);
}

validate::KinetoEvents read(const std::string& name, const std::string& events) {
  const test::TempFile f(name, R"({"deviceProperties": [{"name": "NVIDIA H100 80GB HBM3"}], "traceEvents": [)" + events + "]}");
  return validate::read_trace_file(f.path()).kineto;
}

const std::string kBf16x3 = R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"])";

}  // namespace

TEST_CASE("trace kernels: each GEMM and attention operator's kernels, with its shapes, by the launch's thread and time") {
  std::string ev;
  // addmm inside a linear (not read) on thread 10, two kernels (a split-K GEMM and its reduction).
  ev += cpu_op("aten::linear", 10, 0, 100, "[[2048, 1024], [4096, 1024], [4096]]", kBf16x3, R"(["", "", ""])") + ",\n";
  ev += cpu_op("aten::addmm", 10, 10, 50, "[[4096], [2048, 1024], [1024, 4096], [], []]", kBf16x3, R"(["", "", "", "1", "1"])") + ",\n";
  ev += launch(10, 20, 1, 30) + ",\n" + launch(10, 40, 2, 5) + ",\n";
  // a float32 bmm: left out.
  ev += cpu_op("aten::bmm", 10, 110, 20, "[[8, 64, 32], [8, 32, 16]]", R"(["float", "float"])", R"(["", ""])") + ",\n";
  ev += launch(10, 115, 3, 10) + ",\n";
  // flash attention, GQA (16 query heads, 4 kv heads), causal: the kernel is the inner operator's.
  ev += cpu_op("aten::_scaled_dot_product_flash_attention", 10, 200, 100,
               "[[2, 16, 1024, 128], [2, 4, 1024, 128], [2, 4, 1024, 128], [], [], [], []]", kBf16x3,
               R"(["", "", "", "0.", "True", "False", ""])") +
        ",\n";
  ev += cpu_op("aten::_flash_attention_forward", 10, 210, 80,
               "[[2, 1024, 16, 128], [2, 1024, 4, 128], [2, 1024, 4, 128], [], [], [], [], [], [], [], [], [], [], [], []]", kBf16x3,
               R"(["", "", "", "", "", "1024", "1024", "0.", "True", "False", "", "", "", "", ""])") +
        ",\n";
  ev += launch(10, 220, 4, 60) + ",\n";
  // its backward on the autograd thread: two kernels.
  ev += cpu_op("aten::_scaled_dot_product_flash_attention_backward", 11, 400, 200,
               "[[2, 16, 1024, 128], [2, 16, 1024, 128], [2, 4, 1024, 128], [2, 4, 1024, 128], [], [], [], [], [], [], [], [], [], []]",
               R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16"])",
               R"(["", "", "", "", "", "", "", "", "1024", "1024", "0.", "True", "", ""])") +
        ",\n";
  ev += launch(11, 410, 5, 150) + ",\n" + launch(11, 590, 6, 10) + ",\n";
  // a launch outside every operator read, an mm that launched nothing, an mm whose shapes do not
  // multiply, efficient attention backward without is_causal recorded.
  ev += launch(10, 700, 7, 99) + ",\n";
  ev += cpu_op("aten::mm", 10, 800, 10, "[[8, 16], [16, 8]]", kBf16x3, R"(["", ""])") + ",\n";
  ev += cpu_op("aten::mm", 10, 820, 20, "[[8, 16], [32, 8]]", kBf16x3, R"(["", ""])") + ",\n";
  ev += launch(10, 830, 8, 4) + ",\n";
  ev += cpu_op("aten::_scaled_dot_product_efficient_attention_backward", 11, 900, 50,
               "[[1, 8, 64, 64], [1, 8, 64, 64], [1, 8, 64, 64], [1, 8, 64, 64]]", kBf16x3, R"(["", "", "", ""])") +
        ",\n";
  ev += launch(11, 910, 9, 7);

  const auto events = read("kernels.json", ev);
  CHECK(events.shaped_ops.size() == 8);  // linear is not kept
  const auto s = validate::kernel_samples(events);
  CHECK(s.bench.backend == "trace");
  CHECK(s.bench.device == "NVIDIA H100 80GB HBM3");
  REQUIRE(s.bench.gemms.size() == 1);
  const auto& g = s.bench.gemms[0];
  CHECK(g.m == 2048);
  CHECK(g.k == 1024);
  CHECK(g.n == 4096);
  CHECK(g.batch == 1);
  CHECK(g.seconds == doctest::Approx(35e-6).scale(0));  // 30 + 5 us
  REQUIRE(s.bench.attention.size() == 2);
  const auto& f = s.bench.attention[0].call;
  CHECK_FALSE(f.backward);
  CHECK(f.batch == 2);
  CHECK(f.seq == 1024);
  CHECK(f.heads == 16);
  CHECK(f.kv_heads == 4);
  CHECK(f.head_dim == 128);
  CHECK(f.causal);
  CHECK(s.bench.attention[0].seconds == doctest::Approx(60e-6).scale(0));
  const auto& b = s.bench.attention[1].call;
  CHECK(b.backward);
  CHECK(b.heads == 16);
  CHECK(b.kv_heads == 4);
  CHECK(b.seq == 1024);
  CHECK(b.causal);
  CHECK(s.bench.attention[1].seconds == doctest::Approx(160e-6).scale(0));  // 150 + 10 us
  // What was left out, one note per reason; the enclosing flash operator is not one of them.
  std::string notes;
  for (const auto& n : s.notes) notes += n + "\n";
  INFO(notes);
  CHECK(s.notes.size() == 4);
  CHECK(notes.find("1 operator left out: aten::bmm in a dtype other than bf16 / fp16") != std::string::npos);
  CHECK(notes.find("1 operator left out: aten::mm that launched no GPU work") != std::string::npos);
  CHECK(notes.find("1 operator left out: aten::mm whose matrix shapes do not multiply") != std::string::npos);
  CHECK(notes.find(
            "aten::_scaled_dot_product_efficient_attention_backward whose is_causal is not recorded (\"Concrete Inputs\" position 11)") !=
        std::string::npos);
}

TEST_CASE("trace kernels: torchao's tensorwise float8 GEMMs (aten::_scaled_mm) are float8 samples, rowwise ones are left out") {
  // _scaled_mm(self, mat2, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum).
  const std::string f8 = R"(["c10::Float8_e4m3fn", "c10::Float8_e4m3fn", "float", "float", "", "", "Scalar", "Scalar"])";
  std::string ev;
  ev += cpu_op("aten::_scaled_mm", 10, 0, 50, "[[16384, 4096], [4096, 128], [], [], [], [], [], []]", f8,
               R"(["", "", "", "", "", "", "15", "True"])") +
        ",\n";
  ev += launch(10, 10, 1, 40) + ",\n";
  // its grad_input GEMM: e5m2 x e4m3, scales of one element.
  const std::string f8_bwd = R"(["c10::Float8_e5m2", "c10::Float8_e4m3fn", "float", "float", "", "", "Scalar", "Scalar"])";
  ev += cpu_op("aten::_scaled_mm", 11, 100, 50, "[[16384, 128], [128, 4096], [1], [1], [], [], [], []]", f8_bwd,
               R"(["", "", "", "", "", "", "15", "False"])") +
        ",\n";
  ev += launch(11, 110, 2, 30) + ",\n";
  // rowwise: a scale per row of self and per column of mat2.
  ev += cpu_op("aten::_scaled_mm", 10, 200, 50, "[[16384, 4096], [4096, 128], [16384, 1], [1, 128], [], [], [], []]", f8,
               R"(["", "", "", "", "", "", "15", "True"])") +
        ",\n";
  ev += launch(10, 210, 3, 45);
  const auto s = validate::kernel_samples(read("float8.json", ev));
  REQUIRE(s.bench.gemms.size() == 2);
  CHECK(s.bench.gemms[0].m == 16384);
  CHECK(s.bench.gemms[0].k == 4096);
  CHECK(s.bench.gemms[0].n == 128);
  CHECK(s.bench.gemms[0].seconds == doctest::Approx(40e-6).scale(0));
  CHECK(s.bench.gemms[0].precision == validate::GemmPrecision::fp8);  // use_fast_accum True: the forward GEMM
  CHECK(s.bench.gemms[1].k == 128);
  CHECK(s.bench.gemms[1].precision == validate::GemmPrecision::fp8_precise);  // use_fast_accum False: a gradient GEMM
  REQUIRE(s.notes.size() == 1);
  CHECK(s.notes[0].find("1 operator left out: aten::_scaled_mm with rowwise or blockwise scales") != std::string::npos);
}

TEST_CASE("trace kernels: a trace without shapes, or without GEMMs, says what it needs") {
  SUBCASE("no shapes recorded") {
    const std::string ev = R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "tid": 1, "ts": 0, "dur": 10, "args": {}},
)" + launch(1, 2, 1, 5);
    const auto events = read("noshapes.json", ev);
    try {
      (void)validate::kernel_samples(events);
      FAIL("expected an error");
    } catch (const ConfigError& e) {
      CHECK(std::string(e.what()).find(
                "records no operator shapes; expected a trace profiled with torch.profiler.profile(record_shapes=True)") !=
            std::string::npos);
    }
  }
  SUBCASE("no GEMM") {
    const auto events = read("nogemm.json", launch(1, 2, 1, 5));
    CHECK_THROWS_WITH_AS((void)validate::kernel_samples(events),
                         doctest::Contains("holds no GEMM (aten::mm, addmm, bmm, baddbmm, _scaled_mm)"), ConfigError);
  }
}

// Real data: a small BERT on one H100, inference, recorded with shapes (../shared/real-data,
// TraceLens, MIT). Expected figures read with Python's json module, tying kernels to operators by
// their "External id" (a different route from shardsim's, which goes through the launch):
//   k[e["args"]["External id"]] += e["dur"] for GPU ops; then for cpu_op aten::addmm,
//   (Input Dims[1], Input Dims[2], k[External id]); for aten::_flash_attention_forward, k[...].
// 26 addmm, all bf16, 197.598 us in all; the last is the vocabulary projection 141 x 512 x 30522,
// 41.28 us; 4 flash forwards of [1, 141, 8, 64], not causal, 10.08 + 9.12 + 9.12 + 9.088 us.
TEST_CASE("real trace: GEMM and attention samples of BERT-small on an H100, and the calibration they fit") {
  const auto file = test::real_data("tracelens_bert_small_h100.json.gz");
  if (file.empty()) return;
  const auto s = validate::kernel_samples(validate::read_trace_file(file).kineto);
  REQUIRE(s.bench.gemms.size() == 26);
  double total = 0;
  for (const auto& g : s.bench.gemms) {
    CHECK(g.m == 141);
    CHECK((g.k == 512 || (g.k == 2048 && g.n == 512)));  // [141, 2048] x [2048, 512] is the MLP's down projection
    total += g.seconds;
  }
  CHECK(total == doctest::Approx(197.598e-6).scale(0));
  CHECK(s.bench.gemms.back().n == 30522);
  CHECK(s.bench.gemms.back().seconds == doctest::Approx(41.28e-6).scale(0));
  REQUIRE(s.bench.attention.size() == 4);
  double attention = 0;
  for (const auto& a : s.bench.attention) {
    CHECK(a.call.batch == 1);
    CHECK(a.call.seq == 141);
    CHECK(a.call.heads == 8);
    CHECK(a.call.kv_heads == 8);
    CHECK(a.call.head_dim == 64);
    CHECK_FALSE(a.call.causal);
    CHECK_FALSE(a.call.backward);
    attention += a.seconds;
  }
  CHECK(attention == doctest::Approx(37.408e-6).scale(0));

  // The fit: one rate and a half-rate size through GEMMs from 74 MFLOP to 4.4 GFLOP. The big GEMM
  // alone bounds the rate from below: 2 x 141 x 512 x 30522 FLOP in 41.28 us is 107 TFLOPS.
  const auto fit = validate::fit_calibration(s.bench);
  REQUIRE(fit.calibration.gemm.has_value());
  CHECK(fit.calibration.gemm->rate > 107e12);
  CHECK(fit.calibration.gemm->rate < 989e12);  // the H100 SXM's dense bf16 peak
  REQUIRE(fit.calibration.attention_forward_rate.has_value());
  CHECK_FALSE(fit.calibration.attention_backward_rate.has_value());
}

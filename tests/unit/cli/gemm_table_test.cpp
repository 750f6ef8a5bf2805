// `shardsim run --gemms`: the step's GEMMs by shape, with the linears and roles of each shape.
#include "cli/gemm_table.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "cli/pipeline.hpp"
#include "engine/scenario_run.hpp"
#include "test_support.hpp"

using namespace shardsim;

namespace {

struct Table {
  std::vector<cli::GemmRow> rows;
  double summary_gemm_s = 0;  // the summary's GEMM time, for the same stage and step
};

Table table(const std::vector<std::string>& sets) {
  const auto p = cli::prepare(test::source_dir() / "tests/data/tiny_llama.yaml", sets);
  const auto out = cli::simulate(p);
  const auto& s = out.summary;
  return {cli::gemm_table(p.graph, p.model, p.scenario, s.busiest_stage, s.reported_step, *engine::make_compute_model(p)),
          s.compute_split.gemm};
}

}  // namespace

TEST_CASE("the GEMM table counts each shape's GEMMs, names their linears, and adds up to the summary's GEMM time") {
  // The tiny Llama (h 512, ffn 1376, 4 blocks, one micro-batch of 512 tokens, no checkpointing):
  // forward (512, n, k), grad_input (512, k, n), grad_weight (n, k, 512) of each linear, once a
  // block. 512^3: wq, wk, wv, wo, three GEMMs each, 4 blocks: 48. (512, 1376, 512): w1 and w3
  // forward and w2's two gradients (w2 is 1376 -> 512): 4 x 4 = 16. (512, 512, 1376): w1 and w3
  // grad_input and w2 forward: 12. (1376, 512, 512): w1 and w3 grad_weight: 8. The output layer
  // (512 -> 1,000): its three GEMMs once each.
  const Table t = table({});
  std::map<std::string, std::int64_t> count;
  double total = 0;
  for (const auto& r : t.rows) {
    count[std::to_string(r.gemm.m) + "x" + std::to_string(r.gemm.n) + "x" + std::to_string(r.gemm.k)] += r.count;
    total += r.total_seconds();
  }
  CHECK(count["512x512x512"] == 48);
  CHECK(count["512x1376x512"] == 16);
  CHECK(count["512x512x1376"] == 12);
  CHECK(count["1376x512x512"] == 8);
  CHECK(count["512x1000x512"] == 1);
  CHECK(count["1000x512x512"] == 1);
  CHECK(count["512x512x1000"] == 1);
  CHECK(t.rows.size() == 7);
  CHECK(total == doctest::Approx(t.summary_gemm_s).scale(0));
  for (const auto& r : t.rows) {
    if (r.gemm.m == 1376)
      CHECK(r.of == std::vector<std::string>{"layers.*.feed_forward.w1 grad_weight", "layers.*.feed_forward.w3 grad_weight"});
    if (r.gemm.n == 1000) CHECK(r.of == std::vector<std::string>{"output forward"});
  }
}

TEST_CASE("in float8 a GEMM's type and accumulation tell its role: the output GEMM fast, the gradients precise") {
  // torchao's tensorwise recipe: forward GEMMs with fast accumulation, grad_input and
  // grad_weight without (graph/work.cpp linear_gemm); the output layer, left in bf16 by the
  // recipe's size filter or skip list, keeps all three roles on its shapes.
  const Table t = table({"training.float8.recipe=tensorwise", "training.compile=true"});
  int fp8_rows = 0;
  for (const auto& r : t.rows) {
    if (r.gemm.type != graph::GemmType::fp8) continue;
    ++fp8_rows;
    REQUIRE_FALSE(r.of.empty());
    for (const auto& of : r.of) {
      const std::string roles = of.substr(of.rfind(' ') + 1);  // "forward", "grad_input/grad_weight", ...
      if (r.gemm.precise_accum) {
        CHECK(roles.find("forward") == std::string::npos);
      } else {
        CHECK(roles == "forward");
      }
    }
  }
  CHECK(fp8_rows > 0);
}

TEST_CASE("the GEMM table gives each shape's waves over the SMs and the share of them its tiles fill") {
  // The tiny Llama's 512 x 512 x 512 on the H100's 132 SMs: 128 x 128 tiles, 16 of them, K too
  // short to split (512 / 512 = 1 slice), one wave 16/132 full; 128 x 256 would fill 8 of 132.
  const Table t = table({});
  const auto it = std::find_if(t.rows.begin(), t.rows.end(),
                               [](const cli::GemmRow& r) { return r.gemm.m == 512 && r.gemm.n == 512 && r.gemm.k == 512; });
  REQUIRE(it != t.rows.end());
  CHECK(it->waves == 1);
  CHECK(it->sm_fill == doctest::Approx(16.0 / 132).epsilon(1e-9).scale(0));
  const std::string text = cli::gemm_table_text(t.rows, 0, 1, "bf16");
  CHECK(text.find("waves   fill") != std::string::npos);
  CHECK(text.find("      1    12%") != std::string::npos);
  const auto json = cli::gemm_table_json(t.rows);
  CHECK(json.at(static_cast<std::size_t>(it - t.rows.begin())).at("waves") == 1);
}

// `shardsim calibrate --topology`: measured GEMMs beside the topology's nominal model, and the
// float8 speed-up of shapes timed in both dtypes, worked by hand.
#include "cli/gemm_check.hpp"

#include <doctest/doctest.h>

#include "test_support.hpp"

using namespace shardsim;

TEST_CASE("measured GEMMs beside the topology's model: times, ratios and the float8 speed-up of shapes timed in both dtypes") {
  auto topo = config::load_topology(test::source_dir() / "topologies/h100_sxm_8x_ib400.yaml", ConfigNode{}, "");
  topo.gpu.gemm_output_exposed = 0;  // the model's time is then FLOPs / rate, or bytes / bandwidth if slower
  validate::BenchResults b;
  b.gemms.push_back({8192, 8192, 8192, 1, 2.0e-3, false});
  b.gemms.push_back({8192, 8192, 8192, 1, 1.25e-3, true});
  b.gemms.push_back({4096, 128, 4096, 1, 50e-6, false});  // bf16 only: no speed-up row
  const auto c = cli::check_gemms(b, topo);
  REQUIRE(c.rows.size() == 3);
  // 2 x 8192^3 = 1.0995e12 FLOPs at 989 x 0.68 = 672.52 TFLOPS (bf16): 1.6349 ms; at 1,979 x 0.68 =
  // 1,345.72 TFLOPS (float8): 0.81704 ms; their bytes (0.4 GB at 2.85 TB/s, 0.14 ms) do not bind.
  CHECK(c.rows[0].modelled == doctest::Approx(1.0995116e12 / 672.52e12).epsilon(1e-4));
  CHECK(c.rows[1].modelled == doctest::Approx(1.0995116e12 / 1345.72e12).epsilon(1e-4));
  REQUIRE(c.speedups.size() == 1);
  CHECK(c.speedups[0].m == 8192);
  CHECK(c.speedups[0].measured == doctest::Approx(1.6));             // 2.0 / 1.25 ms
  CHECK(c.speedups[0].modelled == doctest::Approx(1979.0 / 989.0));  // the peaks' ratio, efficiencies alike
  const std::string text = cli::gemm_check_text(c, topo.name);
  CHECK(text.find("measured x1.600, modelled x2.001") != std::string::npos);
  // A GPU without float8: its float8 samples are listed unmodelled, with no speed-up.
  topo.gpu.peak_fp8 = {};
  const auto none = cli::check_gemms(b, topo);
  CHECK(none.rows[1].modelled == 0);
  CHECK(none.speedups.empty());
  CHECK(cli::gemm_check_text(none, topo.name).find("(the topology gives no float8 rate)") != std::string::npos);
}

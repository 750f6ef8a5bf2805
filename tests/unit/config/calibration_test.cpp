#include "config/calibration.hpp"

#include <doctest/doctest.h>

#include <string>

#include "config/scenario.hpp"
#include "test_support.hpp"

using namespace shardsim;
using shardsim::test::TempFile;

namespace {

const char* kCalibration = R"(name: test GPU
compute:
  gemm: {rate: 800TFLOPS, half_rate_flops: 2GFLOP}
  memory_bandwidth: 4TB/s
  kernel_launch: 3us
collectives:
  nvlink:
    all_gather: {base_latency: 8us, hop_latency: 1.5us, bus_bandwidth: 360GB/s}
  nic:
    all_reduce: {base_latency: 20us, bus_bandwidth: 400Gbps}
)";

std::string message_of(const std::string& file) {
  try {
    (void)config::load_calibration(file);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("a calibration file loads its rates in base units, what it leaves out stays unset") {
  TempFile f("cal.yaml", kCalibration);
  const auto c = config::load_calibration(f.path());
  CHECK(c.name == "test GPU");
  REQUIRE(c.gemm);
  CHECK(c.gemm->rate == doctest::Approx(800e12).scale(0));
  CHECK(c.gemm->half_rate_flops == doctest::Approx(2e9).scale(0));
  CHECK(*c.memory_bandwidth == doctest::Approx(4e12).scale(0));
  CHECK(*c.kernel_launch == doctest::Approx(3e-6).scale(0));
  CHECK_FALSE(c.attention_forward_rate);
  const auto& ag = c.collectives[0][0];
  REQUIRE(ag);
  CHECK(ag->base_latency == doctest::Approx(8e-6).scale(0));
  CHECK(ag->hop_latency == doctest::Approx(1.5e-6).scale(0));
  CHECK(ag->bus_bandwidth == doctest::Approx(360e9).scale(0));
  CHECK_FALSE(c.collectives[0][1]);
  const auto& ar = c.collectives[1][2];
  REQUIRE(ar);
  CHECK(ar->hop_latency == 0);                                 // default
  CHECK(ar->bus_bandwidth == doctest::Approx(50e9).scale(0));  // 400 Gb/s
  CHECK(c.has_collectives());
}

TEST_CASE("calibration errors name the file, line, column and key") {
  TempFile bad("bad.yaml", "compute:\n  gemm: {rate: 800TFLOPS, half_rate_flop: 2GFLOP}\n");
  CHECK(message_of(bad.str()) == bad.str() +
                                     ":2:27: error: compute.gemm.half_rate_flop: unknown key in calibration.compute.gemm settings "
                                     "(did you mean \"half_rate_flops\"?)");
  TempFile link("link.yaml", "collectives:\n  nvlnk: {}\n");
  CHECK(message_of(link.str()).find(":2:3: error: collectives.nvlnk: unknown key") != std::string::npos);
  TempFile zero("zero.yaml", "compute:\n  memory_bandwidth: 0GB/s\n");
  CHECK(message_of(zero.str()) == zero.str() + ":2:21: error: compute.memory_bandwidth: expected a bandwidth above zero");
}

TEST_CASE("a scenario names its calibration relative to itself") {
  TempFile topo("topo.yaml", R"(name: t
gpu: {model: X, memory: 80GiB, peak_flops: {bf16: 1PFLOPS, fp32: 1TFLOPS}, hbm_bandwidth: 1TB/s}
node: {gpus: 2, nvlink: {bandwidth: 100GB/s}, nic: {bandwidth: 100Gbps}}
)");
  TempFile cal("cal.yaml", kCalibration);
  TempFile scen("scen.yaml", R"(cluster: {topology: topo.yaml}
model: {preset: llama3.1-8b}
training: {seq_len: 128}
calibration: cal.yaml
)");
  const auto s = config::load_scenario(scen.path());
  REQUIRE(s.calibration);
  CHECK(s.calibration->gemm->rate == doctest::Approx(800e12).scale(0));
  TempFile missing("missing.yaml",
                   "cluster: {topology: topo.yaml}\nmodel: {preset: llama3.1-8b}\ntraining: {seq_len: 128}\ncalibration: nope.yaml\n");
  try {
    (void)config::load_scenario(missing.path());
    FAIL("expected an error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).find(":4:14: error: calibration: no such file") != std::string::npos);
  }
}

TEST_CASE("a size-aware collective entry: pieces by size, the piece at or below S prices S") {
  TempFile f("sized.yaml", R"(collectives:
  nic:
    all_reduce:
      sizes:
        - {from: 8MiB, base_latency: 300us, bus_bandwidth: 180GB/s}
        - {from: 64MiB, bus_bandwidth: 90GB/s}
)");
  const auto c = config::load_calibration(f.path());
  const auto& e = c.collectives[1][2];
  REQUIRE(e);
  REQUIRE(e->sizes.size() == 2);
  CHECK_FALSE(e->at(8.0 * 1048576 - 1));  // below the first piece: the topology's model
  CHECK(e->at(8.0 * 1048576)->base_latency == doctest::Approx(300e-6).scale(0));
  CHECK(e->at(63.0 * 1048576)->bus_bandwidth == doctest::Approx(180e9).scale(0));
  CHECK(e->at(64.0 * 1048576)->bus_bandwidth == doctest::Approx(90e9).scale(0));
  CHECK(e->at(1e12)->base_latency == 0.0);  // the last piece's, every size above
  CHECK(config::calibration_coverage(c) == "all_reduce over nic (from 8 MiB)");
}

TEST_CASE("size-aware entries: pieces out of order, or beside the three figures, are errors") {
  TempFile order("order.yaml", R"(collectives:
  nvlink:
    all_gather:
      sizes:
        - {from: 64MiB, bus_bandwidth: 90GB/s}
        - {from: 8MiB, bus_bandwidth: 180GB/s}
)");
  CHECK(message_of(order.str()) ==
        order.str() +
            ":6:18: error: collectives.nvlink.all_gather.sizes[1].from: expected pieces by increasing size; the previous piece "
            "starts at 64 MiB");
  TempFile both("both.yaml", R"(collectives:
  nvlink:
    all_gather: {bus_bandwidth: 300GB/s, sizes: [{from: 1MiB, bus_bandwidth: 90GB/s}]}
)");
  CHECK(message_of(both.str())
            .find("collectives.nvlink.all_gather.bus_bandwidth: expected either sizes or base_latency / hop_latency / "
                  "bus_bandwidth, not both") != std::string::npos);
}

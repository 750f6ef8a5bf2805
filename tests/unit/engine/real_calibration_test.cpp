// A calibration fitted by `shardsim calibrate` to a real nccl-tests log, read as it is printed,
// predicts every size of that log within 10 % when the simulator runs the collective alone on
// the cluster the log was measured on (../shared/real-data; each case skips when it is absent).
// The measured times are the log's own columns (out of place and in place); the prediction is
// the simulated collective's duration, through the engine's calibrated ring.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "collective_support.hpp"
#include "engine/calibrated_ring.hpp"
#include "real_data.hpp"
#include "validate/calibrate.hpp"
#include "validate/nccl_tests.hpp"

using namespace shardsim;

namespace {

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Fits the log, simulates one all-reduce per size of it over all its ranks, checks each.
void check_log(const char* name, const validate::NcclTestsHints& hints) {
  const auto file = test::real_data(name);
  if (file.empty()) return;
  const auto log = validate::parse_nccl_tests(read(file), file.string(), hints);
  validate::BenchResults bench;
  const auto link = log.nodes == 1 ? config::LinkClass::nvlink : config::LinkClass::nic;
  for (const auto& r : log.rows) {
    bench.collectives.push_back({graph::OpKind::all_reduce, link, log.ranks, log.ranks / log.nodes, r.bytes, r.time_oop});
    bench.collectives.push_back({graph::OpKind::all_reduce, link, log.ranks, log.ranks / log.nodes, r.bytes, r.time_ip});
  }
  const auto fit = validate::fit_calibration(bench);

  // One all-reduce per size, one after another on the all-reduce stream.
  std::vector<graph::Op> ops;
  for (const auto& r : log.rows) ops.push_back(test::collective_op(graph::OpKind::all_reduce, r.bytes));
  auto g = test::collectives_graph(log.ranks, log.ranks, ops);
  for (int i = 1; i < static_cast<int>(ops.size()); ++i) g.add_edge(i - 1, i, graph::EdgeKind::data);  // one at a time
  const auto topo = test::topology("h100_sxm_8x_ib400.yaml");
  const auto ring = test::collectives(topo, test::collectives_settings("ring", "simple"));
  const engine::CalibratedRing calibrated(ring, fit.calibration);
  const auto result = test::simulate(g, topo, log.nodes, calibrated);
  for (std::size_t i = 0; i < log.rows.size(); ++i) {
    const auto& interval = result.timeline.at(static_cast<int>(i), 0);
    const double simulated = interval.end - interval.start;
    for (const double measured : {log.rows[i].time_oop, log.rows[i].time_ip}) {
      CAPTURE(log.rows[i].bytes);
      CAPTURE(measured);
      CAPTURE(simulated);
      CHECK(std::fabs(simulated - measured) / measured <= 0.10);
    }
  }
}

}  // namespace

TEST_CASE("real nccl-tests: the calibration of 1 x 8 H100 all-reduce (NVLS, 128 MiB - 4 GiB) predicts every size within 10 %") {
  check_log("nccl-tests_all_reduce_1x8_h100_nvls.log", {});  // ranks and node from the log's header
}

TEST_CASE("real nccl-tests: the calibration of 2 x 8 H100 ring all-reduce (8 MiB - 8 GiB) predicts every size within 10 %") {
  validate::NcclTestsHints hints;
  hints.nodes = 2;  // the log has no header; its 16 ranks follow from busbw / algbw = 2 x 15/16
  check_log("nccl-tests_all_reduce_ring_2x8_h100.log", hints);
}

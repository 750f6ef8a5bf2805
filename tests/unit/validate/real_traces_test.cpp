// compare on real PyTorch profiler traces (../shared/real-data, sources and licences in its
// README). Each case skips, with a message, when the folder is absent (a user's clone).
//
// The expected figures were read off the traces with Python's json module, not with shardsim:
//   python3 -c 'import gzip,json; ev=json.load(gzip.open(F))["traceEvents"];
//     print([(e["name"],e["cat"],e["ts"],e["dur"]) for e in ev if e["name"].startswith(("ProfilerStep","Optimizer.step"))])'
// and op counts per step by the same rule the steps follow (a GPU op is in the step whose window
// holds its start; windows from ProfilerStep or optimizer annotations as kineto_steps.hpp says):
//   [e for e in ev if e.get("cat") in ("kernel","gpu_memcpy","gpu_memset") and a <= e["ts"] < b]
// counted by "cat" and, for collectives, by args["Collective name"].
#include <doctest/doctest.h>

#include <filesystem>

#include "core/error.hpp"
#include "real_data.hpp"
#include "test_support.hpp"
#include "validate/compare.hpp"
#include "validate/kineto.hpp"
#include "validate/kineto_events.hpp"
#include "validate/kineto_steps.hpp"

using namespace shardsim;

namespace {

int count(const validate::StepMetrics& m, const char* kind) {
  return m.count_by_kind.count(kind) > 0 ? m.count_by_kind.at(kind) : 0;
}

}  // namespace

TEST_CASE("real trace: DDP ResNet-50 on 2 x A100, CPU ProfilerStep#4-6, rank 0 of 2") {
  const auto file = test::real_data("hta_ddp_resnet50_2xa100_rank0.json.gz");
  if (file.empty()) return;
  const auto t = validate::load_trace(file);
  REQUIRE(t.ranks.size() == 1);
  CHECK(t.ranks[0].rank == 0);
  CHECK(t.ranks_recorded);
  CHECK(t.world_size == 2);
  const auto steps = validate::rank_step_metrics(t, 0);
  REQUIRE(steps.size() == 3);
  // CPU ProfilerStep durations, microseconds: #4 222442.191, #5 219726.905, #6 224936.243.
  const double cpu_span[] = {222442.191e-6, 219726.905e-6, 224936.243e-6};
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(steps[i].number == static_cast<int>(i) + 4);
    CHECK(steps[i].step_time == doctest::Approx(cpu_span[i]).epsilon(0.01).scale(0));
    // Per step: 900 kernels (5 allreduce and 2 broadcast among them), 320 memcpy, 38 memset.
    const int kernels = count(steps[i], "gemm") + count(steps[i], "attention") + count(steps[i], "other") + count(steps[i], "all_reduce") +
                        count(steps[i], "other_comm");
    CHECK(kernels == 900);
    CHECK(count(steps[i], "memcpy") == 320);
    CHECK(count(steps[i], "memset") == 38);
    CHECK(steps[i].count_by_class.at("all_reduce") == 5);
    CHECK(steps[i].count_by_class.at("other_comm") == 2);  // broadcast
  }
  // Its first all-reduce of step #4: 2049000 Float elements over 2 ranks, 3306.963 us.
  const auto sizes = validate::size_rows(t, 0, {});
  bool found = false;
  for (const auto& s : sizes) {
    if (s.cls != validate::ActivityClass::all_reduce || s.bytes != 2049000.0 * 4) continue;
    found = true;
    CHECK(s.group == "default_pg (0)");
    CHECK(s.group_size == 2);
    CHECK(s.count == 3);  // once per step
  }
  CHECK(found);
}

TEST_CASE("real trace: BERT on one H100, ProfilerStep#6 on the CPU and on the GPU counts once") {
  const auto file = test::real_data("tracelens_bert_small_h100.json.gz");
  if (file.empty()) return;
  const auto t = validate::load_trace(file);
  REQUIRE(t.ranks.size() == 1);
  CHECK_FALSE(t.ranks_recorded);  // no distributedInfo
  CHECK(t.ranks[0].rank == 0);
  const auto steps = validate::rank_step_metrics(t, 0);
  REQUIRE(steps.size() == 1);
  // gpu_user_annotation ProfilerStep#6: dur 3907.827 us (the CPU one lasts 4426.114 us).
  CHECK(steps[0].step_time == doctest::Approx(3907.827e-6).epsilon(0.01).scale(0));
  CHECK(count(steps[0], "gemm") + count(steps[0], "attention") + count(steps[0], "other") == 60);
  CHECK(count(steps[0], "memcpy") == 1);
}

TEST_CASE("real trace: DDP ResNet-18 on MI300X without ProfilerStep: five optimizer steps") {
  const auto file = test::real_data("tracelens_ddp_resnet18_mi300x.json.gz");
  if (file.empty()) return;
  const auto t = validate::load_trace(file);
  REQUIRE(t.ranks.size() == 1);
  const auto steps = validate::rank_step_metrics(t, 0);
  REQUIRE(steps.size() == 5);
  // Step k ends where the GPU annotation of optimizer step k ends (ts + dur); step 1 starts at the
  // first GPU op, 1305516306794.554 us. Ends: ...423274.149, ...538978.708, ...1553679.425,
  // ...2622043.847, ...3698129.556 (all 13055 16/17/18/19... us).
  const double length[] = {116479.595e-6, 115704.559e-6, 1014700.717e-6, 1068364.422e-6, 1076085.709e-6};
  for (std::size_t i = 0; i < 5; ++i) {
    CHECK(steps[i].step_time == doctest::Approx(length[i]).epsilon(0.01).scale(0));
    // 472 kernels in each step, 2 memsets; a memcpy in steps 2 to 5.
    CHECK(count(steps[i], "gemm") + count(steps[i], "attention") + count(steps[i], "other") == 472);
    CHECK(count(steps[i], "memset") == 2);
    CHECK(count(steps[i], "memcpy") == (i == 0 ? 0 : 1));
  }
}

TEST_CASE("real trace: the MI300X kernel sequence repeats every 472 kernels") {
  const auto file = test::real_data("tracelens_ddp_resnet18_mi300x.json.gz");
  if (file.empty()) return;
  // Without its optimizer annotations, the steps come from the repeating sequence.
  auto parsed = validate::read_trace_file(file);
  auto& ev = parsed.kineto;
  ev.markers.clear();
  const auto split = validate::find_steps(ev);
  CHECK(split.method.find("repeats every 472 kernels") != std::string::npos);
  // 2360 kernels = 5 x 472. The idle time before each kernel, summed over repetitions (position
  // i mod 472), is longest before position 5; whole repetitions from there: 4, starting at
  // kernels 5, 477, 949, 1421, lasting (from the kernels' ts) 118221.149, 128195.754,
  // 1076276.561, 1076290.528 us.
  REQUIRE(split.steps.size() == 4);
  const double length[] = {118221.149, 128195.754, 1076276.561, 1076290.528};
  for (std::size_t i = 0; i < 4; ++i) CHECK(split.steps[i].end - split.steps[i].start == doctest::Approx(length[i]).epsilon(1e-6).scale(0));
}

TEST_CASE("real trace: --rank that disagrees with distributedInfo is refused") {
  const auto file = test::real_data("hta_ddp_resnet50_2xa100_rank0.json.gz");
  if (file.empty()) return;
  validate::TraceRequest req{{file}, {}, 5};
  try {
    (void)validate::load_trace(req);
    FAIL("expected an error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) == file.string() +
                                       ": error: distributedInfo.rank: this trace is rank 0's; --rank 5 asks for another rank (give "
                                       "that rank's trace, or --rank 0)");
  }
}

// Reading profiler traces: gzip, broken input, GPU step annotations, step filters, several ranks
// and stragglers, on small traces written here whose figures are worked by hand.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.hpp"
#include "test_support.hpp"
#include "validate/comm_table.hpp"
#include "validate/compare.hpp"
#include "validate/trace.hpp"

using namespace shardsim;
using nlohmann::json;

namespace {

namespace fs = std::filesystem;

// A folder for the test case's files, removed afterwards.
class TempDir {
 public:
  explicit TempDir(const std::string& name) : path_(fs::temp_directory_path() / ("shardsim-test-" + std::to_string(::getpid())) / name) {
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] fs::path file(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name, std::ios::binary) << text;
    return path_ / name;
  }
  [[nodiscard]] fs::path gz(const std::string& name, const std::string& text) const {
    const auto p = path_ / name;
    gzFile f = gzopen(p.string().c_str(), "wb");
    REQUIRE(f != nullptr);
    REQUIRE(gzwrite(f, text.data(), static_cast<unsigned>(text.size())) == static_cast<int>(text.size()));
    gzclose(f);
    return p;
  }
  [[nodiscard]] const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

json kernel(const char* name, double ts, double dur, int stream, json args = json::object()) {
  args["stream"] = stream;
  return {{"ph", "X"}, {"cat", "kernel"}, {"name", name}, {"pid", 0}, {"tid", stream}, {"ts", ts}, {"dur", dur}, {"args", args}};
}

json annotation(const std::string& name, bool gpu, double ts, double dur, int tid = 7) {
  return {{"ph", "X"},    {"cat", gpu ? "gpu_user_annotation" : "user_annotation"},
          {"name", name}, {"pid", gpu ? 0 : 100},
          {"tid", tid},   {"ts", ts},
          {"dur", dur}};
}

json all_gather_args(int group_ranks) {
  json ranks = json::array();
  for (int r = 0; r < group_ranks; ++r) ranks.push_back(r);
  return {{"Collective name", "_allgather_base"},
          {"In msg nelems", 1 << 20},
          {"Out msg nelems", group_ranks << 20},
          {"dtype", "BFloat16"},
          {"Group size", group_ranks},
          {"Process Group Name", "1"},
          {"Process Group Description", "mesh_dp_shard"},
          {"Process Group Ranks", ranks.dump()}};
}

std::string trace_text(json events, std::optional<int> rank = std::nullopt, int world = 1) {
  json j{{"schemaVersion", 1}, {"traceEvents", std::move(events)}};
  if (rank) j["distributedInfo"] = {{"backend", "nccl"}, {"rank", *rank}, {"world_size", world}};
  return j.dump(1);
}

// Two GPU-annotated steps, ProfilerStep#3 on streams 7 and 20, #4 on stream 7 (times in us):
//   #3: stream 7 [1000, 1400], stream 20 [1100, 1600] -> merged [1000, 1600]; #4: [2000, 2500]
// and CPU annotations of both, which must not count again.
json two_gpu_steps() {
  return json::array({annotation("ProfilerStep#3", false, 500, 1000), annotation("ProfilerStep#4", false, 1500, 900),
                      annotation("ProfilerStep#3", true, 1000, 400, 7), annotation("ProfilerStep#3", true, 1100, 500, 20),
                      annotation("ProfilerStep#4", true, 2000, 500, 7), kernel("sm90_xmma_gemm_bf16", 1000, 400, 7),
                      kernel("ncclDevKernel_AllGather_RING_LL", 1100, 500, 20), kernel("sm90_xmma_gemm_bf16", 2000, 300, 7),
                      kernel("void at::native::elementwise_kernel", 2300, 200, 7)});
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("GPU ProfilerStep annotations on two streams and on the CPU make one step each") {
  TempDir d("gpu_steps");
  const auto t = validate::load_trace(d.file("t.json", trace_text(two_gpu_steps())));
  REQUIRE(t.ranks[0].steps.size() == 2);
  // #3 runs from its start (1000) to #4's start (2000); #4, the last, ends with its annotation.
  CHECK(t.ranks[0].steps[0].number == 3);
  CHECK(t.ranks[0].steps[0].length() == doctest::Approx(1000e-6).scale(0));
  CHECK(t.ranks[0].steps[1].length() == doctest::Approx(500e-6).scale(0));
  const auto steps = validate::rank_step_metrics(t, 0);
  CHECK(steps[0].compute_busy == doctest::Approx(400e-6).scale(0));
  CHECK(steps[0].exposed_comm == doctest::Approx(200e-6).scale(0));  // [1400, 1600]
  CHECK(steps[0].idle == doctest::Approx(400e-6).scale(0));          // [1600, 2000]
}

TEST_CASE("a gzipped trace reads as the same trace, and a damaged one names the file") {
  TempDir d("gzip");
  const std::string text = trace_text(two_gpu_steps());
  const auto plain = validate::load_trace(d.file("t.json", text));
  const auto packed = validate::load_trace(d.gz("t.json.gz", text));
  REQUIRE(packed.ranks[0].activities.size() == plain.ranks[0].activities.size());
  CHECK(packed.ranks[0].steps[0].length() == plain.ranks[0].steps[0].length());
  // The gzip stream cut in the middle.
  std::ifstream in(d.path() / "t.json.gz", std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  const std::string whole = bytes.str();
  const auto cut = d.file("cut.json.gz", whole.substr(0, whole.size() / 2));
  const std::string m = message_of([&] { (void)validate::load_trace(cut); });
  CHECK(m == cut.string() + fmt::format(": error: damaged gzip file (unexpected end of file at byte {0} of {0}); expected a complete .gz "
                                        "file (was the copy cut short?)",
                                        whole.size() / 2));
}

TEST_CASE("a JSON syntax error in a trace says where: line and column") {
  TempDir d("syntax");
  const auto f = d.file("bad.json", "{\"traceEvents\": [\n  {\"ph\": \"X\",, \"cat\": \"kernel\"}\n]}\n");
  const std::string m = message_of([&] { (void)validate::load_trace(f); });
  // The second comma is line 2, column 14.
  CHECK(m.rfind(f.string() + ":2:14: error: invalid JSON: syntax error while parsing object key", 0) == 0);
  const auto gz = d.gz("bad.json.gz", "{\"traceEvents\": [\n  {\"ph\": \"X\",, \"cat\": \"kernel\"}\n]}\n");
  CHECK(message_of([&] { (void)validate::load_trace(gz); }).rfind(gz.string() + ":2:14: error: invalid JSON", 0) == 0);
}

TEST_CASE("a trace without GPU kernels is refused with its name") {
  TempDir d("no_kernels");
  const auto f = d.file("cpu.json", trace_text(json::array({annotation("ProfilerStep#1", false, 0, 10)})));
  CHECK(message_of([&] { (void)validate::load_trace(f); }) ==
        f.string() +
            ": error: traceEvents: no GPU kernels among 1 events (no \"cat\": \"kernel\"); expected a trace recorded with "
            "activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]");
}

TEST_CASE("--steps and --warmup keep the steps asked for, and say so when none is left") {
  TempDir d("filter");
  const auto f = d.file("t.json", trace_text(two_gpu_steps()));
  validate::TraceRequest req{{f}, {}, {}};
  req.steps.first = 4;
  CHECK(validate::load_trace(req).ranks[0].steps.size() == 1);
  req.steps = validate::StepFilter{1, {}, {}};  // warm-up: drop #3
  const auto t = validate::load_trace(req);
  REQUIRE(t.ranks[0].steps.size() == 1);
  CHECK(t.ranks[0].steps[0].number == 4);
  req.steps = validate::StepFilter{0, 7, 9};
  CHECK(message_of([&] { (void)validate::load_trace(req); }) ==
        f.string() + ": error: steps: --steps 7:9 with --warmup 0 leaves no step; the trace holds steps 3, 4");
}

TEST_CASE("without ProfilerStep, CPU optimizer steps end each step with their GPU work") {
  TempDir d("optimizer");
  // Two iterations: forward kernels, then Optimizer.step on the CPU launching one kernel each
  // (correlation 1 at CPU 450 -> GPU [500, 600]; 2 at CPU 1450 -> GPU [1500, 1550]).
  auto launch = [](int corr, double ts) {
    return json{{"ph", "X"}, {"cat", "cuda_runtime"},          {"name", "cudaLaunchKernel"}, {"pid", 100}, {"tid", 100}, {"ts", ts},
                {"dur", 5},  {"args", {{"correlation", corr}}}};
  };
  json ev = json::array({kernel("sm90_xmma_gemm", 100, 300, 7), annotation("Optimizer.step#AdamW.step", false, 440, 30), launch(1, 450),
                         kernel("multi_tensor_apply_kernel", 500, 100, 7, {{"correlation", 1}}), kernel("sm90_xmma_gemm", 900, 300, 7),
                         annotation("Optimizer.step#AdamW.step", false, 1440, 30), launch(2, 1450),
                         kernel("multi_tensor_apply_kernel", 1500, 50, 7, {{"correlation", 2}}), kernel("sm90_xmma_gemm", 1700, 100, 7)});
  const auto t = validate::load_trace(d.file("t.json", trace_text(ev)));
  REQUIRE(t.ranks[0].steps.size() == 2);
  CHECK(t.ranks[0].steps[0].start == doctest::Approx(100e-6).scale(0));  // the first GPU op
  CHECK(t.ranks[0].steps[0].end == doctest::Approx(600e-6).scale(0));
  CHECK(t.ranks[0].steps[1].end == doctest::Approx(1550e-6).scale(0));
  CHECK(t.steps_from.rfind("optimizer steps", 0) == 0);
  // The GEMM at 1700 follows the last optimizer step: in no step, and said so.
  CHECK(std::find(t.notes.begin(), t.notes.end(), "1 GPU ops after the last optimizer step are in no step") != t.notes.end());
}

TEST_CASE("a directory of per-rank traces: ranks from distributedInfo, missing ones named, stragglers found") {
  TempDir d("ranks");
  // Rank r's clock is 10000 us ahead per rank; rank 1 launches its all-gather 100 us late; the
  // all-gather ends together (at 1500 on rank 0's clock) on both.
  for (int r = 0; r < 2; ++r) {
    const double shift = 10000.0 * r;
    const double late = r == 1 ? 100 : 0;
    json ev = json::array({annotation("ProfilerStep#1", true, 1000 + shift, 1000), kernel("sm90_xmma_gemm", 1000 + shift, 200, 7),
                           kernel("ncclDevKernel_Generic", 1200 + shift + late, 300 - late, 20, all_gather_args(2))});
    (void)d.file(fmt::format("rank{}.json", r), trace_text(ev, r, 2));
  }
  const auto t = validate::load_trace(validate::TraceRequest{{d.path()}, {}, {}});
  REQUIRE(t.ranks.size() == 2);
  CHECK(t.ranks[1].rank == 1);
  const auto s = validate::stragglers(t);
  REQUIRE(s.rows.size() == 2);
  CHECK(s.matched == doctest::Approx(1.0).scale(0));
  CHECK(s.rows[1].clock_offset == doctest::Approx(10000e-6).scale(0));
  CHECK(s.rows[1].last == doctest::Approx(1.0).scale(0));       // rank 1 arrived last
  CHECK(s.rows[1].caused == doctest::Approx(100e-6).scale(0));  // 100 us after rank 0
  CHECK(s.rows[0].waited == doctest::Approx(100e-6).scale(0));
  // --rank must be one of the ranks read.
  CHECK(message_of([&] {
          (void)validate::load_trace(validate::TraceRequest{{d.path()}, {}, 4});
        }) == d.path().string() + ": error: distributedInfo.rank: --rank 4: no trace of that rank among the 2 read (ranks 0..1)");
  // A world of 4 with ranks 2 and 3 absent.
  (void)d.file("rank0.json", trace_text(json::array({kernel("gemm", 0, 1, 7), annotation("ProfilerStep#1", true, 0, 1)}), 0, 4));
  (void)d.file("rank1.json", trace_text(json::array({kernel("gemm", 0, 1, 7), annotation("ProfilerStep#1", true, 0, 1)}), 1, 4));
  CHECK(message_of([&] {
          (void)validate::load_trace(validate::TraceRequest{{d.path()}, {}, {}});
        }) == d.path().string() +
                  ": error: distributedInfo.rank: ranks 2, 3 of 4 missing; expected one trace per rank of the run in the directory");
}

TEST_CASE("several traces must each say their rank, once") {
  TempDir d("dup");
  const json ev = json::array({kernel("gemm", 0, 1, 7), annotation("ProfilerStep#1", true, 0, 1)});
  const auto a = d.file("a.json", trace_text(ev, 0, 2));
  const auto b = d.file("b.json", trace_text(ev, 0, 2));
  const auto c = d.file("c.json", trace_text(ev));
  CHECK(message_of([&] {
          (void)validate::load_trace(validate::TraceRequest{{a, b}, {}, {}});
        }) == b.string() + ": error: distributedInfo.rank: rank 0 again (also in " + a.string() + "); expected one trace per rank");
  CHECK(message_of([&] {
          (void)validate::load_trace(validate::TraceRequest{{a, c}, {}, {}});
        }).rfind(c.string() + ": error: distributedInfo.rank: missing: with several traces each must say its rank", 0) == 0);
}

TEST_CASE("a collective of a dtype whose size is not known has no size, and the trace says so") {
  TempDir d("dtype");
  json args = all_gather_args(2);
  args["dtype"] = "Float4_e2m1fn_x2";
  const json ev = json::array({annotation("ProfilerStep#1", true, 0, 100), kernel("ncclDevKernel_Generic", 0, 50, 20, args)});
  const auto t = validate::load_trace(d.file("t.json", trace_text(ev)));
  CHECK(t.collectives.at(0).bytes == 0.0);
  CHECK(validate::size_rows(t, 0, {}).empty());
  CHECK(std::find(t.notes.begin(), t.notes.end(),
                  "collectives of dtype \"Float4_e2m1fn_x2\" have no size: its element size is not known") != t.notes.end());
}

// An interrupted run leaves no partial output file and no temporary file. Each run is stopped
// with SIGINT or SIGTERM at a chosen point: the moment its k-th temporary output file appears
// (watched with inotify, so the signal lands while that file is being written), or after a
// delay spread over the whole run. Afterwards every file under its final name must be complete,
// no FILE.tmp.PID may remain, and the process must have ended by that signal.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sys/inotify.h>

#include <array>
#include <csignal>
#include <thread>

#include "system_support.hpp"

using namespace shardsim::test;
namespace fs = std::filesystem;

namespace {

// A 70B model on 16 GPUs (2 nodes): a 3 MB trace written twice, and three smaller files.
std::vector<std::string> run_args(const fs::path& out) {
  return {shardsim_binary().string(),
          "run",
          "scenarios/llama3.1-70b_1024xh100.yaml",
          "--set",
          "cluster.nodes=2",
          "--trace",
          (out / "extra_trace.json").string(),
          "--out",
          out.string()};
}

constexpr std::array kOutputs{"extra_trace.json", "summary.json", "trace.json", "memory.csv", "memory.svg"};

struct Outcome {
  ProcessResult result;
  int complete = 0;  // final files present (each checked complete)
};

Outcome check_after_interrupt(const fs::path& out, const ProcessResult& r, int sig) {
  Outcome o{r, 0};
  INFO("stderr: " << r.err);
  CHECK_FALSE(r.timed_out);
  // Killed by the signal itself (the handler re-raises it), or finished before it arrived.
  CHECK((r.signal == sig || r.exit_code == 0));
  CHECK(temp_files_in(out).empty());
  int from_out_dir = 0;
  for (const char* name : kOutputs) {
    if (!fs::exists(out / name)) continue;
    INFO(name);
    CHECK(complete_output(out / name));
    ++o.complete;
    from_out_dir += std::string_view(name) != "extra_trace.json";
  }
  // The files of --out DIR appear together or not at all.
  CHECK((from_out_dir == 0 || from_out_dir == static_cast<int>(kOutputs.size()) - 1));
  return o;
}

// Waits until `count` temporary files have been created in `dir`, then sends `sig` to `pid`.
void signal_at_temp_file(int fd, pid_t pid, int count, int sig) {
  int seen = 0;
  std::array<char, 4096> buffer{};
  while (seen < count) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n <= 0) return;
    for (ssize_t i = 0; i < n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(buffer.data() + i);  // NOLINT: inotify's ABI
      if (e->len > 0 && std::string(e->name).find(".tmp.") != std::string::npos && ++seen == count) {
        ::kill(pid, sig);
        return;
      }
      i += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
    }
  }
}

}  // namespace

TEST_CASE("a run interrupted while it writes each output file leaves complete files and no temporary file") {
  int interrupted_before_rename = 0;
  int runs = 0;
  for (const int sig : {SIGINT, SIGTERM}) {
    for (int k = 1; k <= static_cast<int>(kOutputs.size()); ++k) {
      const fs::path dir = scratch_dir(fmt::format("interrupt-{}-{}", sig, k));
      const fs::path out = dir / "out";
      fs::create_directories(out);
      const int fd = ::inotify_init1(IN_CLOEXEC);
      REQUIRE(fd >= 0);
      REQUIRE(::inotify_add_watch(fd, out.c_str(), IN_CREATE) >= 0);
      const auto started = std::chrono::steady_clock::now();
      const pid_t pid = spawn(run_args(out), source_dir(), dir / "io");
      // If the run ends without creating k temporary files, wait_for() reaps it; closing the
      // inotify descriptor then ends the watcher's read().
      std::thread watcher([&] { signal_at_temp_file(fd, pid, k, sig); });
      const ProcessResult r = wait_for(pid, dir / "io", std::chrono::seconds(300), started);
      ::close(fd);
      watcher.join();
      const Outcome o = check_after_interrupt(out, r, sig);
      ++runs;
      // The k-th file (in kOutputs' order) is absent when the signal landed before its rename.
      if (r.signal == sig && !fs::exists(out / kOutputs[static_cast<std::size_t>(k - 1)])) ++interrupted_before_rename;
      (void)o;
    }
  }
  MESSAGE(interrupted_before_rename << " of " << runs << " runs were stopped while a file was being written");
  // Without temporary files (writes straight to the final name) no run would be stopped here.
  CHECK(interrupted_before_rename > 0);
}

TEST_CASE("a run interrupted at any moment leaves complete files and no temporary file") {
  // A full run first, to spread the interruptions over its length.
  const fs::path ref = scratch_dir("interrupt-reference");
  fs::create_directories(ref / "out");
  const auto full = run_process(run_args(ref / "out"), source_dir(), ref / "io", std::chrono::seconds(300));
  REQUIRE(full.exit_code == 0);
  constexpr int kRuns = 6;
  for (int i = 0; i < kRuns; ++i) {
    const int sig = i % 2 == 0 ? SIGINT : SIGTERM;
    const fs::path dir = scratch_dir(fmt::format("interrupt-at-{}", i));
    const fs::path out = dir / "out";
    fs::create_directories(out);
    const auto started = std::chrono::steady_clock::now();
    const pid_t pid = spawn(run_args(out), source_dir(), dir / "io");
    std::this_thread::sleep_for(std::chrono::duration<double>(full.seconds * (i + 0.5) / kRuns));
    ::kill(pid, sig);
    (void)check_after_interrupt(out, wait_for(pid, dir / "io", std::chrono::seconds(300), started), sig);
  }
}

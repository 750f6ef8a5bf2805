// Outputs never destroy anything: an output over one of the run's inputs is refused before the
// run (however the path is spelt: the same name, a hard link, a symbolic link), symbolic links
// are written through, devices stay devices, a FIFO nobody reads is an error rather than a hang,
// and the files of `run --out DIR` appear together or not at all (here: the disk fills up, as
// RLIMIT_FSIZE makes it, half way through writing them).
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <csignal>
#include <fstream>

#include "system_support.hpp"

using namespace shardsim::test;
namespace fs = std::filesystem;

namespace {

// A copy of the tiny scenario whose topology is a copy too, so that nothing in the source tree
// can be harmed if a check below failed.
fs::path copy_inputs(const fs::path& dir) {
  fs::copy_file(source_dir() / "topologies/h100_sxm_8x_ib400.yaml", dir / "topo.yaml");
  fs::create_directories(dir / "gpus");  // the GPU file the topology extends
  fs::copy_file(source_dir() / "topologies/gpus/h100_sxm.yaml", dir / "gpus/h100_sxm.yaml");
  std::string text = read_all(source_dir() / "tests/data/tiny_llama.yaml");
  const std::string from = "../../topologies/h100_sxm_8x_ib400.yaml";
  text.replace(text.find(from), from.size(), "topo.yaml");
  std::ofstream(dir / "s.yaml") << text;
  return dir / "s.yaml";
}

ProcessResult run_in(const fs::path& dir, const std::vector<std::string>& args, double timeout_s = 120) {
  std::vector<std::string> argv{shardsim_binary().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, dir, dir / "io", std::chrono::duration<double>(timeout_s));
}

}  // namespace

TEST_CASE("an output that is one of the inputs is refused before the run, and the input is kept") {
  const fs::path dir = scratch_dir("outputs-inputs");
  copy_inputs(dir);
  fs::create_hard_link(dir / "s.yaml", dir / "hard.yaml");
  fs::create_symlink("topo.yaml", dir / "topo-link.yaml");
  const std::string scenario = read_all(dir / "s.yaml");
  const std::string topology = read_all(dir / "topo.yaml");
  const std::string gpu = read_all(dir / "gpus/h100_sxm.yaml");
  struct Case {
    std::vector<std::string> args;
    std::string err;
  };
  const std::vector<Case> cases{
      {{"run", "s.yaml", "--trace", "s.yaml"},
       "shardsim run: --trace s.yaml: is the scenario (s.yaml); expected an output file that is not one of the inputs\n"},
      {{"run", "s.yaml", "--trace", "./topo.yaml"},
       "shardsim run: --trace ./topo.yaml: is the topology (topo.yaml); expected an output file that is not one of the inputs\n"},
      {{"run", "s.yaml", "--trace", "gpus/h100_sxm.yaml"},  // a file the topology extends
       "shardsim run: --trace gpus/h100_sxm.yaml: is the topology (gpus/h100_sxm.yaml); expected an output file that is not one "
       "of the inputs\n"},
      {{"run", "s.yaml", "--trace", "topo-link.yaml"},
       "shardsim run: --trace topo-link.yaml: is the topology (topo.yaml); expected an output file that is not one of the inputs\n"},
      {{"export", "s.yaml", "--out", "hard.yaml"},
       "shardsim export: --out hard.yaml: is the scenario (s.yaml); expected an output file that is not one of the inputs\n"},
      {{"run", "s.yaml", "--out", "s.yaml"}, "shardsim run: --out s.yaml: is a file; expected a directory (created if absent)\n"},
      {{"calibrate", "s.yaml", "--out", "s.yaml"},
       "shardsim calibrate: --out s.yaml: is a measurement file (s.yaml); expected an output file that is not one of the inputs\n"},
  };
  for (const auto& c : cases) {
    INFO(fmt::format("{}", fmt::join(c.args, " ")));
    const ProcessResult r = run_in(dir, c.args);
    CHECK(r.exit_code == 2);
    CHECK(r.err == c.err);
    CHECK(r.out.empty());  // refused before the run: no summary printed
  }
  CHECK(read_all(dir / "s.yaml") == scenario);
  CHECK(read_all(dir / "topo.yaml") == topology);
  CHECK(read_all(dir / "gpus/h100_sxm.yaml") == gpu);
  CHECK(fs::is_symlink(dir / "topo-link.yaml"));
}

TEST_CASE("outputs go through symbolic links, into devices, and not into FIFOs nobody reads") {
  const fs::path dir = scratch_dir("outputs-links");
  copy_inputs(dir);
  std::ofstream(dir / "real.json") << "old";
  fs::create_symlink("real.json", dir / "link.json");
  ProcessResult r = run_in(dir, {"run", "s.yaml", "--trace", "link.json"});
  CHECK(r.exit_code == 0);
  CHECK(fs::is_symlink(dir / "link.json"));
  CHECK(complete_output(dir / "real.json"));

  fs::create_symlink("loop-b", dir / "loop-a");
  fs::create_symlink("loop-a", dir / "loop-b");
  r = run_in(dir, {"run", "s.yaml", "--trace", "loop-a"});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "shardsim run: --trace loop-a: cannot write through the symbolic link: Too many levels of symbolic links\n");

  // /dev/null as an output stays /dev/null (written to, not replaced), when this user may write it.
  if (::access("/dev/null", W_OK) == 0) {
    r = run_in(dir, {"run", "s.yaml", "--trace", "/dev/null"});
    CHECK(r.exit_code == 0);
    struct stat st {};
    REQUIRE(::stat("/dev/null", &st) == 0);
    CHECK(S_ISCHR(st.st_mode));
  }

  REQUIRE(::mkfifo((dir / "fifo").c_str(), 0644) == 0);
  r = run_in(dir, {"run", "s.yaml", "--trace", "fifo"}, 60);
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code == 1);
  CHECK(r.err == "shardsim: error: fifo: cannot write: no process is reading from it\n");
}

TEST_CASE("run --out DIR over an earlier run: a full disk leaves the earlier outputs whole") {
  const fs::path dir = scratch_dir("outputs-disk-full");
  copy_inputs(dir);
  const std::vector<std::string> names{"summary.json", "trace.json", "timeline.json", "memory.csv", "memory.svg"};
  ProcessResult r = run_in(dir, {"run", "s.yaml", "--out", "out"});
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> before;
  for (const auto& n : names) before.push_back(read_all(dir / "out" / n));
  // A second run with other settings, whose files may not grow past 8 KiB: the summary fits, the
  // trace does not. The write of the trace fails (SIGXFSZ ignored: EFBIG, the disk-full path) or the
  // process is killed by SIGXFSZ (its default action): either way no new file may replace an old one.
  for (const char* on_limit : {"trap '' XFSZ", "true"}) {
    INFO(on_limit);
    const std::string cmd =
        fmt::format("{}; ulimit -f 8; exec {} run s.yaml --set training.micro_batch=2 --out out", on_limit, shardsim_binary().string());
    r = run_process({"/bin/bash", "-c", cmd}, dir, dir / "io", std::chrono::seconds(120));
    CHECK(r.exit_code != 0);
    for (std::size_t i = 0; i < names.size(); ++i) {
      INFO(names[i]);
      CHECK(read_all(dir / "out" / names[i]) == before[i]);
    }
    CHECK(temp_files_in(dir / "out").empty());
  }
}

TEST_CASE("a scenario name with control characters gives well-formed SVG") {
  // XML 1.0 forbids control characters other than tab, newline and carriage return, even escaped.
  const fs::path dir = scratch_dir("outputs-control-name");
  copy_inputs(dir);
  const ProcessResult r = run_in(dir, {"run", "s.yaml", "--set", R"(name="bell\x07 escape\x1b[31m <&>")", "--out", "out"});
  REQUIRE(r.exit_code == 0);
  const std::string svg = read_all(dir / "out" / "memory.svg");
  for (const char c : svg) {
    const auto u = static_cast<unsigned char>(c);
    CHECK_FALSE(((u < 0x20 && c != '\t' && c != '\n' && c != '\r') || u == 0x7F));
  }
  CHECK(svg.find("bell\xEF\xBF\xBD escape\xEF\xBF\xBD[31m &lt;&amp;&gt;") != std::string::npos);
}

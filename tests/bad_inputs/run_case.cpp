// Runs one case of the bad-input corpus: shardsim_bad_input_case SHARDSIM CORPUS_DIR CASE.expect SCRATCH
//
// A case file (NAME.expect, next to the input it describes) says which command to run, from the
// corpus directory, and exactly what must come out:
//
//   # why the input is wrong (comment lines start with #)
//   command: check scenario/zero_seq_len.yaml      # shardsim's arguments; {out} is a fresh scratch folder
//   exit: 2                                        # optional, default 2
//   stderr: scenario/zero_seq_len.yaml:7:12: error: training.seq_len: ...   # one line each, in order
//   stdout: ...                                    # optional; without it stdout must be empty
//   timeout: 30                                    # optional, seconds; past it the case fails
//
// The case passes when the exit code, stderr and stdout match exactly, within the timeout, and no
// temporary output file (*.tmp.*) is left in the corpus or in {out}. Any command works, so sweep
// files can join the corpus with `command: sweep ... --out {out}`.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "process_support.hpp"

namespace fs = std::filesystem;

namespace {

struct Case {
  std::vector<std::string> args;
  int exit = 2;
  std::string err;
  std::string out;
  double timeout_s = 30;
};

std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

Case parse(const fs::path& file, const fs::path& out_dir) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  Case c;
  std::string line;
  bool has_command = false;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) throw std::runtime_error(file.string() + ": expected KEY: VALUE, got: " + line);
    const std::string key = line.substr(0, colon);
    std::string value = line.substr(colon + 1);
    if (!value.empty() && value[0] == ' ') value.erase(0, 1);
    if (key == "command") {
      for (auto& w : split_words(value)) {
        if (auto p = w.find("{out}"); p != std::string::npos) w.replace(p, 5, out_dir.string());
        c.args.push_back(w);
      }
      has_command = true;
    } else if (key == "exit") {
      c.exit = std::stoi(value);
    } else if (key == "stderr") {
      c.err += value + "\n";
    } else if (key == "stdout") {
      c.out += value + "\n";
    } else if (key == "timeout") {
      c.timeout_s = std::stod(value);
    } else {
      throw std::runtime_error(file.string() + ": unknown key " + key);
    }
  }
  if (!has_command) throw std::runtime_error(file.string() + ": no command");
  return c;
}

std::vector<fs::path> temp_files(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().filename().string().find(".tmp.") != std::string::npos) out.push_back(e.path());
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s SHARDSIM CORPUS_DIR CASE.expect SCRATCH\n", argv[0]);
    return 2;
  }
  const fs::path shardsim = argv[1];
  const fs::path corpus = argv[2];
  const fs::path expect = argv[3];
  const fs::path scratch = argv[4];
  fs::remove_all(scratch);
  const fs::path out_dir = scratch / "out";
  fs::create_directories(out_dir);
  const Case c = parse(expect, out_dir);

  std::vector<std::string> argv_full{shardsim.string()};
  argv_full.insert(argv_full.end(), c.args.begin(), c.args.end());
  const auto r = shardsim::test::run_process(argv_full, corpus, scratch / "io", std::chrono::duration<double>(c.timeout_s));

  bool ok = true;
  auto report = [&](const std::string& what, const std::string& expected, const std::string& got) {
    std::printf("%s differs\n  expected: %s\n  got:      %s\n", what.c_str(), expected.c_str(), got.c_str());
    ok = false;
  };
  std::string command;
  for (const auto& a : c.args) command += " " + a;
  std::printf("shardsim%s  (from %s)\n", command.c_str(), corpus.c_str());
  if (r.timed_out) {
    std::printf("did not finish within %.0f s (a hang?)\n", c.timeout_s);
    ok = false;
  } else if (r.signal != 0) {
    std::printf("killed by signal %d (a crash?)\nstderr:\n%s", r.signal, r.err.c_str());
    ok = false;
  } else if (r.exit_code != c.exit) {
    report("exit code", std::to_string(c.exit), std::to_string(r.exit_code));
  }
  if (r.err != c.err) report("stderr", c.err, r.err);
  if (r.out != c.out) report("stdout", c.out, r.out);
  for (const auto& dir : {corpus, out_dir}) {
    for (const auto& t : temp_files(dir)) {
      std::printf("temporary file left behind: %s\n", t.c_str());
      ok = false;
    }
  }
  if (ok) std::printf("ok: exit %d in %.2f s\n%s", r.exit_code, r.seconds, r.err.c_str());
  return ok ? 0 : 1;
}

// `cmake --install` (make install) puts the programs and the topology library under a prefix, and
// a scenario outside the source tree can name a shipped topology: the installed copy is the one
// used (its GPU model is changed here to tell it from the source tree's).
#include <doctest/doctest.h>

#include <fstream>

#include "system_support.hpp"

using namespace shardsim::test;
namespace fs = std::filesystem;

TEST_CASE("an installed shardsim runs a scenario outside the source tree that names a shipped topology") {
  const fs::path dir = scratch_dir("install");
  const fs::path prefix = dir / "prefix";
  const fs::path build = shardsim_binary().parent_path().parent_path();
  const ProcessResult inst = run_process({"/usr/bin/env", "cmake", "--install", build.string(), "--prefix", prefix.string()}, dir,
                                         dir / "io-install", std::chrono::seconds(120));
  REQUIRE_MESSAGE(inst.exit_code == 0, inst.err);
  for (const char* p : {"bin/shardsim", "bin/shardsim-replay", "bin/shardsim-bench", "share/shardsim/topologies/h100_sxm_8x_ib400.yaml",
                        "share/shardsim/scenarios/llama3.1-8b_8xh100.yaml"}) {
    INFO(p);
    CHECK(fs::exists(prefix / p));
  }
  // The installed topology, told apart from the source tree's by its GPU model (in the GPU file
  // it extends, installed beside it).
  const fs::path topo = prefix / "share/shardsim/topologies/gpus/h100_sxm.yaml";
  std::string text = read_all(topo);
  const auto at = text.find("model: H100-SXM");
  REQUIRE(at != std::string::npos);
  text.replace(at, std::string("model: H100-SXM").size(), "model: INSTALLED-H100");
  std::ofstream(topo) << text;

  const fs::path work = dir / "elsewhere";
  fs::create_directories(work);
  std::ofstream(work / "s.yaml") << "cluster: {topology: h100_sxm_8x_ib400, nodes: 1}\n"
                                    "model: {preset: llama3.1-8b}\n"
                                    "training: {seq_len: 2048}\n";
  const ProcessResult run =
      run_process({(prefix / "bin/shardsim").string(), "run", "s.yaml"}, work, dir / "io-run", std::chrono::seconds(120));
  CHECK(run.exit_code == 0);
  CHECK(run.out.find("(1 node x 8 INSTALLED-H100)") != std::string::npos);
  // An installed example scenario runs as it is.
  const ProcessResult example =
      run_process({(prefix / "bin/shardsim").string(), "check", (prefix / "share/shardsim/scenarios/llama3.1-8b_8xh100.yaml").string()},
                  work, dir / "io-example", std::chrono::seconds(120));
  CHECK(example.exit_code == 0);
}

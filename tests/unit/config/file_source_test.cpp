#include "config/file_source.hpp"

#include <doctest/doctest.h>

#include "config/scenario.hpp"
#include "config/yaml_load.hpp"
#include "test_support.hpp"

using namespace shardsim;

TEST_CASE("in-memory files are found by their normalised path") {
  config::MemoryFiles files;
  files.add("dir/../topo.yaml", "name: x\n");
  std::string error;
  CHECK(files.read("./topo.yaml", 100, error) == std::optional<std::string>("name: x\n"));
  CHECK_FALSE(files.read("other.yaml", 100, error));
  CHECK(error == "no such file");
}

TEST_CASE("a missing file is reported at the key that names it, or as itself on the command line") {
  const config::MemoryFiles none;
  CHECK_THROWS_WITH_AS(
      (void)config::read_config_file(none, "topologies/x.yaml", config::FileRef{Location{"s.yaml", 3, 13}, "cluster.topology"}),
      "s.yaml:3:13: error: cluster.topology: no such file: topologies/x.yaml", ConfigError);
  CHECK_THROWS_WITH_AS((void)config::read_config_file(none, "x.yaml", std::nullopt), "x.yaml: error: no such file", ConfigError);
  CHECK_THROWS_WITH_AS((void)config::read_config_file(config::DiskFiles{}, test::source_dir() / "scenarios", std::nullopt),
                       ((test::source_dir() / "scenarios").string() + ": error: cannot read: is a directory").c_str(), ConfigError);
}

TEST_CASE("a file over the size limit is rejected without being read whole") {
  config::MemoryFiles files;
  files.add("big.yaml", std::string(config::kMaxConfigFileBytes + 1, '#'));
  std::string error;
  CHECK(files.read("big.yaml", 10, error)->size() == 11);  // limit + 1: enough to tell
  CHECK_THROWS_WITH_AS((void)config::read_config_file(files, "big.yaml", std::nullopt),
                       "big.yaml:1:1: error: file is larger than 4 MiB; expected a configuration file of at most 4194304 bytes",
                       ConfigError);
  // /dev/zero never ends: the limit stops the read.
  CHECK_THROWS_AS((void)config::read_config_file(config::DiskFiles{}, "/dev/zero", std::nullopt), ConfigError);
}

TEST_CASE("a scenario loads the same from memory as from disk") {
  const auto dir = test::source_dir();
  const auto from_disk = config::load_scenario(dir / "scenarios/llama3.1-8b_8xh100.yaml");
  config::MemoryFiles files;
  files.add("s/scenario.yaml", test::read_text(dir / "scenarios/llama3.1-8b_8xh100.yaml"));
  files.add("topologies/h100_96gb_500w_8x_rdma400.yaml", test::read_text(dir / "topologies/h100_96gb_500w_8x_rdma400.yaml"));
  const auto from_memory = config::load_scenario("s/scenario.yaml", {}, files);
  CHECK(from_memory.name == from_disk.name);
  CHECK(from_memory.world_size() == from_disk.world_size());
  CHECK(from_memory.cluster.topology.gpu.memory == from_disk.cluster.topology.gpu.memory);
  CHECK(from_memory.cluster.topology.node.nic.bandwidth == from_disk.cluster.topology.node.nic.bandwidth);
  CHECK(from_memory.training.seq_len == from_disk.training.seq_len);
  CHECK(from_memory.fsdp.mixed_precision.param == from_disk.fsdp.mixed_precision.param);
}

#include "replay/rank_env.hpp"

#include <doctest/doctest.h>

#include <map>
#include <string>

#include "core/error.hpp"

using namespace shardsim;

namespace {

replay::RankEnv from(const std::map<std::string, std::string>& vars) {
  return replay::rank_env([&](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace

TEST_CASE("torchrun's variables name the rank, its GPU and the master") {
  const auto e = from({{"RANK", "5"},
                       {"WORLD_SIZE", "16"},
                       {"LOCAL_RANK", "1"},
                       {"LOCAL_WORLD_SIZE", "4"},
                       {"MASTER_ADDR", "node0"},
                       {"MASTER_PORT", "29500"}});
  CHECK(e.launcher == replay::Launcher::torchrun);
  CHECK(e.rank == 5);
  CHECK(e.world == 16);
  CHECK(e.local_rank == 1);
  CHECK(e.local_world == 4);
  CHECK(e.master_addr == "node0");
  CHECK(e.master_port == 29500);
}

TEST_CASE("mpirun's variables, and a lone process") {
  const auto e = from({{"OMPI_COMM_WORLD_RANK", "1"},
                       {"OMPI_COMM_WORLD_SIZE", "2"},
                       {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                       {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  CHECK(e.launcher == replay::Launcher::mpirun);
  CHECK(e.rank == 1);
  CHECK(e.local_world == 2);
  const auto alone = from({});
  CHECK(alone.launcher == replay::Launcher::none);
  CHECK(alone.world == 1);
}

TEST_CASE("bad launcher variables name the variable") {
  try {
    (void)from({{"RANK", "two"}, {"WORLD_SIZE", "4"}});
    FAIL("expected an error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) == "<environment>: error: RANK: expected an integer 0..1048576; got \"two\"");
  }
  CHECK_THROWS_AS((void)from({{"RANK", "4"}, {"WORLD_SIZE", "4"}}), ConfigError);
  CHECK_THROWS_AS((void)from({{"RANK", "0"}}), ConfigError);
}

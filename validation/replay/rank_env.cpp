#include "replay/rank_env.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstring>

#include "core/error.hpp"

namespace shardsim::replay {
namespace {

std::optional<int> number(const GetEnv& getenv, const char* name, int min, int max) {
  const char* v = getenv(name);
  if (v == nullptr) return std::nullopt;
  int out = 0;
  const char* end = v + std::strlen(v);
  const auto [p, ec] = std::from_chars(v, end, out);
  if (ec != std::errc{} || p != end || out < min || out > max) {
    throw ConfigError(Location{"<environment>", 0, 0}, name, fmt::format("expected an integer {}..{}; got \"{}\"", min, max, v));
  }
  return out;
}

}  // namespace

RankEnv rank_env(const GetEnv& getenv) {
  RankEnv e;
  constexpr int kMax = 1 << 20;
  if (getenv("RANK") != nullptr || getenv("WORLD_SIZE") != nullptr) {
    e.launcher = Launcher::torchrun;
  } else if (getenv("OMPI_COMM_WORLD_RANK") != nullptr) {
    e.launcher = Launcher::mpirun;
  }
  if (e.launcher == Launcher::torchrun) {
    const auto rank = number(getenv, "RANK", 0, kMax);
    const auto world = number(getenv, "WORLD_SIZE", 1, kMax);
    if (!rank || !world)
      throw ConfigError(Location{"<environment>", 0, 0}, rank ? "WORLD_SIZE" : "RANK",
                        "missing; torchrun sets RANK and WORLD_SIZE together");
    e.rank = *rank;
    e.world = *world;
    e.local_rank = number(getenv, "LOCAL_RANK", 0, kMax).value_or(e.rank);
    e.local_world = number(getenv, "LOCAL_WORLD_SIZE", 1, kMax).value_or(e.world);
    if (const char* a = getenv("MASTER_ADDR")) e.master_addr = a;
    e.master_port = number(getenv, "MASTER_PORT", 1, 65535).value_or(0);
  } else if (e.launcher == Launcher::mpirun) {
    e.rank = *number(getenv, "OMPI_COMM_WORLD_RANK", 0, kMax);
    e.world = number(getenv, "OMPI_COMM_WORLD_SIZE", 1, kMax).value_or(1);
    e.local_rank = number(getenv, "OMPI_COMM_WORLD_LOCAL_RANK", 0, kMax).value_or(e.rank);
    e.local_world = number(getenv, "OMPI_COMM_WORLD_LOCAL_SIZE", 1, kMax).value_or(e.world);
  }
  if (e.rank >= e.world) {
    throw ConfigError(Location{"<environment>", 0, 0}, e.launcher == Launcher::mpirun ? "OMPI_COMM_WORLD_RANK" : "RANK",
                      fmt::format("rank {} is not below the world size {}", e.rank, e.world));
  }
  if (e.local_rank >= e.local_world) {
    throw ConfigError(Location{"<environment>", 0, 0}, "LOCAL_RANK",
                      fmt::format("local rank {} is not below the local world size {}", e.local_rank, e.local_world));
  }
  if (const char* id = getenv("SHARDSIM_RUN_ID")) {
    e.run_id = id;
  } else if (const char* te = getenv("TORCHELASTIC_RUN_ID")) {
    e.run_id = te;
  }
  return e;
}

}  // namespace shardsim::replay

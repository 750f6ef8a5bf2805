#include "tools/ranks.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "core/error.hpp"
#include "cpu/local_comm.hpp"
#include "replay/launch.hpp"
#ifdef SHARDSIM_HAVE_MPI
#include "cpu/mpi_comm.hpp"
#endif
#ifdef SHARDSIM_HAVE_CUDA
#include "cuda/cuda_backend.hpp"
#endif

namespace shardsim::replay {
namespace {

std::unique_ptr<Backend> make_backend(const BackendChoice& c, const RankEnv& env) {
  if (c.name == "cpu") {
    if (env.world == 1) return std::make_unique<CpuBackend>(std::make_unique<LocalComm>(), c.scale);
#ifdef SHARDSIM_HAVE_MPI
    if (!MpiComm::launched_by_mpirun()) {
      throw ConfigError(Location{"<environment>", 0, 0}, "RANK",
                        "the cpu backend's ranks talk through MPI: start them with mpirun -n N, or let the tool do it (no RANK variables)");
    }
    return std::make_unique<CpuBackend>(std::make_unique<MpiComm>(), c.scale, env.local_world == env.world);
#else
    throw RuntimeError("this build has no MPI: the cpu backend runs one rank only (install libopenmpi-dev and rebuild)");
#endif
  }
#ifdef SHARDSIM_HAVE_CUDA
  return make_cuda_backend(CudaOptions{env, RendezvousSpec{c.rendezvous_dir, !env.master_addr.empty(), c.timeout}});
#else
  throw RuntimeError("this build has no CUDA/NCCL backend: build with `cmake --preset cuda` on a machine with CUDA and NCCL");
#endif
}

// One rank: the backend, the watchdog, the body; errors become messages and exit codes.
int run_rank(const std::string& tool, const BackendChoice& choice, const RankBody& body) {
  RankEnv env;
  std::atomic<Backend*> live{nullptr};
  std::atomic<int> rank{-1};
  auto report = [&](const std::string& message) {
    const int r = rank.load();
    std::cerr << (r >= 0 ? fmt::format("{}: rank {}: {}\n", tool, r, message) : fmt::format("{}: {}\n", tool, message));
    std::cerr.flush();
  };
  Watchdog watchdog(choice.timeout, [&](const std::string& message) {
    report(fmt::format("error: {}; aborting", message));
    if (Backend* b = live.load()) b->abort();
    std::fflush(nullptr);
    ::_exit(1);
  });
  std::unique_ptr<Backend> backend;
  try {
    env = rank_env([](const char* n) { return std::getenv(n); });
    rank = env.rank;
    watchdog.kick(fmt::format("the {} backend to start", choice.name));
    backend = make_backend(choice, env);
    live = backend.get();
    return body(*backend, watchdog, env);
  } catch (const ConfigError& e) {
    report(e.what());  // bad input: every rank finds the same, none waits for another
    return 2;
  } catch (const std::exception& e) {
    report(fmt::format("error: {}", e.what()));
    if (backend && env.world > 1) backend->abort();
    return 1;
  }
}

}  // namespace

std::string available_backends() {
  std::string out;
#ifdef SHARDSIM_HAVE_MPI
  out = "cpu (MPI)";
#else
  out = "cpu (one rank)";
#endif
#ifdef SHARDSIM_HAVE_CUDA
  out += ", nccl";
#endif
  return out;
}

int run_on_ranks(const std::string& tool, const BackendChoice& choice, int world, std::span<const std::string> argv, const RankBody& body) {
  const RankEnv env = rank_env([](const char* n) { return std::getenv(n); });
  if (env.launcher != Launcher::none || world == 1) return run_rank(tool, choice, body);
  if (choice.name == "cpu") {
#ifndef SHARDSIM_HAVE_MPI
    throw RuntimeError(
        fmt::format("this build has no MPI: the cpu backend runs one rank only, not {} (install libopenmpi-dev and rebuild)", world));
#endif
    exec_under_mpirun(world, argv);
  }
  // nccl: one child per GPU, forked before this process touches CUDA.
  return run_ranks(world, 5.0, [&] { return run_rank(tool, choice, body); });
}

}  // namespace shardsim::replay

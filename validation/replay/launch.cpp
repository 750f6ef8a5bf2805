#include "replay/launch.hpp"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "core/error.hpp"

namespace shardsim::replay {

int run_ranks(int world, double grace, const std::function<int()>& body) {
  const std::string run_id = fmt::format("{}-{}", ::getpid(), std::chrono::steady_clock::now().time_since_epoch().count());
  std::fflush(nullptr);  // a child must not print what the parent buffered
  std::vector<pid_t> children;
  for (int r = 0; r < world; ++r) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      for (pid_t c : children) ::kill(c, SIGKILL);
      throw RuntimeError(fmt::format("cannot start rank {}: fork: {}", r, std::strerror(errno)));
    }
    if (pid == 0) {
      ::setenv("RANK", std::to_string(r).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      ::setenv("LOCAL_WORLD_SIZE", std::to_string(world).c_str(), 1);
      ::setenv("SHARDSIM_RUN_ID", run_id.c_str(), 1);
      int code = 1;
      try {
        code = body();
      } catch (...) {
        code = 1;  // body reports its own errors; this only keeps an exception from escaping fork
      }
      std::fflush(nullptr);
      ::_exit(code);
    }
    children.push_back(pid);
  }
  int result = 0;
  std::size_t left = children.size();
  std::chrono::steady_clock::time_point kill_at{};
  bool terminating = false;
  while (left > 0) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, terminating ? WNOHANG : 0);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) break;
    if (pid == 0) {  // terminating, none exited yet
      if (std::chrono::steady_clock::now() >= kill_at) {
        for (pid_t c : children) {
          if (c > 0) ::kill(c, SIGKILL);
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    for (pid_t& c : children) {
      if (c == pid) c = -1;
    }
    --left;
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    if (code != 0 && result == 0) {
      result = code;
      terminating = true;
      kill_at = std::chrono::steady_clock::now() +
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(grace));
      for (pid_t c : children) {
        if (c > 0) ::kill(c, SIGTERM);
      }
    }
  }
  return result;
}

void exec_under_mpirun(int world, std::span<const std::string> args) {
  std::vector<std::string> argv{"mpirun", "-n", std::to_string(world), "--oversubscribe", "--bind-to", "none"};
  if (::geteuid() == 0) argv.emplace_back("--allow-run-as-root");
  char self[4096] = {};
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  argv.emplace_back(n > 0 ? std::string(self, static_cast<std::size_t>(n)) : std::string("shardsim-replay"));
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> raw;
  for (auto& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  // Ranks spin in MPI's progress loop while they wait; yielding leaves the cores to the kernels.
  ::setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
  std::fflush(nullptr);
  ::execvp("mpirun", raw.data());
  throw RuntimeError(fmt::format("cannot start mpirun: {} (install openmpi-bin, or launch the ranks yourself)", std::strerror(errno)));
}

}  // namespace shardsim::replay

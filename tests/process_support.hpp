// Runs a program (shardsim) as a child process, as a user would: arguments, working directory,
// captured stdout and stderr, exit code or signal, and a timeout after which the child is killed,
// so that a test of "never hangs" cannot hang itself. Used by the bad-input corpus runner and
// the system tests.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace shardsim::test {

struct ProcessResult {
  int exit_code = -1;  // when the child exited
  int signal = 0;      // when a signal ended it
  bool timed_out = false;
  std::string out;
  std::string err;
  double seconds = 0;
};

inline std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Starts `argv` in `cwd` with stdout and stderr going to files in `scratch`; returns its pid.
inline pid_t spawn(const std::vector<std::string>& argv, const std::filesystem::path& cwd, const std::filesystem::path& scratch) {
  std::filesystem::create_directories(scratch);
  const std::string out = (scratch / "stdout").string();
  const std::string err = (scratch / "stderr").string();
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));  // NOLINT: execv's signature
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0 || ::dup2(o, 1) < 0 || ::dup2(e, 2) < 0 || ::chdir(cwd.c_str()) != 0) _exit(127);
    ::execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

// Waits for `pid` at most `timeout`; kills it (SIGKILL) past that.
inline ProcessResult wait_for(pid_t pid, const std::filesystem::path& scratch, std::chrono::duration<double> timeout,
                              std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now()) {
  ProcessResult r;
  int status = 0;
  while (true) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() - started > timeout) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.out = read_all(scratch / "stdout");
  r.err = read_all(scratch / "stderr");
  return r;
}

inline ProcessResult run_process(const std::vector<std::string>& argv, const std::filesystem::path& cwd,
                                 const std::filesystem::path& scratch, std::chrono::duration<double> timeout) {
  const auto started = std::chrono::steady_clock::now();
  return wait_for(spawn(argv, cwd, scratch), scratch, timeout, started);
}

}  // namespace shardsim::test

#include "sweep/worker_pool.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "core/error.hpp"

namespace shardsim::sweep {
namespace {

void write_all(int fd, std::string_view s) {
  while (!s.empty()) {
    const ssize_t n = ::write(fd, s.data(), s.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the parent is gone; nothing to report to
    s.remove_prefix(static_cast<std::size_t>(n));
  }
}

[[noreturn]] void child_main(const PointFunction& fn, const Point& p, int fd, pid_t parent) {
  // Die with the sweep, even when it is killed with SIGKILL.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(1);
  // Simulations may print; the parent's terminal shows the progress bar instead.
  const int devnull = ::open("/dev/null", O_WRONLY);
  if (devnull >= 0) ::dup2(devnull, STDOUT_FILENO);
  write_all(fd, run_point_reply(fn, p));
  ::_exit(0);  // no atexit handlers or stdio flushes of the parent's state
}

}  // namespace

std::string run_point_reply(const PointFunction& fn, const Point& p) {
  nlohmann::json reply;
  try {
    nlohmann::json metrics = fn(p);
    if (!metrics.is_object()) throw std::logic_error("the point function returned " + std::string(metrics.type_name()));
    reply["metrics"] = std::move(metrics);
  } catch (const ConfigError& e) {
    reply = {{"error", e.what()}};
  } catch (const RuntimeError& e) {
    reply = {{"error", fmt::format("error: {}", e.what())}};
  } catch (const std::exception& e) {
    reply = {{"error", fmt::format("internal error: {}", e.what())}};
  }
  return reply.dump();
}

int available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

WorkerPool::WorkerPool(int jobs, PointFunction fn) : jobs_(std::max(1, jobs)), fn_(std::move(fn)) {}

WorkerPool::~WorkerPool() {
  for (auto& w : workers_) {
    ::kill(w.pid, SIGKILL);
    ::close(w.fd);
    int status = 0;
    ::waitpid(w.pid, &status, 0);
  }
}

void WorkerPool::submit(const Point& p) {
  std::array<int, 2> fds{};
  if (::pipe(fds.data()) != 0) throw RuntimeError(fmt::format("cannot create a pipe for a sweep worker: {}", std::strerror(errno)));
  std::fflush(nullptr);  // or a child could write the parent's buffered output again
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw RuntimeError(fmt::format("cannot fork a sweep worker: {}", std::strerror(errno)));
  }
  if (pid == 0) {
    ::close(fds[0]);
    for (const auto& w : workers_) ::close(w.fd);  // siblings' pipes are not this child's business
    child_main(fn_, p, fds[1], parent);
  }
  ::close(fds[1]);
  ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  workers_.push_back(Worker{pid, fds[0], p, {}, false});
}

std::vector<PointResult> WorkerPool::wait() {
  while (true) {
    auto done = wait_for(std::chrono::milliseconds(-1));
    if (!done.empty() || workers_.empty()) return done;
  }
}

std::vector<PointResult> WorkerPool::wait_for(std::chrono::milliseconds timeout, int also_fd) {
  std::vector<pollfd> fds;
  for (const auto& w : workers_) fds.push_back(pollfd{w.fd, POLLIN, 0});
  if (also_fd >= 0) fds.push_back(pollfd{also_fd, POLLIN, 0});
  if (fds.empty()) return {};
  const int n = ::poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
  if (n < 0 && errno != EINTR) throw RuntimeError(fmt::format("waiting for sweep workers: {}", std::strerror(errno)));
  std::vector<PointResult> done;
  if (n <= 0) return done;
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    if (fds[i].revents == 0) continue;
    Worker& w = workers_[i];
    std::array<char, 65536> buf{};
    while (true) {
      const ssize_t got = ::read(w.fd, buf.data(), buf.size());
      if (got > 0) {
        w.received.append(buf.data(), static_cast<std::size_t>(got));
        continue;
      }
      if (got < 0 && errno == EINTR) continue;
      if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) w.eof = true;
      break;
    }
  }
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (it->eof) {
      done.push_back(reap(*it));
      it = workers_.erase(it);
    } else {
      ++it;
    }
  }
  return done;
}

PointResult WorkerPool::reap(Worker& w) {
  ::close(w.fd);
  int status = 0;
  while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
  }
  PointResult r;
  r.index = w.point.index;
  r.assignments = w.point.assignments;
  if (WIFSIGNALED(status)) {
    r.error = fmt::format("error: the worker simulating this point was killed by signal {} ({})", WTERMSIG(status),
                          ::strsignal(WTERMSIG(status)));
    return r;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    r.error = fmt::format("error: the worker simulating this point exited with status {}", WEXITSTATUS(status));
    return r;
  }
  const auto reply = nlohmann::json::parse(w.received, nullptr, false);
  if (reply.is_object() && reply.contains("metrics") && reply["metrics"].is_object()) {
    r.metrics = reply["metrics"];
  } else if (reply.is_object() && reply.contains("error") && reply["error"].is_string()) {
    r.error = reply["error"].get<std::string>();
  } else {
    r.error = "error: the worker simulating this point sent no readable result";
  }
  return r;
}

}  // namespace shardsim::sweep

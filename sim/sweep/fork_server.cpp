#include "sweep/fork_server.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "core/error.hpp"
#include "sweep/worker_pool.hpp"

namespace shardsim::sweep {
namespace {

void write_all(int fd, std::string_view s) {
  while (!s.empty()) {
    const ssize_t n = ::write(fd, s.data(), s.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw RuntimeError(fmt::format("sweep worker server pipe: {}", std::strerror(errno)));
    s.remove_prefix(static_cast<std::size_t>(n));
  }
}

// Reads what is available without blocking; false at end of file.
bool read_available(int fd, std::string& into) {
  std::array<char, 65536> buf{};
  while (true) {
    const ssize_t got = ::read(fd, buf.data(), buf.size());
    if (got > 0) {
      into.append(buf.data(), static_cast<std::size_t>(got));
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    return got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

[[noreturn]] void serve(const std::vector<Point>& points, int jobs, const PointFunction& fn, int requests, int replies) {
  int rc = 0;
  try {
    WorkerPool pool(jobs, fn);
    std::string pending;
    bool open = true;
    while (open || pool.running() > 0) {
      for (const auto& r : pool.wait_for(std::chrono::milliseconds(-1), open ? requests : -1)) write_all(replies, jsonl_line(r) + "\n");
      if (!open) continue;
      open = read_available(requests, pending);
      for (auto nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n')) {
        const std::size_t index = std::stoul(pending.substr(0, nl));
        pending.erase(0, nl + 1);
        if (index >= points.size()) throw RuntimeError(fmt::format("point {} requested of {}", index, points.size()));
        pool.submit(points[index]);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardsim: sweep worker server: %s\n", e.what());
    rc = 1;
  }
  std::fflush(stderr);
  ::_exit(rc);
}

}  // namespace

ForkServer::ForkServer(const std::vector<Point>& points, int jobs, const PointFunction& fn) : jobs_(std::max(1, jobs)) {
  std::array<int, 2> down{};
  std::array<int, 2> up{};
  if (::pipe(down.data()) != 0) throw RuntimeError(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  if (::pipe(up.data()) != 0) {
    const int e = errno;
    ::close(down[0]);
    ::close(down[1]);
    throw RuntimeError(fmt::format("cannot create a pipe: {}", std::strerror(e)));
  }
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    const int e = errno;
    for (int fd : {down[0], down[1], up[0], up[1]}) ::close(fd);
    throw RuntimeError(fmt::format("cannot fork the sweep worker server: {}", std::strerror(e)));
  }
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    ::close(down[1]);
    ::close(up[0]);
    ::fcntl(down[0], F_SETFL, ::fcntl(down[0], F_GETFL) | O_NONBLOCK);
    serve(points, jobs_, fn, down[0], up[1]);
  }
  ::close(down[0]);
  ::close(up[1]);
  to_server_ = down[1];
  from_server_ = up[0];
  ::fcntl(from_server_, F_SETFL, ::fcntl(from_server_, F_GETFL) | O_NONBLOCK);
}

ForkServer::~ForkServer() {
  ::close(to_server_);
  ::close(from_server_);
  if (pid_ > 0) {
    if (running_ > 0) ::kill(pid_, SIGKILL);  // abandoned points: its workers die with it
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

void ForkServer::submit(const Point& p) {
  write_all(to_server_, fmt::format("{}\n", p.index));
  ++running_;
}

std::vector<PointResult> ForkServer::wait() {
  while (true) {
    auto done = wait_for(std::chrono::milliseconds(-1));
    if (!done.empty() || running_ == 0) return done;
  }
}

std::vector<PointResult> ForkServer::wait_for(std::chrono::milliseconds timeout) {
  std::vector<PointResult> done;
  if (running_ == 0) return done;
  pollfd pfd{from_server_, POLLIN, 0};
  const int n = ::poll(&pfd, 1, static_cast<int>(timeout.count()));
  if (n < 0 && errno != EINTR) throw RuntimeError(fmt::format("waiting for the sweep worker server: {}", std::strerror(errno)));
  if (n <= 0) return done;
  const bool alive = read_available(from_server_, received_);
  for (auto nl = received_.find('\n'); nl != std::string::npos; nl = received_.find('\n')) {
    auto r = parse_jsonl_line(std::string_view(received_).substr(0, nl));
    received_.erase(0, nl + 1);
    if (!r) throw RuntimeError("the sweep worker server sent an unreadable result");
    done.push_back(std::move(*r));
    --running_;
  }
  if (!alive && running_ > 0) throw RuntimeError("the sweep worker server stopped with points still running");
  return done;
}

}  // namespace shardsim::sweep

#include "replay/rendezvous.hpp"

#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>

#include "core/error.hpp"

namespace shardsim::replay {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_left(Clock::time_point deadline) {
  return std::chrono::duration<double>(deadline - Clock::now()).count();
}

// A socket closed on every path out.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  [[nodiscard]] int get() const { return fd_; }

 private:
  int fd_;
};

void wait_ready(int fd, short events, Clock::time_point deadline, const std::string& what) {
  while (true) {
    const double left = seconds_left(deadline);
    if (left <= 0) throw RuntimeError(what);
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min(left, 1.0) * 1000) + 1);
    if (r > 0) return;
    if (r < 0 && errno != EINTR) throw RuntimeError(fmt::format("{} (poll: {})", what, std::strerror(errno)));
  }
}

void send_all(int fd, const char* data, std::size_t n, Clock::time_point deadline, const std::string& what) {
  while (n > 0) {
    wait_ready(fd, POLLOUT, deadline, what);
    const ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw RuntimeError(fmt::format("{} (send: {})", what, std::strerror(errno)));
    data += w;
    n -= static_cast<std::size_t>(w);
  }
}

void recv_all(int fd, char* data, std::size_t n, Clock::time_point deadline, const std::string& what) {
  while (n > 0) {
    wait_ready(fd, POLLIN, deadline, what);
    const ssize_t r = ::recv(fd, data, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) throw RuntimeError(fmt::format("{} (the connection closed early)", what));
    data += r;
    n -= static_cast<std::size_t>(r);
  }
}

std::vector<char> by_file(const RankEnv& env, const RendezvousSpec& spec, const std::string& name, std::vector<char> blob) {
  const auto file = spec.dir / fmt::format("{}.{}", name, env.run_id.empty() ? "default" : env.run_id);
  if (env.rank == 0) {
    std::error_code ec;
    std::filesystem::create_directories(spec.dir, ec);
    auto tmp = file;
    tmp += fmt::format(".tmp.{}", ::getpid());
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(blob.data(), static_cast<std::streamsize>(blob.size()));
      if (!out) throw RuntimeError(fmt::format("rank 0: cannot write the rendezvous file {}", tmp.string()));
    }
    std::filesystem::rename(tmp, file, ec);
    if (ec) throw RuntimeError(fmt::format("rank 0: cannot publish the rendezvous file {}: {}", file.string(), ec.message()));
    return blob;
  }
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(spec.timeout));
  while (!std::filesystem::exists(file)) {
    if (seconds_left(deadline) <= 0) {
      throw RuntimeError(
          fmt::format("rank {}: rank 0 did not publish {} within {:g} s: rank 0 never arrived (or writes elsewhere: --rendezvous)",
                      env.rank, file.string(), spec.timeout));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<char> by_tcp(const RankEnv& env, const RendezvousSpec& spec, std::vector<char> blob) {
  if (env.master_port == 0)
    throw ConfigError(Location{"<environment>", 0, 0}, "MASTER_PORT", "missing; a TCP rendezvous needs MASTER_ADDR and MASTER_PORT");
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(spec.timeout));
  if (env.rank == 0) {
    Fd server(::socket(AF_INET, SOCK_STREAM, 0));
    const int one = 1;
    ::setsockopt(server.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(static_cast<std::uint16_t>(env.master_port));
    if (::bind(server.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(server.get(), 128) != 0) {
      throw RuntimeError(fmt::format("rank 0: cannot listen on port {} (MASTER_PORT): {}", env.master_port, std::strerror(errno)));
    }
    const auto size = static_cast<std::uint32_t>(blob.size());
    for (int served = 1; served < env.world; ++served) {
      wait_ready(server.get(), POLLIN, deadline,
                 fmt::format("rank 0: {} of {} ranks connected to port {} within {:g} s: a peer never arrived", served - 1, env.world - 1,
                             env.master_port, spec.timeout));
      Fd peer(::accept(server.get(), nullptr, nullptr));
      if (peer.get() < 0) throw RuntimeError(fmt::format("rank 0: accept failed: {}", std::strerror(errno)));
      const std::string what = "rank 0: sending the rendezvous blob";
      send_all(peer.get(), reinterpret_cast<const char*>(&size), sizeof size, deadline, what);
      send_all(peer.get(), blob.data(), blob.size(), deadline, what);
    }
    return blob;
  }
  const std::string what = fmt::format("rank {}: no answer from rank 0 at {}:{} within {:g} s: rank 0 never arrived", env.rank,
                                       env.master_addr, env.master_port, spec.timeout);
  while (true) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (::getaddrinfo(env.master_addr.c_str(), std::to_string(env.master_port).c_str(), &hints, &found) != 0 || found == nullptr) {
      throw ConfigError(Location{"<environment>", 0, 0}, "MASTER_ADDR", fmt::format("cannot resolve \"{}\"", env.master_addr));
    }
    Fd s(::socket(found->ai_family, found->ai_socktype, found->ai_protocol));
    const int rc = ::connect(s.get(), found->ai_addr, found->ai_addrlen);
    ::freeaddrinfo(found);
    if (rc == 0) {
      std::uint32_t size = 0;
      recv_all(s.get(), reinterpret_cast<char*>(&size), sizeof size, deadline, what);
      if (size > (1U << 20))
        throw RuntimeError(
            fmt::format("rank {}: rendezvous blob of {} bytes from {}: not a shardsim peer?", env.rank, size, env.master_addr));
      std::vector<char> out(size);
      recv_all(s.get(), out.data(), out.size(), deadline, what);
      return out;
    }
    if (seconds_left(deadline) <= 0) throw RuntimeError(what);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

std::vector<char> share_from_rank0(const RankEnv& env, const RendezvousSpec& spec, const std::string& name, std::vector<char> blob) {
  if (env.world == 1) return blob;
  return spec.tcp ? by_tcp(env, spec, std::move(blob)) : by_file(env, spec, name, std::move(blob));
}

}  // namespace shardsim::replay

#include "core/atomic_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>

#include "core/error.hpp"

namespace shardsim {
namespace {

// The temporary file being written, for the signal handler. This is the one piece of static
// state in shardsim: a POSIX signal handler receives no context pointer, so what it must clean
// up has to be reachable from a static. Only async-signal-safe operations touch it from the
// handler (reading a flag and a char array, unlink). Writes are sequential, so one slot suffices.
struct InFlight {
  std::array<char, 4096> path{};
  volatile std::sig_atomic_t active = 0;
};
InFlight g_in_flight;  // NOLINT(cppcoreguidelines-avoid-non-const-global-variables): see above

extern "C" void on_interrupt(int sig) {
  if (g_in_flight.active != 0) ::unlink(g_in_flight.path.data());
  std::signal(sig, SIG_DFL);  // async-signal-safe (POSIX.1-2008, signal-safety(7))
  std::raise(sig);
}

// Registers `tmp` for the handler for the lifetime of this object.
class InFlightGuard {
 public:
  explicit InFlightGuard(const std::string& tmp) {
    if (tmp.size() >= g_in_flight.path.size()) return;  // open() will fail with ENAMETOOLONG anyway
    std::memcpy(g_in_flight.path.data(), tmp.c_str(), tmp.size() + 1);
    std::atomic_signal_fence(std::memory_order_seq_cst);  // the path is complete before the flag says so
    g_in_flight.active = 1;
  }
  ~InFlightGuard() {
    g_in_flight.active = 0;
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  InFlightGuard(const InFlightGuard&) = delete;
  InFlightGuard& operator=(const InFlightGuard&) = delete;
};

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& tmp, const char* what, int err) {
  ::unlink(tmp.c_str());
  throw RuntimeError(fmt::format("{}: {}: {}", path.string(), what, std::strerror(err)));
}

}  // namespace

void write_file_atomic(const std::filesystem::path& path, std::string_view content) {
  const std::string tmp = path.string() + fmt::format(".tmp.{}", ::getpid());
  const InFlightGuard guard(tmp);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) throw RuntimeError(fmt::format("{}: cannot write: {}", path.string(), std::strerror(errno)));
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      fail(path, tmp, "write failed", err);
    }
    done += static_cast<std::size_t>(n);
  }
  // No fsync: the guarantee is against the process being interrupted, which rename gives. Against
  // power loss ext4 flushes a file that replaces another by rename (auto_da_alloc), and an fsync
  // per file would double the time of a run that writes a 10 MB trace.
  if (::close(fd) != 0) fail(path, tmp, "write failed", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail(path, tmp, "cannot rename into place", errno);
}

void install_interrupt_cleanup() {
  for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;
    ::sigaction(sig, &action, nullptr);
  }
}

}  // namespace shardsim

#include "core/atomic_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cassert>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <memory>

#include "core/args.hpp"
#include "core/error.hpp"

namespace shardsim {
namespace fs = std::filesystem;
namespace {

// The temporary files being written, for the signal handler. This is the one piece of static
// state in shardsim: a POSIX signal handler receives no context pointer, so what it must clean
// up has to be reachable from a static. Only async-signal-safe operations touch it from the
// handler (reading flags and char arrays, unlink). One slot per file of an OutputSet.
struct Slot {
  std::array<char, 4096> path{};
  volatile std::sig_atomic_t active = 0;
};
constexpr std::size_t kSlots = 16;
std::array<Slot, kSlots> g_in_flight;  // NOLINT(cppcoreguidelines-avoid-non-const-global-variables): see above

constexpr std::array kCleanupSignals{SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGXFSZ};

extern "C" void on_interrupt(int sig) {
  for (auto& slot : g_in_flight) {
    if (slot.active != 0) ::unlink(slot.path.data());
  }
  std::signal(sig, SIG_DFL);  // async-signal-safe (POSIX.1-2008, signal-safety(7))
  std::raise(sig);
}

// Registers a temporary file for the handler for the lifetime of this object.
class InFlight {
 public:
  explicit InFlight(std::string tmp) : tmp_(std::move(tmp)) {
    for (auto& slot : g_in_flight) {
      if (slot.active != 0) continue;
      if (tmp_.size() >= slot.path.size()) return;  // open() fails with ENAMETOOLONG anyway
      std::memcpy(slot.path.data(), tmp_.c_str(), tmp_.size() + 1);
      std::atomic_signal_fence(std::memory_order_seq_cst);  // the path is complete before the flag says so
      slot.active = 1;
      slot_ = &slot;
      return;
    }
    assert(false && "more temporary files at once than slots");
  }
  ~InFlight() {
    if (slot_ != nullptr) slot_->active = 0;
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;
  [[nodiscard]] const std::string& path() const { return tmp_; }

 private:
  std::string tmp_;
  Slot* slot_ = nullptr;
};

// Where the bytes go: the path itself, or the file a symbolic link leads to; `direct` for a
// device, FIFO or socket, which cannot be replaced by rename and is written to as it is.
struct Target {
  fs::path path;
  bool direct = false;
};

// An empty string when `requested` can be written, else why not.
std::string resolve(const fs::path& requested, Target& target) {
  std::error_code ec;
  const auto link = fs::symlink_status(requested, ec);
  target = {requested, false};
  if (ec || !fs::exists(link)) return "";  // a new file: open() reports a missing directory
  if (fs::is_symlink(link)) {
    target.path = fs::canonical(requested, ec);
    if (ec) return fmt::format("cannot write through the symbolic link: {}", ec.message());
  }
  const auto st = fs::status(target.path, ec);
  if (fs::is_directory(st)) return "is a directory; expected a file name";
  target.direct = !fs::is_regular_file(st);
  return "";
}

Target resolve_or_throw(const fs::path& requested) {
  Target t;
  if (auto why = resolve(requested, t); !why.empty()) throw RuntimeError(fmt::format("{}: {}", requested.string(), why));
  return t;
}

// Writes `content` to `fd`, or throws (the caller closes it).
void write_piece(int fd, std::string_view content, const fs::path& shown) {
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw RuntimeError(fmt::format("{}: write failed: {}", shown.string(), std::strerror(n < 0 ? errno : EIO)));
    done += static_cast<std::size_t>(n);
  }
}

// Closes `fd`, and says so if the data did not reach the file.
void close_written(int fd, const fs::path& shown) {
  // No fsync: the guarantee is against the process being interrupted, which rename gives. Against
  // power loss ext4 flushes a file that replaces another by rename (auto_da_alloc), and an fsync
  // per file would double the time of a run that writes a 10 MB trace.
  if (::close(fd) != 0) throw RuntimeError(fmt::format("{}: write failed: {}", shown.string(), std::strerror(errno)));
}

// Writes `content` to `fd` and closes it.
void write_all(int fd, std::string_view content, const fs::path& shown) {
  try {
    write_piece(fd, content, shown);
  } catch (...) {
    ::close(fd);
    throw;
  }
  close_written(fd, shown);
}

// Writes straight into a device or FIFO. O_NONBLOCK on open: a FIFO nobody reads fails with
// ENXIO instead of blocking forever; the writes themselves block as usual.
void write_direct(const Target& t, std::string_view content, const fs::path& shown) {
  const int fd = ::open(t.path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENXIO) throw RuntimeError(fmt::format("{}: cannot write: no process is reading from it", shown.string()));
    throw RuntimeError(fmt::format("{}: cannot write: {}", shown.string(), std::strerror(err)));
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  write_all(fd, content, shown);
}

// Writes what `produce` hands its writer to a temporary file beside `t.path` and returns its guard
// (the file exists until renamed or the guard's owner removes it).
std::unique_ptr<InFlight> write_temp(const Target& t, const std::function<void(const TextWriter&)>& produce, const fs::path& shown) {
  auto tmp = std::make_unique<InFlight>(t.path.string() + fmt::format(".tmp.{}", ::getpid()));
  const int fd = ::open(tmp->path().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) throw RuntimeError(fmt::format("{}: cannot write: {}", shown.string(), std::strerror(errno)));
  try {
    produce([&](std::string_view piece) { write_piece(fd, piece, shown); });
  } catch (...) {
    ::close(fd);
    ::unlink(tmp->path().c_str());
    throw;
  }
  try {
    close_written(fd, shown);
  } catch (...) {
    ::unlink(tmp->path().c_str());
    throw;
  }
  return tmp;
}

// Holds back the signals the cleanup handler takes, for the lifetime of this object.
class SignalsHeld {
 public:
  SignalsHeld() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : kCleanupSignals) sigaddset(&set, s);
    ::sigprocmask(SIG_BLOCK, &set, &old_);
  }
  ~SignalsHeld() { ::sigprocmask(SIG_SETMASK, &old_, nullptr); }
  SignalsHeld(const SignalsHeld&) = delete;
  SignalsHeld& operator=(const SignalsHeld&) = delete;

 private:
  sigset_t old_{};
};

}  // namespace

void write_file_atomic(const fs::path& path, const std::function<void(const TextWriter&)>& produce) {
  const Target target = resolve_or_throw(path);
  if (target.direct) {
    std::string content;
    produce([&](std::string_view piece) { content += piece; });
    write_direct(target, content, path);
    return;
  }
  const auto temp = write_temp(target, produce, path);
  const SignalsHeld held;
  if (::rename(temp->path().c_str(), target.path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp->path().c_str());
    throw RuntimeError(fmt::format("{}: cannot rename into place: {}", path.string(), std::strerror(err)));
  }
}

void write_file_atomic(const fs::path& path, std::string_view content) {
  write_file_atomic(path, [content](const TextWriter& write) { write(content); });
}

// One file of a set: where it goes, and its temporary file (written) or, for a device or FIFO,
// its content (written at commit).
struct OutputSet::Pending {
  fs::path requested;
  Target target;
  std::unique_ptr<InFlight> temp;
  std::string direct_content;
};

OutputSet::OutputSet() = default;

OutputSet::~OutputSet() {
  for (const auto& f : files_) {
    if (f->temp) ::unlink(f->temp->path().c_str());
  }
}

void OutputSet::add(const fs::path& path, std::string content) {
  add_written(path, [&content](const TextWriter& write) { write(content); });
}

void OutputSet::add_written(const fs::path& path, const std::function<void(const TextWriter&)>& produce) {
  assert(files_.size() < kSlots);
  auto f = std::make_unique<Pending>();
  f->requested = path;
  f->target = resolve_or_throw(path);
  if (f->target.direct) {
    produce([&](std::string_view piece) { f->direct_content += piece; });
  } else {
    f->temp = write_temp(f->target, produce, path);
  }
  files_.push_back(std::move(f));
}

void OutputSet::commit() {
  {
    const SignalsHeld held;
    for (std::size_t i = 0; i < files_.size(); ++i) {
      Pending& f = *files_[i];
      if (!f.temp) continue;
      if (::rename(f.temp->path().c_str(), f.target.path.c_str()) != 0) {
        const int err = errno;
        for (std::size_t j = i; j < files_.size(); ++j) {
          if (files_[j]->temp) ::unlink(files_[j]->temp->path().c_str());
          files_[j]->temp.reset();
        }
        throw RuntimeError(fmt::format("{}: cannot rename into place: {}", f.requested.string(), std::strerror(err)));
      }
      f.temp.reset();
    }
  }
  for (const auto& f : files_) {
    if (f->target.direct) write_direct(f->target, f->direct_content, f->requested);
  }
  files_.clear();
}

void check_outputs(const std::vector<OutputFile>& outputs, const std::vector<InputFile>& inputs) {
  for (const auto& out : outputs) {
    Target t;
    if (auto why = resolve(out.path, t); !why.empty()) throw UsageError(fmt::format("{} {}: {}", out.option, out.path.string(), why));
    std::error_code ec;
    if (!fs::exists(t.path, ec) || t.direct) continue;
    for (const auto& in : inputs) {
      if (fs::equivalent(t.path, in.path, ec)) {
        throw UsageError(fmt::format("{} {}: is {} ({}); expected an output file that is not one of the inputs", out.option,
                                     out.path.string(), in.role, in.path.string()));
      }
    }
  }
}

void install_interrupt_cleanup() {
  for (const int sig : kCleanupSignals) {
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;
    ::sigaction(sig, &action, nullptr);
  }
}

}  // namespace shardsim

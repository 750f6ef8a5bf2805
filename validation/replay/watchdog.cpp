#include "replay/watchdog.hpp"

#include <fmt/format.h>

namespace shardsim::replay {

Watchdog::Watchdog(double timeout_seconds, OnTimeout on_timeout)
    : timeout_(timeout_seconds), on_timeout_(std::move(on_timeout)), last_(std::chrono::steady_clock::now()), waiting_for_("start-up") {
  thread_ = std::thread([this] { run(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Watchdog::kick(std::string waiting_for) {
  std::lock_guard lock(mutex_);
  last_ = std::chrono::steady_clock::now();
  waiting_for_ = std::move(waiting_for);
}

void Watchdog::run() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    const auto deadline = last_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(timeout_));
    if (std::chrono::steady_clock::now() >= deadline) {
      const std::string message = fmt::format(
          "no progress for {:g} s while waiting for {}: a peer never arrived, or a collective or kernel hangs", timeout_, waiting_for_);
      lock.unlock();
      on_timeout_(message);  // does not return
      return;
    }
    cv_.wait_until(lock, std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(100)));
  }
}

}  // namespace shardsim::replay

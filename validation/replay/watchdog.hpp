// Ends a replay that stopped making progress, rather than letting it hang: a peer that never
// arrives, a collective or kernel that never finishes, a blocked communicator setup. The replay
// kicks the watchdog whenever something completes and says what it waits for next; after
// `timeout` seconds without a kick, the watchdog's thread calls `on_timeout` with a message
// naming what was awaited. In the tools on_timeout does not return: it aborts the backend and
// _exits, as PyTorch's NCCL watchdog tears the process down (threads blocked in MPI or NCCL
// cannot be unwound by an exception). If it returns, the watchdog stops watching.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace shardsim::replay {

class Watchdog {
 public:
  using OnTimeout = std::function<void(const std::string& message)>;
  Watchdog(double timeout_seconds, OnTimeout on_timeout);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Progress was made; `waiting_for` says what comes next ("op 17 \"AG layers.1\" (all_gather)").
  void kick(std::string waiting_for);
  [[nodiscard]] double timeout() const { return timeout_; }

 private:
  void run();

  double timeout_;
  OnTimeout on_timeout_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::chrono::steady_clock::time_point last_;
  std::string waiting_for_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace shardsim::replay

// The replay backend without a GPU: each stream is a thread that runs its queue in order, events
// are timestamps (steady clock, shared by every process on the machine, so ranks' times line up),
// kernels are real CPU work scaled down (cpu_kernels.hpp), collectives are real (HostComm: MPI
// across processes). What it measures is a CPU running a scaled copy of the schedule: good for
// exercising the replay -> compare -> calibrate loop in CI, not a stand-in for GPU numbers.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cpu/cpu_kernels.hpp"
#include "cpu/host_comm.hpp"
#include "replay/backend.hpp"

namespace shardsim::replay {

struct CpuScale {
  double compute = 1;  // fraction of each kernel's work run
  double bytes = 1;    // fraction of each collective's bytes moved
};

class CpuBackend final : public Backend {
 public:
  // `shared_clock`: every rank runs on this machine, so their steady clocks agree.
  CpuBackend(std::unique_ptr<HostComm> comm, CpuScale scale, bool shared_clock = true);
  ~CpuBackend() override;
  CpuBackend(const CpuBackend&) = delete;
  CpuBackend& operator=(const CpuBackend&) = delete;

  [[nodiscard]] int rank() const override { return comm_->rank(); }
  [[nodiscard]] int world() const override { return comm_->world(); }
  [[nodiscard]] std::string name() const override { return "cpu"; }
  [[nodiscard]] std::string device() const override;

  StreamId create_stream(const std::string& name) override;
  EventId create_event() override;
  CommId split_communicator(int color, int key) override;
  void reserve(StreamId stream, const KernelFootprint& f, double collective_bytes) override;

  void enqueue(StreamId stream, const Kernel& kernel) override;
  void enqueue_collective(StreamId stream, CommId comm, graph::OpKind kind, double bytes, int slot) override;
  void enqueue_shift(StreamId stream, CommId comm, double bytes, int shift) override;
  void record(StreamId stream, EventId event) override;
  void wait(StreamId stream, EventId event) override;

  [[nodiscard]] bool query(EventId event) override;
  [[nodiscard]] double elapsed(EventId from, EventId to) override;
  [[nodiscard]] std::optional<double> shared_clock(EventId event) override;
  [[nodiscard]] std::vector<double> gather(std::span<const double> values) override;
  void abort() noexcept override;

 private:
  [[nodiscard]] std::size_t scaled_bytes(double bytes) const;  // a collective's bytes at --bytes-scale, at least 4
  struct Event {
    std::uint64_t recorded = 0;  // generations: a wait waits for the record made before it
    std::uint64_t done = 0;
    double time = 0;
  };
  struct Stream {
    std::thread thread;
    std::deque<std::function<void()>> queue;
    CpuWorkspace workspace;
  };

  void push(StreamId s, std::function<void()> task);
  void loop(Stream& s);
  void fail(const std::string& message);

  std::unique_ptr<HostComm> comm_;
  CpuScale scale_;
  bool shared_clock_;
  // One lock for queues and events: streams are few and tasks long, so contention is nil.
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::string error_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<Event> events_;
};

}  // namespace shardsim::replay

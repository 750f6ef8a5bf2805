#include "cpu/cpu_backend.hpp"

#include <fmt/format.h>

#include <chrono>

#include "core/error.hpp"

namespace shardsim::replay {
namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

}  // namespace

CpuBackend::CpuBackend(std::unique_ptr<HostComm> comm, CpuScale scale, bool shared_clock)
    : comm_(std::move(comm)), scale_(scale), shared_clock_(shared_clock) {}

CpuBackend::~CpuBackend() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& s : streams_) s->thread.join();
}

std::string CpuBackend::device() const {
  return fmt::format("cpu (compute x{:g}, bytes x{:g})", scale_.compute, scale_.bytes);
}

StreamId CpuBackend::create_stream(const std::string& /*name*/) {
  auto s = std::make_unique<Stream>();
  Stream* raw = s.get();
  std::lock_guard lock(mutex_);
  streams_.push_back(std::move(s));
  raw->thread = std::thread([this, raw] { loop(*raw); });
  return static_cast<StreamId>(streams_.size() - 1);
}

EventId CpuBackend::create_event() {
  std::lock_guard lock(mutex_);
  events_.emplace_back();
  return static_cast<EventId>(events_.size() - 1);
}

CommId CpuBackend::split_communicator(int color, int key) {
  return comm_->split(color, key);
}

void CpuBackend::reserve(StreamId stream, const KernelFootprint& f, double /*collective_bytes*/) {
  streams_.at(static_cast<std::size_t>(stream))->workspace.reserve(f, scale_.compute);
}

void CpuBackend::push(StreamId s, std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    streams_.at(static_cast<std::size_t>(s))->queue.push_back(std::move(task));
  }
  cv_.notify_all();
}

void CpuBackend::loop(Stream& s) {
  while (true) {
    std::function<void()> task;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return stop_ || !s.queue.empty(); });
      if (stop_) return;
      task = std::move(s.queue.front());
      s.queue.pop_front();
    }
    try {
      task();
    } catch (const std::exception& e) {
      fail(e.what());
    }
  }
}

void CpuBackend::fail(const std::string& message) {
  {
    std::lock_guard lock(mutex_);
    if (error_.empty()) error_ = message;
  }
  cv_.notify_all();
}

void CpuBackend::enqueue(StreamId stream, const Kernel& kernel) {
  Stream* s = streams_.at(static_cast<std::size_t>(stream)).get();
  const double scale = scale_.compute;
  push(stream, [s, kernel, scale] {
    std::visit(Overloaded{[&](const GemmKernel& g) { cpu_gemm(scaled(g, scale), s->workspace); },
                          [&](const CopyKernel& c) { cpu_copy(c.bytes * scale, s->workspace); }, [](const EmptyKernel&) {}},
               kernel);
  });
}

std::size_t CpuBackend::scaled_bytes(double bytes) const {
  return static_cast<std::size_t>(std::max(4.0, bytes * scale_.bytes));
}

void CpuBackend::enqueue_collective(StreamId stream, CommId comm, graph::OpKind kind, double bytes, int slot) {
  push(stream, [this, comm, kind, scaled = scaled_bytes(bytes), slot] { comm_->run(comm, kind, scaled, slot); });
}

void CpuBackend::enqueue_shift(StreamId stream, CommId comm, double bytes, int shift) {
  push(stream, [this, comm, scaled = scaled_bytes(bytes), shift] { comm_->shift(comm, scaled, shift); });
}

void CpuBackend::record(StreamId stream, EventId event) {
  std::uint64_t gen = 0;
  {
    std::lock_guard lock(mutex_);
    gen = ++events_.at(static_cast<std::size_t>(event)).recorded;
  }
  push(stream, [this, event, gen] {
    const double t = now();
    {
      std::lock_guard lock(mutex_);
      Event& e = events_[static_cast<std::size_t>(event)];
      e.time = t;
      e.done = std::max(e.done, gen);
    }
    cv_.notify_all();
  });
}

void CpuBackend::wait(StreamId stream, EventId event) {
  std::uint64_t gen = 0;
  {
    std::lock_guard lock(mutex_);
    gen = events_.at(static_cast<std::size_t>(event)).recorded;
  }
  push(stream, [this, event, gen] {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return stop_ || !error_.empty() || events_[static_cast<std::size_t>(event)].done >= gen; });
  });
}

bool CpuBackend::query(EventId event) {
  std::lock_guard lock(mutex_);
  if (!error_.empty()) throw RuntimeError(fmt::format("rank {}: {}", comm_->rank(), error_));
  const Event& e = events_.at(static_cast<std::size_t>(event));
  return e.done >= e.recorded;
}

double CpuBackend::elapsed(EventId from, EventId to) {
  std::lock_guard lock(mutex_);
  return events_.at(static_cast<std::size_t>(to)).time - events_.at(static_cast<std::size_t>(from)).time;
}

std::optional<double> CpuBackend::shared_clock(EventId event) {
  if (!shared_clock_) return std::nullopt;
  std::lock_guard lock(mutex_);
  return events_.at(static_cast<std::size_t>(event)).time;
}

std::vector<double> CpuBackend::gather(std::span<const double> values) {
  return comm_->all_gather(values);
}

void CpuBackend::abort() noexcept {
  comm_->abort();
}

}  // namespace shardsim::replay

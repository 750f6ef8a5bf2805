// The one interface the replay executor and the microbenchmarks drive: streams that run kernels
// and collectives in order, events that order streams and time them, and communicators over
// groups of ranks. Two implementations: CUDA streams / cuBLAS / NCCL (validation/cuda/) and
// threads / CPU kernels / MPI (validation/cpu/).
//
// Contract: every method but query() and elapsed() only enqueues (it never waits for a peer or
// for the device), so that a caller can always notice a hang and abort; query() never blocks.
// Collective and communicator calls must be made in the same order on every rank.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "graph/op.hpp"
#include "replay/kernel_plan.hpp"

namespace shardsim::replay {

using StreamId = int;
using EventId = int;
using CommId = int;

class Backend {
 public:
  virtual ~Backend() = default;

  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int world() const = 0;
  [[nodiscard]] virtual std::string name() const = 0;    // "nccl", "cpu"
  [[nodiscard]] virtual std::string device() const = 0;  // "NVIDIA H200", "cpu (scaled x0.01)"

  // Setup, before enqueuing work. A communicator joins the ranks that pass the same `color`,
  // ordered by `key` (MPI_Comm_split / ncclCommSplit); collective over all ranks. A rank passing
  // a negative color joins none (MPI_UNDEFINED / NCCL_SPLIT_NOCOLOR): it must not use the id.
  virtual StreamId create_stream(const std::string& name) = 0;
  virtual EventId create_event() = 0;
  virtual CommId split_communicator(int color, int key) = 0;
  // Buffers for kernels up to `f` and collectives up to `collective_bytes` on `stream`. Throws
  // RuntimeError (naming the sizes) if the device cannot hold them: out of memory.
  virtual void reserve(StreamId stream, const KernelFootprint& f, double collective_bytes) = 0;

  // Work, in stream order. `slot` selects one of a few buffer offsets, so that repeated runs do
  // not reuse the same addresses (microbenchmarks' shifted buffers).
  virtual void enqueue(StreamId stream, const Kernel& kernel) = 0;
  // OpKind::send: a point-to-point transfer of `bytes` on a communicator of two ranks, from its
  // first member (key order) to its second: a broadcast from the first.
  virtual void enqueue_collective(StreamId stream, CommId comm, graph::OpKind kind, double bytes, int slot = 0) = 0;
  // A ring's step: every member of the communicator sends `bytes` to the member `shift` places
  // after it and receives as much from the one `shift` places before it (context parallelism's
  // K/V rotation, async TP's chunk copies).
  virtual void enqueue_shift(StreamId stream, CommId comm, double bytes, int shift) = 0;
  virtual void record(StreamId stream, EventId event) = 0;
  virtual void wait(StreamId stream, EventId event) = 0;  // the stream waits for the event

  // Completion and time.
  [[nodiscard]] virtual bool query(EventId event) = 0;  // has the event completed?
  // Seconds from `from` to `to`, both completed.
  [[nodiscard]] virtual double elapsed(EventId from, EventId to) = 0;
  // The completed event's time on a clock every rank shares (the CPU backend's ranks on one
  // machine), or nothing (GPUs: each device has its own clock; ranks align on a barrier).
  [[nodiscard]] virtual std::optional<double> shared_clock(EventId event) = 0;

  // After every event completed: every rank's `values`, concatenated in rank order. Blocks.
  [[nodiscard]] virtual std::vector<double> gather(std::span<const double> values) = 0;

  // Tear down communicators so that peers blocked on this rank fail too. Safe from any thread,
  // at any time, more than once.
  virtual void abort() noexcept = 0;
};

}  // namespace shardsim::replay

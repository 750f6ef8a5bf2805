// Issues ops onto a StepGraph in CPU program order, adding the edges that order implies: each
// op follows the previous op of its stream; after the CPU blocked on an event, everything it
// issues waits for that wait; a micro-step's first op on each stream waits for its barrier.
// Shared by the FSDP and ZeRO-3 builders.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/scenario.hpp"
#include "core/deadline.hpp"
#include "graph/step_graph.hpp"

namespace shardsim::graph {

[[nodiscard]] Op make_op(OpKind kind, Stream stream, std::string name, int unit);

// simulation.max_ops: a graph past it would exhaust memory before the engine even starts.
[[noreturn]] void throw_too_many_ops(const config::ScenarioConfig& scenario, std::size_t units, int steps);

class Issuer {
 public:
  explicit Issuer(StepGraph& g);
  // Calls `exceeded` (which must throw) when an op beyond `max_ops` would be issued.
  void set_limit(std::int64_t max_ops, std::function<void()> exceeded);
  // Checks `deadline` (simulation.max_wall_time) every few thousand ops; it must outlive the issuer.
  void set_deadline(const Deadline& deadline) { deadline_ = &deadline; }

  // Starts a micro-step: its ops carry (step, micro) and each stream's first op waits for `barrier`.
  void begin_micro_step(int step, int micro, int barrier);
  int issue(Op op);
  // Op `id`'s allocations are made in the CPU's program order: each is accounted from the start
  // of the next op the CPU issues on the compute stream (of its pipeline stage), MemEffect::not_before.
  void allocate_in_program_order(int id) { in_program_order_.push_back(id); }
  // The CPU blocks until `event` ends; returns the wait op, which later ops on any stream follow.
  int cpu_wait(int event, std::string name);
  [[nodiscard]] int last(Stream s) const { return last_[static_cast<std::size_t>(s)]; }
  [[nodiscard]] int step() const { return step_; }
  [[nodiscard]] int micro() const { return micro_; }

 private:
  StepGraph& g_;
  std::array<int, kStreams> last_{};       // last op issued on each stream
  std::array<int, kStreams> gate_seen_{};  // the CPU wait each stream's last op already follows
  std::array<bool, kStreams> started_{};   // stream used in this micro-step yet
  std::int64_t max_ops_ = -1;
  std::function<void()> exceeded_;
  const Deadline* deadline_ = nullptr;
  std::vector<int> in_program_order_;  // ops whose allocations wait for the next compute-stream op
  int barrier_ = -1;
  int cpu_gate_ = -1;
  int step_ = 0;
  int micro_ = 0;
};

}  // namespace shardsim::graph

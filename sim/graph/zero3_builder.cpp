// DeepSpeed ZeRO stage 3 (deepspeed/runtime/zero/partitioned_param_coordinator.py and stage3.py,
// shared/reference/fsdp-semantics.md section 8), as a step graph:
// - every module that owns parameters is fetched on its own (all_gather_coalesced of its
//   partitioned parameters; parameters under param_persistence_threshold are never partitioned);
// - the CPU keeps at most two fetches outstanding, waiting for the oldest beyond that;
// - from the second step, when the recorded trace is complete, each fetch also prefetches the
//   next modules of the trace up to prefetch_bucket_size parameters, while the gathered total
//   stays under max_live_parameters;
// - after its forward a module is released unless it is used again (in backward) within
//   max_reuse_distance parameters; after its backward it is released;
// - the CPU runs ahead of the GPU only as far as its memory allows: a module is released on the
//   CPU, but its gathered block returns to the allocator once the compute that reads it has run,
//   so a fetch that does not fit waits for those frees, as the caching allocator's retry does
//   (graph/cpu_memory_view.hpp);
// - gradients are copied into a bucket that is reduce-scattered when it would exceed
//   reduce_bucket_size, on its own stream when overlap_comm, with at most two reductions pending;
// - each rank keeps a 16-bit partition besides fp32 master weights, fp32 gradient partitions and
//   optimizer state: 18 bytes per parameter (estimate_zero3_model_states_mem_needs).
// ZeRO-Offload / ZeRO-Infinity (fsdp.zero3.offload_optimizer / offload_param, deepspeed/runtime/
// zero/stage3.py and swap_tensor/): with the optimizer offloaded each reduced gradient partition
// is copied to pinned CPU memory and the step runs on the CPU (fp32 master weights and state in
// CPU memory, or on NVMe, swapped in and out one sub_group_size of parameters at a time, the
// next sub-group read while the current one steps), after which the updated 16-bit partition is
// copied back to the GPU (or stays on the CPU / is written to NVMe when parameters are
// offloaded). With parameters offloaded each fetch first reads the partition from NVMe into a
// pinned buffer and copies it to the GPU. NVMe traffic runs at the GPU's share of its node's
// drives (host.nvme), PCIe copies at node.pcie.
#include "graph/zero3_builder.hpp"

#include <fmt/format.h>

#include <deque>
#include <optional>

#include "fsdp/model_state.hpp"
#include "graph/cpu_memory_view.hpp"
#include "graph/issuer.hpp"
#include "graph/outside_allocator.hpp"
#include "graph/work.hpp"
#include "graph/zero3_offload.hpp"

namespace shardsim::graph {
namespace {

using fsdp::TraceEvent;

// DeepSpeed waits on the oldest fetch / reduction once this many are outstanding.
constexpr std::size_t kMaxOutstanding = 2;

class Zero3Builder {
 public:
  Zero3Builder(const fsdp::Plan& plan, const config::ScenarioConfig& scenario, int steps)
      : plan_(plan),
        cfg_(scenario),
        z_(scenario.fsdp.zero3),
        steps_(steps),
        batch_{scenario.training.micro_batch, scenario.training.seq_len} {
    available_.assign(plan.units.size(), -1);
    for (const auto& e : plan.forward) {
      if (e.kind == TraceEvent::Kind::enter && gathered_numel(e.unit) > 0) order_.push_back(e.unit);
    }
    position_.assign(plan.units.size(), -1);
    for (std::size_t i = 0; i < order_.size(); ++i) position_[static_cast<std::size_t>(order_[i])] = static_cast<int>(i);
  }

  void set_deadline(const Deadline& deadline) { io_.set_deadline(deadline); }

  StepGraph build() {
    fill_info();
    double initial = 0;
    for (const MemEffect& e : g_.info.initial_memory) {
      if (e.pool != Pool::host) initial += e.bytes;
    }
    const auto& topology = cfg_.cluster.topology;
    memory_.emplace(topology.gpu.memory.value() - outside_allocator(g_.info, topology).total(), initial);
    io_.set_limit(cfg_.simulation.max_ops.value, [this] { throw_too_many_ops(cfg_, plan_.units.size(), steps_); });
    for (int step = 0; step < steps_; ++step) {
      for (int micro = 0; micro < cfg_.training.grad_accum; ++micro) {
        io_.begin_micro_step(step, micro, micro == 0 ? last_optimizer_ : io_.last(Stream::compute));
        forward();
        backward();
      }
      optimizer(step);
    }
    (void)g_.topological_order();
    return std::move(g_);
  }

 private:
  [[nodiscard]] const fsdp::Unit& unit(int u) const { return plan_.units[static_cast<std::size_t>(u)]; }
  // Parameters an all-gather brings in (the persistent ones are always there).
  [[nodiscard]] std::int64_t gathered_numel(int u) const { return unit(u).padded_numel - unit(u).persistent_numel; }
  [[nodiscard]] double gathered_bytes(int u) const { return static_cast<double>(gathered_numel(u)) * plan_.param_bytes; }
  [[nodiscard]] bool trace_complete() const { return io_.step() > 0; }

  // Every op goes through here, so that the CPU's view of device memory follows what it issues.
  int issue(Op op) {
    const int id = io_.issue(std::move(op));
    memory_->issued(g_.op(id));
    return id;
  }

  void fetch(int u, int trigger) {
    if (gathered_numel(u) <= 0 || available_[static_cast<std::size_t>(u)] >= 0) return;
    if (fetches_.size() >= kMaxOutstanding) {
      io_.cpu_wait(fetches_.front(), fmt::format("fetch wait ({})", g_.op(fetches_.front()).name));
      fetches_.pop_front();
    }
    const bool staged = offload_.params_offloaded();  // the partition comes through the GPU first
    for (const int op : memory_->make_room(gathered_bytes(u) + (staged ? partition_bytes(u) : 0.0))) {
      io_.cpu_wait(op, fmt::format("allocator retry (AG {})", unit(u).name));
    }
    const int partition = offload_.bring_partition(u, unit(u).name, partition_bytes(u));
    Op ag = make_op(OpKind::all_gather, Stream::all_gather, "AG " + unit(u).name, u);
    ag.group = Group::shard;
    ag.bytes = gathered_bytes(u);
    ag.memory.push_back({MemCategory::unsharded_params, gathered_bytes(u), false, Pool::all_gather});
    if (partition >= 0) ag.memory.push_back({MemCategory::sharded_params, -partition_bytes(u), true, Pool::all_gather});
    const int id = issue(std::move(ag));
    g_.add_edge(partition, id, EdgeKind::data);
    if (trigger >= 0) g_.add_edge(trigger, id, EdgeKind::prefetch);
    available_[static_cast<std::size_t>(u)] = id;
    live_numel_ += gathered_numel(u);
    fetches_.push_back(id);
  }

  // The rank's 16-bit partition of u, as an all-gather needs it.
  [[nodiscard]] double partition_bytes(int u) const { return gathered_bytes(u) / plan_.shard_group; }

  // After fetching u, prefetch what the trace says comes next, within the two budgets.
  void prefetch_after(int u, bool forward) {
    if (!trace_complete() || z_.prefetch_bucket_size <= 0) return;
    const int pos = position_[static_cast<std::size_t>(u)];
    if (pos < 0) return;
    std::int64_t bucket = 0;
    const int n = static_cast<int>(order_.size());
    for (int k = 1; k < n; ++k) {
      const int p = forward ? pos + k : pos - k;
      if (p < 0 || p >= n) break;
      const int next = order_[static_cast<std::size_t>(p)];
      if (available_[static_cast<std::size_t>(next)] >= 0) continue;
      const std::int64_t numel = gathered_numel(next);
      if (bucket + numel > z_.prefetch_bucket_size || live_numel_ + numel > z_.max_live_parameters) break;
      bucket += numel;
      fetch(next, available_[static_cast<std::size_t>(u)]);
    }
  }

  void release(int u, int after) {
    const int avail = available_[static_cast<std::size_t>(u)];
    if (avail < 0) return;
    g_.op(after).memory.push_back({MemCategory::unsharded_params, -gathered_bytes(u), true, Pool::all_gather});
    memory_->free_after(g_.op(after), gathered_bytes(u));
    available_[static_cast<std::size_t>(u)] = -1;
    live_numel_ -= gathered_numel(u);
  }

  // Parameters fetched between u's forward use and its backward use: everything after it in the
  // trace, in forward and again in backward.
  [[nodiscard]] std::int64_t reuse_distance(int u) const {
    std::int64_t d = 0;
    for (std::size_t i = static_cast<std::size_t>(position_[static_cast<std::size_t>(u)]) + 1; i < order_.size(); ++i) {
      d += 2 * gathered_numel(order_[i]);
    }
    return d;
  }

  int compute(Op op, int u) {
    const int avail = available_[static_cast<std::size_t>(u)];
    const int id = issue(std::move(op));
    g_.add_edge(avail, id, EdgeKind::data);
    return id;
  }

  // A checkpointed block's input, which cpu_checkpointing keeps in CPU memory.
  [[nodiscard]] bool checkpointed_input(const fsdp::Segment& s) const {
    return offload_.offloads_checkpoints() && !s.is_loss && checkpoint_mode(s, cfg_.training) == model::AcMode::full;
  }

  double act(const std::array<double, 3>& per_mode, const fsdp::Segment& s) const {
    return activation_bytes(per_mode, checkpoint_mode(s, cfg_.training), batch_);
  }

  void forward() {
    std::vector<int> last(plan_.units.size(), -1);
    for (const TraceEvent& e : plan_.forward) {
      if (e.kind == TraceEvent::Kind::enter) {
        fetch(e.unit, -1);
        prefetch_after(e.unit, true);
      } else if (e.kind == TraceEvent::Kind::compute) {
        const fsdp::Segment& s = plan_.segments[static_cast<std::size_t>(e.segment)];
        Op op = make_op(OpKind::forward, Stream::compute, "FWD " + s.name, e.unit);
        op.work = forward_work(s, batch_);
        const double saved = act(s.activation.saved, s);
        forward_memory(op, s, saved, batch_);
        const int id = compute(std::move(op), e.unit);
        if (saved > 0 && checkpointed_input(s)) offload_.checkpoint_saved(id, e.segment, saved);
        last[static_cast<std::size_t>(e.unit)] = id;
      } else if (gathered_numel(e.unit) > 0 && reuse_distance(e.unit) > z_.max_reuse_distance) {
        release(e.unit, last[static_cast<std::size_t>(e.unit)]);
      }
    }
  }

  void backward() {
    bucket_numel_ = 0;
    std::vector<int> last(plan_.units.size(), -1);
    for (auto it = plan_.forward.rbegin(); it != plan_.forward.rend(); ++it) {
      const TraceEvent& e = *it;
      if (e.kind == TraceEvent::Kind::exit) {
        fetch(e.unit, -1);
        prefetch_after(e.unit, false);
      } else if (e.kind == TraceEvent::Kind::compute) {
        const fsdp::Segment& s = plan_.segments[static_cast<std::size_t>(e.segment)];
        Op op = make_op(OpKind::backward, Stream::compute, "BWD " + s.name, e.unit);
        op.work = backward_work(s, batch_, checkpoint_mode(s, cfg_.training));
        const MemCategory cat = s.is_loss ? MemCategory::loss : MemCategory::activations;
        backward_transient(op, s, act(s.activation.backward_transient, s), batch_);
        if (const double saved = act(s.activation.saved, s); saved > 0) op.memory.push_back({cat, -saved, true, Pool::compute});
        // The gradient hook copies each gradient into the reduction bucket and frees it.
        if (s.numel > 0) {
          const double grad = static_cast<double>(s.numel) * plan_.grad_bytes;
          op.memory.push_back({MemCategory::gradients, grad, false, Pool::compute});
          op.memory.push_back({MemCategory::gradients, -grad, true, Pool::compute});
        }
        const int restored = checkpointed_input(s) ? offload_.checkpoint_restore(e.segment, s.name) : -1;
        const int id = compute(std::move(op), e.unit);
        g_.add_edge(restored, id, EdgeKind::data);
        last[static_cast<std::size_t>(e.unit)] = id;
        if (s.numel > 0) add_to_bucket(static_cast<double>(s.numel), id, false);
      } else {
        release(e.unit, last[static_cast<std::size_t>(e.unit)] >= 0 ? last[static_cast<std::size_t>(e.unit)] : io_.last(Stream::compute));
      }
    }
    add_to_bucket(0, io_.last(Stream::compute), true);
  }

  void add_to_bucket(double numel, int producer, bool flush) {
    const auto cap = static_cast<double>(z_.reduce_bucket_size);
    if (!flush && bucket_numel_ + numel <= cap) {
      bucket_numel_ += numel;
      return;
    }
    if (!flush && bucket_numel_ <= 0) bucket_numel_ = numel, numel = 0;
    if (bucket_numel_ > 0) {
      if (reductions_.size() >= kMaxOutstanding) {
        io_.cpu_wait(reductions_.front(), fmt::format("reduce wait ({})", g_.op(reductions_.front()).name));
        reductions_.pop_front();
      }
      Op rs = make_op(OpKind::reduce_scatter, z_.overlap_comm ? Stream::reduce_scatter : Stream::compute,
                      fmt::format("RS bucket ({:.0f}M params)", bucket_numel_ / 1e6), -1);
      rs.group = Group::shard;
      rs.bytes = bucket_numel_ * plan_.reduce_bytes;
      const double shard = bucket_numel_ / plan_.shard_group * plan_.master_bytes;
      const bool to_cpu = offload_.optimizer_offloaded();
      if (io_.micro() == 0 || to_cpu) rs.memory.push_back({MemCategory::grad_shards, shard, false, Pool::reduce_scatter});
      if (io_.micro() == 0 && !to_cpu) shard_frees_.push_back({MemCategory::grad_shards, -shard, true, Pool::reduce_scatter});
      const int id = issue(std::move(rs));
      g_.add_edge(producer, id, EdgeKind::data);
      reductions_.push_back(id);
      if (to_cpu) {
        // The reduced partition to the fp32 gradient buffer in pinned CPU memory (allocated once).
        Op d2h = make_op(OpKind::host_copy, Stream::d2h, fmt::format("D2H bucket ({:.0f}M params)", bucket_numel_ / 1e6), -1);
        d2h.work.pcie_bytes = bucket_numel_ / plan_.shard_group * plan_.reduce_bytes;
        d2h.memory.push_back({MemCategory::grad_shards, -shard, true, Pool::reduce_scatter});
        g_.add_edge(id, issue(std::move(d2h)), EdgeKind::data);
      }
    }
    bucket_numel_ = numel;
  }

  [[nodiscard]] std::int64_t shard_numel() const {
    std::int64_t shard = 0;
    for (const auto& u : plan_.units) shard += u.shard_numel;
    return shard;
  }
  void optimizer(int step) {
    const std::int64_t shard = shard_numel();
    if (offload_.optimizer_offloaded()) {
      last_optimizer_ = offload_.optimizer_step(step, shard, io_.last(Stream::d2h), io_.last(Stream::reduce_scatter));
    } else {
      // Adam on the fp32 partition, then the 16-bit partition is refreshed from it (read 4, write 2).
      Op op = make_op(OpKind::optimizer, Stream::compute, fmt::format("optimizer step {}", step), -1);
      op.memory = shard_frees_;
      std::vector<double> unit_params;
      for (const auto& u : plan_.units) unit_params.push_back(static_cast<double>(u.shard_numel));
      add_optimizer_step(op, cfg_, unit_params, plan_.master_bytes, static_cast<double>(shard) * (4.0 + plan_.param_bytes));
      shard_frees_.clear();
      const int id = issue(std::move(op));
      g_.add_edge(io_.last(Stream::reduce_scatter), id, EdgeKind::data);
      last_optimizer_ = id;
    }
    reductions_.clear();
    fetches_.clear();
  }

  void fill_info() {
    GraphInfo& info = g_.info;
    info.scenario = cfg_.name;
    info.world_size = plan_.world_size;
    info.gpus_per_node = cfg_.cluster.topology.node.gpus;
    info.shard_group = plan_.shard_group;
    info.replicate_group = 1;
    info.steps = steps_;
    info.micro_steps = static_cast<int>(cfg_.training.grad_accum);
    info.tokens_per_micro_step = static_cast<double>(batch_.tokens());
    const std::int64_t shard = shard_numel();
    std::int64_t persistent = 0;
    for (const auto& u : plan_.units) persistent += u.persistent_numel;
    // The reduction bucket (contiguous gradients), allocated once.
    const double bucket = static_cast<double>(z_.reduce_bucket_size) * plan_.grad_bytes;
    std::vector<MemEffect>& m = info.initial_memory;
    m = {{MemCategory::unsharded_params, static_cast<double>(persistent) * plan_.param_bytes, false, Pool::compute},
         {MemCategory::reduce_buffers, bucket, false, Pool::compute}};
    offload_.model_state(m, shard);
    held_before_step(m, plan_, batch_);
    info.nvme_bytes = offload_.nvme_bytes(shard);
  }

  const fsdp::Plan& plan_;
  const config::ScenarioConfig& cfg_;
  const config::Zero3Config& z_;
  int steps_;
  Batch batch_;
  StepGraph g_;
  Issuer io_{g_};
  std::vector<int> order_;     // units with partitioned parameters, in forward order
  std::vector<int> position_;  // unit -> index in order_
  std::vector<int> available_;
  std::int64_t live_numel_ = 0;
  std::optional<CpuMemoryView> memory_;  // from build(), once the initial memory is known
  Zero3Offload offload_{cfg_, plan_, g_, [this](Op op) { return issue(std::move(op)); }};
  std::deque<int> fetches_;
  std::deque<int> reductions_;
  double bucket_numel_ = 0;
  std::vector<MemEffect> shard_frees_;
  int last_optimizer_ = -1;
};

}  // namespace

StepGraph build_zero3_graph(const model::Model& model, const fsdp::Plan& plan, const config::ScenarioConfig& scenario, int steps,
                            const Deadline& deadline) {
  (void)model;
  Zero3Builder builder(plan, scenario, steps);
  builder.set_deadline(deadline);
  return builder.build();
}

}  // namespace shardsim::graph

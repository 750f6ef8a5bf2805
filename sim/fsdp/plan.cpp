#include "fsdp/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace shardsim::fsdp {
namespace {

std::string join_path(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

std::string unit_name(const std::vector<std::string>& modules) {
  if (modules.size() == 1) return modules.front();
  // layers.0 .. layers.3 -> layers.0-3
  const std::string& first = modules.front();
  const std::string& last = modules.back();
  const auto dot = last.rfind('.');
  return fmt::format("{}-{}", first, dot == std::string::npos ? last : last.substr(dot + 1));
}

// Walks the module tree, giving each parameter to the innermost unit that wraps it.
class Assigner {
 public:
  // version 1: flat parameters (padded later); 2: per-parameter dim-0 padding; 3: DeepSpeed's
  // per-parameter flat partitions, with small parameters persistent.
  Assigner(std::vector<Unit>& units, const std::map<std::string, int>& unit_of_module, int version, int group,
           std::int64_t persistence_threshold)
      : units_(units), unit_of_module_(unit_of_module), version_(version), group_(group), threshold_(persistence_threshold) {}

  void walk(const model::Module& m, const std::string& path, int owner) {
    if (auto it = unit_of_module_.find(path); it != unit_of_module_.end() && it->second != owner) {
      units_[static_cast<std::size_t>(it->second)].parent = owner;
      owner = it->second;
    }
    Unit& u = units_[static_cast<std::size_t>(owner)];
    for (const auto& p : m.params) {
      u.numel += p.numel();
      ++u.tensors;
      if ((m.type == "Linear" && p.name == "weight") || (m.type == "MultiheadAttention" && p.name == "in_proj_weight")) {
        u.gemm_weight_numel += p.numel();
        ++u.gemm_weights;
      }
      if (version_ == 2) {
        u.padded_numel += dim0_padded_numel(p.shape, group_);
        u.optimizer_tensors.push_back(dim0_padded_numel(p.shape, group_) / group_);
      }
      if (version_ == 2 && p.float8_all_gather) {
        u.float8_padded_numel += dim0_padded_numel(p.shape, group_);
        ++u.float8_weights;
      }
      if (version_ == 3) {
        u.padded_numel += flat_padded_numel(p.numel(), group_);
        if (p.numel() < threshold_) u.persistent_numel += p.numel();
      }
    }
    for (const auto& c : m.children) walk(c, join_path(path, c.name), owner);
  }

 private:
  std::vector<Unit>& units_;
  const std::map<std::string, int>& unit_of_module_;
  int version_;
  int group_;
  std::int64_t threshold_;
};

// DeepSpeed ZeRO-3 registers hooks on every module and fetches each module's own parameters.
std::vector<std::vector<std::string>> modules_with_params(const model::Module& root) {
  std::vector<std::vector<std::string>> out;
  model::for_each_module(root, "", [&](const model::Module& m, const std::string& path) {
    if (!path.empty() && !m.params.empty()) out.push_back({path});
  });
  return out;
}

// Follows the forward program, cutting it into segments of one unit each and recording where
// each unit is entered and left.
class Tracer {
 public:
  Tracer(Plan& plan, const std::map<std::string, int>& unit_of_module) : plan_(plan), unit_of_module_(unit_of_module) {
    for (const auto& u : plan.units) {
      if (!u.is_root) first_module_[u.modules.front()] = u.index, last_module_[u.modules.back()] = u.index;
    }
  }

  void run(const model::Module& root) {
    plan_.forward.push_back(TraceEvent{TraceEvent::Kind::enter, 0, -1});
    visit(root, "", 0, false);
    plan_.forward.push_back(TraceEvent{TraceEvent::Kind::exit, 0, -1});
  }

 private:
  void visit(const model::Module& m, const std::string& path, int unit, bool in_block) {
    if (auto it = first_module_.find(path); it != first_module_.end()) {
      plan_.forward.push_back(TraceEvent{TraceEvent::Kind::enter, it->second, -1});
      current_ = -1;
    }
    if (auto it = unit_of_module_.find(path); it != unit_of_module_.end()) unit = it->second;
    if (m.is_block) {
      in_block = true;
      ++block_;
    }
    loss_ = m.type == "CrossEntropyLoss";
    // Blocks and modules that keep activations get segments of their own, so that their memory
    // is allocated and freed at their own ops (the loss's buffers are not the output layer's).
    const bool keeps =
        std::any_of(m.activation.saved.begin(), m.activation.saved.end(), [](double b) { return b > 0; }) || m.activation.held_by_loop > 0;
    if (m.is_block || keeps) current_ = -1;
    pending_numel_ += m.own_numel();
    for (std::size_t i = 0; i < pending_.saved.size(); ++i) {
      pending_.saved[i] += m.activation.saved[i];
      pending_.backward_transient[i] += m.activation.backward_transient[i];
    }
    pending_.held_by_loop += m.activation.held_by_loop;
    pending_.forward_transient += m.activation.forward_transient;
    pending_.input_freed_after += m.activation.input_freed_after;
    pending_.largest_tensor = std::max(pending_.largest_tensor, m.activation.largest_tensor);
    for (const auto& item : m.program) {
      if (item.child >= 0) {
        const auto& c = m.children[static_cast<std::size_t>(item.child)];
        visit(c, join_path(path, c.name), unit, in_block);
      } else {
        append(item.kernel, unit, in_block, path);
      }
    }
    if (auto it = last_module_.find(path); it != last_module_.end()) {
      plan_.forward.push_back(TraceEvent{TraceEvent::Kind::exit, it->second, -1});
      current_ = -1;
    }
  }

  void append(const model::Kernel& k, int unit, bool in_block, const std::string& path) {
    if (k.kind == model::KernelKind::tp_comm) {
      // A collective between compute segments: a segment of its own that takes no activations or
      // parameters; the compute after it starts a new segment.
      Segment s;
      s.unit = unit;
      s.in_block = in_block;
      s.name = fmt::format("{} {}", path, k.name);
      s.block = in_block ? block_ : -1;
      s.tp_comm = true;
      s.kernels.push_back(k);
      plan_.segments.push_back(std::move(s));
      plan_.forward.push_back(TraceEvent{TraceEvent::Kind::compute, unit, static_cast<int>(plan_.segments.size()) - 1});
      current_ = -1;
      return;
    }
    if (current_ < 0 || plan_.segments[static_cast<std::size_t>(current_)].unit != unit ||
        plan_.segments[static_cast<std::size_t>(current_)].in_block != in_block) {
      Segment s;
      s.unit = unit;
      s.in_block = in_block;
      s.name = unit == 0 ? path.substr(0, path.find('.')) : plan_.units[static_cast<std::size_t>(unit)].name;
      s.is_loss = loss_;
      s.block = in_block ? block_ : -1;
      plan_.segments.push_back(std::move(s));
      current_ = static_cast<int>(plan_.segments.size()) - 1;
      plan_.forward.push_back(TraceEvent{TraceEvent::Kind::compute, unit, current_});
    }
    Segment& s = plan_.segments[static_cast<std::size_t>(current_)];
    s.kernels.push_back(k);
    for (std::size_t i = 0; i < pending_.saved.size(); ++i) {
      s.activation.saved[i] += pending_.saved[i];
      s.activation.backward_transient[i] += pending_.backward_transient[i];
    }
    s.activation.held_by_loop += pending_.held_by_loop;
    s.activation.forward_transient += pending_.forward_transient;
    s.activation.input_freed_after += pending_.input_freed_after;
    s.activation.largest_tensor = std::max(s.activation.largest_tensor, pending_.largest_tensor);
    pending_ = {};
    s.numel += pending_numel_;
    pending_numel_ = 0;
  }

  Plan& plan_;
  const std::map<std::string, int>& unit_of_module_;
  std::map<std::string, int> first_module_;
  std::map<std::string, int> last_module_;
  int current_ = -1;
  model::Activation pending_;
  std::int64_t pending_numel_ = 0;
  bool loss_ = false;  // visiting the loss module
  int block_ = -1;     // index of the current (or last) block
};

// FSDP2's reshard_after_forward (bool or int) and torchtitan's habit of keeping the last block
// unsharded, on top of what the sharding strategy implies. With pipeline parallelism torchtitan's
// default keeps every unit unsharded after forward (reshard_after_forward = not pp_enabled), so
// that the stage does not all-gather again for each micro-batch. The config layer's warnings
// follow the same rule (config::keeps_every_unit).
void apply_reshard_settings(Plan& plan, const config::FsdpConfig& fsdp, int pp) {
  if (!fsdp.reshard_after_forward && pp > 1 && fsdp.version == 2 && plan.traits.shards_params) {
    for (auto& u : plan.units) u.reshard_after_forward = false;
  }
  if (fsdp.reshard_after_forward && plan.traits.shards_params) {
    const int v = fsdp.reshard_after_forward->value;
    const Location& where = fsdp.reshard_after_forward->where;
    if (v > 1) {
      if (v >= plan.shard_group || plan.shard_group % v != 0) {
        throw ConfigError(
            where, "fsdp.reshard_after_forward",
            fmt::format("expected true, false or a divisor of the shard group ({} ranks) below it; got {}", plan.shard_group, v));
      }
      plan.reshard_group = v;
    }
    for (auto& u : plan.units) {
      if (u.is_root) continue;
      u.reshard_after_forward = v != 0;
      u.reshard_to = v > 1 ? v : 0;
    }
  }
  if (fsdp.keep_last_unit_unsharded) {
    // The last unit to finish forward is the first to run backward.
    for (auto it = plan.forward.rbegin(); it != plan.forward.rend(); ++it) {
      if (it->kind == TraceEvent::Kind::exit && !plan.units[static_cast<std::size_t>(it->unit)].is_root) {
        plan.units[static_cast<std::size_t>(it->unit)].reshard_after_forward = false;
        plan.units[static_cast<std::size_t>(it->unit)].reshard_to = 0;
        break;
      }
    }
  }
}

}  // namespace

std::int64_t flat_padded_numel(std::int64_t numel, int group) {
  const std::int64_t chunk = (numel + group - 1) / group;
  return chunk * group;
}

std::int64_t dim0_padded_numel(const std::vector<std::int64_t>& shape, int group) {
  if (shape.empty()) return group;  // a scalar is sharded as a 1-element dim 0
  std::int64_t rest = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) rest *= shape[i];
  const std::int64_t rows = (shape[0] + group - 1) / group * group;
  return rows * rest;
}

std::int64_t Plan::total_numel() const {
  std::int64_t n = 0;
  for (const auto& u : units) n += u.numel;
  return n;
}

std::int64_t Plan::max_unit_padded_numel() const {
  std::int64_t n = 0;
  for (const auto& u : units) n = std::max(n, u.padded_numel);
  return n;
}

Plan make_plan(const model::Model& model, const config::ScenarioConfig& scenario, const WrapPolicyRegistry& policies) {
  const auto& fsdp = scenario.fsdp;
  Plan plan;
  plan.world_size = static_cast<int>(scenario.world_size());
  plan.traits = sharding_traits(plan.world_size == 1 ? config::Sharding::no_shard : fsdp.sharding);
  const int gpus_per_node = scenario.cluster.topology.node.gpus;
  // Data parallelism spans the ranks with the same tensor-parallel index (groups.hpp's layout).
  plan.tp_group = scenario.parallelism.tp;
  plan.pp_group = scenario.parallelism.pp;
  const int dp = plan.world_size / plan.tp_group / plan.pp_group;
  if (plan.traits.shards_optimizer && !plan.traits.shards_params) {
    plan.shard_group = dp;  // what the optimizer state is sharded over
    plan.replicate_group = 1;
  } else if (!plan.traits.shards_params) {
    plan.shard_group = 1;
    plan.replicate_group = dp;
  } else if (plan.traits.hybrid) {
    plan.shard_group = std::min(gpus_per_node / plan.tp_group, dp);
    plan.replicate_group = dp / plan.shard_group;
  } else {
    plan.shard_group = dp;
    plan.replicate_group = 1;
  }
  plan.master_bytes = config::dtype_bytes(scenario.training.dtype);
  plan.param_bytes = fsdp.mixed_precision.enabled ? config::dtype_bytes(fsdp.mixed_precision.param) : plan.master_bytes;
  // Without mixed precision gradients are reduced in the dtype parameters are stored in.
  plan.reduce_dtype = fsdp.mixed_precision.enabled ? fsdp.mixed_precision.reduce : scenario.training.dtype;
  plan.reduce_bytes = config::dtype_bytes(plan.reduce_dtype);
  plan.grad_bytes = plan.param_bytes;

  const bool zero3 = fsdp.sharding == config::Sharding::zero3;
  auto policy = policies.create(fsdp.wrap, model.root);
  Unit root;
  root.name = "root";
  root.modules = {""};
  root.is_root = true;
  // FSDP1 never reshards the root after forward, nor fully_shard before pytorch#154704 or unless told to.
  root.reshard_after_forward = fsdp.version == 2 && fsdp.reshard_root_after_forward;
  plan.units.push_back(root);
  std::map<std::string, int> unit_of_module{{"", 0}};
  for (auto& group : zero3 ? modules_with_params(model.root) : policy->select(model.root)) {
    Unit u;
    u.index = static_cast<int>(plan.units.size());
    u.name = unit_name(group);
    u.modules = std::move(group);
    u.reshard_after_forward = plan.traits.reshard_after_forward;
    for (const auto& m : u.modules) unit_of_module[m] = u.index;
    plan.units.push_back(std::move(u));
  }

  Assigner(plan.units, unit_of_module, zero3 ? 3 : fsdp.version, plan.shard_group, fsdp.zero3.param_persistence_threshold)
      .walk(model.root, "", 0);
  for (auto& u : plan.units) {
    if (!zero3 && (fsdp.version == 1 || !plan.traits.shards_params)) u.padded_numel = flat_padded_numel(u.numel, plan.shard_group);
    u.shard_numel = u.padded_numel / plan.shard_group;
    if (zero3 || fsdp.version == 1 || !plan.traits.shards_params)
      u.optimizer_tensors = {plan.traits.shards_optimizer ? u.shard_numel : u.numel};
  }
  Tracer(plan, unit_of_module).run(model.root);
  apply_reshard_settings(plan, fsdp, plan.pp_group);
  return plan;
}

}  // namespace shardsim::fsdp

#include "fsdp/model_state.hpp"

namespace shardsim::fsdp {

int optimizer_states(config::Optimizer o) {
  switch (o) {
    case config::Optimizer::adam:
    case config::Optimizer::adamw:
      return 2;
    case config::Optimizer::sgd:
      return 0;
  }
  return 2;
}

bool fused_optimizer(const config::ScenarioConfig& s) {
  switch (s.training.optimizer_impl.value) {
    case config::OptimizerImpl::foreach:
      return false;
    case config::OptimizerImpl::fused:
      return true;
    case config::OptimizerImpl::automatic:
      break;
  }
  // DeepSpeed's and Megatron-LM's own optimizers are apex's / their FusedAdam.
  return s.fsdp.sharding == config::Sharding::zero3 || s.fsdp.megatron_grad_buffer();
}

double optimizer_bytes_per_param(config::Optimizer o, bool fused, int storage_bytes) {
  const double scale = storage_bytes / 4.0;
  constexpr double clipping = 12.0;
  switch (o) {
    case config::Optimizer::adamw:
      return ((fused ? 28.0 : 80.0) + clipping) * scale;
    case config::Optimizer::adam:  // weight_decay 0 by default: no decay pass
      return ((fused ? 28.0 : 72.0) + clipping) * scale;
    case config::Optimizer::sgd:
      return (12.0 + clipping) * scale;  // p -= lr * g, fused or not
  }
  return (80.0 + clipping) * scale;
}

double optimizer_temporary_bytes_per_param(config::Optimizer o, bool fused, int storage_bytes) {
  if (fused || o == config::Optimizer::sgd) return 0;
  return storage_bytes;
}

ModelStateBytes model_state_bytes(double params, int shard_ranks, int storage_bytes, config::Optimizer o) {
  const double per_rank = params / shard_ranks;
  ModelStateBytes b;
  b.params = per_rank * storage_bytes;
  b.grads = per_rank * storage_bytes;
  b.optimizer = per_rank * storage_bytes * optimizer_states(o);
  return b;
}

}  // namespace shardsim::fsdp

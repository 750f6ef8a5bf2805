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

double optimizer_bytes_per_param(config::Optimizer o, int storage_bytes) {
  const double scale = storage_bytes / 4.0;
  switch (o) {
    case config::Optimizer::adam:
    case config::Optimizer::adamw:
      return (80.0 + 12.0) * scale;
    case config::Optimizer::sgd:
      return (12.0 + 12.0) * scale;  // p -= lr * g, plus clipping
  }
  return 92.0 * scale;
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

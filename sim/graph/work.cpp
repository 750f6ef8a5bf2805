#include "graph/work.hpp"

#include <algorithm>
#include <cmath>

#include "fsdp/model_state.hpp"
#include "model/float8.hpp"

namespace shardsim::graph {
namespace {

// The type of a Float8Linear's GEMMs by role (model/float8.hpp).
enum class GemmRole { output, grad_input, grad_weight };
GemmType gemm_type(const model::Kernel& k, GemmRole role) {
  switch (k.float8) {
    case model::Float8Recipe::none:
      return GemmType::high;
    case model::Float8Recipe::tensorwise:
      return GemmType::fp8;
    case model::Float8Recipe::rowwise:
      return GemmType::fp8_rowwise;
    case model::Float8Recipe::rowwise_with_gw_hp:
      return role == GemmRole::grad_weight ? GemmType::high : GemmType::fp8_rowwise;
    case model::Float8Recipe::mxfp8:
      return GemmType::mxfp8;
  }
  return GemmType::high;
}

// A Float8Linear's GEMM: torchao's configs (Float8LinearConfig, every recipe) accumulate the
// output GEMM fast and the two gradient GEMMs precisely (use_fast_accum=False). MXFP8 GEMMs have
// no such switch.
Gemm linear_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const model::Kernel& kernel, GemmRole role) {
  const GemmType type = gemm_type(kernel, role);
  const bool scaled = type == GemmType::fp8 || type == GemmType::fp8_rowwise;
  return Gemm{m, n, k, type, scaled && role != GemmRole::output};
}

// training.attention: unfused (model/attention_impl.hpp): per sequence and head, the scores'
// two batched GEMMs (rows stacked over sequences and heads) and the softmax and dropout kernels
// over its s x s elements.
void add_unfused_attention(Work& w, const model::Kernel& k, const Batch& b, bool backward) {
  const std::int64_t s = b.seq_len;
  const std::int64_t rows = b.sequences * k.heads * s;
  const std::int64_t d = k.head_dim;
  const double a = k.score_bytes;
  const double scores = static_cast<double>(rows) * static_cast<double>(s);
  const bool dropout = k.dropout > 0;
  if (!backward) {
    w.gemms.push_back(Gemm{rows, s, d});  // S = Q K^T
    w.gemms.push_back(Gemm{rows, d, s});  // O = P V
    w.memory_bytes += (2 * a + (dropout ? 2 * a + 1 : 0)) * scores;
    w.launches += 3 + (dropout ? 1 : 0);
  } else {
    w.gemms.push_back(Gemm{rows, s, d});  // dP = dO V^T
    w.gemms.push_back(Gemm{rows, d, s});  // dV = P^T dO
    w.gemms.push_back(Gemm{rows, d, s});  // dQ = dS K
    w.gemms.push_back(Gemm{rows, d, s});  // dK = dS^T Q
    w.memory_bytes += (3 * a + (dropout ? 2 * a + 1 : 0)) * scores;
    w.launches += 5 + (dropout ? 1 : 0);
  }
}

}  // namespace

std::int64_t micro_batch_sequences(const config::ScenarioConfig& s) {
  const config::ParallelismConfig& p = s.parallelism;
  if (p.pp <= 1) return s.training.micro_batch;
  return p.pp_microbatches > 0 ? s.training.micro_batch / p.pp_microbatches : 1;
}

Gemm forward_gemm(const model::Kernel& k, const Batch& b) {
  return linear_gemm(b.tokens(), k.n, k.k, k, GemmRole::output);
}

Gemm grad_input_gemm(const model::Kernel& k, const Batch& b) {
  return linear_gemm(b.tokens(), k.k, k.n, k, GemmRole::grad_input);  // dX = dY W
}

void add_forward_work(Work& w, const model::Kernel& k, const Batch& b, bool casts) {
  switch (k.kind) {
    case model::KernelKind::matmul: {
      w.gemms.push_back(forward_gemm(k, b));
      w.launches += 1;
      if (casts) {
        const model::Float8Casts c = model::float8_casts(k, b.tokens());
        w.memory_bytes += c.forward_bytes;
        w.column_cast_bytes += c.forward_column_bytes;
        w.launches += c.forward_launches;
      }
      break;
    }
    case model::KernelKind::attention:
      if (k.unfused) {
        add_unfused_attention(w, k, b, false);
        break;
      }
      w.attention.push_back(AttentionCall{b.sequences, b.seq_len, k.heads, k.kv_heads, k.head_dim, k.causal, false, b.cp, 1, k.window});
      w.launches += 1;
      break;
    case model::KernelKind::memory:
      w.memory_bytes += k.bytes_per_token * static_cast<double>(b.tokens());
      w.launches += k.launches;
      break;
    case model::KernelKind::tp_comm:  // a collective, not compute (the builder issues it)
      break;
  }
}

void add_backward_work(Work& w, const model::Kernel& k, const Batch& b, bool grad_input, bool grad_weight, bool casts) {
  switch (k.kind) {
    case model::KernelKind::matmul: {
      if (grad_input) w.gemms.push_back(grad_input_gemm(k, b));
      if (grad_weight) w.gemms.push_back(linear_gemm(k.n, k.k, b.tokens(), k, GemmRole::grad_weight));  // dW = dY^T X
      w.launches += (grad_input ? 1 : 0) + (grad_weight ? 1 : 0);
      if (casts) {
        const model::Float8Casts c = model::float8_casts(k, b.tokens());
        w.memory_bytes += c.backward_bytes;
        w.column_cast_bytes += c.backward_column_bytes;
        w.launches += c.backward_launches;
      }
      break;
    }
    case model::KernelKind::attention:
      if (!grad_input) break;  // no weights: all of it is input gradients
      if (k.unfused) {
        add_unfused_attention(w, k, b, true);
        break;
      }
      w.attention.push_back(AttentionCall{b.sequences, b.seq_len, k.heads, k.kv_heads, k.head_dim, k.causal, true, b.cp, 1, k.window});
      w.launches += 1;
      break;
    case model::KernelKind::memory:
      if (!grad_input) break;
      w.memory_bytes += k.bytes_per_token * k.backward_bytes_factor * static_cast<double>(b.tokens());
      w.launches += 2 * k.launches;
      break;
    case model::KernelKind::tp_comm:
      break;
  }
}

// Per-op selective checkpointing (torchtitan's save list) saves every second aten.mm output; a
// Float8Linear's matmul is aten._scaled_mm, which the list does not name, so all of them are
// recomputed (torchtitan parallelize_llama.py _save_list, 2024-2025). Under torch.compile the
// partitioner keeps their float8 inputs instead (pytorch/pytorch#128730), so only the GEMM reruns.
bool recomputed_in_backward(const model::Kernel& k, model::AcMode ac) {
  switch (ac) {
    case model::AcMode::none:
      return false;
    case model::AcMode::selective:
      return k.recomputed_by_selective || (k.kind == model::KernelKind::matmul && k.float8 != model::Float8Recipe::none);
    case model::AcMode::full:
      return true;
  }
  return false;
}

// Full checkpointing reruns the block's casts too; eager selective checkpointing recasts.
bool recomputes_casts(const model::Kernel& k, model::AcMode ac) {
  return ac == model::AcMode::full || !k.float8_fused_casts;
}

bool collective_recomputed(const model::Kernel& k, model::AcMode ac) {
  return ac == model::AcMode::full || (ac == model::AcMode::selective && k.tp_forward == model::TpComm::all_gather);
}

model::AcMode checkpoint_mode(const fsdp::Segment& s, const config::TrainingConfig& t) {
  if (!s.in_block) return model::AcMode::none;
  switch (t.activation_checkpointing) {
    case config::ActivationCheckpointing::none:
      return model::AcMode::none;
    case config::ActivationCheckpointing::selective:
      return model::AcMode::selective;
    case config::ActivationCheckpointing::full:
      return model::AcMode::full;
    case config::ActivationCheckpointing::blocks:
      return s.block % t.checkpoint_every == 0 ? model::AcMode::full : model::AcMode::none;
  }
  return model::AcMode::none;
}

double activation_bytes(const std::array<double, 3>& per_mode, model::AcMode mode, const Batch& b) {
  return per_mode[static_cast<std::size_t>(mode)] * static_cast<double>(b.tokens());
}

void hold_loop_output(Op& op, const fsdp::Segment& s, const Batch& b) {
  const double held = s.activation.held_by_loop * static_cast<double>(b.tokens());
  if (held <= 0) return;
  op.memory.push_back({MemCategory::loss, held, false, Pool::compute});
  op.memory.push_back({MemCategory::loss, -held, true, Pool::compute});
}

void forward_memory(Op& op, const fsdp::Segment& s, double saved, const Batch& b, bool input_held) {
  const MemCategory cat = s.is_loss ? MemCategory::loss : MemCategory::activations;
  const double tokens = static_cast<double>(b.tokens());
  const double input = input_held ? 0.0 : s.activation.input_freed_after * tokens;
  const double transient = s.activation.forward_transient * tokens;
  const auto own = [&](double bytes, bool at_end, int tensor) {
    MemEffect m{cat, bytes, at_end, Pool::compute};
    m.tensor = tensor;  // freed by this op, beside kept tensors of the same size
    op.memory.push_back(m);
  };
  if (input > 0) own(input, false, kOpTensors - 1);
  if (transient > 0) own(transient, false, kOpTensors - 2);
  if (saved > 0) op.memory.push_back({cat, saved, false, Pool::compute});
  if (transient > 0) own(-transient, true, kOpTensors - 2);
  if (input > 0) own(-input, true, kOpTensors - 1);
  hold_loop_output(op, s, b);
}

void backward_transient(Op& op, const fsdp::Segment& s, double bytes, const Batch& b) {
  if (bytes <= 0) return;
  const MemCategory cat = s.is_loss ? MemCategory::loss : MemCategory::activations;
  // Tensors no larger than its largest (the rest of kOpTensors' numbers left to other effects).
  const double largest = s.activation.largest_tensor * static_cast<double>(b.tokens());
  const int pieces = largest > 0 ? std::clamp(static_cast<int>(std::ceil(bytes / largest - 1e-9)), 1, kOpTensors - 2) : 1;
  const double piece = bytes / pieces;
  for (int end = 0; end < 2; ++end) {
    for (int i = 0; i < pieces; ++i) {
      MemEffect m{cat, end ? -piece : piece, end == 1, Pool::compute};
      m.tensor = i;  // freed by this op, beside kept tensors of the same size
      op.memory.push_back(m);
    }
  }
}

void held_before_step(std::vector<MemEffect>& initial, const fsdp::Plan& plan, const Batch& b) {
  for (const auto& s : plan.segments) {
    if (s.activation.held_by_loop > 0)
      initial.push_back({MemCategory::loss, s.activation.held_by_loop * static_cast<double>(b.tokens()), false, Pool::compute});
  }
}

Work forward_work(const fsdp::Segment& s, const Batch& b) {
  Work w;
  for (const auto& k : s.kernels) add_forward_work(w, k, b);
  return w;
}

Work backward_work(const fsdp::Segment& s, const Batch& b, model::AcMode ac, BackwardPart part) {
  Work w;
  for (const auto& k : s.kernels) {
    if (part != BackwardPart::weight && recomputed_in_backward(k, ac)) add_forward_work(w, k, b, recomputes_casts(k, ac));
  }
  const bool input = part != BackwardPart::weight;
  const bool weight = part != BackwardPart::input;
  for (auto it = s.kernels.rbegin(); it != s.kernels.rend(); ++it) add_backward_work(w, *it, b, input, weight, input);
  return w;
}

Work memory_work(double bytes, int launches) {
  Work w;
  w.memory_bytes = bytes;
  w.launches = launches;
  return w;
}

void add_optimizer_step(Op& op, const config::ScenarioConfig& s, const std::vector<double>& unit_params, int storage_bytes,
                        double extra_bytes) {
  const bool fused = fsdp::fused_optimizer(s);
  const config::Optimizer o = s.training.optimizer;
  double params = 0;
  for (double p : unit_params) params += p;
  const int launches = (fused ? 1 : 8) * static_cast<int>(unit_params.size());
  op.work = memory_work(params * fsdp::optimizer_bytes_per_param(o, fused, storage_bytes) + extra_bytes, launches);
  const double per_param = fsdp::optimizer_temporary_bytes_per_param(o, fused, storage_bytes);
  if (per_param <= 0) return;
  for (double p : unit_params) {
    if (p > 0) op.memory.push_back({MemCategory::optimizer_state, p * per_param, false});
  }
  for (double p : unit_params) {
    if (p > 0) op.memory.push_back({MemCategory::optimizer_state, -p * per_param, true});
  }
}

}  // namespace shardsim::graph

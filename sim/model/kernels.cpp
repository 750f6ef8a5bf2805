#include "model/kernels.hpp"

namespace shardsim::model {

Kernel matmul_kernel(std::string name, std::int64_t n, std::int64_t k) {
  Kernel x;
  x.name = std::move(name);
  x.kind = KernelKind::matmul;
  x.n = n;
  x.k = k;
  return x;
}

Kernel memory_kernel(std::string name, double bytes_per_token, int launches, double backward_factor) {
  Kernel x;
  x.name = std::move(name);
  x.kind = KernelKind::memory;
  x.bytes_per_token = bytes_per_token;
  x.launches = launches;
  x.backward_bytes_factor = backward_factor;
  return x;
}

Kernel attention_kernel(std::string name, int heads, int kv_heads, int head_dim, bool causal, std::int64_t window) {
  Kernel x;
  x.name = std::move(name);
  x.kind = KernelKind::attention;
  x.heads = heads;
  x.kv_heads = kv_heads;
  x.head_dim = head_dim;
  x.causal = causal;
  x.window = window;
  return x;
}

Kernel tp_comm_kernel(std::string name, TpComm forward, TpComm backward, double bytes_per_token) {
  Kernel x;
  x.name = std::move(name);
  x.kind = KernelKind::tp_comm;
  x.tp_forward = forward;
  x.tp_backward = backward;
  x.bytes_per_token = bytes_per_token;
  x.launches = 0;
  return x;
}

bool reorders(const TensorParallel& tp) {
  return tp.sp() && !tp.sequence_leading;
}

Kernel tp_enter(std::string name, const TensorParallel& tp, double bytes_per_token, int readers, bool compiled) {
  Kernel k = tp_comm_kernel(std::move(name), tp.sp() ? TpComm::all_gather : TpComm::none,
                            tp.sp() ? TpComm::reduce_scatter : TpComm::all_reduce, bytes_per_token);
  if (tp.gather_per_linear) {
    k.tp_backward_copies = readers;
    k.tp_forward_copies = compiled ? 1 : readers;
  }
  k.tp_forward_reorders = reorders(tp);
  // The gradients of the linears reading the input are summed before their reduce-scatter;
  // compiled, Inductor writes that sum straight into the reordered layout (a pointwise cat).
  const bool summed = readers > 1 && !tp.gather_per_linear;
  k.tp_backward_reorders = reorders(tp) && !(compiled && summed);
  return k;
}

Kernel tp_leave(std::string name, const TensorParallel& tp, double bytes_per_token) {
  Kernel k = tp_comm_kernel(std::move(name), tp.sp() ? TpComm::reduce_scatter : TpComm::all_reduce,
                            tp.sp() ? TpComm::all_gather : TpComm::none, bytes_per_token);
  k.tp_forward_reorders = reorders(tp);
  k.tp_backward_reorders = reorders(tp);
  return k;
}

void scale_memory_kernels(Module& m, double factor) {
  for (auto& item : m.program) {
    if (item.child < 0 && item.kernel.kind == KernelKind::memory) item.kernel.bytes_per_token *= factor;
  }
}

void fuse_memory_kernels(Module& m, double bytes_per_token) {
  bool first = true;
  std::vector<ProgramItem> program;
  for (auto& item : m.program) {
    if (item.child >= 0 || item.kernel.kind != KernelKind::memory) {
      program.push_back(std::move(item));
    } else if (first) {
      item.kernel.bytes_per_token = bytes_per_token;
      item.kernel.launches = 1;
      program.push_back(std::move(item));
      first = false;
    }
  }
  m.program = std::move(program);
}

int add_child(Module& parent, Module child) {
  parent.children.push_back(std::move(child));
  const int index = static_cast<int>(parent.children.size()) - 1;
  parent.program.push_back(ProgramItem{index, Kernel{}});
  return index;
}

void add_kernel(Module& parent, Kernel k) {
  parent.program.push_back(ProgramItem{-1, std::move(k)});
}

Module linear(std::string name, std::int64_t in, std::int64_t out, bool bias) {
  return sharded_linear(std::move(name), in, out, bias, in, out);
}

Module sharded_linear(std::string name, std::int64_t in, std::int64_t out, bool bias, std::int64_t model_in, std::int64_t model_out) {
  Module m;
  m.type = "Linear";
  m.params.push_back(Param{"weight", {out, in}});
  if (bias) m.params.push_back(Param{"bias", {out}});
  Kernel k = matmul_kernel(name, out, in);
  k.model_n = model_out;
  k.model_k = model_in;
  add_kernel(m, std::move(k));
  m.name = std::move(name);
  return m;
}

Module rms_norm(std::string name, std::int64_t dim, int act_bytes) {
  Module m;
  m.type = "RMSNorm";
  m.params.push_back(Param{"weight", {dim}});
  const auto h = static_cast<double>(dim);
  // x.float() (a+4), pow (4+4), mean (4), x*rsqrt (4+4), type_as (4+a), * weight (a+a)
  add_kernel(m, memory_kernel(name, 28.0 * h + 4.0 * act_bytes * h, 7));
  m.name = std::move(name);
  return m;
}

Module layer_norm(std::string name, std::int64_t dim, int act_bytes) {
  Module m;
  m.type = "LayerNorm";
  m.params.push_back(Param{"weight", {dim}});
  m.params.push_back(Param{"bias", {dim}});
  add_kernel(m, memory_kernel(name, 2.0 * act_bytes * static_cast<double>(dim), 1));
  m.name = std::move(name);
  return m;
}

Module embedding(std::string name, std::int64_t rows, std::int64_t dim, int act_bytes) {
  Module m;
  m.type = "Embedding";
  m.is_embedding = true;
  m.params.push_back(Param{"weight", {rows, dim}});
  // Gather one row per token: read and write a row.
  add_kernel(m, memory_kernel(name, 2.0 * act_bytes * static_cast<double>(dim), 1));
  m.name = std::move(name);
  return m;
}

void add_saved_activation(Module& block, const std::array<double, 3>& delta) {
  for (std::size_t mode = 0; mode < delta.size(); ++mode) {
    block.activation.saved[mode] += delta[mode];
    block.activation.backward_transient[mode] += delta[0] - delta[mode];
  }
}

namespace {
void mark(Module& m, int& matmul_index) {
  for (auto& item : m.program) {
    if (item.child >= 0) {
      mark(m.children[static_cast<std::size_t>(item.child)], matmul_index);
      continue;
    }
    Kernel& k = item.kernel;
    if (k.kind == KernelKind::matmul) {
      k.recomputed_by_selective = (matmul_index % 2) == 1;
      ++matmul_index;
    } else if (k.kind == KernelKind::memory) {
      k.recomputed_by_selective = true;
    }
  }
}
}  // namespace

void mark_selective_recompute(Module& block) {
  int matmul_index = 0;
  mark(block, matmul_index);
}

}  // namespace shardsim::model

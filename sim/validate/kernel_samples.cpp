// GEMM and attention samples from a Kineto trace: kernels tied to the operator that launched them
// through their runtime launch's thread and time (kernel_samples.hpp).
#include "validate/kernel_samples.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <climits>
#include <map>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "core/error.hpp"

namespace shardsim::validate {
namespace {

enum class OpForm : std::uint8_t { gemm, attention };

// Where an operator's inputs sit (native_functions.yaml; positions count from 0).
struct OpSignature {
  std::string_view name;
  OpForm form;
  int a = 0, b = 1;        // GEMM: the two matrices
  bool batched = false;    // GEMM: [B,M,K] x [B,K,N]
  int query = 0;           // attention: q; k follows it
  bool seq_major = false;  // attention: q as [B,S,H,D] (flash's own layout) instead of [B,H,S,D]
  int causal = -1;         // attention: position of is_causal in "Concrete Inputs"
  bool backward = false;
  bool fp8 = false;  // GEMM: float8 operands with scales (torch._scaled_mm)
};

constexpr std::array kSignatures{
    OpSignature{"aten::mm", OpForm::gemm, 0, 1},
    OpSignature{"aten::addmm", OpForm::gemm, 1, 2},
    OpSignature{"aten::_addmm_activation", OpForm::gemm, 1, 2},
    OpSignature{"aten::bmm", OpForm::gemm, 0, 1, true},
    OpSignature{"aten::baddbmm", OpForm::gemm, 1, 2, true},
    // _scaled_mm(self, mat2, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum): torchao's float8 GEMMs.
    OpSignature{"aten::_scaled_mm", OpForm::gemm, 0, 1, false, 0, false, -1, false, true},
    OpSignature{"aten::_scaled_dot_product_flash_attention", OpForm::attention, 0, 0, false, 0, false, 4, false},
    OpSignature{"aten::_scaled_dot_product_efficient_attention", OpForm::attention, 0, 0, false, 0, false, 6, false},
    OpSignature{"aten::_scaled_dot_product_cudnn_attention", OpForm::attention, 0, 0, false, 0, false, 6, false},
    OpSignature{"aten::_flash_attention_forward", OpForm::attention, 0, 0, false, 0, true, 8, false},
    OpSignature{"aten::_scaled_dot_product_flash_attention_backward", OpForm::attention, 0, 0, false, 1, false, 11, true},
    OpSignature{"aten::_scaled_dot_product_efficient_attention_backward", OpForm::attention, 0, 0, false, 1, false, 11, true},
    OpSignature{"aten::_scaled_dot_product_cudnn_attention_backward", OpForm::attention, 0, 0, false, 1, false, 14, true},
    OpSignature{"aten::_flash_attention_backward", OpForm::attention, 0, 0, false, 1, true, 11, true},
};

const OpSignature* signature_of(std::string_view name) {
  for (const auto& s : kSignatures) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

// bf16 or fp16, as "Input type" spells them ("c10::BFloat16", "c10::Half").
bool half_precision(const std::vector<std::string>& types, int i) {
  if (i < 0 || static_cast<std::size_t>(i) >= types.size()) return false;
  const std::string& t = types[static_cast<std::size_t>(i)];
  return t.ends_with("BFloat16") || t.ends_with("Half");
}

// float8, e4m3 or e5m2 ("c10::Float8_e4m3fn", "c10::Float8_e5m2"; AMD's fnuz variants too).
bool float8(const std::vector<std::string>& types, int i) {
  if (i < 0 || static_cast<std::size_t>(i) >= types.size()) return false;
  return types[static_cast<std::size_t>(i)].find("Float8_e") != std::string::npos;
}

// One scale for the whole tensor: 0-d, or one element.
bool tensorwise_scale(const ShapedOp& op, int i) {
  if (i < 0 || static_cast<std::size_t>(i) >= op.dims.size()) return false;
  const auto& d = op.dims[static_cast<std::size_t>(i)];
  return std::all_of(d.begin(), d.end(), [](std::int64_t x) { return x == 1; });
}

const std::vector<std::int64_t>* dims_at(const ShapedOp& op, int i, std::size_t rank) {
  if (i < 0 || static_cast<std::size_t>(i) >= op.dims.size()) return nullptr;
  const auto& d = op.dims[static_cast<std::size_t>(i)];
  if (d.size() != rank) return nullptr;
  if (std::any_of(d.begin(), d.end(), [](std::int64_t x) { return x < 1; })) return nullptr;
  return &d;
}

// Why an operator gives no sample; counted into the notes.
class LeftOut {
 public:
  void add(std::string reason) { ++counts_[std::move(reason)]; }
  void write(std::vector<std::string>& notes, const std::string& file) const {
    for (const auto& [reason, n] : counts_)
      notes.push_back(fmt::format("{}: {} operator{} left out: {}", file, n, n == 1 ? "" : "s", reason));
  }

 private:
  std::map<std::string, int> counts_;
};

std::optional<GemmSample> gemm_sample(const ShapedOp& op, const OpSignature& sig, double seconds, LeftOut& left) {
  const std::size_t rank = sig.batched ? 3 : 2;
  const auto* a = dims_at(op, sig.a, rank);
  const auto* b = dims_at(op, sig.b, rank);
  if (a == nullptr || b == nullptr) {
    left.add(fmt::format("{} without {}-D matrix shapes", op.name, rank));
    return std::nullopt;
  }
  const std::size_t o = sig.batched ? 1 : 0;  // the batch dimension comes first
  if ((*a)[o + 1] != (*b)[o] || (sig.batched && (*a)[0] != (*b)[0])) {
    left.add(fmt::format("{} whose matrix shapes do not multiply", op.name));
    return std::nullopt;
  }
  if (sig.fp8) {
    if (!float8(op.types, sig.a) || !float8(op.types, sig.b)) {
      left.add(fmt::format("{} whose operands are not float8", op.name));
      return std::nullopt;
    }
    // The float8 curve calibrate fits is tensorwise's (cuBLASLt's kernel); rowwise and blockwise
    // scales run other kernels, which the simulator keeps at the topology's rates.
    if (!tensorwise_scale(op, sig.a + 2) || !tensorwise_scale(op, sig.b + 2)) {
      left.add(fmt::format("{} with rowwise or blockwise scales (only tensorwise float8 GEMMs are fitted)", op.name));
      return std::nullopt;
    }
  } else if (!half_precision(op.types, sig.a) || !half_precision(op.types, sig.b)) {
    left.add(fmt::format("{} in a dtype other than bf16 / fp16", op.name));
    return std::nullopt;
  }
  GemmSample s;
  if (sig.fp8) {
    // use_fast_accum, _scaled_mm's 8th argument: torchao sets it for the output GEMM alone. A trace
    // that records no scalar leaves it unknown; PyTorch's default is precise accumulation.
    constexpr std::size_t kFastAccum = 7;
    if (kFastAccum >= op.concrete.size() || (op.concrete[kFastAccum] != "True" && op.concrete[kFastAccum] != "False")) {
      left.add(fmt::format("{} whose use_fast_accum is not recorded (\"Concrete Inputs\" position {})", op.name, kFastAccum));
      return std::nullopt;
    }
    s.precision = op.concrete[kFastAccum] == "False" ? GemmPrecision::fp8_precise : GemmPrecision::fp8;
  }
  s.batch = sig.batched ? (*a)[0] : 1;
  s.m = (*a)[o];
  s.k = (*a)[o + 1];
  s.n = (*b)[o + 1];
  s.seconds = seconds;
  return s;
}

std::optional<AttentionSample> attention_sample(const ShapedOp& op, const OpSignature& sig, double seconds, LeftOut& left) {
  const auto* q = dims_at(op, sig.query, 4);
  const auto* k = dims_at(op, sig.query + 1, 4);
  if (q == nullptr || k == nullptr) {
    left.add(fmt::format("{} without 4-D query and key shapes", op.name));
    return std::nullopt;
  }
  const std::size_t seq = sig.seq_major ? 1 : 2;
  const std::size_t heads = sig.seq_major ? 2 : 1;
  if ((*q)[seq] != (*k)[seq]) {
    left.add(fmt::format("{} with query and key of different lengths", op.name));
    return std::nullopt;
  }
  if ((*q)[heads] > INT_MAX || (*k)[heads] > INT_MAX || (*q)[3] > INT_MAX) {
    left.add(fmt::format("{} with more heads or a larger head dimension than an int holds", op.name));
    return std::nullopt;
  }
  const auto c = static_cast<std::size_t>(sig.causal);
  if (c >= op.concrete.size() || (op.concrete[c] != "True" && op.concrete[c] != "False")) {
    left.add(fmt::format("{} whose is_causal is not recorded (\"Concrete Inputs\" position {})", op.name, sig.causal));
    return std::nullopt;
  }
  if (!half_precision(op.types, sig.query)) {
    left.add(fmt::format("{} in a dtype other than bf16 / fp16", op.name));
    return std::nullopt;
  }
  AttentionSample s;
  s.call.batch = (*q)[0];
  s.call.seq = (*q)[seq];
  s.call.heads = static_cast<int>((*q)[heads]);
  s.call.kv_heads = static_cast<int>((*k)[heads]);
  s.call.head_dim = static_cast<int>((*q)[3]);
  s.call.causal = op.concrete[c] == "True";
  s.call.backward = sig.backward;
  s.seconds = seconds;
  return s;
}

// The operators of one CPU thread, by start, each with the innermost one enclosing it.
struct ThreadOps {
  std::vector<std::size_t> ops;        // indices into shaped_ops, by start (an enclosing one first)
  std::vector<std::ptrdiff_t> parent;  // position in `ops` of the enclosing operator, -1 at the top
};

}  // namespace

bool keeps_shapes_of(std::string_view cpu_op) {
  return signature_of(cpu_op) != nullptr;
}

KernelSamples kernel_samples(const KinetoEvents& events) {
  const auto& ops = events.shaped_ops;
  const auto end_of = [&](std::size_t i) { return ops[i].ts + ops[i].dur; };

  std::unordered_map<std::int64_t, ThreadOps> threads;
  for (std::size_t i = 0; i < ops.size(); ++i) threads[ops[i].tid].ops.push_back(i);
  std::vector<bool> encloses(ops.size(), false);
  for (auto& [tid, t] : threads) {
    std::stable_sort(t.ops.begin(), t.ops.end(), [&](std::size_t x, std::size_t y) {
      return ops[x].ts != ops[y].ts ? ops[x].ts < ops[y].ts : ops[x].dur > ops[y].dur;
    });
    t.parent.assign(t.ops.size(), -1);
    std::vector<std::ptrdiff_t> open;  // positions of the operators still running
    for (std::size_t p = 0; p < t.ops.size(); ++p) {
      while (!open.empty() && end_of(t.ops[static_cast<std::size_t>(open.back())]) < ops[t.ops[p]].ts) open.pop_back();
      if (!open.empty()) {
        t.parent[p] = open.back();
        encloses[t.ops[static_cast<std::size_t>(open.back())]] = true;
      }
      open.push_back(static_cast<std::ptrdiff_t>(p));
    }
  }

  std::unordered_map<std::int64_t, const Launch*> launch_of;
  for (const auto& l : events.launches) launch_of.emplace(l.correlation, &l);
  std::vector<double> gpu_us(ops.size(), 0.0);
  for (const auto& g : events.gpu) {
    if (g.correlation < 0) continue;
    const auto l = launch_of.find(g.correlation);
    if (l == launch_of.end()) continue;
    const auto t = threads.find(l->second->tid);
    if (t == threads.end()) continue;
    const ThreadOps& th = t->second;
    const double at = l->second->ts;
    const auto after = std::upper_bound(th.ops.begin(), th.ops.end(), at, [&](double x, std::size_t i) { return x < ops[i].ts; });
    std::ptrdiff_t p = (after - th.ops.begin()) - 1;
    while (p >= 0 && end_of(th.ops[static_cast<std::size_t>(p)]) < at) p = th.parent[static_cast<std::size_t>(p)];
    if (p >= 0) gpu_us[th.ops[static_cast<std::size_t>(p)]] += g.dur;
  }

  KernelSamples out;
  out.bench.backend = "trace";
  out.bench.device = events.device;
  LeftOut left;
  bool any_shapes = false;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const ShapedOp& op = ops[i];
    any_shapes = any_shapes || !op.dims.empty();
    if (gpu_us[i] <= 0) {
      if (!encloses[i]) left.add(fmt::format("{} that launched no GPU work", op.name));
      continue;
    }
    const OpSignature* sig = signature_of(op.name);
    if (sig == nullptr) continue;  // not one the reader keeps (events built by hand)
    const double seconds = gpu_us[i] * 1e-6;
    if (sig->form == OpForm::gemm) {
      if (auto s = gemm_sample(op, *sig, seconds, left)) out.bench.gemms.push_back(*s);
    } else if (auto s = attention_sample(op, *sig, seconds, left)) {
      out.bench.attention.push_back(*s);
    }
  }
  left.write(out.notes, events.file);

  if (out.bench.gemms.empty() && out.bench.attention.empty()) {
    std::string why;
    if (ops.empty()) {
      why = "holds no GEMM (aten::mm, addmm, bmm, baddbmm, _scaled_mm) or fused attention operator";
    } else if (!any_shapes) {
      why = "records no operator shapes; expected a trace profiled with torch.profiler.profile(record_shapes=True)";
    } else {
      why = "holds no bf16 / fp16 GEMM (or tensorwise float8 one) or attention operator with shapes that launched GPU work";
      for (const auto& n : out.notes) why += fmt::format("\n  {}", n.substr(events.file.size() + 2));
    }
    throw ConfigError(Location{events.file, 0, 0}, "",
                      fmt::format("calibrate reads GEMM and attention timings from a trace, but it {}", why));
  }
  return out;
}

}  // namespace shardsim::validate

#include "model/float8.hpp"

#include <algorithm>
#include <array>

namespace shardsim::model {
namespace {

bool is_linear(const Module& m) {
  return m.type == "Linear";
}

// A tensor-parallel collective of a module's own (tp_enter / tp_leave; context parallelism's are not).
bool is_tp_collective(const ProgramItem& item) {
  return item.child < 0 && item.kernel.kind == KernelKind::tp_comm && !item.kernel.context_parallel;
}

Kernel* matmul_of(Module& linear) {
  for (auto& item : linear.program) {
    if (item.child < 0 && item.kernel.kind == KernelKind::matmul) return &item.kernel;
  }
  return nullptr;
}

struct Walker {
  const Float8Options& o;
  Float8Conversion& out;

  // Returns whether m is a converted linear.
  bool convert_linear(Module& m, const std::string& fqn) {
    Kernel* k = matmul_of(m);
    if (k == nullptr) return false;
    bool skipped = false;
    for (std::size_t i = 0; i < o.skip.size(); ++i) {
      if (!o.skip[i].empty() && fqn.find(o.skip[i]) != std::string::npos) {
        ++out.skip_matches[i];
        skipped = true;
      }
    }
    if (skipped) return false;
    if (k->n % 16 != 0 || k->k % 16 != 0) {
      ++out.skipped_by_shape;
      return false;
    }
    if (o.auto_filter && too_small_to_gain(o.recipe, k->model_n > 0 ? k->model_n : k->n, k->model_k > 0 ? k->model_k : k->k)) {
      ++out.skipped_as_small;
      return false;
    }
    k->float8 = o.recipe;
    k->float8_fused_casts = o.compiled;
    k->float8_weight_gathered = o.fsdp_all_gather;
    for (auto& p : m.params) {
      if (p.name != "weight") continue;
      p.float8_all_gather = o.fsdp_all_gather;
      out.params += p.numel();
    }
    ++out.linears;
    return true;
  }

  // Converts m's subtree; returns whether m itself is a converted linear.
  bool walk(Module& m, const std::string& fqn) {
    const bool converted = is_linear(m) && convert_linear(m, fqn);
    bool beside_converted = converted;
    for (auto& c : m.children) beside_converted |= walk(c, fqn.empty() ? c.name : fqn + "." + c.name);
    // torchtitan's float8 TP plan (tensorwise only): the sequence-parallel all-gathers around
    // converted linears move float8, and the module's input is cast once for its column-parallel
    // linears (PrepareFloat8ModuleInput).
    if (beside_converted && o.recipe == Float8Recipe::tensorwise) {
      for (auto& item : m.program) {
        if (is_tp_collective(item)) item.kernel.all_gather_share = 1.0 / o.act_bytes;
      }
      if (o.tp > 1) prepare_module_input(m);
      if (o.tp > 1 && o.sequence_parallel) prepare_module_grad(m);
    }
    if (beside_converted && o.compiled) share_input_casts(m);
    return converted;
  }

  // Compiled, the converted linears m calls back to back with the same input width read one
  // tensor (the models' wq, wk, wv and, fused, w1, w3): the first carries its casts, CSE merges
  // the others' into them.
  static void share_input_casts(Module& m) {
    const Kernel* first = nullptr;
    for (const auto& item : m.program) {
      Kernel* k = item.child < 0 ? nullptr : matmul_of(m.children[static_cast<std::size_t>(item.child)]);
      if (k == nullptr) {
        first = nullptr;  // anything else in between: a different input
        continue;
      }
      if (k->float8 == Float8Recipe::none) continue;  // kept in bf16: reads the same input, casts nothing
      if (first != nullptr && first->k == k->k && first->float8 == k->float8) {
        k->float8_input_share = 0;
      } else {
        first = k;
      }
    }
  }

  // The converted row-parallel linears whose output leaves the module through its closing TP
  // collective (the activation it carries, n x activation bytes per token: wo, w2): with sequence
  // parallelism their grad_output comes back through that collective's all-gather, cast on the
  // shard before it.
  void prepare_module_grad(Module& m) const {
    const auto leave = std::find_if(m.program.rbegin(), m.program.rend(), is_tp_collective);
    if (leave == m.program.rend()) return;
    for (const auto& item : m.program) {
      if (item.child < 0) continue;
      Kernel* k = matmul_of(m.children[static_cast<std::size_t>(item.child)]);
      if (k == nullptr || k->float8 != Float8Recipe::tensorwise) continue;
      if (static_cast<double>(k->n) * o.act_bytes != leave->kernel.bytes_per_token) continue;  // column-parallel: a local output
      k->float8_prepared_grad = 1.0 / o.tp;
    }
  }

  // The converted linears that read the module's whole input (the activation its entering TP
  // collective carries, k x activation bytes per token): column-parallel ones, whose input the
  // module casts once. A plan that gathers per linear (Float8ColwiseParallel on each) has each
  // cast it before its own gather, eager; compiled, CSE merges the identical casts into one.
  void prepare_module_input(Module& m) const {
    const auto enter = std::find_if(m.program.begin(), m.program.end(), is_tp_collective);
    if (enter == m.program.end()) return;
    const bool each_casts = o.gather_per_linear && !o.compiled;
    const double cast = o.sequence_parallel ? 1.0 / o.tp : 1.0;
    double share = cast;  // the first reader carries the one cast
    for (const auto& item : m.program) {
      if (item.child < 0) continue;
      Kernel* k = matmul_of(m.children[static_cast<std::size_t>(item.child)]);
      if (k == nullptr || k->float8 != Float8Recipe::tensorwise) continue;
      if (static_cast<double>(k->k) * o.act_bytes != enter->kernel.bytes_per_token) continue;  // row-parallel: a local input
      k->float8_prepared_input = share;
      share = each_casts ? cast : 0;
    }
  }
};

}  // namespace

bool too_small_to_gain(Float8Recipe recipe, std::int64_t n, std::int64_t k) {
  switch (recipe) {
    case Float8Recipe::tensorwise:
      return k <= 4096 && n <= 1024;
    case Float8Recipe::rowwise:
      return n <= 2048 || k <= 1024 || (n <= 4096 && k <= 2048);
    default:
      return false;
  }
}

Float8Conversion convert_to_float8(Module& root, const Float8Options& options) {
  Float8Conversion out;
  out.skip_matches.assign(options.skip.size(), 0);
  if (options.recipe == Float8Recipe::none) return out;
  (void)Walker{options, out}.walk(root, "");
  return out;
}

Float8Casts float8_casts(const Kernel& k, std::int64_t tokens) {
  Float8Casts c;
  if (k.kind != KernelKind::matmul || k.float8 == Float8Recipe::none) return c;
  const double m = static_cast<double>(tokens);
  const double x = m * static_cast<double>(k.k);
  const double w = static_cast<double>(k.n) * static_cast<double>(k.k);
  const double g = m * static_cast<double>(k.n);
  const double fused_read = k.float8_fused_casts ? 0.0 : 2.0;  // the producer's kernel reads it
  const int fused_launch = k.float8_fused_casts ? 0 : 1;
  const double share = k.float8_input_share;  // of the input's casts (CSE under compile)
  const int shared_launch = share > 0 ? 1 : 0;
  switch (k.float8) {
    case Float8Recipe::none:
      break;
    case Float8Recipe::tensorwise:
      if (k.float8_prepared_input >= 0) {
        // The module's one cast of its input on the sequence shard (this linear's share of it),
        // and the transposed copy of the gathered float8 input for the weight gradient.
        c.forward_bytes = (fused_read + 3.0) * x * k.float8_prepared_input;
        c.forward_launches = k.float8_prepared_input > 0 ? fused_launch + 2 : 0;
        c.backward_bytes = 2.0 * x * share;
        c.backward_launches = shared_launch;
      } else {
        // amax (two stages: a reduction over blocks, then over their results), then one cast
        // kernel writing row- and column-major float8.
        c.forward_bytes = (fused_read + 4.0) * x * share;
        c.forward_launches = (fused_launch + 2) * shared_launch;
      }
      if (k.float8_prepared_grad >= 0) {
        // grad_output cast on the sequence shard before its gather, and the transposed copy of
        // the gathered float8 gradient for the weight gradient.
        c.backward_bytes += (fused_read + 3.0) * g * k.float8_prepared_grad + 2.0 * g;
        c.backward_launches += fused_launch + 3;
      } else {
        c.backward_bytes += (fused_read + 4.0) * g;
        c.backward_launches += fused_launch + 2;
      }
      if (k.float8_weight_gathered) {
        c.backward_bytes += 2.0 * w;  // transpose of the gathered float8 weight
        c.backward_launches += 1;
      } else {
        c.forward_bytes += 5.0 * w;  // amax 2, cast 2 + 1
        c.forward_launches += 3;
        c.backward_bytes += 3.0 * w;
        c.backward_launches += 1;
      }
      break;
    case Float8Recipe::rowwise:
      // Row-wise cast (with a bf16 transposed copy), then the column-wise cast of that copy (read
      // 2, write 1 byte an element) for the GEMM that reduces over the rows: the input's and
      // grad_output's for grad_weight, the weight's for grad_input (4 W its transposed copy).
      // torchao makes the input's for grad_weight in backward from the saved bf16 input, so a
      // recomputed forward (full checkpointing) does not make it again: forward has the row-wise
      // cast only, backward the input's transposed copy (2 X) and column-wise cast.
      c.forward_bytes = (fused_read + 1.0) * x * share + 3.0 * w;
      c.forward_launches = shared_launch + 1;
      c.backward_bytes = (fused_read + 3.0) * g + 4.0 * w + 2.0 * x * share;
      c.backward_column_bytes = 3.0 * g + 3.0 * w + 3.0 * x * share;
      c.backward_launches = 4 + shared_launch;
      // The slow-accumulation GEMMs' output rescales: grad_input (M K) and grad_weight (N K).
      c.backward_bytes += 4.0 * (x + w);
      c.backward_launches += 2;
      break;
    case Float8Recipe::rowwise_with_gw_hp:
      c.forward_bytes = (fused_read + 1.0) * x * share + 3.0 * w;
      c.forward_launches = fused_launch * shared_launch + 1;
      c.backward_bytes = (fused_read + 1.0) * g + 3.0 * w;
      c.backward_launches = fused_launch + 2;
      break;
    case Float8Recipe::mxfp8:
      c.forward_bytes = (fused_read + 2.0) * x * share + 3.0 * w;
      c.forward_launches = fused_launch * shared_launch + 1;
      c.backward_bytes = (fused_read + 2.0) * g + 3.0 * w;
      c.backward_launches = fused_launch + 1;
      break;
  }
  return c;
}

std::string_view float8_recipe_name(Float8Recipe r) {
  static constexpr std::array<std::string_view, 5> kNames{"none", "tensorwise", "rowwise", "rowwise_with_gw_hp", "mxfp8"};
  return kNames[static_cast<std::size_t>(r)];
}

}  // namespace shardsim::model

// Gradient reduction after backward (FSDP's reduce-scatter with its copy-in and the fp32
// accumulation of no_sync, hybrid sharding's all-reduce, DDP's buckets, CPU offload's copies
// out), gradient-norm clipping and the optimizer step. The forward and backward passes that
// call them are in fsdp_passes.cpp.
#include <fmt/format.h>

#include "fsdp/model_state.hpp"
#include "graph/step_builder.hpp"

namespace shardsim::graph {

// DDP (no_shard): gradients fill buckets of fsdp.bucket_size in backward order; a full bucket is
// all-reduced while backward goes on (DDP's Reducer, bucket_cap_mb = 25 by default). The sharded
// optimizer (shard_optimizer) reduce-scatters each bucket instead: a rank keeps the reduced
// gradients of the 1/dp it updates (Megatron's distributed optimizer, ZeRO-1).
void FsdpStepBuilder::bucket_reduce(double numel, int producer, bool flush) {
  if (!syncing()) return;
  bucket_numel_ += numel;
  const double cap = fsdp_.bucket_size.value() / plan_.master_bytes;
  if (bucket_numel_ <= 0 || (!flush && bucket_numel_ < cap)) return;
  const bool scatter = plan_.traits.shards_optimizer;
  const std::string name = fmt::format("{} bucket ({:.0f} MB)", scatter ? "RS" : "AR", bucket_numel_ * plan_.reduce_bytes / 1e6);
  Op op = scatter ? make(OpKind::reduce_scatter, rs_stream(), name, -1)
                  : make(OpKind::all_reduce, v2_ ? Stream::all_reduce : Stream::nccl, name, -1);
  // The data-parallel ranks: every rank, or with TP those of one TP index.
  op.group = scatter ? Group::shard : Group::replicate;
  op.bytes = bucket_numel_ * plan_.reduce_bytes;
  const int id = issue(std::move(op));
  g_.add_edge(producer, id, EdgeKind::data);
  last_reduce_ = id;
  bucket_numel_ = 0;
}

// shard_optimizer: each rank updated 1/dp of the parameters; before a unit's first forward of
// the step they are all-gathered in the compute dtype into the whole parameters every rank keeps
// (no memory of their own), on the all-gather stream once the optimizer step is done. Per unit,
// as FSDP unshards, which is how Megatron's overlap_param_gather overlaps them with the forward
// (per bucket there).
void FsdpStepBuilder::gather_updated(int u) {
  Op ag = make(OpKind::all_gather, ag_stream(), "AG " + unit(u).name, u);
  ag.group = Group::shard;
  ag.bytes = unsharded_bytes(u);
  const int id = issue(std::move(ag));
  g_.add_edge(last_optimizer_, id, EdgeKind::data);
  at(gather_of_, u) = id;
  at(available_, u) = id;
}

// Reduce-scatter of unit u's gradients after its backward (and the inter-node all-reduce of
// hybrid sharding); none under no_sync, where the unsharded gradients stay for the next micro-step,
// and in a pipeline stage none until the schedule's REDUCE_GRAD (pipeline_reduce_grad).
void FsdpStepBuilder::reduce(int u) {
  if (!has_params(u)) return;
  if (v2_ && upcasts_accumulated_grads()) {
    upcast_accumulation(u);
  } else if (v2_) {
    accumulate_kept_grads(u);
  }
  if (!syncing()) {
    at(grads_alive_, u) = true;
    return;
  }
  if (schedule_reduces()) {
    schedule_reductions_.push_back(u);
    return;
  }
  reduce_scatter(u);
}

void FsdpStepBuilder::reduce_scatter(int u) {
  at(grads_alive_, u) = false;
  const int last = at(last_compute_, u);
  const double buffer = reduce_buffer_bytes(u);
  const bool first_micro = micro_ == 0 || accumulate_;
  int producer = last;
  Op rs = make(OpKind::reduce_scatter, rs_stream(), "RS " + unit(u).name, u);
  rs.group = Group::shard;
  rs.bytes = buffer;
  if (v2_) {
    // The compute stream waits for the previous reduce-scatter, then chunk_cat copies the
    // gradients into the reduce-scatter input (reduce dtype). fully_shard allocates it on the
    // compute stream (pytorch#129721, 2024-06: "to avoid fragmenting that memory across stream
    // memory pools"), before that on the reduce-scatter stream; it is freed once the
    // reduce-scatter is done (held as _reduce_scatter_state until the next unit's waits on it).
    const Pool input_pool = fsdp_.copy_in_on_reduce_scatter_stream ? Pool::reduce_scatter : Pool::compute;
    Op copy = make(OpKind::copy, Stream::compute, "copy-in " + unit(u).name, u);
    copy.cpu_s = hook_cpu_s(u, false);  // the post-backward hook, before its first kernel
    copy.memory.push_back({MemCategory::reduce_buffers, buffer, false, input_pool});
    double grads = 0;
    for (double piece : at(grad_pieces_, u)) {
      grads += piece;
      copy.memory.push_back({MemCategory::gradients, -piece, true, Pool::compute});
    }
    copy.work = memory_work(grads + buffer, 1);
    const Work around = reduction_kernels(u, first_micro);  // the divisions and the shard's cast
    copy.work.memory_bytes += around.memory_bytes;
    copy.work.launches += around.launches;
    at(grad_pieces_, u).clear();
    producer = issue(std::move(copy));
    g_.add_edge(last, producer, EdgeKind::data);
    g_.add_edge(last_reduce_, producer, EdgeKind::rate_limit);
    rs.memory.push_back({MemCategory::reduce_buffers, -buffer, true, input_pool});
  } else {
    // FSDP1 casts to the reduce dtype into a new buffer when it differs, then frees both.
    producer = post_backward_kernels(u, first_micro);
    if (casts_grads_to_reduce()) rs.memory.push_back({MemCategory::reduce_buffers, -buffer, true, Pool::reduce_scatter});
    rs.memory.push_back({MemCategory::gradients, -grad_bytes(u), true, Pool::compute});
  }
  if (first_micro) {
    rs.memory.push_back({MemCategory::grad_shards, shard_master_bytes(u), false, Pool::reduce_scatter});
    grad_shard_frees_.push_back({MemCategory::grad_shards, -shard_master_bytes(u), true, offload_ ? Pool::host : Pool::reduce_scatter});
  }
  const int id = issue(std::move(rs));
  g_.add_edge(producer, id, EdgeKind::data);
  last_reduce_ = id;
  int reduced = id;
  if (plan_.traits.hybrid && plan_.replicate_group > 1) {
    Op ar = make(OpKind::all_reduce, Stream::all_reduce, "AR " + unit(u).name, u);
    ar.group = Group::replicate;
    ar.bytes = static_cast<double>(unit(u).shard_numel) * plan_.reduce_bytes;
    reduced = issue(std::move(ar));
    g_.add_edge(id, reduced, EdgeKind::data);
  }
  if (offload_) {
    // The reduced shard goes to pinned host memory for the CPU optimizer.
    Op d2h = make(OpKind::host_copy, Stream::d2h, "D2H " + unit(u).name, u);
    d2h.work.pcie_bytes = shard_master_bytes(u);
    d2h.memory.push_back({MemCategory::grad_shards, -shard_master_bytes(u), true, Pool::reduce_scatter});
    d2h.memory.push_back({MemCategory::grad_shards, shard_master_bytes(u), true, Pool::host});
    last_d2h_ = issue(std::move(d2h));
    g_.add_edge(reduced, last_d2h_, EdgeKind::data);
  }
}

// The division of the gradient by the data-parallel size N, split around the collective against
// under- and overflow: before it by the largest power of two f with N / f > f (that divides N),
// after it by N / f (FSDP1: DefaultState._get_gradient_predivide_factor,
// torch/distributed/algorithms/_comm_hooks/default_hooks.py; FSDP2's
// _get_gradient_divide_factors, the same loop). 8 ranks: 4, then 2; 128: 16, then 8.
namespace {
int predivide_factor(int n) {
  int f = 1;
  while (n % f == 0 && n / f > f) f *= 2;
  return f;
}
}  // namespace

// The memory-bound kernels around a unit's reduce-scatter:
// - FSDP1's post-backward hook (torch/distributed/fsdp/_runtime_utils.py, _post_backward_hook,
//   _reduce_grad, _accumulate_sharded_grad): the flat gradient cast to the reduce dtype where that
//   differs (read the gradient, write the copy the reduce-scatter sends) and divided in place by
//   the predivide factor; after the reduce-scatter (and hybrid sharding's all-reduce) the shard
//   divided by the postdivide factor;
// - FSDP2's foreach_reduce (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py) divides
//   only an fp16 reduction ("for fp32/bf16 ... use NCCL's built-in division to avoid separate div
//   kernels": ReduceOp.AVG), the same way;
// - both: the reduced shard cast to the sharded parameter's dtype where the reduce dtype differs,
//   and added to the shard kept from an earlier micro-step that synchronized too.
// FSDP1's post-backward stream and FSDP2's reduce-scatter stream are created with high priority,
// so their kernels take the GPU ahead of the compute stream's: the builder charges them on the
// compute stream before the reduce-scatter, the shard's part (1/N of the bytes) with the rest.
Work FsdpStepBuilder::reduction_kernels(int u, bool first_micro) const {
  const double buffer = reduce_buffer_bytes(u);
  const double shard = static_cast<double>(unit(u).shard_numel);
  const double r = plan_.reduce_bytes;
  const double m = plan_.master_bytes;
  const int n = plan_.shard_group * (plan_.traits.hybrid ? plan_.replicate_group : 1);
  const int pre = predivide_factor(n);
  const bool divides = !v2_ || plan_.reduce_dtype == config::DType::fp16;
  Work w;
  const auto add = [&](bool runs, double b) {
    if (!runs) return;
    w.memory_bytes += b;
    ++w.launches;
  };
  add(casts_grads_to_reduce(), grad_bytes(u) + buffer);  // FSDP2 casts in its copy-in
  add(divides && pre > 1, 2 * buffer);
  add(divides && n / pre > 1, 2 * shard * r);
  add(r != m, shard * (r + m));
  add(!first_micro, 3 * shard * m);
  return w;
}

// FSDP1: the post-backward hook's kernels (above) as one op after the unit's backward, holding
// the reduce-dtype copy when it casts; returns what the reduce-scatter waits for.
int FsdpStepBuilder::post_backward_kernels(int u, bool first_micro) {
  const int last = at(last_compute_, u);
  Work w = reduction_kernels(u, first_micro);
  if (w.launches == 0) return last;
  Op op = make(OpKind::copy, Stream::compute, "post-backward " + unit(u).name, u);
  op.work = std::move(w);
  if (casts_grads_to_reduce()) op.memory.push_back({MemCategory::reduce_buffers, reduce_buffer_bytes(u), false, Pool::reduce_scatter});
  const int id = issue(std::move(op));
  g_.add_edge(last, id, EdgeKind::data);
  return id;
}

// FSDP1: a unit's parameters are views of its flat parameter (torch.split, then view:
// FlatParamHandle._get_unflat_views), so autograd's backward of the split
// (SplitWithSizesBackward0, a cat) writes their gradients into the flat parameter's on the
// compute stream before the post-backward hook: read and write the unit's gradient. Under no_sync
// a later micro-step's AccumulateGrad then adds it to the kept one (read both, write one).
void FsdpStepBuilder::flatten_grads(int u) {
  if (!has_params(u)) return;
  const double g = grad_bytes(u);
  const bool accumulating = at(grads_alive_, u);
  Op op = make(OpKind::copy, Stream::compute, "grad flatten " + unit(u).name, u);
  op.work = memory_work(accumulating ? 5 * g : 2 * g, accumulating ? 2 : 1);
  const int id = issue(std::move(op));
  g_.add_edge(at(last_compute_, u), id, EdgeKind::data);
  at(last_compute_, u) = id;
}

// FSDP2 under no_sync (and pipelining) with a reduce dtype wider than the parameters' keeps the
// accumulated unsharded gradients in the reduce dtype: after the first micro-step's backward of a
// unit each gradient is cast (FSDPParam.to_accumulated_grad_if_needed: read 2, write 4 bytes an
// element in bf16 / fp32) and later micro-steps' gradients are added to it and freed
// (accumulate_unsharded_grad_if_needed: read 2 + 4, write 4), on the compute stream at
// post-backward. The accumulator is what the last micro-step's copy-in reads.
void FsdpStepBuilder::upcast_accumulation(int u) {
  auto& pieces = at(grad_pieces_, u);
  const bool first = !at(grads_alive_, u);
  if (first && syncing()) return;  // a single micro-step: reduced as made, nothing accumulated
  const double numel = static_cast<double>(unit(u).numel);
  const double accumulator = numel * plan_.reduce_bytes;
  const std::size_t made_from = first ? 0 : 1;  // pieces[0] is the accumulator after the first
  double made = 0;
  for (std::size_t i = made_from; i < pieces.size(); ++i) made += pieces[i];
  Op op = make(OpKind::copy, Stream::compute, (first ? "grad upcast " : "grad accumulate ") + unit(u).name, u);
  op.work = memory_work(first ? made + accumulator : made + 2 * accumulator, static_cast<int>(pieces.size() - made_from));
  if (first) op.memory.push_back({MemCategory::gradients, accumulator, false, Pool::compute});
  for (std::size_t i = made_from; i < pieces.size(); ++i) op.memory.push_back({MemCategory::gradients, -pieces[i], true, Pool::compute});
  if (first) {
    pieces.assign(1, accumulator);
  } else {
    pieces.resize(1);
  }
  const int id = issue(std::move(op));
  g_.add_edge(at(last_compute_, u), id, EdgeKind::data);
  at(last_compute_, u) = id;
}

// Gradients kept over the micro-steps and pipeline micro-batches of a step, added up as each
// backward makes them, on the compute stream after the unit's backward:
// - PyTorch DDP (no_shard): autograd's AccumulateGrad steals the first micro-step's gradient and
//   adds each later one in place (variable.grad += new_grad): read both, write one, in the
//   gradients' (master) dtype. FSDP2's unsharded gradients under no_sync or a pipeline schedule
//   likewise, in the compute dtype, where they are not upcast to a wider reduce dtype
//   (upcast_accumulation).
// - Megatron-LM (megatron_buffers: its distributed optimizer, or its DDP): a contiguous
//   main-gradient buffer in the reduce dtype takes every micro-step's gradient, the first included
//   (the buffer is zeroed at the step's start: zero_grad_buffer, an op after the optimizer step
//   here). Each parameter's backward hook adds its gradient (main_grad.add_(grad): read the buffer
//   and the gradient, write the buffer, 2r + g bytes an element, a kernel a parameter;
//   megatron/model/distributed.py in 2021, megatron/core/distributed today). Megatron-Core fuses
//   the add for the linears' weights into their weight-gradient GEMMs
//   (fsdp.grad_accumulation_fusion, on by default: Transformer Engine's fuse_wgrad_accumulation),
//   which then read and write the buffer in their epilogue instead of writing a compute-dtype
//   gradient: 2r - g bytes an element more (6 for fp32 over bf16), exposed as much as a GEMM's
//   output write is (gpu.gemm_output_exposed, engine/compute_model.cpp); the embeddings', norms'
//   and biases' gradients still go through the hook.
void FsdpStepBuilder::accumulate_kept_grads(int u) {
  const bool megatron = megatron_buffers();
  if (!megatron && !at(grads_alive_, u)) return;  // DDP's first micro-step: the gradient itself is kept
  const fsdp::Unit& un = unit(u);
  Work work;
  if (megatron) {
    const double r = plan_.reduce_bytes;
    const double g = plan_.grad_bytes;
    const bool fused = fsdp_.grad_accumulation_fusion;
    const double in_gemms = fused ? static_cast<double>(un.gemm_weight_numel) : 0.0;
    const double hooked = static_cast<double>(un.numel) - in_gemms;
    work = memory_work(hooked * (2 * r + g), un.tensors - (fused ? un.gemm_weights : 0));
    work.memory_bytes += in_gemms * (2 * r - g) * cfg_.cluster.topology.gpu.gemm_output_exposed;
  } else {
    work = memory_work(plan_.traits.shards_params ? 3.0 * grad_bytes(u) : static_cast<double>(un.numel) * 3.0 * plan_.master_bytes, 1);
  }
  if (work.memory_bytes <= 0) return;
  Op op = make(OpKind::copy, Stream::compute, "grad accumulate " + un.name, u);
  op.work = work;
  const int id = issue(std::move(op));
  g_.add_edge(at(last_compute_, u), id, EdgeKind::data);
  at(last_compute_, u) = id;
}

// ---- optimizer ------------------------------------------------------------------------------

void FsdpStepBuilder::optimizer() {
  std::int64_t shard = 0;
  std::vector<double> unit_params;
  for (const auto& u : plan_.units) {
    const std::int64_t n = plan_.traits.shards_optimizer ? u.shard_numel : u.numel;
    shard += n;
    unit_params.push_back(static_cast<double>(n));
  }
  // Megatron's optimizers copy the reduced gradients of the parameters a rank updates into their
  // fp32 main gradients where the buffer is narrower (_copy_model_grads_to_main_grads: read r,
  // write 4), and after the step the updated main parameters into the model's where their dtypes
  // differ (_copy_main_params_to_model_params: read fp32, write bf16; the distributed optimizer's
  // shard is what its all-gather sends). FSDP casts in its all-gather copy-in instead.
  double copy_bytes = 0;
  if (megatron_buffers() && plan_.param_bytes != plan_.master_bytes) {
    copy_bytes = static_cast<double>(shard) * (plan_.master_bytes + plan_.param_bytes);
  }
  if (megatron_buffers() && plan_.reduce_bytes != plan_.master_bytes) {
    copy_bytes += static_cast<double>(shard) * (plan_.reduce_bytes + plan_.master_bytes);
  }
  grad_norm_all_reduces();
  // With offload the step runs on the CPU thread over host memory, after the final callback's
  // synchronize (fsdp-semantics.md section 5).
  Op op = make(OpKind::optimizer, offload_ ? Stream::cpu : Stream::compute, fmt::format("optimizer step {}", step_), -1);
  if (offload_) {
    op.work.host_bytes =
        static_cast<double>(shard) * fsdp::optimizer_bytes_per_param(cfg_.training.optimizer, false, plan_.master_bytes) + copy_bytes;
  } else {
    add_optimizer_step(op, cfg_, unit_params, plan_.master_bytes, copy_bytes);
  }
  if (step_ == 0 && lazy_optimizer_state()) create_optimizer_state(op);
  // zero_grad(set_to_none=True) frees the gradients after the step.
  op.memory.insert(op.memory.end(), grad_shard_frees_.begin(), grad_shard_frees_.end());
  grad_shard_frees_.clear();
  if (!plan_.traits.shards_params) grads_alive_.assign(grads_alive_.size(), false);
  const int id = issue(std::move(op));
  after_reductions(id);
  g_.add_edge(io_.last(Stream::tp), id, EdgeKind::data);  // the gradient norm's TP all-reduce
  last_optimizer_ = id;
  // shard_optimizer: the next step starts from parameters updated in pieces (gather_updated).
  if (shards_optimizer_only()) {
    for (std::size_t u = 0; u < plan_.units.size(); ++u) at(available_, static_cast<int>(u)) = -1;
  }
  if (megatron_buffers()) {
    // Megatron's main-gradient buffer zeroed for the next step (zero_grad_buffer at its start: a
    // memset of the buffer, every parameter of the rank's model chunk in the reduce dtype).
    double numel = 0;
    for (const auto& u : plan_.units) numel += static_cast<double>(u.numel);
    Op zero = make(OpKind::copy, Stream::compute, fmt::format("zero grad buffer {}", step_), -1);
    zero.work = memory_work(numel * plan_.reduce_bytes, 1);
    g_.add_edge(id, issue(std::move(zero)), EdgeKind::data);
  }
  precompute_float8_scales();
}

// torch.optim creates its state at the first step() (AdamW's _init_group: zeros_like of each
// parameter with a gradient, exp_avg then exp_avg_sq, parameter by parameter), so the moments
// are allocated after the first backward, from the blocks its activations left cached, and not
// before the step as the model's sharded parameters are.
void FsdpStepBuilder::create_optimizer_state(Op& op) const {
  const int states = fsdp::optimizer_states(cfg_.training.optimizer);
  for (const auto& u : plan_.units) {
    for (const std::int64_t numel : u.optimizer_tensors) {
      for (int s = 0; s < states; ++s) {
        MemEffect m{MemCategory::optimizer_state, static_cast<double>(numel) * plan_.master_bytes, false, Pool::compute};
        m.first_step_only = true;
        op.memory.push_back(m);
      }
    }
  }
}

// The final callback makes the compute stream wait for every reduction stream.
void FsdpStepBuilder::after_reductions(int id) {
  for (Stream s : {Stream::compute, Stream::nccl, Stream::reduce_scatter, Stream::all_reduce, Stream::d2h}) {
    g_.add_edge(io_.last(s), id, EdgeKind::data);
  }
}

// Gradient-norm clipping (clip_grad_norm_ before the step, as torchtitan, fms-fsdp and Megatron
// run it by default; reading and scaling the gradients is in the optimizer's bytes): the squared
// norms of a rank's gradient shards are summed over the ranks the gradients are split across, a
// 4-byte all-reduce per mesh dimension (DTensor's full_tensor of the norm): the shard group where
// gradients are sharded (not DDP's replicated ones), then the TP group. Every rank's step waits
// for them: a synchronization of the whole job once a step. torchtitan all-reduces the norm over
// the pipeline stages as well (torchtitan#596), which is not modelled.
void FsdpStepBuilder::grad_norm_all_reduces() {
  const auto all_reduce = [&](Group group, Stream stream, std::string_view over) {
    Op ar = make(OpKind::all_reduce, stream, fmt::format("grad norm AR {} {}", over, step_), -1);
    ar.group = group;
    ar.bytes = 4;  // one fp32 sum of squares
    // The norm is taken once every gradient is reduced.
    after_reductions(issue(std::move(ar)));
  };
  if (plan_.traits.shards_optimizer && plan_.shard_group > 1) all_reduce(Group::shard, Stream::all_reduce, "dp");
  if (plan_.tp_group > 1) all_reduce(Group::tp, Stream::tp, "tp");  // on TP's stream, as its other collectives
}

// Megatron's distributed optimizer keeps, for the 1/dp of the parameters a rank updates, the
// optimizer's states and a master copy and main-gradient shard where the parameters' and the
// gradients' dtypes are not the master one: with bf16 parameters, fp32 gradients and Adam,
// 4 + 4 + 4 = 12 bytes, so 2 + 4 + 12/d per parameter in all (docs/api-guide/dist_optimizer.md).
double FsdpStepBuilder::distributed_optimizer_bytes() const {
  double bytes = static_cast<double>(plan_.master_bytes) * fsdp::optimizer_states(cfg_.training.optimizer);
  if (plan_.param_bytes != plan_.master_bytes) bytes += plan_.master_bytes;
  if (plan_.reduce_bytes != plan_.master_bytes) bytes += plan_.master_bytes;
  return bytes;
}

}  // namespace shardsim::graph

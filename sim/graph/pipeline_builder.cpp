#include "graph/pipeline_builder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "graph/op_forecast.hpp"
#include "graph/step_builder.hpp"
#include "model/transformer.hpp"

namespace shardsim::graph {

int model_stage(config::PpSchedule schedule, int chunk, int rank, int ranks) {
  if (schedule == config::PpSchedule::zbv) return chunk == 0 ? rank : 2 * ranks - 1 - rank;
  return chunk * ranks + rank;
}

int rank_of_stage(config::PpSchedule schedule, int stage, int ranks) {
  if (schedule == config::PpSchedule::zbv) return stage < ranks ? stage : 2 * ranks - 1 - stage;
  return stage % ranks;
}

namespace {

// What every micro-batch's action of a model stage issues alike (op_forecast.hpp): its segments'
// forward and backward, and the tensor-, context- and pipeline-parallel traffic between them;
// not FSDP's unsharding and reductions, with their copies and waits, which some actions issue.
bool per_micro_batch(const Op& op) {
  if (op.kind == OpKind::forward || op.kind == OpKind::backward) return true;
  return op.group == Group::tp || op.group == Group::cp || op.group == Group::pp;
}

// ScheduleZBVZeroBubble's order for one pipeline rank: chunk 0 forwards to fill the V, chunk 1
// forwards each followed by its input and weight gradients, then in steady state a forward and
// the input and weight gradients of each chunk in turn, then the remaining input gradients with
// the weight gradients deferred into the tail. Worked out for max(2 ranks - 1, m) micro-batches,
// those beyond m dropped, as torch does.
std::vector<PipelineAction> zbv_actions(int rank, int ranks, int m) {
  const int n = std::max(2 * ranks - 1, m);
  std::vector<PipelineAction> out;
  int f0 = 0;
  int f1 = 0;
  int b0 = 0;
  int b1 = 0;
  const auto forward = [&](int chunk, int& next) { out.push_back({true, next++, chunk, BackwardPart::all}); };
  const auto input = [&](int chunk, int micro) { out.push_back({false, micro, chunk, BackwardPart::input}); };
  const auto weight = [&](int chunk, int micro) { out.push_back({false, micro, chunk, BackwardPart::weight}); };
  for (int k = 0; k < 2 * (ranks - rank) - 1; ++k) forward(0, f0);
  for (int k = 0; k < rank; ++k) {
    forward(1, f1);
    forward(0, f0);
  }
  for (int k = 0; k < ranks - rank; ++k) {
    forward(1, f1);
    input(1, b1);
    weight(1, b1++);
  }
  while (f1 < f0 || f0 < n) {
    if (f0 < n) forward(0, f0);
    input(0, b0);
    weight(0, b0++);
    forward(1, f1);
    input(1, b1);
    weight(1, b1++);
  }
  int w0 = b0;
  int w1 = b1;
  for (int k = 0; k < rank; ++k) {
    input(0, b0++);
    input(1, b1++);
  }
  for (int k = 0; k < ranks - rank; ++k) {
    input(0, b0++);
    weight(0, w0++);
  }
  while (w1 < b1) weight(1, w1++);
  while (w0 < b0) weight(0, w0++);
  std::erase_if(out, [m](const PipelineAction& a) { return a.micro >= m; });
  return out;
}

// ScheduleInterleavedZeroBubble's order (ZB1P, torch's _get_1f1b_rank_ops with zero bubble):
// v chunks per rank in a loop, micro-batches in rounds of m / max(1, m / ranks); (v - 1) x round
// + ranks - 1 - rank forwards, then a forward and an input gradient in turn, each followed after
// the first `rank` of them by the oldest pending weight gradient, then the remaining input
// gradients likewise, then the remaining weight gradients.
std::vector<PipelineAction> interleaved_zb_actions(int rank, int ranks, int m, int v) {
  const int round = m / std::max(1, m / ranks);
  const int total = m * v;
  const int warmup = std::min(total, (v - 1) * round + (ranks - 1 - rank));
  const auto forward_chunk = [&](int op) { return op / round % v; };
  const auto backward_chunk = [&](int op) { return v - 1 - (op - warmup) / round % v; };
  std::vector<int> next_f(static_cast<std::size_t>(v), 0);
  std::vector<int> next_i(static_cast<std::size_t>(v), 0);
  std::vector<int> next_w(static_cast<std::size_t>(v), 0);
  const auto bump = [](std::vector<int>& next, int chunk) { return next[static_cast<std::size_t>(chunk)]++; };
  std::vector<PipelineAction> out;
  std::vector<int> inputs;  // the op index of each input gradient, in order
  std::size_t weights = 0;
  const auto input_and_weight = [&](int op) {
    const int c = backward_chunk(op);
    out.push_back({false, bump(next_i, c), c, BackwardPart::input});
    inputs.push_back(op);
    if (op - warmup >= rank) {
      const int w = backward_chunk(inputs[weights++]);
      out.push_back({false, bump(next_w, w), w, BackwardPart::weight});
    }
  };
  for (int op = 0; op < total + warmup; ++op) {
    if (op < warmup) {
      const int c = forward_chunk(op);
      out.push_back({true, bump(next_f, c), c, BackwardPart::all});
    } else if (op < total) {
      const int c = forward_chunk(op);
      out.push_back({true, bump(next_f, c), c, BackwardPart::all});
      input_and_weight(op);
    } else {
      input_and_weight(op);
    }
  }
  while (weights < inputs.size()) {
    const int w = backward_chunk(inputs[weights++]);
    out.push_back({false, bump(next_w, w), w, BackwardPart::weight});
  }
  return out;
}

}  // namespace

std::vector<PipelineAction> pipeline_actions(config::PpSchedule schedule, int rank, int ranks, int microbatches, int chunks) {
  std::vector<PipelineAction> out;
  if (schedule == config::PpSchedule::zbv) return zbv_actions(rank, ranks, microbatches);
  if (schedule == config::PpSchedule::interleaved_zb) return interleaved_zb_actions(rank, ranks, microbatches, chunks);
  if (schedule == config::PpSchedule::gpipe) {
    for (int m = 0; m < microbatches; ++m) out.push_back({true, m, 0});
    for (int m = 0; m < microbatches; ++m) out.push_back({false, m, 0});
    return out;
  }
  if (schedule == config::PpSchedule::one_f_one_b) {
    const int warmup = std::min(microbatches, ranks - rank);
    int next_forward = 0;
    int next_backward = 0;
    while (next_forward < warmup) out.push_back({true, next_forward++, 0});
    while (next_backward < microbatches) {
      out.push_back({false, next_backward++, 0});
      if (next_forward < microbatches) out.push_back({true, next_forward++, 0});
    }
    return out;
  }
  // Interleaved: the k-th forward (backward) of the rank, in groups of `ranks` micro-batches.
  const int total = microbatches * chunks;
  const auto action = [&](int k, bool forward) {
    const int group = k / ranks % chunks;
    return PipelineAction{forward, k / (ranks * chunks) * ranks + k % ranks, forward ? group : chunks - 1 - group};
  };
  const int warmup = std::min(total, (chunks - 1) * ranks + 2 * (ranks - 1 - rank));
  for (int k = 0; k < warmup; ++k) out.push_back(action(k, true));
  for (int k = 0; k < total - warmup; ++k) {
    out.push_back(action(warmup + k, true));
    out.push_back(action(k, false));
  }
  for (int k = std::max(0, total - warmup); k < total; ++k) out.push_back(action(k, false));
  return out;
}

// torch.distributed.pipelining's receive buffers: at its first step each stage makes one buffer
// per micro-batch for its input (stage.py _prepare_forward_infra: "TODO: create args_recv_info
// lazily?") and one for its output's gradient (_prepare_backward_infra), and keeps them, step
// after step; the received input is then the first block's input, not a tensor of its own. A V's
// stages on one rank hand tensors over directly (set_local_fwd_input), their buffers dropped at
// once. Megatron-LM's schedule receives into tensors it allocates per message instead.
template <class RankOf>
void receive_buffers(StepGraph& g, const std::vector<std::unique_ptr<FsdpStepBuilder>>& builders, int microbatches, double bytes,
                     const RankOf& rank_of) {
  const int stages = static_cast<int>(builders.size());
  for (int c = 0; c < stages; ++c) {
    FsdpStepBuilder& b = *builders[static_cast<std::size_t>(c)];
    if (!b.torch_pipelining()) continue;
    const bool input = c > 0 && rank_of(c - 1) != rank_of(c);
    const bool gradient = c + 1 < stages && rank_of(c + 1) != rank_of(c);
    if (input) b.set_received_input(bytes);
    auto& initial = g.info.stage_initial_memory[static_cast<std::size_t>(rank_of(c))];
    for (int n = (input ? microbatches : 0) + (gradient ? microbatches : 0); n > 0; --n) {
      initial.push_back({MemCategory::pipeline_buffers, bytes, false, Pool::compute});
    }
  }
}

StepGraph build_pipeline_graph(const model::Model& whole, const std::vector<fsdp::Plan>& stage_plans, const config::ScenarioConfig& s,
                               int steps, const Deadline& deadline) {
  const config::ParallelismConfig& p = s.parallelism;
  const int ranks = p.pp;                                   // pipeline ranks (physical stages)
  const int chunks = p.pp_stages_per_rank;                  // model chunks per rank
  const int stages = static_cast<int>(stage_plans.size());  // model stages: ranks x chunks
  const std::int64_t micro_batch = micro_batch_sequences(s);
  const int microbatches = static_cast<int>(s.training.micro_batch / micro_batch);
  const auto too_many = [&] { throw_too_many_ops(s, stage_plans[0].units.size() * static_cast<std::size_t>(stages), steps); };
  StepGraph g;
  // A rank running several chunks issues them all from one CPU thread onto one set of streams.
  std::vector<std::unique_ptr<Issuer>> issuers;
  if (chunks > 1) {
    for (int r = 0; r < ranks; ++r) {
      issuers.push_back(std::make_unique<Issuer>(g));
      issuers.back()->set_deadline(deadline);
      issuers.back()->set_limit(s.simulation.max_ops.value, too_many);
    }
  }
  std::vector<std::unique_ptr<FsdpStepBuilder>> builders;
  g.info.stage_initial_memory.assign(static_cast<std::size_t>(ranks), {});
  const auto rank_of = [&](int c) { return rank_of_stage(p.pp_schedule, c, ranks); };
  for (int c = 0; c < stages; ++c) {
    const int rank = rank_of(c);
    Issuer* shared = chunks > 1 ? issuers[static_cast<std::size_t>(rank)].get() : nullptr;
    builders.push_back(std::make_unique<FsdpStepBuilder>(stage_plans[static_cast<std::size_t>(c)], s, steps, g, rank, micro_batch, shared));
    builders.back()->set_deadline(deadline);
    builders.back()->fill_info();
    auto& initial = g.info.stage_initial_memory[static_cast<std::size_t>(rank)];
    initial.insert(initial.end(), g.info.initial_memory.begin(), g.info.initial_memory.end());
    if (shared == nullptr) builders.back()->issuer().set_limit(s.simulation.max_ops.value, too_many);
  }
  g.info.initial_memory.clear();
  // The activation (and its gradient) between stages: a micro-batch's hidden states, as each
  // tensor-parallel rank holds them (sequence shards with sequence parallelism).
  const double seq_share = whole.tp.sp() ? 1.0 / whole.tp.degree : 1.0;
  const double bytes =
      static_cast<double>(micro_batch * s.training.seq_len / p.cp) * static_cast<double>(whole.spec.hidden) * whole.act_bytes * seq_share;
  // The last stage's output, its logits, which the schedule keeps for every micro-batch until the
  // next step (stage.py forward_one_chunk: output_chunks, for the merged output step() returns).
  const double logits = static_cast<double>(micro_batch * s.training.seq_len / p.cp) *
                        static_cast<double>(model::loss_vocab(whole.spec, whole.tp)) * whole.act_bytes;
  // Megatron's scatter/gather of pipeline tensors: whole activations on every TP rank only.
  const bool scatter_gather = p.pp_scatter_gather && whole.tp.degree > 1 && !whole.tp.sp();
  receive_buffers(g, builders, microbatches, bytes, rank_of);
  std::vector<std::vector<PipelineAction>> actions;
  for (int r = 0; r < ranks; ++r) actions.push_back(pipeline_actions(p.pp_schedule, r, ranks, microbatches, chunks));
  // Per rank, the position of each chunk's last backward action: the schedule's REDUCE_GRAD for
  // that stage follows it.
  std::vector<std::vector<std::size_t>> last_backward(static_cast<std::size_t>(ranks),
                                                      std::vector<std::size_t>(static_cast<std::size_t>(chunks)));
  for (std::size_t r = 0; r < actions.size(); ++r) {
    for (std::size_t i = 0; i < actions[r].size(); ++i) {
      if (!actions[r][i].forward) last_backward[r][static_cast<std::size_t>(actions[r][i].chunk)] = i;
    }
  }
  // Tied embeddings: the first stage's embedding and the last stage's copy of it have their
  // gradients all-reduced between the two after the last backward, before either optimizer step
  // (Megatron-LM's embedding group): as sharded as FSDP holds them, in the reduce dtype.
  const auto tied_gradient_all_reduce = [&](int step) {
    // In a V (zbv) the first and last stages share pipeline rank 0: nothing goes between ranks.
    if (!whole.spec.tie_embeddings || stages < 2 || rank_of(stages - 1) == rank_of(0)) return -1;
    const fsdp::Plan& last = stage_plans.back();
    const double numel = static_cast<double>((whole.spec.vocab + whole.tp.degree - 1) / whole.tp.degree * whole.spec.hidden);
    Op op = make_op(OpKind::all_reduce, Stream::pp, fmt::format("AR tied embedding grads {}", step), -1);
    op.group = Group::pp;
    op.bytes = numel * last.reduce_bytes / (last.traits.shards_params ? last.shard_group : 1);
    op.stage = 0;
    op.peer_stage = rank_of(stages - 1);
    const int id = builders.front()->issuer().issue(std::move(op));
    for (FsdpStepBuilder* b : {builders.front().get(), builders.back().get()}) {
      for (Stream st : {Stream::compute, Stream::nccl, Stream::reduce_scatter, Stream::all_reduce})
        g.add_edge(b->issuer().last(st), id, EdgeKind::data);
    }
    return id;
  };
  // simulation.max_ops, forecast as the schedule is issued (op_forecast.hpp), a kind per model
  // stage and action: forward, backward, or a zero-bubble schedule's input or weight half.
  const auto kind_of = [&](const PipelineAction& a, int c) {
    const int part = a.forward ? 0 : 1 + static_cast<int>(a.part);
    return static_cast<std::size_t>(c) * 4 + static_cast<std::size_t>(part);
  };
  OpForecast forecast(static_cast<std::size_t>(stages) * 4);
  for (int r = 0; r < ranks; ++r) {
    for (const auto& a : actions[static_cast<std::size_t>(r)])
      forecast.plan(kind_of(a, model_stage(p.pp_schedule, a.chunk, r, ranks)), steps);
  }
  const auto block_ops_since = [&g](std::size_t first) {
    std::int64_t n = 0;
    for (std::size_t o = first; o < g.size(); ++o) n += per_micro_batch(g.op(static_cast<int>(o))) ? 1 : 0;
    return n;
  };
  const auto at = [](std::vector<std::vector<int>>& v, int c, int m) -> int& {
    return v[static_cast<std::size_t>(c)][static_cast<std::size_t>(m)];
  };
  for (int step = 0; step < steps; ++step) {
    // The send of micro-batch m's activations from model stage c to c + 1 (forward), or of its
    // gradients from c to c - 1 (backward); -1 until issued.
    std::vector<std::vector<int>> fwd_sent(static_cast<std::size_t>(stages), std::vector<int>(static_cast<std::size_t>(microbatches), -1));
    std::vector<std::vector<int>> bwd_sent = fwd_sent;
    std::vector<std::size_t> next(static_cast<std::size_t>(ranks), 0);
    const auto send = [&](int from, int to, int producer, int m, bool forward) {
      if (rank_of(from) == rank_of(to)) return producer;  // the V's turn: both stages on one rank, no send
      Op op = make_op(OpKind::send, Stream::pp, fmt::format("{} mb{} stage {}->{}", forward ? "send act" : "send grad", m, from, to), -1);
      op.group = Group::pp;
      op.bytes = scatter_gather ? bytes / whole.tp.degree : bytes;
      op.stage = rank_of(from);
      op.peer_stage = rank_of(to);
      const int id = builders[static_cast<std::size_t>(from)]->issuer().issue(std::move(op));
      g.add_edge(producer, id, EdgeKind::data);
      return id;
    };
    // Megatron's scatter/gather: before model stage `to` uses micro-batch m's input (or
    // gradient) that arrived in pieces, its TP group all-gathers them, in its own program order.
    const auto receive = [&](int to, int sent, int m, bool forward) {
      if (!scatter_gather || sent < 0 || g.op(sent).kind != OpKind::send) return sent;
      Op ag = make_op(OpKind::all_gather, Stream::tp, fmt::format("TP AG received {} mb{} stage {}", forward ? "act" : "grad", m, to), -1);
      ag.group = Group::tp;
      ag.bytes = bytes;
      ag.stage = rank_of(to);
      const int id = builders[static_cast<std::size_t>(to)]->issuer().issue(std::move(ag));
      g.add_edge(sent, id, EdgeKind::data);
      return id;
    };
    // Issue every rank's actions in an order where each one's input exists: the schedules are
    // deadlock-free, so some rank can always go on.
    for (bool progress = true; progress;) {
      progress = false;
      for (int r = 0; r < ranks; ++r) {
        auto& i = next[static_cast<std::size_t>(r)];
        const auto& list = actions[static_cast<std::size_t>(r)];
        while (i < list.size()) {
          const PipelineAction a = list[i];
          const int c = model_stage(p.pp_schedule, a.chunk, r, ranks);
          const std::size_t ops_before = g.size();
          FsdpStepBuilder& b = *builders[static_cast<std::size_t>(c)];
          if (a.forward) {
            const int input = c == 0 ? -1 : at(fwd_sent, c - 1, a.micro);
            if (c > 0 && input < 0) break;
            const int out = b.pipeline_forward(step, a.micro, receive(c, input, a.micro, true));
            if (c + 1 < stages) at(fwd_sent, c, a.micro) = send(c, c + 1, out, a.micro, true);
            if (c + 1 == stages) b.retain_stage_output(logits);
          } else if (a.part == BackwardPart::weight) {
            b.pipeline_backward_weight(step, a.micro);  // after its input part, earlier on this rank
          } else {
            const int grad = c + 1 == stages ? -1 : at(bwd_sent, c + 1, a.micro);
            if (c + 1 < stages && grad < 0) break;
            const int received = receive(c, grad, a.micro, false);
            const int out = a.part == BackwardPart::input ? b.pipeline_backward_input(step, a.micro, received)
                                                          : b.pipeline_backward(step, a.micro, received);
            if (c > 0) at(bwd_sent, c, a.micro) = send(c, c - 1, out, a.micro, false);
          }
          if (!a.forward && i == last_backward[static_cast<std::size_t>(r)][static_cast<std::size_t>(a.chunk)])
            b.pipeline_reduce_grad(step);
          forecast.issued(kind_of(a, c), block_ops_since(ops_before));
          if (static_cast<std::int64_t>(g.size()) + forecast.ahead() > s.simulation.max_ops.value) too_many();
          ++i;
          progress = true;
        }
      }
    }
    for (int r = 0; r < ranks; ++r) {
      if (next[static_cast<std::size_t>(r)] != actions[static_cast<std::size_t>(r)].size()) {
        throw RuntimeError(fmt::format("the pipeline schedule deadlocks at pipeline rank {} (an internal error)", r));
      }
    }
    const int tied = tied_gradient_all_reduce(step);
    for (std::size_t c = 0; c < builders.size(); ++c) {
      builders[c]->pipeline_optimizer(step, c == 0 || c + 1 == builders.size() ? tied : -1);
    }
  }
  (void)g.topological_order();  // asserts the schedule is a DAG
  return g;
}

}  // namespace shardsim::graph

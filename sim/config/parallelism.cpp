// The `parallelism` section: the device mesh in torchtitan's names. Tensor (with async TP),
// context (all-gather rotation) and pipeline parallelism (GPipe, 1F1B, interleaved 1F1B) are
// modelled; the all-to-all rotation, the zero-bubble schedules and explicit data-parallel degrees
// other than what fsdp.sharding implies are refused rather than ignored.
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "config/pp_schedule.hpp"
#include "config/sections.hpp"

namespace shardsim::config {
namespace {

constexpr std::array<std::string_view, 2> kRotateNames{"allgather", "alltoall"};
constexpr std::array<std::string_view, 2> kInputGatherNames{"module", "linear"};
constexpr std::array<std::string_view, 2> kLayoutNames{"bsh", "sbh"};
constexpr std::array<std::string_view, 5> kScheduleNames{"gpipe", "1f1b", "interleaved_1f1b", "zbv", "interleaved_zb"};

constexpr std::array kParallelismParams{
    ParamSpec{"tp", "integer", "1",
              "tensor-parallel degree: each block's linears split over tp consecutive ranks (Megatron column/row parallel, "
              "torchtitan's ColwiseParallel / RowwiseParallel); llama models",
              Range{1, 1 << 16}},
    ParamSpec{"tp_sequence_parallel", "bool", "true",
              "with tp: norms and residuals on sequence shards, all-gather / reduce-scatter around attention and MLP instead "
              "of all-reduce (torchtitan's default)"},
    ParamSpec{"tp_loss_parallel", "bool", "true",
              "with tp: the output's logits stay sharded over the vocabulary and the cross-entropy runs on the shards "
              "(torchtitan's loss_parallel); false: the logits are all-gathered and every rank computes the loss on all of them"},
    ParamSpec{"tp_shard_output", "bool", "true",
              "with tp: the output layer split over the vocabulary (ColwiseParallel); false: left out of the plan, whole on "
              "every TP rank (sharded by FSDP alone), each computing all the logits from the whole hidden states, as "
              "KempnerForge's pipeline stages run it; needs tp_sequence_parallel: false, and the loss then runs on whole logits"},
    ParamSpec{"tp_shard_embedding", "bool", "true",
              "with tp: the token embedding split over the vocabulary (RowwiseParallel, torchtitan); false: every TP rank holds "
              "the whole embedding (sharded by FSDP alone) and looks tokens up itself"},
    ParamSpec{"tp_input_gather",
              "choice",
              "module",
              "with tp: how the column-parallel linears reading one input get it whole: module, one all-gather (or, "
              "without sequence parallelism, one gradient all-reduce) for all of them (torchtitan's PrepareModuleInput "
              "on attention and feed_forward); linear, each its own (ColwiseParallel(input_layouts=Shard(1)) on every "
              "projection, as KempnerForge's plan): in forward once per linear eager, once compiled (AOTAutograd's CSE "
              "merges the identical gathers), in backward once per linear (their input gradients are reduced apart)",
              {},
              kInputGatherNames},
    ParamSpec{"tp_activation_layout",
              "choice",
              "bsh",  // sbh with tp_async_impl: userbuffers (parallelism.cpp)
              "with tp and sequence parallelism: the activations' dimension order. bsh = [batch, sequence, hidden] "
              "(torchtitan, DTensor's SequenceParallel on Shard(1)): PyTorch's functional collectives gather and scatter "
              "along dimension 0, so a copy kernel on the compute stream reorders each all-gather's output and each "
              "reduce-scatter's input (chunk + cat: read and write the gathered tensor once); sbh = [sequence, batch, "
              "hidden] (Megatron-LM; the default with tp_async_impl: userbuffers): the sequence shards are contiguous, "
              "gathered and scattered in place",
              {},
              kLayoutNames},
    ParamSpec{"tp_async", "bool", "false",
              "with tp and sequence parallelism: async TP (torch's micro-pipelined collective matmul, symmetric memory): "
              "sequence all-gathers fused with the matmuls reading them, reduce-scatters with the matmul producing them, "
              "chunk by chunk; with tp_async_impl inductor it needs training.compile (Inductor's micro_pipeline_tp pass)"},
    ParamSpec{"tp_save_gathered_input", "bool", "true",
              "with sequence parallelism: the column-parallel linears keep their all-gathered input for backward "
              "(torchtitan); false: they keep their sequence shard and all-gather it again in backward for the weight "
              "gradient (Megatron-LM), overlapped with the input-gradient GEMMs; modelled with tp_async_impl: userbuffers"},
    ParamSpec{"tp_async_impl",
              "",
              "inductor",
              "whose async TP: inductor = torch's collective matmuls from Inductor's micro_pipeline_tp pass (torchtitan; "
              "needs training.compile); userbuffers = Transformer Engine's comm-GEMM overlap (Megatron-LM's "
              "--tp-comm-overlap): the same ring-exchange all-gathers and pipelined reduce-scatters, and the gradient "
              "reduce-scatter after each column-parallel linear overlapped with its weight-gradient GEMMs ('bulk')",
              {},
              kTpAsyncImplNames},
    ParamSpec{"dp_shard", "integer", "-1",
              "ranks a parameter is sharded over; -1: what fsdp.sharding implies (all data-parallel ranks, a node's for "
              "hybrid sharding, 1 for no_shard; shard_optimizer shards the optimizer state over all); another value must equal it",
              Range{-1, 1 << 20}},
    ParamSpec{"dp_replicate", "integer", "-1", "replicas of each shard (hybrid sharding's nodes, no_shard's ranks); -1: implied",
              Range{-1, 1 << 20}},
    ParamSpec{"cp", "integer", "1",
              "context-parallel degree: each sequence split over cp ranks (load-balanced causal chunks), K and V all-gathered per "
              "attention; FSDP shards over dp_shard x cp; llama models",
              Range{1, 1 << 16}},
    ParamSpec{"cp_rotate",
              "choice",
              "allgather",
              "with cp: how K and V reach every rank in torch's ring attention: allgather (all of them at once, while the "
              "rank's own chunk is computed) or alltoall (passed to the next rank step by step, each step overlapping the one "
              "before); their gradients go around the ring in both",
              {},
              kRotateNames},
    ParamSpec{"pp", "integer", "1",
              "pipeline stages: the blocks cut into pp consecutive stages (the first with the embeddings, the last with the "
              "output and loss), outermost in the mesh (stage s holds ranks s x world/pp ..)",
              Range{1, 1 << 16}},
    ParamSpec{"pp_schedule",
              "choice",
              "1f1b",
              "with pp: the schedule of micro-batches (torch.distributed.pipelining's); interleaved_1f1b runs "
              "pp_stages_per_rank stages per rank; zbv (zero bubble, ZB-V) two stages per rank in a V, and interleaved_zb "
              "(ZB1P) pp_stages_per_rank in a loop, the backward split into input and weight gradients (no torch.compile)",
              {},
              kScheduleNames},
    ParamSpec{"pp_stages_per_rank", "integer", "-1",
              "with pp: stages (model chunks) each rank holds, v; -1: 2 for interleaved_1f1b (torchtitan's default), else 1; "
              "interleaved_1f1b needs v >= 2, the others v = 1",
              Range{-1, 1 << 10}},
    ParamSpec{"pp_microbatches", "integer", "-1",
              "with pp: the micro-batches training.micro_batch is split into; -1: one sequence each (torchtitan's default "
              "pipeline_parallel_microbatch_size 1)",
              Range{-1, 1 << 16}},
    ParamSpec{"pp_scatter_gather", "bool", "false",
              "with pp and tp without sequence parallelism: each TP rank sends 1/tp of the activation (or its gradient) to "
              "the next stage, whose TP group all-gathers it (Megatron-LM's scatter/gather of pipeline tensors, on by default "
              "there); false: every TP rank sends all of it (torch.distributed.pipelining)"},
    ParamSpec{"pp_split_points", "list of integers", "[]",
              "with pp: the first layer of stages 1 .. pp x v - 1, ascending (torchtitan's pipeline_parallel_split_points as "
              "layer indices); empty: layers split evenly, earlier stages taking the remainder"},
};
constexpr Schema kParallelismSchema{"parallelism", "the device mesh: data, tensor, context and pipeline parallel degrees",
                                    kParallelismParams};

}  // namespace

ParallelismConfig read_parallelism(const Reader& top, std::vector<ConfigWarning>& warnings) {
  ConfigNode scratch;
  Reader r(section(top, "parallelism", scratch), "parallelism", kParallelismSchema);
  r.finish();
  ParallelismConfig p;
  p.where = r.where("tp");
  p.tp = static_cast<int>(r.integer("tp"));
  p.sequence_parallel = r.boolean("tp_sequence_parallel");
  if (p.tp == 1 && r.has("tp_sequence_parallel")) {
    warnings.push_back({r.where("tp_sequence_parallel"), "parallelism.tp_sequence_parallel",
                        "sequence parallelism applies with tensor parallelism (tp > 1); it is ignored"});
  }
  p.loss_parallel = r.boolean("tp_loss_parallel");
  p.shard_embedding = r.boolean("tp_shard_embedding");
  p.shard_embedding_where = r.where("tp_shard_embedding");
  p.shard_output = r.boolean("tp_shard_output");
  p.shard_output_where = r.where("tp_shard_output");
  if (p.tp > 1 && !p.shard_output) {
    if (p.sequence_parallel) {
      throw ConfigError(p.shard_output_where, "parallelism.tp_shard_output",
                        "a whole output layer reads whole hidden states, which sequence parallelism leaves sharded; expected "
                        "tp_sequence_parallel: false with tp_shard_output: false");
    }
    if (r.has("tp_loss_parallel") && p.loss_parallel) {
      throw ConfigError(r.where("tp_loss_parallel"), "parallelism.tp_loss_parallel",
                        "loss_parallel runs the loss on logits sharded over the vocabulary, which a whole output layer does not "
                        "make; expected tp_loss_parallel: false with tp_shard_output: false");
    }
    p.loss_parallel = false;  // the loss on the whole logits every rank computes
  }
  for (const char* key : {"tp_loss_parallel", "tp_shard_embedding", "tp_shard_output"}) {
    if (p.tp == 1 && r.has(key)) {
      warnings.push_back({r.where(key), fmt::format("parallelism.{}", key), "applies with tensor parallelism (tp > 1); it is ignored"});
    }
  }
  p.tp_gather_per_linear = r.choice("tp_input_gather") == "linear";
  p.tp_input_gather_where = r.where("tp_input_gather");
  if (p.tp == 1 && r.has("tp_input_gather")) {
    warnings.push_back(
        {r.where("tp_input_gather"), "parallelism.tp_input_gather", "applies with tensor parallelism (tp > 1); it is ignored"});
  }
  p.tp_async = r.boolean("tp_async");
  p.tp_async_where = r.where("tp_async");
  p.tp_userbuffers = r.choice("tp_async_impl") == "userbuffers";
  // Transformer Engine's userbuffers run over Megatron's [s, b, h] activations.
  const bool userbuffers = p.tp_async && p.tp_userbuffers;
  p.tp_sequence_leading = r.has("tp_activation_layout") ? r.choice("tp_activation_layout") == "sbh" : userbuffers;
  if ((p.tp == 1 || !p.sequence_parallel) && r.has("tp_activation_layout")) {
    warnings.push_back({r.where("tp_activation_layout"), "parallelism.tp_activation_layout",
                        "applies with tensor and sequence parallelism (tp > 1, tp_sequence_parallel: true); it is ignored"});
  }
  if (userbuffers && !p.tp_sequence_leading) {
    throw ConfigError(r.where("tp_activation_layout"), "parallelism.tp_activation_layout",
                      "tp_async_impl: userbuffers is Transformer Engine's, whose sequence-parallel activations are "
                      "Megatron's [s, b, h]; expected tp_activation_layout: sbh");
  }
  p.tp_save_gathered = r.boolean("tp_save_gathered_input");
  p.tp_save_gathered_where = r.where("tp_save_gathered_input");
  if (!p.tp_async && r.has("tp_async_impl")) {
    warnings.push_back({r.where("tp_async_impl"), "parallelism.tp_async_impl", "applies with tp_async: true; it is ignored"});
  }
  p.cp = static_cast<int>(r.integer("cp"));
  p.cp_where = r.where("cp");
  p.cp_alltoall = r.choice("cp_rotate") == "alltoall";
  if (p.cp == 1 && r.has("cp_rotate")) {
    warnings.push_back({r.where("cp_rotate"), "parallelism.cp_rotate", "applies with context parallelism (cp > 1); it is ignored"});
  }
  p.pp = static_cast<int>(r.integer("pp"));
  p.pp_where = r.where("pp");
  const std::string schedule = r.choice("pp_schedule");
  p.pp_schedule = pp_schedule_named(schedule).value();  // one of the choices
  p.pp_schedule_where = r.where("pp_schedule");
  const bool interleaved = p.pp_schedule == PpSchedule::interleaved_1f1b;
  const bool zbv = p.pp_schedule == PpSchedule::zbv;
  const bool interleaved_zb = p.pp_schedule == PpSchedule::interleaved_zb;
  const std::int64_t v = r.integer("pp_stages_per_rank");
  if (v == 0) r.fail("pp_stages_per_rank", "expected -1 (the schedule's default) or a count >= 1; got 0");
  p.pp_stages_per_rank = v > 0 ? static_cast<int>(v) : default_stages_per_rank(p.pp_schedule);
  if (interleaved && p.pp_stages_per_rank < 2) {
    r.fail("pp_stages_per_rank", fmt::format("interleaved_1f1b runs several stages per rank; expected 2 or more (or -1); got {}", v));
  }
  if (zbv && p.pp_stages_per_rank != 2) {
    r.fail("pp_stages_per_rank", fmt::format("zbv runs exactly two stages per rank (a V); expected 2 (or -1); got {}", v));
  }
  if (!interleaved && !zbv && !interleaved_zb && p.pp_stages_per_rank > 1) {
    r.fail("pp_stages_per_rank",
           fmt::format("{} runs one stage per rank; expected 1 (or pp_schedule: interleaved_1f1b); got {}", schedule, v));
  }
  const std::int64_t mb = r.integer("pp_microbatches");
  if (mb == 0) r.fail("pp_microbatches", "expected -1 (one sequence per micro-batch) or a count >= 1; got 0");
  p.pp_microbatches = mb < 0 ? 0 : static_cast<int>(mb);
  p.pp_microbatches_where = r.where("pp_microbatches");
  p.pp_split_points_where = r.where("pp_split_points");
  if (const ConfigNode* points = r.node("pp_split_points")) {
    if (!points->is_sequence())
      r.fail("pp_split_points", fmt::format("expected a list of layer indices, e.g. [16, 32, 48]; got {}", points->describe()));
    for (std::size_t i = 0; i < points->items.size(); ++i) {
      const std::string path = fmt::format("parallelism.pp_split_points[{}]", i);
      p.pp_split_points.push_back(static_cast<int>(scalar_integer(points->items[i], path, 1, 1 << 20)));
      if (i > 0 && p.pp_split_points[i] <= p.pp_split_points[i - 1]) {
        throw ConfigError(points->items[i].where, path,
                          fmt::format("{} after {}; expected ascending layer indices", p.pp_split_points[i], p.pp_split_points[i - 1]));
      }
    }
  }
  p.pp_scatter_gather = r.boolean("pp_scatter_gather");
  if (p.pp_scatter_gather && p.pp > 1 && (p.tp == 1 || p.sequence_parallel)) {
    warnings.push_back({r.where("pp_scatter_gather"), "parallelism.pp_scatter_gather",
                        p.tp == 1 ? "applies with tensor parallelism (tp > 1); it is ignored"
                                  : "with sequence parallelism each TP rank already sends its own sequence shard; it is ignored"});
  }
  if (p.pp == 1) {
    for (const char* key : {"pp_schedule", "pp_stages_per_rank", "pp_microbatches", "pp_split_points", "pp_scatter_gather"}) {
      if (r.has(key))
        warnings.push_back({r.where(key), fmt::format("parallelism.{}", key), "applies with pipeline parallelism (pp > 1); it is ignored"});
    }
  }
  for (const char* key : {"dp_shard", "dp_replicate"}) {
    const std::int64_t degree = r.integer(key);
    if (degree == 0) r.fail(key, "expected -1 (implied by fsdp.sharding) or a degree >= 1; got 0");
    auto& given = std::string_view(key) == "dp_shard" ? p.dp_shard : p.dp_replicate;
    if (degree > 0) given = Located<int>{static_cast<int>(degree), r.where(key)};
  }
  return p;
}

// Context parallelism: the mesh and the sequence must split (the rest is refused, not ignored).
static void check_context(const ScenarioConfig& s) {
  const ParallelismConfig& p = s.parallelism;
  const std::int64_t world = s.world_size();
  const auto fail = [&](const std::string& what) { throw ConfigError(p.cp_where, "parallelism.cp", what); };
  if (world % (static_cast<std::int64_t>(p.tp) * p.pp * p.cp) != 0) {
    fail(fmt::format("tp {} x pp {} x cp {} does not divide the {} GPUs; expected cp dividing {}", p.tp, p.pp, p.cp, world,
                     world / p.tp / p.pp));
  }
  if (s.training.seq_len % (2 * p.cp) != 0) {
    // Load-balanced causal sharding cuts a sequence into 2 cp chunks, rank i taking i and 2cp-1-i.
    fail(
        fmt::format("the {}-token sequence does not split into 2 x {} equal chunks (load-balanced causal sharding); expected "
                    "training.seq_len a multiple of {}",
                    s.training.seq_len, p.cp, 2 * p.cp));
  }
  if (s.fsdp.sharding == Sharding::zero3) fail("context parallelism with DeepSpeed ZeRO-3 is not modelled; expected cp: 1");
  if (s.fsdp.sharding == Sharding::hybrid_shard || s.fsdp.sharding == Sharding::hybrid_shard_zero2) {
    const int gpus = s.cluster.topology.node.gpus;
    if ((gpus / p.tp) % p.cp != 0) {
      fail(
          fmt::format("hybrid sharding shards over a node's {} data-parallel ranks, which must hold whole cp groups; expected cp "
                      "dividing {}",
                      gpus / p.tp, gpus / p.tp));
    }
  }
}

// What pipeline parallelism is modelled with (the rest is refused, not ignored).
static void check_pipeline(const ScenarioConfig& s) {
  const ParallelismConfig& p = s.parallelism;
  const auto fail = [&](const Location& where, const std::string& key, const std::string& what) { throw ConfigError(where, key, what); };
  if (p.pp_microbatches > 0 && s.training.micro_batch % p.pp_microbatches != 0) {
    fail(p.pp_microbatches_where, "parallelism.pp_microbatches",
         fmt::format("{} micro-batches do not split training.micro_batch {} evenly; expected a divisor of {}", p.pp_microbatches,
                     s.training.micro_batch, s.training.micro_batch));
  }
  const int stages = p.pp * p.pp_stages_per_rank;
  if (!p.pp_split_points.empty() && static_cast<int>(p.pp_split_points.size()) != stages - 1) {
    fail(p.pp_split_points_where, "parallelism.pp_split_points",
         fmt::format("{} split points for {} stages; expected {} (the first layer of each stage after the first)", p.pp_split_points.size(),
                     stages, stages - 1));
  }
  const std::int64_t microbatches = p.pp_microbatches > 0 ? p.pp_microbatches : s.training.micro_batch;
  if (p.pp_schedule == PpSchedule::interleaved_zb && microbatches % std::max<std::int64_t>(1, microbatches / p.pp) != 0) {
    // ScheduleInterleavedZeroBubble raises the same: micro-batches run in max(1, m / pp) rounds.
    const std::int64_t rounds = std::max<std::int64_t>(1, microbatches / p.pp);
    fail(p.pp_microbatches_where, "parallelism.pp_microbatches",
         fmt::format("{} micro-batches{} in {} rounds of interleaved_zb (max(1, m / pp)): expected a multiple of {}", microbatches,
                     p.pp_microbatches > 0 ? "" : " (one per sequence of training.micro_batch)", rounds, rounds));
  }
  if (p.pp_schedule == PpSchedule::interleaved_1f1b && microbatches % p.pp != 0) {
    // torch.distributed.pipelining's ScheduleInterleaved1F1B raises the same.
    fail(p.pp_microbatches_where, "parallelism.pp_microbatches",
         fmt::format("{} micro-batches{} over {} pipeline ranks: interleaved_1f1b needs a multiple of pp; expected a multiple of {}",
                     microbatches, p.pp_microbatches > 0 ? "" : " (one per sequence of training.micro_batch)", p.pp, p.pp));
  }
  if (s.fsdp.sharding == Sharding::zero3)
    fail(p.pp_where, "parallelism.pp",
         "pipeline parallelism with DeepSpeed ZeRO-3 is not modelled; expected pp: 1 or an fsdp.sharding of FSDP");
  if (s.fsdp.cpu_offload)
    fail(p.pp_where, "parallelism.pp",
         "pipeline parallelism with fsdp.cpu_offload is not modelled yet; expected pp: 1 or cpu_offload: false");
  if (s.training.grad_accum > 1) {
    fail(p.pp_where, "parallelism.pp",
         fmt::format("with pipeline parallelism the micro-batches are parallelism.pp_microbatches; training.grad_accum {} on top of them "
                     "is not modelled yet; expected grad_accum 1",
                     s.training.grad_accum));
  }
  if (s.simulation.mode == SimulationMode::symmetric && (s.world_size() / p.pp) % s.cluster.topology.node.gpus != 0) {
    fail(s.simulation.mode_where, "simulation.mode",
         fmt::format("symmetric simulates one representative rank per pipeline stage, each on its own node, but a stage's {} GPUs "
                     "do not fill whole nodes of {}; expected full or auto",
                     s.world_size() / p.pp, s.cluster.topology.node.gpus));
  }
  if ((p.pp_schedule == PpSchedule::zbv || p.pp_schedule == PpSchedule::interleaved_zb) && s.training.compile.value) {
    // torch.distributed.pipelining raises for compiled stage modules (_check_torch_compile_compatibility).
    fail(p.pp_schedule_where, "parallelism.pp_schedule",
         fmt::format("{} splits the backward into input and weight gradients, which torch.distributed.pipelining does not support "
                     "with torch.compile; expected training.compile: false or another schedule",
                     p.pp_schedule == PpSchedule::zbv ? "zbv" : "interleaved_zb"));
  }
}

// Async TP fuses sequence parallelism's all-gathers and reduce-scatters with matmuls; torchtitan
// enables it only under torch.compile, whose Inductor pass does the fusing (Transformer Engine's
// userbuffers need no compile).
static void check_async_tp(const ScenarioConfig& s) {
  const ParallelismConfig& p = s.parallelism;
  const auto fail = [&](const std::string& what) { throw ConfigError(p.tp_async_where, "parallelism.tp_async", what); };
  if (p.tp == 1) fail("async TP applies with tensor parallelism; expected tp > 1 or tp_async: false");
  if (!p.sequence_parallel) {
    fail(
        "without sequence parallelism TP all-reduces, which async TP does not fuse (it fuses all-gathers and reduce-scatters "
        "with matmuls); expected tp_sequence_parallel: true or tp_async: false");
  }
  if (!p.tp_userbuffers && !s.training.compile.value) {
    fail(
        "async TP is Inductor's micro_pipeline_tp pass: torchtitan requires torch.compile for it; expected training.compile: true "
        "(or tp_async_impl: userbuffers for Transformer Engine's overlap, as Megatron-LM runs it)");
  }
  if (p.tp_gather_per_linear) {
    throw ConfigError(p.tp_input_gather_where, "parallelism.tp_input_gather",
                      "async TP fuses one gather of a module's input with the matmuls reading it (torchtitan's plan); a gather per "
                      "linear under async TP is not modelled; expected tp_input_gather: module or tp_async: false");
  }
  if (s.cluster.topology.node.gpus % p.tp != 0) {
    fail(fmt::format("async TP copies chunks between GPUs over symmetric memory, within a node; tp {} does not fit the node's {} GPUs",
                     p.tp, s.cluster.topology.node.gpus));
  }
}

void check_parallelism(const ScenarioConfig& s, std::vector<ConfigWarning>& warnings) {
  const ParallelismConfig& p = s.parallelism;
  const std::int64_t world = s.world_size();
  const int gpus = s.cluster.topology.node.gpus;
  if (p.tp_async) check_async_tp(s);
  if (!p.tp_save_gathered && !(p.tp > 1 && p.sequence_parallel && p.tp_async && p.tp_userbuffers)) {
    throw ConfigError(p.tp_save_gathered_where, "parallelism.tp_save_gathered_input",
                      "all-gathering the linears' input again in backward is modelled with sequence parallelism and Transformer "
                      "Engine's overlap, as Megatron-LM runs it; expected tp > 1, tp_sequence_parallel: true, tp_async: true and "
                      "tp_async_impl: userbuffers, or tp_save_gathered_input: true");
  }
  if (world % p.tp != 0) {
    throw ConfigError(p.where, "parallelism.tp",
                      fmt::format("{} does not divide the {} GPUs; expected a divisor of the world size", p.tp, world));
  }
  if (world % (static_cast<std::int64_t>(p.tp) * p.pp) != 0) {
    throw ConfigError(p.pp_where, "parallelism.pp",
                      fmt::format("tp {} x pp {} does not divide the {} GPUs; expected pp dividing {}", p.tp, p.pp, world, world / p.tp));
  }
  if (p.cp > 1) check_context(s);  // after pp's check: cp divides what tp x pp leave
  if (p.pp > 1) check_pipeline(s);
  const std::int64_t dp = world / p.tp / p.pp;
  if (p.tp > 1 && s.fsdp.sharding == Sharding::zero3) {
    throw ConfigError(p.where, "parallelism.tp",
                      "tensor parallelism with DeepSpeed ZeRO-3 is not modelled; expected tp: 1 or an fsdp.sharding of FSDP");
  }
  const bool hybrid = s.fsdp.sharding == Sharding::hybrid_shard || s.fsdp.sharding == Sharding::hybrid_shard_zero2;
  if (hybrid && p.tp > 1 && gpus % p.tp != 0) {
    throw ConfigError(p.where, "parallelism.tp",
                      fmt::format("hybrid sharding shards over the data-parallel ranks of a node, but tp {} does not divide the node's {} "
                                  "GPUs; expected a divisor of {}",
                                  p.tp, gpus, gpus));
  }
  // What fsdp.sharding implies over the data-parallel ranks (plan.cpp builds the groups).
  std::int64_t shard = dp;
  if (s.fsdp.sharding == Sharding::no_shard || world == 1) shard = 1;
  if (hybrid && world > 1) shard = std::min<std::int64_t>(gpus / p.tp, dp);
  // torchtitan's dp_shard and dp_replicate leave the cp ranks out (FSDP shards over dp_shard x cp).
  const std::int64_t replicate = shard % p.cp == 0 ? dp / shard : dp / p.cp;
  shard = shard % p.cp == 0 ? shard / p.cp : 1;
  const auto check = [&](const std::optional<Located<int>>& given, const char* key, std::int64_t implied) {
    if (given && given->value != implied) {
      throw ConfigError(given->where, fmt::format("parallelism.{}", key),
                        fmt::format("{}, but fsdp.sharding: {} over {} data-parallel ranks ({} GPUs / tp {}{}) gives {} = {}; expected -1 "
                                    "or {} (change fsdp.sharding to change the data-parallel layout)",
                                    given->value, to_string(s.fsdp.sharding), dp, world, p.tp,
                                    p.pp > 1 ? fmt::format(" / pp {}", p.pp) : "", key, implied, implied));
    }
  };
  check(p.dp_shard, "dp_shard", shard);
  check(p.dp_replicate, "dp_replicate", replicate);
  // Under a pipeline fully_shard keeps every unit's parameters from forward to backward unless
  // fsdp.reshard_after_forward says otherwise: the last unit's too, and backward all-gathers
  // nothing. (Where they are kept anyway the fsdp section has its own warning.)
  if (keeps_every_unit(s.fsdp, p.pp) && !keeps_every_unit(s.fsdp)) {
    const std::string why = fmt::format(
        "under pipeline parallelism (pp {}) fully_shard keeps every unit's parameters from forward to backward unless "
        "fsdp.reshard_after_forward is given",
        p.pp);
    if (s.fsdp.keep_last_unit_unsharded) {
      warnings.push_back({s.fsdp.keep_last_where, "fsdp.keep_last_unit_unsharded",
                          "keeps the last unit's parameters after forward, and " + why + "; it is ignored"});
    }
    if (s.fsdp.reshard_root_after_forward) {
      warnings.push_back({s.fsdp.reshard_root_where, "fsdp.reshard_root_after_forward",
                          "the root unit's resharding, and " + why + " (the root's too); it is ignored"});
    }
    if (s.fsdp.backward_prefetch_depth != 1) {
      warnings.push_back({s.fsdp.backward_prefetch_depth_where, "fsdp.backward_prefetch_depth",
                          "backward prefetching, and " + why + ", so backward all-gathers nothing; it is ignored"});
    }
  }
  if (hybrid && world > 1 && replicate == 1) {
    // One replica: nothing to all-reduce across, the layout full_shard (shard_grad_op) gives.
    const char* same = s.fsdp.sharding == Sharding::hybrid_shard ? "full_shard" : "shard_grad_op";
    warnings.push_back({s.fsdp.sharding_where, "fsdp.sharding",
                        fmt::format("{} shards within a node and replicates across nodes, but the {} data-parallel ranks fit in one "
                                    "node: one replica, simulated as {}; expected more than one node, or fsdp.sharding: {}",
                                    to_string(s.fsdp.sharding), dp, same, same)});
  }
}

std::vector<Schema> parallelism_schemas() {
  return {kParallelismSchema};
}

std::optional<PpSchedule> pp_schedule_named(std::string_view name) {
  if (name == "gpipe") return PpSchedule::gpipe;
  if (name == "1f1b") return PpSchedule::one_f_one_b;
  if (name == "interleaved_1f1b") return PpSchedule::interleaved_1f1b;
  if (name == "zbv") return PpSchedule::zbv;
  if (name == "interleaved_zb") return PpSchedule::interleaved_zb;
  return std::nullopt;
}

int default_stages_per_rank(PpSchedule schedule) {
  const bool several = schedule == PpSchedule::interleaved_1f1b || schedule == PpSchedule::zbv || schedule == PpSchedule::interleaved_zb;
  return several ? 2 : 1;
}

}  // namespace shardsim::config

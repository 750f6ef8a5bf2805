// The DAG of one (or a few) training steps, held in a Boost.Graph adjacency list. Every rank
// runs the same program (SPMD): compute ops run on each rank, a collective joins the ranks of
// its group; with pipeline parallelism an op may belong to one stage (Op::stage), which other
// stages' ranks skip. Memory effects on the ops give each rank's memory over time.
#pragma once

#include <array>
#include <boost/graph/adjacency_list.hpp>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/op.hpp"

namespace shardsim::graph {

struct EdgeProps {
  EdgeKind kind = EdgeKind::data;
};

// Facts about the job the graph was built for, needed to run or replay it.
struct GraphInfo {
  std::string scenario;
  int world_size = 1;
  int gpus_per_node = 1;
  // Groups of ranks (groups.hpp lays them out): innermost tensor parallel, then shard, then replicate.
  int tp_group = 1;         // ranks per tensor-parallel group (consecutive ranks)
  int cp_group = 1;         // ranks per context-parallel group (stride tp_group, inside a shard group)
  int pp_group = 1;         // pipeline stages (outermost: stage s holds ranks [s, s + 1) x world_size / pp_group)
  int shard_group = 1;      // ranks per shard group (stride tp_group)
  int replicate_group = 1;  // ranks per replicate group (stride shard_group x tp_group)
  int reshard_group = 1;    // FSDP2 reshard_after_forward = d: ranks per reshard group (stride tp_group)
  int steps = 1;
  int micro_steps = 1;
  double tokens_per_micro_step = 0;       // per GPU: its group's share of a micro-batch (fractional where tp x pp does not divide it)
  std::vector<MemEffect> initial_memory;  // what each rank holds before the first step
  std::vector<std::vector<MemEffect>> stage_initial_memory;  // with pipeline stages: per stage instead
  double nvme_bytes = 0;                                     // what each rank keeps on its node's NVMe drives (ZeRO-Infinity)

  [[nodiscard]] int stage_of(int rank) const { return rank % world_size / (world_size / pp_group); }
  [[nodiscard]] const std::vector<MemEffect>& initial_memory_of(int rank) const {
    return stage_initial_memory.empty() ? initial_memory : stage_initial_memory[static_cast<std::size_t>(stage_of(rank))];
  }
};

class StepGraph {
 public:
  // Edges in a vector, not the default list: a step graph only grows, and a list allocates per edge.
  using Dag = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Op, EdgeProps, boost::no_property, boost::vecS>;

  // Boost 1.74's adjacency_list has no move constructor (and its swap copies): a move would copy
  // every op and edge, seconds and gigabytes for a 100,000-layer model. The DAG lives behind a
  // pointer so that moves are cheap; copies are deep.
  StepGraph() : dag_(std::make_unique<Dag>()) {}
  StepGraph(const StepGraph& other)
      : info(other.info), dag_(std::make_unique<Dag>(*other.dag_)), every_stage_(other.every_stage_), staged_(other.staged_) {}
  StepGraph& operator=(const StepGraph& other) {
    if (this != &other) {
      info = other.info;
      dag_ = std::make_unique<Dag>(*other.dag_);
      every_stage_ = other.every_stage_;
      staged_ = other.staged_;
    }
    return *this;
  }
  StepGraph(StepGraph&& other) noexcept = default;
  StepGraph& operator=(StepGraph&& other) noexcept = default;
  ~StepGraph() = default;

  // Adds an op; its id becomes its index. Its pipeline stage (Op::stage, peer_stage) is fixed from here on.
  int add_op(Op op);
  // Adds an edge; if one already joins the two ops, it keeps the more telling kind
  // (data > rate_limit > prefetch > cpu > stream).
  void add_edge(int from, int to, EdgeKind kind);

  [[nodiscard]] std::size_t size() const { return boost::num_vertices(*dag_); }
  [[nodiscard]] std::size_t edge_count() const { return boost::num_edges(*dag_); }
  [[nodiscard]] const Op& op(int id) const { return (*dag_)[static_cast<std::size_t>(id)]; }
  [[nodiscard]] Op& op(int id) { return (*dag_)[static_cast<std::size_t>(id)]; }
  [[nodiscard]] std::vector<std::pair<int, EdgeKind>> predecessors(int id) const;
  [[nodiscard]] std::vector<std::pair<int, EdgeKind>> successors(int id) const;
  [[nodiscard]] std::size_t in_degree(int id) const { return boost::in_degree(static_cast<std::size_t>(id), *dag_); }

  // The ops a rank of pipeline stage `s` runs (Op::runs_on_stage), by increasing id: those of
  // every stage and those of stage s, as sender or receiver. A report that follows one rank walks
  // these rather than every stage's program.
  [[nodiscard]] std::vector<int> ops_on_stage(int s) const;

  // Ops in an order where every op comes after its predecessors (Boost's topological_sort).
  // Throws RuntimeError naming an op on a cycle if the graph is not a DAG.
  [[nodiscard]] std::vector<int> topological_order() const;

  [[nodiscard]] const Dag& dag() const { return *dag_; }
  GraphInfo info;

 private:
  std::unique_ptr<Dag> dag_;              // never null (a moved-from graph is only assigned to or destroyed)
  std::vector<int> every_stage_;          // ids of the ops without a stage
  std::vector<std::vector<int>> staged_;  // [stage]: ids of the ops of that stage (Op::stage or peer_stage)
};

}  // namespace shardsim::graph

// simulation.max_ops for a pipeline's step graph, checked while the schedule is issued rather
// than when the graph reaches the limit: a layout search meets many pipelined layouts whose graph
// would need several times the limit, and building a million ops only to refuse them costs
// seconds each.
//
// Each kind of action of each model stage (a forward, a backward, or a zero-bubble schedule's
// input- or weight-gradient half) runs the same segments on every micro-batch, with the same
// tensor-, context- and pipeline-parallel traffic between them; what FSDP adds varies (a stage's
// first forward also unshards its units, its last backward reduces their gradients, resharding
// after forward unshards again in some forwards only). So the ops of the first kind that one action
// issued, the fewest over those issued yet, bound what each of its remaining actions will add, and
//   ops so far + sum over kinds of remaining actions x that fewest
// is a lower bound on the graph's ops. Past max_ops, the graph cannot fit: the build stops there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace shardsim::graph {

class OpForecast {
 public:
  explicit OpForecast(std::size_t kinds) : kinds_(kinds) {}

  // `count` more actions of `kind` will be issued.
  void plan(std::size_t kind, std::int64_t count) {
    Kind& k = kinds_[kind];
    if (k.issued > 0) ahead_ += count * k.fewest;
    k.remaining += count;
  }

  // One action of `kind` was issued and added `ops` ops of the kind every action issues alike.
  void issued(std::size_t kind, std::int64_t ops) {
    Kind& k = kinds_[kind];
    if (k.issued > 0) ahead_ -= k.remaining * k.fewest;
    k.remaining -= 1;
    k.issued += 1;
    if (ops < k.fewest) k.fewest = ops;
    ahead_ += k.remaining * k.fewest;
  }

  // The fewest ops the remaining planned actions will still add (those of kinds not issued yet: none).
  [[nodiscard]] std::int64_t ahead() const { return ahead_; }

 private:
  struct Kind {
    std::int64_t remaining = 0;
    std::int64_t issued = 0;
    std::int64_t fewest = std::numeric_limits<std::int64_t>::max();
  };
  std::vector<Kind> kinds_;
  std::int64_t ahead_ = 0;
};

}  // namespace shardsim::graph

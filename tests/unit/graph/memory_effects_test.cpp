// The memory effects the graph attaches to ops, worked out by hand for the tiny Llama of
// tests/data (4 blocks, hidden 512, 8 heads, MLP 1376, vocab 1000) on 8 GPUs.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "fixtures/fixtures.hpp"

using namespace shardsim;

TEST_CASE("ZeRO-3 keeps 14 bytes per parameter before backward, 18 with gradient partitions") {
  // estimate_zero3_model_states_mem_needs: 18 x params / N (2 bf16 partition + 4 fp32 master +
  // 8 Adam + 4 fp32 gradients); the gradient partitions appear as buckets are reduced.
  const std::vector<std::string> sets{"fsdp.sharding=zero3"};
  const auto p = test::prepared("tests/data/tiny_llama.yaml", sets);
  double state = 0;
  for (const auto& e : p.graph.info.initial_memory) {
    if (e.category == graph::MemCategory::sharded_params || e.category == graph::MemCategory::optimizer_state) state += e.bytes;
  }
  double shard = 0;
  for (const auto& u : p.plan.units) shard += static_cast<double>(u.shard_numel);
  CHECK(state == doctest::Approx(14 * shard).scale(0));
  double grad_partitions = 0;
  for (std::size_t i = 0; i < p.graph.size(); ++i) {
    const auto& op = p.graph.op(static_cast<int>(i));
    if (op.step != 0) continue;
    for (const auto& e : op.memory) {
      if (e.category == graph::MemCategory::grad_shards && e.bytes > 0) grad_partitions += e.bytes;
    }
  }
  CHECK(grad_partitions == doctest::Approx(4 * shard).epsilon(1e-3).scale(0));
}

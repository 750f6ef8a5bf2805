// Tensor parallelism through the whole pipeline (scenario -> graph -> engine -> report): TP
// collectives sit on the critical path, run over NVLink while the group fits in a node, and fall
// off a cliff when it spans nodes.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/pipeline.hpp"
#include "graph/groups.hpp"
#include "report/outputs.hpp"
#include "test_support.hpp"

using namespace shardsim;

namespace {

struct TpRun {
  double step = 0;
  double tp_comm = 0;
  double tp_exposed = 0;
  double compute = 0;
  double tokens_per_s_per_gpu = 0;
};

// The tiny Llama with 16 heads (so that 16 divides them) and 8,192-token sequences, so that a TP
// collective moves 8,192 x 512 x 2 = 8 MiB, bandwidth-bound: FSDP2 on 2 DGX H100 nodes.
TpRun run(int tp, int nics_per_node) {
  return test::in_child([tp, nics_per_node] {
    const std::vector<std::string> sets{"fsdp.version=2",
                                        "cluster.nodes=2",
                                        "model.heads=16",
                                        "model.kv_heads=16",
                                        "training.seq_len=8192",
                                        fmt::format("parallelism.tp={}", tp),
                                        fmt::format("cluster.overrides={{node.nics: {}}}", nics_per_node)};
    const auto p = cli::prepare(test::source_dir() / "tests/data/tiny_llama.yaml", sets);
    const auto s = cli::simulate(p).summary;
    return TpRun{s.step_time, s.tp_comm_s, s.tp_exposed_comm_s, s.compute_s, s.tokens_per_s_per_gpu};
  });
}

}  // namespace

TEST_CASE("tensor parallel across nodes: the TP collectives leave NVLink for the NICs") {
  const TpRun in_node = run(8, 8);
  const TpRun rails = run(16, 8);    // DGX H100: one 400 Gb/s NIC per GPU
  const TpRun one_nic = run(16, 1);  // one 400 Gb/s NIC per node
  INFO("tp 8: TP " << in_node.tp_comm << " s; tp 16, 8 NICs: " << rails.tp_comm << " s; 1 NIC: " << one_nic.tp_comm << " s");
  // Without async TP the compute waits for every TP collective: all of it is exposed.
  CHECK(in_node.tp_exposed == doctest::Approx(in_node.tp_comm).epsilon(0.01).scale(0));
  CHECK(one_nic.tp_exposed == doctest::Approx(one_nic.tp_comm).epsilon(0.01).scale(0));
  // Per rank a TP collective of S = 8 MiB moves (t-1)/t S: about the same bytes at 8 and 16.
  // Inside a node they go over NVLink (about 360 GB/s of bus bandwidth per GPU, ~47 us each with
  // NCCL's latency). Across two nodes every ring crosses the network: with a NIC per GPU NCCL's
  // channels cross on all eight rails at once (8 x 47.5 GB/s, close to NVLink: a small loss,
  // latency mostly); with one NIC per node everything crosses at 47.5 GB/s:
  // 15/16 x 8.4 MB / 47.5 GB/s = 166 us plus latency, about 4x the in-node time.
  CHECK(rails.tp_comm < 2 * in_node.tp_comm);
  CHECK(one_nic.tp_comm > 3 * in_node.tp_comm);
  CHECK(one_nic.compute < in_node.compute);  // each rank's matmuls halve
  CHECK(one_nic.tokens_per_s_per_gpu < in_node.tokens_per_s_per_gpu);
}

TEST_CASE("tensor parallel: the Perfetto trace shows the TP stream as a named track with its collectives") {
  const auto p =
      cli::prepare(test::source_dir() / "tests/data/tiny_llama.yaml", std::vector<std::string>{"fsdp.version=2", "parallelism.tp=2"});
  const auto out = cli::simulate(p);
  const auto trace = nlohmann::json::parse(report::chrome_trace(p.graph, out.result.timeline, 2));
  const int tp_tid = static_cast<int>(graph::Stream::tp);
  bool named = false;
  int tp_events = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["tid"] == tp_tid && e["args"]["name"] == "tp") named = true;
    if (e["ph"] == "X" && e["tid"] == tp_tid) ++tp_events;
  }
  CHECK(named);
  // Per rank: 4 blocks x 8 + the embedding's 2 + the output's 2 + the loss's 1 + the gradient
  // norm's all-reduce 1 = 38, on 2 ranks shown.
  CHECK(tp_events == 2 * 38);
}

TEST_CASE("tensor parallel: symmetric mode gives full mode's figures, TP inside a node and across nodes") {
  // Every rank does the same, and where each GPU has its own NIC the other groups' collectives use
  // other ports and NICs than the representative rank's: the figures agree to the last digit.
  struct Figures {
    double step = 0, comm = 0, tp = 0, peak = 0;
  };
  const auto figures = [](std::vector<std::string> sets, const char* mode) {
    return test::in_child([&] {
      sets.push_back(fmt::format("simulation.mode={}", mode));
      const auto s = cli::simulate(cli::prepare(test::source_dir() / "tests/data/tiny_llama.yaml", sets)).summary;
      return Figures{s.step_time, s.comm_s, s.tp_comm_s, s.memory.peak_reserved};
    });
  };
  const std::vector<std::vector<std::string>> cases{
      {"fsdp.version=2", "cluster.nodes=4", "parallelism.tp=2"},
      {"fsdp.version=2", "cluster.nodes=4", "parallelism.tp=4", "fsdp.sharding=hybrid_shard"},
      {"fsdp.version=1", "cluster.nodes=4", "parallelism.tp=2", "parallelism.tp_sequence_parallel=false"},
      {"fsdp.version=2", "cluster.nodes=4", "model.heads=16", "model.kv_heads=16", "parallelism.tp=16"},
  };
  for (const auto& c : cases) {
    const Figures full = figures(c, "full");
    const Figures sym = figures(c, "symmetric");
    INFO(c.back());
    CHECK(sym.step == doctest::Approx(full.step).epsilon(1e-9).scale(0));
    CHECK(sym.comm == doctest::Approx(full.comm).epsilon(1e-9).scale(0));
    CHECK(sym.tp == doctest::Approx(full.tp).epsilon(1e-9).scale(0));
    CHECK(sym.peak == full.peak);
  }
}

TEST_CASE("DDP x TP: gradient buckets are all-reduced over the ranks of one TP index") {
  // 8 GPUs as TP 2 x DDP 4: ranks 1, 3, 5, 7 hold the same half of every TP-split weight and
  // reduce its gradients together; an all-reduce over all 8 would mix the two halves.
  const std::vector<std::string> sets{"fsdp.version=2", "fsdp.sharding=no_shard", "parallelism.tp=2"};
  const auto p = cli::prepare(test::source_dir() / "tests/data/tiny_llama.yaml", sets);
  const graph::Groups groups(p.graph.info);
  int buckets = 0;
  for (std::size_t o = 0; o < p.graph.size(); ++o) {
    const graph::Op& op = p.graph.op(static_cast<int>(o));
    if (op.kind != graph::OpKind::all_reduce || op.group == graph::Group::tp) continue;
    ++buckets;
    CHECK(groups.size(op.group) == 4);
    CHECK(groups.members(op.group, groups.instance_of(op.group, 3)) == std::vector<int>{1, 3, 5, 7});
  }
  CHECK(buckets > 0);
}

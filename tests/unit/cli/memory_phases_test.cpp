// Memory at one moment of a simulated step (scenario -> graph -> engine -> report), worked out by hand for a small model: the tiny Llama of
// tests/data (4 blocks, hidden 512, 8 heads, MLP 1376, vocab 1000, 512 tokens per micro-step),
// FSDP1 full shard on 8 GPUs, bf16 parameters with fp32 reduction, AdamW, no checkpointing.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cli/pipeline.hpp"
#include "test_support.hpp"

using namespace shardsim;

TEST_CASE("allocated memory as the backward pass starts, by hand") {
  // Without FSDP's hooks on the CPU (180 us a block, more than the tiny Llama's GPU time for one),
  // which would hold the CPU back to the GPU's pace: the count below is of the rate limiter alone.
  const std::vector<std::string> no_hooks{"cluster.overrides.host.fsdp1_hook_per_tensor=0us"};
  const auto p = cli::prepare(test::source_dir() / "tests/data/tiny_llama.yaml", no_hooks);
  const auto out = cli::simulate(p);
  int bwd_loss = -1;
  for (std::size_t i = 0; i < p.graph.size(); ++i) {
    if (p.graph.op(static_cast<int>(i)).name == "BWD loss") bwd_loss = static_cast<int>(i);
  }
  REQUIRE(bwd_loss >= 0);
  const double t = out.result.timeline.at(bwd_loss, 0).start;
  const auto m = report::memory_timeline(p.graph, out.result.timeline, 0);
  double at_t = 0;
  for (const auto& point : m.points) {
    if (point.time <= t) at_t = point.total();
  }

  // Parameters: a block holds 4 x 512^2 (attention) + 3 x 512 x 1376 (MLP) + 2 x 512 (norms)
  // = 3,163,136; the root 1000 x 512 x 2 (embedding, output) + 512 (final norm) = 1,024,512.
  // Both divide by 8: shards of 395,392 and 128,064 elements, 1,709,632 per rank.
  const double shard = 4 * 395'392.0 + 128'064;
  const auto blocks512 = [](double b) { return std::ceil(b / 512) * 512; };  // allocator blocks
  const double fp32_shards = blocks512(4 * shard);                           // 6,838,528 -> 6,838,784
  const double adam = 8 * shard;
  // Unsharded in bf16: the root (never resharded) and three blocks whose backward all-gathers the
  // CPU has issued (allocating their buffers) by the time the GPU starts the loss's backward. The
  // limiter's queue holds the forward reshard events e0..e3; AG 3 waits for e2 (FWD layers.2's
  // end), the prefetched AG 2 finds one event queued and waits for none, AG 1 (prefetched at
  // block 2's pre-backward, after BWD layers.3 is issued) waits for e3, the end of FWD layers.3.
  // All of that is before the forward's norm, output and loss have run, so nothing holds the CPU
  // back (4 blocks x 33 kernels are far from the 1,024-launch queue).
  const double root = 2 * 1'024'512.0;
  const double three_blocks = 3 * 2 * 3'163'136.0;
  // Saved activations per token, bf16 (sim/model/blocks.cpp, no checkpointing):
  // 2 (4h + 5q + 4f) + 4 x heads = 2 (2048 + 2560 + 5504) + 32 = 20,256 bytes.
  const double tokens = 512;
  const double blocks = 4 * 20'256 * tokens;
  const double norm_and_output_inputs = 2 * (2 * 512 * tokens);
  // The loss keeps fp32 log-softmax (4 x vocab per token); its backward holds two more.
  const double loss = 4 * 1000 * tokens + 8 * 1000 * tokens;
  CHECK(at_t == doctest::Approx(fp32_shards + adam + root + three_blocks + blocks + norm_and_output_inputs + loss).scale(0));
  CHECK(m.unpaired_frees == 0);
}

TEST_CASE("foreach AdamW's temporary is live while the optimizer steps, by hand") {
  // torch.optim's foreach AdamW takes sqrt(exp_avg_sq) out of place: fp32 tensors the size of
  // the rank's shards, one per unit (FSDP1's flat parameters), 4 x 1,709,632 B (the shards above)
  // in 512-byte blocks, from the step's start to its end;
  // fused AdamW allocates nothing. Same run otherwise, so the same memory at the step's start
  // but for it, and the same once it is over. Each run in a child (one SimGrid per process).
  struct DuringAfter {
    double during = 0;
    double after = 0;
  };
  const auto at_optimizer = [](const char* impl) {
    return test::in_child([impl] {
      const std::vector<std::string> sets{std::string("training.optimizer_impl=") + impl};
      const auto p = cli::prepare(test::source_dir() / "tests/data/tiny_llama.yaml", sets);
      const auto out = cli::simulate(p);
      int step = -1;
      for (std::size_t i = 0; i < p.graph.size(); ++i) {
        if (p.graph.op(static_cast<int>(i)).kind == graph::OpKind::optimizer) step = static_cast<int>(i);
      }
      DuringAfter m{-1, -1};
      if (step < 0) return m;
      const auto& when = out.result.timeline.at(step, 0);
      for (const auto& point : report::memory_timeline(p.graph, out.result.timeline, 0).points) {
        if (point.time <= when.start) m.during = point.total();
        if (point.time <= when.end) m.after = point.total();
      }
      return m;
    });
  };
  const DuringAfter foreach = at_optimizer("foreach");
  const DuringAfter fused = at_optimizer("fused");
  REQUIRE(fused.during > 0);
  const double shard = 4 * 395'392.0 + 128'064;
  // Four blocks of 4 x 395,392 B (whole blocks) and the root's 4 x 128,064 B, 512,256 -> 512,512.
  const double allocator_blocks = 4 * (4 * 395'392.0) + 512'512;  // 6,838,784 B
  CHECK(allocator_blocks - 4 * shard == 256);                     // the root's piece rounded up
  CHECK(foreach.during - fused.during == doctest::Approx(allocator_blocks).scale(0));
  CHECK(foreach.after == doctest::Approx(fused.after).scale(0));
}

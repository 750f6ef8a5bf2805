// Random combinations of valid settings, as a user trying things would write them: every command
// must end in a result or an input error that names what is wrong, never an internal error, a
// crash or a hang. The draws are seeded, so a failure reruns the same way (its INFO prints the
// command). Randomized runs of this kind found `tune --tp 3` on 8 GPUs crashing (an empty layout
// search) and `compare` refusing the timelines of TP, PP and CP runs.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "system_support.hpp"

using namespace shardsim::test;
namespace fs = std::filesystem;

namespace {

struct Choice {
  const char* key;
  std::vector<std::string> values;
};

// Scenario keys and values that each load on their own; together they may conflict, which the
// loader must say.
const std::vector<Choice> kSettings{
    {"cluster.nodes", {"1", "2", "3"}},
    {"model.layers", {"1", "2", "3", "5"}},
    {"model.kv_heads", {"8", "4", "2", "1"}},
    {"training.seq_len", {"512", "1000", "2048"}},
    {"training.micro_batch", {"1", "2", "3"}},
    {"training.grad_accum", {"1", "2", "3"}},
    {"training.no_sync", {"true", "false"}},
    {"training.activation_checkpointing", {"none", "selective", "full", "blocks"}},
    {"training.dtype", {"fp32", "bf16"}},
    {"training.compile", {"true", "false"}},
    {"training.float8.recipe", {"tensorwise", "rowwise", "rowwise_with_gw_hp", "none"}},
    {"training.attention", {"flash", "unfused", "cudnn", "flash3"}},
    {"training.optimizer", {"adamw", "adam", "sgd"}},
    {"training.optimizer_impl", {"auto", "foreach", "fused"}},
    {"training.keep_logits", {"false", "true"}},
    {"training.loss_upcast", {"true", "false"}},
    {"training.loss_impl", {"torch", "megatron"}},
    {"training.expandable_segments", {"true", "false"}},
    {"training.dropout", {"0", "0.1"}},
    {"training.attention_dropout", {"0", "0.1"}},
    {"fsdp.version", {"1", "2", "2"}},
    {"fsdp.sharding", {"full_shard", "shard_grad_op", "no_shard", "hybrid_shard", "hybrid_shard_zero2", "zero3", "shard_optimizer"}},
    {"fsdp.forward_prefetch", {"false", "true"}},
    {"fsdp.ddp_impl", {"torch", "megatron"}},
    {"fsdp.grad_accumulation_fusion", {"true", "false"}},
    {"fsdp.cpu_offload", {"true", "false"}},
    {"fsdp.mixed_precision.param", {"bf16", "fp32"}},
    {"fsdp.zero3.offload_optimizer", {"none", "cpu", "nvme"}},
    {"parallelism.tp", {"1", "2", "4", "8"}},
    {"parallelism.tp_sequence_parallel", {"true", "false"}},
    {"parallelism.tp_async", {"true", "false"}},
    {"parallelism.cp", {"1", "2", "4"}},
    {"parallelism.pp", {"1", "2", "4"}},
    {"parallelism.pp_schedule", {"gpipe", "1f1b", "interleaved_1f1b", "zbv", "interleaved_zb"}},
    {"parallelism.pp_microbatches", {"-1", "1", "2", "4"}},
    {"simulation.mode", {"auto", "full", "symmetric"}},
    {"stragglers.jitter", {"0", "0.1"}},
    {"collectives.protocol", {"auto", "ll", "ll128", "simple"}},
};

std::string joined(const std::vector<std::string>& args) {
  std::string s = "shardsim";
  for (const auto& a : args) s += " " + a;
  return s;
}

// Exit 0, or an input error (2) or runtime error (1) that says so ("error:", or a usage error's
// "expected ..."); never a signal, a hang or an internal error.
void check_answered(const ProcessResult& r) {
  CHECK_FALSE(r.timed_out);
  CHECK(r.signal == 0);
  CHECK((r.exit_code == 0 || r.exit_code == 1 || r.exit_code == 2));
  CHECK(r.err.find("internal error") == std::string::npos);
  if (r.exit_code != 0) CHECK((r.err.find("error:") != std::string::npos || r.err.find("expected") != std::string::npos));
}

}  // namespace

TEST_CASE("random combinations of settings: run gives a result or names the conflict, never crashes") {
  const fs::path dir = scratch_dir("random-run");
  std::mt19937 rng(20261206);
  int results = 0;
  for (int i = 0; i < 60; ++i) {
    std::vector<std::string> args{"run", "tests/data/tiny_llama.yaml", "--json"};
    const int n = std::uniform_int_distribution<int>(2, 10)(rng);
    for (int k = 0; k < n; ++k) {
      const Choice& c = kSettings[std::uniform_int_distribution<std::size_t>(0, kSettings.size() - 1)(rng)];
      const std::string& v = c.values[std::uniform_int_distribution<std::size_t>(0, c.values.size() - 1)(rng)];
      args.insert(args.end(), {"--set", std::string(c.key) + "=" + v});
    }
    const auto r = run_shardsim(args, dir, 60);
    INFO(joined(args));
    INFO(r.err);
    check_answered(r);
    if (r.exit_code != 0) continue;
    ++results;
    const auto j = nlohmann::json::parse(r.out, nullptr, false);
    REQUIRE_FALSE(j.is_discarded());
    const double step = j.value("step_time_s", -1.0);
    CHECK(std::isfinite(step));
    CHECK(step > 0);
  }
  // The draws are not all conflicts: a fair share simulates (45 of the 60 with this seed).
  CHECK(results >= 15);
}

TEST_CASE("tune over layouts, schedules and recipes gives a ranking or names what cannot be searched, never crashes") {
  const fs::path dir = scratch_dir("random-tune");
  const std::vector<std::vector<std::string>> cases{
      {"--tp", "3"},  // no degree fits 8 GPUs: it crashed
      {"--tp", "1,2", "--cp", "2"},
      {"--pp", "auto", "--batch", "4", "--finalists", "1"},
      {"--pp-schedule", "1f1b,gpipe", "--pp", "1,2"},
      {"--tp", "1,2", "--tp-async", "--set", "training.compile=true", "--finalists", "1"},
      {"--float8", "auto", "--memory-limit", "10MiB"},
      {"--compile", "--set", "fsdp.version=1", "--set", "cluster.nodes=2"},
      {"--tp", "1", "--batch", "1", "--set", "parallelism.tp=2"},
  };
  for (const auto& extra : cases) {
    std::vector<std::string> args{"tune", "tests/data/tiny_llama.yaml", "-j", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_shardsim(args, dir, 120);
    INFO(joined(args));
    INFO(r.err);
    check_answered(r);
  }
}

TEST_CASE("compare reads the timeline run --out writes for a TP x PP x CP run") {
  // Its ops run on the tp, pp and cp streams, which compare refused before.
  const fs::path dir = scratch_dir("compare-3d");
  const auto run = run_shardsim({"run", "tests/data/tiny_llama.yaml", "--set", "parallelism.tp=2", "--set", "parallelism.pp=2", "--set",
                                 "parallelism.cp=2", "--out", (dir / "out").string()},
                                dir, 60);
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const std::string timeline = (dir / "out" / "timeline.json").string();
  const auto r = run_shardsim({"compare", timeline, timeline}, dir, 60);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("step time") != std::string::npos);
}

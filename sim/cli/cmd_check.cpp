// shardsim check FILE... [--set KEY=VALUE]...   validate scenario, topology and sweep files
// shardsim describe [TOPIC]   the settings each file section and each replaceable part accepts
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/pipeline.hpp"
#include "config/calibration.hpp"
#include "config/topology.hpp"
#include "config/yaml_load.hpp"
#include "core/args.hpp"
#include "core/param_spec.hpp"
#include "core/registry.hpp"
#include "engine/collectives/algorithm.hpp"
#include "engine/compute_model.hpp"
#include "engine/simulator.hpp"
#include "fsdp/wrap_policy.hpp"
#include "model/transformer.hpp"
#include "sweep/driver.hpp"
#include "sweep/sweep_file.hpp"

namespace shardsim::cli {

int cmd_check(std::span<const std::string> argv) {
  Args args("shardsim check FILE... [--set KEY=VALUE]...\n  checks scenario, topology and sweep files without simulating");
  args.repeated("--set", "KEY=VALUE", "override a scenario key first, as run and sweep do (scenario and sweep files)");
  args.parse(argv);
  if (args.positional().empty()) throw UsageError("check expects one or more scenario or topology files");
  const auto& sets = args.all("--set");
  int failures = 0;
  for (const auto& f : args.positional()) {
    try {
      const ConfigNode root = config::load_yaml_file(f);
      const bool is_map = root.is_map();
      if (root.is_null()) {
        throw ConfigError(Location{f, 1, 1}, "",
                          "empty file; expected a scenario (cluster, model, training, ...) or a topology (name, gpu, node, ...)");
      }
      if (is_map && root.find("cluster") != nullptr) {
        const Prepared p = prepare(f, sets);
        for (const auto& w : p.scenario.warnings) std::cerr << w.str() << "\n";
        std::cout << fmt::format("ok: {} (scenario: {} GPUs, {} units, {} ops)\n", f, p.graph.info.world_size, p.plan.units.size(),
                                 p.graph.size());
      } else if (sweep::is_sweep_file(root)) {
        auto sf = sweep::load_sweep_file(f);
        sf.sets.insert(sf.sets.end(), sets.begin(), sets.end());
        sweep::check_axes(sf.scenario, sf.sets, sf.axes, sf.set_where);
        std::cout << fmt::format("ok: {} (sweep: {} points of {})\n", f, sweep::grid_size(sf.axes), sf.scenario.string());
      } else if (is_map && (root.find("gpu") != nullptr || root.find("node") != nullptr || root.find("extends") != nullptr)) {
        if (!sets.empty()) throw UsageError(fmt::format("--set overrides scenario keys; {} is a topology", f));
        const auto t = config::load_topology(f, ConfigNode{}, "");
        engine::check_topology(t);
        std::cout << fmt::format("ok: {} (topology: {} x {})\n", f, t.node.gpus, t.gpu.model);
      } else {
        throw ConfigError(root.where, "",
                          fmt::format("not a scenario (a mapping with cluster:), a topology (a mapping with gpu: and node:) or a sweep (a "
                                      "mapping with scenario:); got {}",
                                      is_map ? "a mapping with neither" : root.describe()));
      }
    } catch (const ConfigError& e) {
      std::cerr << e.what() << "\n";
      ++failures;
    }
  }
  return failures == 0 ? 0 : 2;
}

namespace {

void describe_compute() {
  engine::ComputeModelRegistry r;
  engine::register_builtin_compute_models(r);
  std::cout << "gpu.compute_model: how compute ops are priced, one of\n";
  for (const auto& m : r.all()) std::cout << fmt::format("  {:<13} {}\n", m.name, m.description);
}

void describe_collectives() {
  engine::collectives::AlgorithmRegistry r;
  engine::collectives::register_builtin_algorithms(r);
  std::cout << "collectives.algorithm: auto (NCCL's tuner picks per collective and size; on AMD GPUs, gpu.arch cdna3,\n"
               "  RCCL's, by its MI300X tables: no LL128, no tree with Simple within a node) or one of\n";
  for (const auto& a : r.all()) {
    std::string protocols;
    for (auto p : engine::collectives::kProtocols) {
      if (a->has(p)) protocols += fmt::format("{}{}", protocols.empty() ? "" : " ", engine::collectives::to_string(p));
    }
    std::cout << fmt::format("  {:<13} {}\n  {:<13} protocols: {}{}\n", a->name(), a->description(), "", protocols,
                             a->in_nccl() ? "" : "; never picked by auto");
  }
}

void describe_models() {
  std::cout << fmt::format("  {:<24} {:<13} {:>6} {:>6} {:>5} {:>4} {:>4} {:>6} {:>7} {:>15}  {}\n", "preset", "arch", "layers", "hidden",
                           "heads", "kv", "head", "ffn", "vocab", "parameters", "also");
  for (const auto& s : model::presets()) {
    const auto m = model::build_model(s, 2048, 2);
    std::vector<std::string> also;
    if (s.tie_embeddings) also.emplace_back("tied embeddings");
    if (s.qkv_bias) also.emplace_back("q/k/v biases");
    if (s.qk_norm) also.emplace_back("q/k norms");
    if (s.sliding_window > 0) also.push_back(fmt::format("window {}", s.sliding_window));
    if (s.max_positions > 0) also.push_back(fmt::format("{} learned positions", s.max_positions));
    std::cout << fmt::format("  {:<24} {:<13} {:>6} {:>6} {:>5} {:>4} {:>4} {:>6} {:>7} {:>15}{}\n", s.name, model::to_string(s.arch),
                             s.layers, s.hidden, s.heads, s.kv_heads, s.head_dim, s.ffn_hidden, s.vocab, m.total_params(),
                             also.empty() ? "" : fmt::format("  {}", fmt::join(also, ", ")));
  }
}

void print_schemas(const std::vector<Schema>& schemas) {
  for (const auto& s : schemas) std::cout << render_schema(s) << "\n";
}

struct Topic {
  std::string_view name;
  std::string_view description;
  void (*print)();
};

constexpr std::array kTopics{
    Topic{"scenario", "keys of a scenario file", [] { print_schemas(config::scenario_schemas()); }},
    Topic{"topology", "keys of a topology file", [] { print_schemas(config::topology_schemas()); }},
    Topic{"wrap", "wrap policies and their settings",
          [] {
            fsdp::WrapPolicyRegistry r;
            fsdp::register_builtin_wrap_policies(r);
            for (const auto& info : r.all()) std::cout << render_schema(info.schema) << "\n";
          }},
    Topic{"models", "built-in model presets", describe_models},
    Topic{"calibration", "keys of a calibration file (shardsim calibrate)", [] { print_schemas(config::calibration_schemas()); }},
    Topic{"collectives", "collective algorithms (collectives.algorithm)", describe_collectives},
    Topic{"compute", "compute models (gpu.compute_model)", describe_compute},
    Topic{"sweep", "keys of a sweep file (shardsim sweep SWEEP.yaml)",
          [] { std::cout << render_schema(sweep::sweep_file_schema()) << "\n"; }},
};

std::string topics_text() {
  std::string out = "shardsim describe TOPIC, where TOPIC is one of:\n";
  for (const auto& t : kTopics) out += fmt::format("  {:<12} {}\n", t.name, t.description);
  return out;
}

}  // namespace

int cmd_describe(std::span<const std::string> argv) {
  Args args("shardsim describe [TOPIC]\n" + topics_text());
  args.parse(argv);
  if (args.positional().empty()) {
    std::cout << topics_text();
    return 0;
  }
  if (args.positional().size() > 1) throw UsageError("describe takes one topic\n" + topics_text());
  const std::string& topic = args.positional().front();
  for (const auto& t : kTopics) {
    if (t.name == topic) {
      t.print();
      return 0;
    }
  }
  std::vector<std::string_view> names;
  for (const auto& t : kTopics) names.push_back(t.name);
  throw UsageError(unknown_name_message("topic", topic, names));
}

}  // namespace shardsim::cli

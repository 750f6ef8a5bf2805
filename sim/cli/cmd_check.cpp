// shardsim check FILE...      validate scenario, topology and sweep files
// shardsim describe [TOPIC]   the settings each file section and each replaceable part accepts
#include <fmt/format.h>

#include <iostream>

#include "core/args.hpp"
#include "cli/commands.hpp"
#include "cli/pipeline.hpp"
#include "config/calibration.hpp"
#include "config/topology.hpp"
#include "config/yaml_load.hpp"
#include "core/param_spec.hpp"
#include "engine/collectives/algorithm.hpp"
#include "engine/simulator.hpp"
#include "fsdp/wrap_policy.hpp"
#include "model/transformer.hpp"
#include "sweep/driver.hpp"
#include "sweep/sweep_file.hpp"

namespace shardsim::cli {

int cmd_check(std::span<const std::string> argv) {
  Args args;
  args.parse(argv);
  if (args.positional().empty()) throw UsageError("check expects one or more scenario or topology files");
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
        const Prepared p = prepare(f, {});
        std::cout << fmt::format("ok: {} (scenario: {} GPUs, {} units, {} ops)\n", f, p.graph.info.world_size, p.plan.units.size(),
                                 p.graph.size());
      } else if (sweep::is_sweep_file(root)) {
        const auto sf = sweep::load_sweep_file(f);
        sweep::check_axes(sf.scenario, sf.sets, sf.axes, sf.set_where);
        std::cout << fmt::format("ok: {} (sweep: {} points of {})\n", f, sweep::grid_size(sf.axes), sf.scenario.string());
      } else if (is_map && (root.find("gpu") != nullptr || root.find("node") != nullptr || root.find("extends") != nullptr)) {
        const auto t = config::load_topology(f, ConfigNode{}, "");
        engine::check_topology(t);
        std::cout << fmt::format("ok: {} (topology: {} x {})\n", f, t.node.gpus, t.gpu.model);
      } else {
        throw ConfigError(root.where, "",
                          fmt::format("not a scenario (a mapping with cluster:), a topology (a mapping with gpu: and node:) or a sweep (a mapping with scenario:); got {}",
                                      is_map ? "a mapping with neither" : root.describe()));
      }
    } catch (const ConfigError& e) {
      std::cerr << e.what() << "\n";
      ++failures;
    }
  }
  return failures == 0 ? 0 : 2;
}

int cmd_describe(std::span<const std::string> argv) {
  Args args;
  args.parse(argv);
  const std::string topic = args.positional().empty() ? "" : args.positional().front();
  if (topic == "scenario") {
    for (const auto& s : config::scenario_schemas()) std::cout << render_schema(s) << "\n";
  } else if (topic == "topology") {
    for (const auto& s : config::topology_schemas()) std::cout << render_schema(s) << "\n";
  } else if (topic == "calibration") {
    for (const auto& s : config::calibration_schemas()) std::cout << render_schema(s) << "\n";
  } else if (topic == "wrap") {
    fsdp::WrapPolicyRegistry r;
    fsdp::register_builtin_wrap_policies(r);
    for (const auto& info : r.all()) std::cout << render_schema(info.schema) << "\n";
  } else if (topic == "models") {
    std::cout << fmt::format("  {:<26} {:>7} {:>7} {:>6} {:>4} {:>7} {:>8} {:>18}\n", "preset", "arch", "layers", "hidden", "kv", "ffn",
                             "vocab", "parameters");
    for (const auto& s : model::presets()) {
      const auto m = model::build_model(s, 2048, 2);
      std::cout << fmt::format("  {:<26} {:>7} {:>7} {:>6} {:>4} {:>7} {:>8} {:>18L}\n", s.name, model::to_string(s.arch), s.layers,
                               s.hidden, s.kv_heads, s.ffn_hidden, s.vocab, m.total_params());
    }
  } else if (topic == "sweep") {
    std::cout << render_schema(sweep::sweep_file_schema()) << "\n";
  } else if (topic == "collectives") {
    engine::collectives::AlgorithmRegistry r;
    engine::collectives::register_builtin_algorithms(r);
    std::cout << "collectives.algorithm: auto (NCCL's tuner picks per collective and size) or one of\n";
    for (const auto& a : r.all()) {
      std::string protocols;
      for (auto p : engine::collectives::kProtocols) {
        if (a->has(p)) protocols += fmt::format("{}{}", protocols.empty() ? "" : " ", engine::collectives::to_string(p));
      }
      std::cout << fmt::format("  {:<13} {}\n  {:<13} protocols: {}{}\n", a->name(), a->description(), "", protocols,
                               a->in_nccl() ? "" : "; never picked by auto");
    }
  } else {
    std::cout << "shardsim describe TOPIC, where TOPIC is one of:\n"
                 "  scenario   keys of a scenario file\n"
                 "  topology   keys of a topology file\n"
                 "  wrap       wrap policies and their settings\n"
                 "  models     built-in model presets\n"
                 "  calibration keys of a calibration file (shardsim calibrate)\n"
                 "  collectives collective algorithms (collectives.algorithm)\n"
                 "  sweep      keys of a sweep file (shardsim sweep SWEEP.yaml)\n";
    return topic.empty() ? 0 : 2;
  }
  return 0;
}

}  // namespace shardsim::cli

#include "sweep/sweep_file.hpp"

#include <fmt/format.h>

#include <array>
#include <functional>

#include "config/yaml_load.hpp"
#include "core/reader.hpp"

namespace shardsim::sweep {
namespace {

constexpr std::array kSweepParams{
    ParamSpec{"scenario", "file path", "", "the scenario every point starts from, relative to this file"},
    ParamSpec{"description", "string", "-", "notes: what the sweep is for"},
    ParamSpec{"set", "mapping of dotted keys", "{}",
              "overrides applied to every point, each entry as --set KEY=VALUE, e.g. {cluster.nodes: 8}"},
    ParamSpec{"grid", "mapping of dotted keys to lists", "{}",
              "every combination of these values; a list may use ... as in [1, 2, 4, ..., 128]"},
    ParamSpec{"zip", "mapping, or list of mappings", "{}", "lists of equal length advanced together: one axis per mapping"},
};
constexpr Schema kSweepSchema{"sweep", "a sweep file (shardsim sweep SWEEP.yaml --out DIR)", kSweepParams};

// Calls leaf(dotted key, key location, value) for each non-mapping value under `node`:
// {fsdp: {backward_prefetch: [...]}} and {fsdp.backward_prefetch: [...]} are the same.
void for_each_leaf(const ConfigNode& node, const std::string& prefix, const Location& key_where,
                   const std::function<void(const std::string&, const Location&, const ConfigNode&)>& leaf) {
  if (!node.is_map()) {
    leaf(prefix, key_where, node);
    return;
  }
  for (const auto& e : node.entries) for_each_leaf(e.value, prefix.empty() ? e.key : prefix + "." + e.key, e.key_where, leaf);
}

void require_map(const ConfigNode& node, const std::string& key, std::string_view example) {
  if (!node.is_map()) throw ConfigError(node.where, key, fmt::format("expected a mapping such as {}; got {}", example, node.describe()));
}

std::vector<Axis> axes_of(const ConfigNode& grid, const std::string& key) {
  require_map(grid, key, "{fsdp.backward_prefetch: [pre, post]}");
  std::vector<Axis> axes;
  for_each_leaf(grid, "", grid.where,
                [&](const std::string& k, const Location& w, const ConfigNode& v) { axes.push_back(axis_from_list(k, v, w)); });
  return axes;
}

}  // namespace

bool is_sweep_file(const ConfigNode& root) {
  if (!root.is_map() || root.find("cluster") != nullptr) return false;
  return root.find("scenario") != nullptr || root.find("grid") != nullptr || root.find("zip") != nullptr;
}

Schema sweep_file_schema() {
  return kSweepSchema;
}

SweepFile load_sweep_file(const std::filesystem::path& file) {
  const ConfigNode root = config::load_yaml_file(file);
  if (!root.is_map()) {
    throw ConfigError(root.where.line > 0 ? root.where : Location{file.string(), 0, 0}, "",
                      "expected a sweep mapping (scenario, grid, zip)");
  }
  Reader r(root, "", kSweepSchema);
  SweepFile out;
  out.scenario = r.file_path("scenario");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(out.scenario, ec)) r.fail("scenario", fmt::format("no such file: {}", out.scenario.string()));
  if (r.has("description")) (void)r.text("description");
  if (const ConfigNode* set = r.node("set")) {
    require_map(*set, "set", "{cluster.nodes: 8}");
    // Each entry is one --set KEY=VALUE: a mapping value replaces the key's value as a whole.
    for (const auto& e : set->entries) {
      out.sets.push_back(fmt::format("{}={}", e.key, to_flow_yaml(e.value)));
      out.set_where.push_back(e.key_where);
    }
  }
  if (const ConfigNode* grid = r.node("grid")) out.axes = axes_of(*grid, "grid");
  if (const ConfigNode* zip = r.node("zip")) {
    std::vector<const ConfigNode*> groups;
    if (zip->is_sequence()) {
      for (const auto& g : zip->items) groups.push_back(&g);
    } else {
      groups.push_back(zip);
    }
    for (const ConfigNode* g : groups) {
      auto axes = axes_of(*g, "zip");
      if (!axes.empty()) out.axes.push_back(zip_axes(std::move(axes), g->where));
    }
  }
  r.finish();
  (void)grid_size(out.axes);  // keys swept twice, too many points
  return out;
}

}  // namespace shardsim::sweep

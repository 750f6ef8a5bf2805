#include "sweep/driver.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "config/scenario.hpp"
#include "core/error.hpp"
#include "sweep/plots.hpp"
#include "sweep/result_store.hpp"

namespace shardsim::sweep {
namespace {

std::string file_digest(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return fnv1a64(buf.str());
}

nlohmann::json manifest_of(const SweepSpec& spec) {
  std::string points;
  for (const auto& p : spec.points) {
    for (const auto& a : p.assignments) points += a + '\x1f';
    points += '\x1e';
  }
  return nlohmann::json{{"format", 1},      {"scenario", spec.scenario.string()}, {"scenario_digest", file_digest(spec.scenario)},
                        {"set", spec.sets}, {"points", spec.points.size()},       {"points_digest", fnv1a64(points)}};
}

std::vector<std::string> flat_keys(const SweepSpec& spec) {
  std::vector<std::string> keys;
  for (const auto& d : spec.dimensions) keys.insert(keys.end(), d.begin(), d.end());
  return keys;
}

}  // namespace

std::size_t SweepOutcome::failed() const {
  return static_cast<std::size_t>(std::count_if(results.begin(), results.end(), [](const PointResult& r) { return !r.ok(); }));
}

std::vector<std::vector<std::string>> dimensions_of(std::span<const Axis> axes) {
  std::vector<std::vector<std::string>> out;
  for (const auto& a : axes) out.push_back(a.keys);
  return out;
}

void check_axes(const std::filesystem::path& scenario, std::span<const std::string> sets, std::span<const Axis> axes,
                std::span<const Location> set_where, bool only_axis_keys) {
  const auto axis_key = [&axes](std::string_view path) {
    return std::any_of(axes.begin(), axes.end(), [path](const Axis& a) {
      return std::any_of(a.keys.begin(), a.keys.end(), [path](const std::string& k) {
        return path == k || (path.size() > k.size() && path.compare(0, k.size(), k) == 0 && path[k.size()] == '.');
      });
    });
  };
  for (const auto& a : axes) {
    // The sweep file, --grid and tune refuse an axis without values before they get here.
    if (a.values.empty()) throw std::logic_error("check_axes: an axis with no values");
  }
  // The assignments of point "axis at step, the others at 0", and where each was written.
  auto load_with = [&](std::size_t axis, std::size_t step) {
    std::vector<std::string> assignments(sets.begin(), sets.end());
    std::vector<const Location*> origin(sets.size(), nullptr);
    for (std::size_t i = 0; i < set_where.size() && i < sets.size(); ++i) origin[i] = &set_where[i];
    for (std::size_t a = 0; a < axes.size(); ++a) {
      const std::size_t s = a == axis ? step : 0;
      for (std::size_t k = 0; k < axes[a].keys.size(); ++k) {
        if (axes[a].values[s][k].empty()) continue;  // left as the scenario has it
        assignments.push_back(fmt::format("{}={}", axes[a].keys[k], axes[a].values[s][k]));
        origin.push_back(&axes[a].where);
      }
    }
    try {
      (void)config::load_scenario(scenario, assignments);
    } catch (const ConfigError& e) {
      if (only_axis_keys && !axis_key(e.key_path())) return;
      // A value's error names "--set KEY=VALUE"; name the --grid option or sweep file line instead.
      for (std::size_t i = 0; i < assignments.size(); ++i) {
        if (origin[i] != nullptr && e.where().file == "--set " + assignments[i]) {
          throw ConfigError(*origin[i], e.key_path(), e.message());
        }
      }
      // An error about the scenario's own key that the sweep's values brought about (the scenario
      // loads without them): say which.
      const std::span<const std::string> swept = std::span<const std::string>(assignments).subspan(sets.size());
      bool loads_without = !swept.empty();
      try {
        if (loads_without) (void)config::load_scenario(scenario, sets);
      } catch (const ConfigError&) {
        loads_without = false;
      }
      if (!loads_without) throw;
      throw ConfigError(e.where(), e.key_path(), fmt::format("{} (at the sweep's {})", e.message(), fmt::join(swept, " ")));
    }
  };
  load_with(axes.size(), 0);
  for (std::size_t a = 0; a < axes.size(); ++a) {
    for (std::size_t s = 1; s < axes[a].size(); ++s) load_with(a, s);
  }
}

SweepOutcome run_sweep(const SweepSpec& spec, Executor& executor, SweepObserver* observer) {
  const std::vector<Point> mine = shard_points(spec.points, spec.shard);
  const std::vector<std::string> keys = flat_keys(spec);

  // Points finished by earlier runs, by identity.
  std::map<std::vector<std::string>, PointResult> done;
  std::unique_ptr<ResultStream> stream;
  if (spec.out) {
    check_manifest(*spec.out, manifest_of(spec));
    const auto own_dir = spec.shard.whole() ? *spec.out : *spec.out / spec.shard.dir_name();
    Finished finished = read_finished(*spec.out, own_dir);
    std::map<std::vector<std::string>, std::size_t> index_of;
    for (const auto& p : spec.points) index_of.emplace(p.assignments, p.index);
    // This directory's own lines are kept in its files as they are; every file counts as done.
    std::vector<PointResult> own_kept;
    for (auto* rows : {&finished.own, &finished.others}) {
      for (auto& r : *rows) {
        const auto it = index_of.find(r.assignments);
        if (it == index_of.end() || (spec.retry_failed && !r.ok())) continue;
        r.index = it->second;
        if (rows == &finished.own) own_kept.push_back(r);
        done.emplace(r.assignments, r);
      }
    }
    stream = std::make_unique<ResultStream>(own_dir, keys, own_kept);
  }

  std::vector<const Point*> todo;
  SweepOutcome outcome;
  for (const auto& p : mine) {
    if (done.contains(p.assignments)) {
      ++outcome.reused;
    } else {
      todo.push_back(&p);
    }
  }
  if (observer != nullptr) observer->started(todo.size(), outcome.reused);

  std::size_t next = 0;
  int running = 0;
  while (next < todo.size() || running > 0) {
    while (running < executor.capacity() && next < todo.size()) {
      executor.submit(*todo[next++]);
      ++running;
    }
    for (auto& r : executor.wait()) {
      --running;
      ++outcome.ran;
      if (stream) stream->append(r);
      if (observer != nullptr) observer->finished(r);
      done.insert_or_assign(r.assignments, std::move(r));
    }
  }
  if (observer != nullptr) observer->ended();

  for (const auto& p : mine) outcome.results.push_back(done.at(p.assignments));
  if (stream) {
    stream->rewrite(outcome.results);
    if (spec.shard.whole()) write_pictures(*spec.out, spec, outcome.results);
  }
  return outcome;
}

}  // namespace shardsim::sweep

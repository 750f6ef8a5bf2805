#include "sweep/tune.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <span>
#include <string>
#include <string_view>

#include "config/pp_schedule.hpp"
#include "core/args.hpp"  // UsageError
#include "core/error.hpp"

namespace shardsim::sweep {
namespace {

// The model chunks a pipeline rank runs under `schedule` (empty: the scenario's own), as the
// loader resolves them: the schedule's default (config/pp_schedule.hpp), or the scenario's count
// where it asks for more with a schedule of several; an unknown name (which the loader refuses) one.
int chunks_per_rank(const TuneSpace& space, std::string_view schedule) {
  if (schedule.empty()) return std::max(1, space.stages_per_rank);
  const auto named = config::pp_schedule_named(schedule);
  const int chunks = named ? config::default_stages_per_rank(*named) : 1;
  return chunks > 1 ? std::max(chunks, space.stages_per_rank) : 1;
}

Axis axis(std::string key, const std::vector<std::string>& values) {
  Axis a;
  a.keys = {std::move(key)};
  for (const auto& v : values) a.values.push_back({v});
  a.where = Location{"shardsim tune", 0, 0};
  return a;
}

// A tree of dotted keys in first-seen order, for the YAML snippet.
struct KeyTree {
  std::string name;
  std::string value;  // leaf: canonical YAML
  std::vector<KeyTree> children;

  KeyTree& child(const std::string& n) {
    for (auto& c : children) {
      if (c.name == n) return c;
    }
    children.push_back(KeyTree{n, {}, {}});
    return children.back();
  }
  void render(std::string& out, int indent) const {
    for (const auto& c : children) {
      if (c.children.empty()) {
        out += fmt::format("{}{}: {}\n", std::string(static_cast<std::size_t>(indent), ' '), c.name, c.value);
      } else {
        out += fmt::format("{}{}:\n", std::string(static_cast<std::size_t>(indent), ' '), c.name);
        c.render(out, indent + 2);
      }
    }
  }
};

}  // namespace

TuneSpace tune_space(const config::ScenarioConfig& base, std::optional<std::int64_t> batch, const Layouts& layouts) {
  TuneSpace s;
  s.batch = batch.value_or(base.training.micro_batch * base.training.grad_accum);
  s.blocks = layouts.blocks;
  s.pp = base.parallelism.pp;
  s.stages_per_rank = base.parallelism.pp_stages_per_rank;
  s.shape.push_back(axis("training.activation_checkpointing", {"none", "selective", "full"}));
  const int base_tp = base.parallelism.tp;
  const int base_pp = base.parallelism.pp;
  const int base_cp = base.parallelism.cp;
  const auto searched = [](const std::vector<int>& degrees, int own) { return !degrees.empty() && degrees != std::vector<int>{own}; };
  const bool tp_search = searched(layouts.tp, base_tp);
  const bool pp_search = searched(layouts.pp, base_pp);
  const bool cp_search = searched(layouts.cp, base_cp);
  const bool schedules = !layouts.pp_schedules.empty();
  if (!tp_search && !pp_search && !cp_search && !schedules && !layouts.tp_async && base_pp == 1) {
    Axis micro = axis("training.micro_batch", {});
    Axis accum = axis("training.grad_accum", {});
    for (std::int64_t m = 1; m <= s.batch; ++m) {
      if (s.batch % m != 0) continue;
      micro.values.push_back({std::to_string(m)});
      accum.values.push_back({std::to_string(s.batch / m)});
    }
    s.shape.push_back(zip_axes({micro, accum}, micro.where));
  } else {
    // A TP group of t, a pipeline of p and a CP group of c share one data-parallel rank's batch:
    // to keep the global batch, a rank's batch at (t, p, c) is the scenario's x t p c / its own
    // (degrees that make it fractional, or do not divide the world, are left out).
    Axis layout;
    layout.keys = {"parallelism.tp", "parallelism.pp"};
    if (cp_search) layout.keys.emplace_back("parallelism.cp");
    layout.keys.insert(layout.keys.end(), {"training.micro_batch", "training.grad_accum"});
    if (schedules) layout.keys.emplace_back("parallelism.pp_schedule");
    if (layouts.tp_async) layout.keys.emplace_back("parallelism.tp_async");
    layout.where = Location{"shardsim tune", 0, 0};
    const std::int64_t world = base.world_size();
    const std::int64_t own = static_cast<std::int64_t>(base_tp) * base_pp * base_cp;
    for (const int t : tp_search ? layouts.tp : std::vector<int>{base_tp}) {
      for (const int p : pp_search ? layouts.pp : std::vector<int>{base_pp}) {
        for (const int c : cp_search ? layouts.cp : std::vector<int>{base_cp}) {
          const std::int64_t group = static_cast<std::int64_t>(t) * p * c;
          if (world % group != 0 || (s.batch * group) % own != 0) continue;
          const std::int64_t per_rank = s.batch * group / own;
          for (std::int64_t m = 1; m <= per_rank; ++m) {
            if (per_rank % m != 0 || (p > 1 && m != per_rank)) continue;
            std::vector<std::string> row{std::to_string(t), std::to_string(p)};
            if (cp_search) row.push_back(std::to_string(c));
            row.insert(row.end(), {std::to_string(m), std::to_string(per_rank / m)});
            // A schedule applies to pipelined layouts only, async TP to tensor-parallel ones; the
            // others leave the key alone.
            const std::vector<std::string> none{""};
            const auto& pp_options = !schedules ? none : p > 1 ? layouts.pp_schedules : none;
            const std::vector<std::string> async_options = !layouts.tp_async ? none
                                                           : t > 1           ? std::vector<std::string>{"false", "true"}
                                                                             : none;
            for (const auto& schedule : pp_options) {
              // More model stages than blocks: the loader refuses it (a stage holds at least one).
              if (p > 1 && layouts.blocks > 0 && static_cast<std::int64_t>(p) * chunks_per_rank(s, schedule) > layouts.blocks) {
                ++s.too_deep;
                continue;
              }
              for (const auto& async : async_options) {
                auto with = row;
                if (schedules) with.push_back(schedule);
                if (layouts.tp_async) with.push_back(async);
                layout.values.push_back(std::move(with));
              }
            }
          }
        }
      }
    }
    if (layout.values.empty() && s.too_deep > 0) {
      throw UsageError(
          fmt::format("no layout to search: each pipelined one asked for has more model stages (pp x stages per rank) than the "
                      "model's {} blocks; expected smaller --pp degrees or schedules of one stage per rank",
                      layouts.blocks));
    }
    if (layout.values.empty()) {
      // Every degree left out: say which were asked for and what they must satisfy.
      std::vector<std::string> asked;
      const auto list = [&](std::string_view name, bool search, const std::vector<int>& degrees) {
        if (search) asked.push_back(fmt::format("{} {}", name, fmt::join(degrees, ", ")));
      };
      list("tp", tp_search, layouts.tp);
      list("pp", pp_search, layouts.pp);
      list("cp", cp_search, layouts.cp);
      const std::string per_group = own == 1 ? std::string("g") : fmt::format("g / {}", own);
      throw UsageError(fmt::format(
          "no layout to search among {}: a layout's tp x pp x cp group must divide the {} GPUs and keep the global batch in "
          "whole sequences per data-parallel rank ({} per rank at tp {} x pp {} x cp {}, so {} x {} at a group of g GPUs); expected "
          "degrees whose product g divides {}{}",
          asked.empty() ? std::string("the scenario's own degrees") : fmt::format("{}", fmt::join(asked, " x ")), world, s.batch, base_tp,
          base_pp, base_cp, s.batch, per_group, world,
          own == 1 ? std::string() : fmt::format(" and makes {} x {} whole", s.batch, per_group)));
    }
    s.shape.push_back(std::move(layout));
  }
  std::vector<std::string> sharding{"full_shard", "shard_grad_op", "no_shard", "shard_optimizer"};
  if (base.cluster.nodes > 1) sharding.insert(sharding.end(), {"hybrid_shard", "hybrid_shard_zero2"});
  s.fsdp.push_back(axis("fsdp.sharding", sharding));
  std::vector<std::string> wraps{"{policy: module, module: block, blocks_per_unit: 1}",
                                 "{policy: module, module: block, blocks_per_unit: 2}",
                                 "{policy: module, module: block, blocks_per_unit: 4}", "{policy: size, min_params: 100000000}"};
  // fully_shard also wraps the modules around the blocks as units of their own, as torchtitan does.
  if (base.fsdp.version == 2) wraps.push_back("{policy: module, module: block, blocks_per_unit: 1, outer_modules: units}");
  s.fsdp.push_back(axis("fsdp.wrap", wraps));
  if (base.fsdp.version == 1) {
    s.prefetch.push_back(axis("fsdp.backward_prefetch", {"pre", "post", "none"}));
    s.prefetch.push_back(axis("fsdp.limit_all_gathers", {"true", "false"}));
  } else {
    // fully_shard's explicit prefetch lists (set_modules_to_backward_prefetch / _forward_prefetch):
    // one unit ahead in backward is its default, none in forward.
    s.prefetch.push_back(axis("fsdp.backward_prefetch_depth", {"1", "2"}));
    s.prefetch.push_back(axis("fsdp.forward_prefetch", {"false", "true"}));
  }
  return s;
}

namespace {

// The value a point assigns to `key`, or empty.
std::string_view assigned(const Point& p, std::string_view key) {
  for (const auto& a : p.assignments) {
    if (a.size() > key.size() && a.compare(0, key.size(), key) == 0 && a[key.size()] == '=')
      return std::string_view(a).substr(key.size() + 1);
  }
  return {};
}

// Whether the point's wrap units fit in its pipeline stages: blocks_per_unit (of the wrap values
// tune_space writes) at most the blocks of a model stage.
bool units_fit_stages(const TuneSpace& space, const Point& p) {
  if (space.blocks <= 0) return true;
  const std::string_view wrap = assigned(p, "fsdp.wrap");
  constexpr std::string_view kPerUnit = "blocks_per_unit: ";
  const auto at = wrap.find(kPerUnit);
  if (at == std::string_view::npos) return true;
  const std::int64_t per_unit = std::stoll(std::string(wrap.substr(at + kPerUnit.size())));
  const std::string_view pp = assigned(p, "parallelism.pp");
  const std::int64_t ranks = pp.empty() ? space.pp : std::stoll(std::string(pp));
  const std::int64_t stages = ranks > 1 ? ranks * chunks_per_rank(space, assigned(p, "parallelism.pp_schedule")) : 1;
  return per_unit <= space.blocks / std::max<std::int64_t>(1, stages);
}

// The points of `axes` whose wrap units fit their pipeline stages, each after `prefix`, numbered
// from `out`'s size; `dropped`, if given, counts the others.
void append_points(const TuneSpace& space, std::span<const Axis> axes, const std::vector<std::string>& prefix, std::vector<Point>& out,
                   std::size_t* dropped) {
  for (auto& v : expand(axes)) {
    Point p{out.size(), prefix};
    p.assignments.insert(p.assignments.end(), v.assignments.begin(), v.assignments.end());
    if (!units_fit_stages(space, p)) {
      if (dropped != nullptr) ++*dropped;
      continue;
    }
    out.push_back(std::move(p));
  }
}

}  // namespace

std::vector<Point> stage1_points(const TuneSpace& space, bool exhaustive, std::size_t* left_out) {
  std::vector<Point> points;
  if (left_out != nullptr) *left_out = 0;
  append_points(space, space.stage1_axes(exhaustive), {}, points, left_out);
  points.push_back(Point{points.size(), {}});
  return points;
}

double unshardable_bytes(const PointResult& r) {
  const auto it = r.metrics.find("memory_breakdown");
  if (it == r.metrics.end() || !it->is_object()) return 0;
  double bytes = 0;
  for (const char* part : {"activations", "loss", "pipeline_buffers", "workspaces"}) {
    const auto v = it->find(part);
    if (v != it->end() && v->is_number()) bytes += v->get<double>();
  }
  return bytes;
}

std::vector<PointResult> stage2_shapes(const std::vector<PointResult>& results, std::optional<double> limit, std::size_t n,
                                       std::size_t* beyond) {
  std::vector<PointResult> out = finalists(results, limit, n);
  const double best_fit = out.empty() ? 0 : out.front().number("tokens_per_s_per_gpu");
  std::vector<std::size_t> near;
  if (beyond != nullptr) *beyond = 0;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const PointResult& r = results[i];
    if (!r.ok() || fits(r, limit) || r.number("tokens_per_s_per_gpu") <= best_fit) continue;
    if (unshardable_bytes(r) > limit.value_or(r.allocator_memory())) {  // no sharding can make it fit
      if (beyond != nullptr) ++*beyond;
      continue;
    }
    near.push_back(i);
  }
  std::stable_sort(near.begin(), near.end(), [&](std::size_t a, std::size_t b) {
    return results[a].number("peak_memory_bytes") < results[b].number("peak_memory_bytes");
  });
  for (std::size_t k = 0; k < near.size() && k < n; ++k) out.push_back(results[near[k]]);
  return out;
}

std::vector<Point> stage2_points(const TuneSpace& space, const std::vector<PointResult>& shapes, std::size_t* left_out) {
  std::vector<Point> out;
  if (left_out != nullptr) *left_out = 0;
  for (const auto& s : shapes) append_points(space, space.fsdp, s.assignments, out, left_out);
  return out;
}

std::vector<Point> stage3_points(const TuneSpace& space, const std::vector<PointResult>& finalists, const MootKeys& moot) {
  std::vector<Point> out;
  for (const auto& f : finalists) {
    const std::vector<std::string> moot_keys = moot ? moot(f) : std::vector<std::string>{};
    std::vector<Axis> axes;
    for (const auto& a : space.prefetch) {
      const bool applies = std::any_of(a.keys.begin(), a.keys.end(), [&](const std::string& k) {
        return std::find(moot_keys.begin(), moot_keys.end(), k) == moot_keys.end();
      });
      if (applies) axes.push_back(a);
    }
    if (axes.empty()) continue;
    append_points(space, axes, f.assignments, out, nullptr);  // a finalist's wrap already fits its stages
  }
  return out;
}

bool fits(const PointResult& r, std::optional<double> limit) {
  if (!r.ok()) return false;
  return limit ? r.number("peak_memory_bytes") <= *limit : !r.oom();
}

std::vector<std::size_t> ranked(const std::vector<PointResult>& results, std::optional<double> limit, std::size_t n) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (fits(results[i], limit)) out.push_back(i);
  }
  std::stable_sort(out.begin(), out.end(), [&](std::size_t a, std::size_t b) {
    const double ta = results[a].number("tokens_per_s_per_gpu"), tb = results[b].number("tokens_per_s_per_gpu");
    if (ta != tb) return ta > tb;
    return results[a].number("peak_memory_bytes") < results[b].number("peak_memory_bytes");
  });
  // A later stage's setting that changed nothing (the shape's own sharding and wrap, the finalist's
  // own prefetching, or prefetching its sharding makes moot) repeats the configuration it
  // extends: keep the shorter.
  const auto repeats = [&](std::size_t longer, std::size_t shorter) {
    const auto& l = results[longer].assignments;
    const auto& s = results[shorter].assignments;
    return results[longer].number("tokens_per_s_per_gpu") == results[shorter].number("tokens_per_s_per_gpu") &&
           results[longer].number("peak_memory_bytes") == results[shorter].number("peak_memory_bytes") && l.size() > s.size() &&
           std::equal(s.begin(), s.end(), l.begin());
  };
  std::vector<std::size_t> kept;
  for (std::size_t i : out) {
    if (kept.size() == n) break;
    if (std::none_of(kept.begin(), kept.end(), [&](std::size_t k) { return repeats(i, k); })) kept.push_back(i);
  }
  return kept;
}

std::vector<PointResult> finalists(const std::vector<PointResult>& results, std::optional<double> limit, std::size_t n) {
  std::vector<PointResult> out;
  for (std::size_t i : ranked(results, limit, results.size())) {
    if (out.size() == n) break;
    const auto& r = results[i];
    const bool same = std::any_of(out.begin(), out.end(), [&](const PointResult& f) {
      return f.number("tokens_per_s_per_gpu") == r.number("tokens_per_s_per_gpu") &&
             f.number("peak_memory_bytes") == r.number("peak_memory_bytes");
    });
    if (!same) out.push_back(r);
  }
  return out;
}

std::string yaml_snippet(const std::vector<std::string>& assignments, const std::vector<std::string>& comment) {
  KeyTree root;
  for (const auto& a : assignments) {
    const auto [key, value] = split_assignment(a);
    KeyTree* node = &root;
    std::string_view rest = key;
    while (true) {
      const auto dot = rest.find('.');
      node = &node->child(std::string(rest.substr(0, dot)));
      if (dot == std::string_view::npos) break;
      rest = rest.substr(dot + 1);
    }
    node->value = value;
    node->children.clear();  // a whole value replaces what an earlier key set below it
  }
  std::string out;
  for (const auto& c : comment) out += c.empty() ? "#\n" : "# " + c + "\n";
  root.render(out, 0);
  return out;
}

}  // namespace shardsim::sweep

// index.html, and writing the pictures: see plots.hpp.
#include <fmt/format.h>

#include "core/atomic_file.hpp"
#include "sweep/plots.hpp"
#include "sweep/svg.hpp"

namespace shardsim::sweep {
namespace {

constexpr std::size_t kBestRows = 10;
constexpr std::size_t kFailedRows = 20;

std::vector<std::string> swept_keys(const SweepSpec& spec) {
  std::vector<std::string> keys;
  for (const auto& d : spec.dimensions) keys.insert(keys.end(), d.begin(), d.end());
  return keys;
}

}  // namespace

std::string index_html(const SweepSpec& spec, const std::vector<PointResult>& results, bool has_heatmap) {
  using svg::escape;
  std::size_t fit = 0, oom = 0, failed = 0;
  for (const auto& r : results) {
    fit += r.fits() ? 1 : 0;
    oom += r.ok() && r.oom() ? 1 : 0;
    failed += r.ok() ? 0 : 1;
  }
  const auto keys = swept_keys(spec);
  std::string out = fmt::format(
      "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>shardsim sweep: {0}</title>\n"
      "<style>body{{font-family:sans-serif;margin:2em;max-width:1100px}} table{{border-collapse:collapse;margin:1em 0}}"
      " th,td{{border:1px solid #ccc;padding:4px 8px;text-align:right}} th{{background:#f3f3f3}} td.k{{text-align:left}}"
      " img{{max-width:100%;border:1px solid #eee}} code{{background:#f6f6f6}}</style></head><body>\n"
      "<h1>Sweep of {0}</h1>\n",
      escape(spec.scenario.filename().string()));
  std::string sets;
  for (const auto& s : spec.sets) sets += fmt::format(" <code>--set {}</code>", escape(s));
  out += fmt::format(
      "<p>{} points: {} fit in memory, {} out of memory, {} failed.{} Tables: <a href=\"results.csv\">results.csv</a>, "
      "<a href=\"results.jsonl\">results.jsonl</a>.</p>\n",
      results.size(), fit, oom, failed, sets.empty() ? "" : " Every point with" + sets + ".");

  const Objective& objective = spec.objective;
  out += fmt::format("<h2>Best settings by {}, fitting in memory</h2>\n", escape(objective.name()));
  const auto best = best_points(results, kBestRows, objective);
  if (best.empty()) {
    out += "<p>No point fits in memory.</p>\n";
  } else {
    out += "<table><tr><th>#</th>";
    for (const auto& k : keys) out += fmt::format("<th>{}</th>", escape(k));
    if (objective.kind() == Objective::Kind::time_to_tokens) out += fmt::format("<th>{}</th>", escape(objective.name()));
    out += "<th>tokens/s per GPU</th><th>step time</th><th>MFU</th><th>peak memory</th><th>exposed comm.</th></tr>\n";
    for (std::size_t rank = 0; rank < best.size(); ++rank) {
      const auto& r = results[best[rank]];
      out += fmt::format("<tr><td>{}</td>", rank + 1);
      for (const auto& k : keys) out += fmt::format("<td class=\"k\">{}</td>", escape(value_of(r, k)));
      if (objective.kind() == Objective::Kind::time_to_tokens) out += fmt::format("<td>{}</td>", escape(objective.format(objective.value(r))));
      out += fmt::format("<td>{:.0f}</td><td>{}</td><td>{:.1f} %</td><td>{}</td><td>{}</td></tr>\n", r.number("tokens_per_s_per_gpu"),
                         escape(svg::seconds(r.number("step_time_s"))), 100 * r.number("mfu"),
                         escape(svg::gib(r.number("peak_memory_bytes"))), escape(svg::seconds(r.number("exposed_comm_s"))));
    }
    out += "</table>\n";
    std::string sets_best;
    for (const auto& a : spec.sets) sets_best += fmt::format(" --set '{}'", a);
    for (const auto& a : results[best.front()].assignments) sets_best += fmt::format(" --set '{}'", a);
    if (!sets_best.empty())
      out += fmt::format("<p>Best: <code>shardsim run {}{}</code></p>\n", escape(spec.scenario.string()), escape(sets_best));
  }
  if (has_heatmap) out += fmt::format("<h2>{0}</h2>\n<p><img src=\"heatmap.svg\" alt=\"{0} heatmap\"></p>\n", escape(objective.name()));
  out += fmt::format("<h2>{0} against peak memory</h2>\n<p><img src=\"pareto.svg\" alt=\"{0} against peak memory\"></p>\n",
                     escape(objective.name()));
  if (failed > 0) {
    out += "<h2>Failed points</h2>\n<table><tr><th>point</th><th>settings</th><th>error</th></tr>\n";
    std::size_t shown = 0;
    for (const auto& r : results) {
      if (r.ok() || shown++ >= kFailedRows) continue;
      std::string set;
      for (const auto& a : r.assignments) set += (set.empty() ? "" : " ") + a;
      out += fmt::format("<tr><td>{}</td><td class=\"k\">{}</td><td class=\"k\">{}</td></tr>\n", r.index, escape(set), escape(r.error));
    }
    out += "</table>\n";
    if (failed > kFailedRows) out += fmt::format("<p>... and {} more in results.csv.</p>\n", failed - kFailedRows);
  }
  return out + "</body></html>\n";
}

void write_pictures(const std::filesystem::path& dir, const SweepSpec& spec, const std::vector<PointResult>& results) {
  const std::string name = spec.scenario.filename().string();
  const Objective& objective = spec.objective;
  const auto heatmap = build_heatmap(spec.dimensions, results, objective);
  OutputSet set;  // the pictures and the page that shows them appear together
  if (heatmap) {
    set.add(dir / "heatmap.svg", heatmap_svg(*heatmap, results, fmt::format("{}: {}", objective.name(), name), objective));
  } else {
    std::error_code ec;
    std::filesystem::remove(dir / "heatmap.svg", ec);  // no swept key varies: no picture, and no stale one
  }
  set.add(dir / "pareto.svg", pareto_svg(results, fmt::format("{} against peak memory: {}", objective.name(), name), objective));
  set.add(dir / "index.html", index_html(spec, results, heatmap.has_value()));
  set.commit();
}

}  // namespace shardsim::sweep

#include "cli/gemm_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <tuple>

#include "engine/gemm_tiles.hpp"
#include "graph/work.hpp"

namespace shardsim::cli {
namespace {

// "layers.3.attention.wq" -> "layers.*.attention.wq": the same linear in every block.
std::string any_block(const std::string& fqn) {
  std::string out;
  std::size_t start = 0;
  while (start <= fqn.size()) {
    const std::size_t dot = std::min(fqn.find('.', start), fqn.size());
    const std::string part = fqn.substr(start, dot - start);
    const bool number = !part.empty() && std::all_of(part.begin(), part.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
    out += (out.empty() ? "" : ".") + (number ? std::string("*") : part);
    start = dot + 1;
  }
  return out;
}

struct Linear {
  std::string name;
  model::Kernel kernel;  // its matmul, as this rank runs it (sharded by TP, converted to float8)
};

std::vector<Linear> linears(const model::Model& m) {
  std::vector<Linear> out;
  model::for_each_module(m.root, "", [&](const model::Module& mod, const std::string& fqn) {
    for (const auto& item : mod.program) {
      if (item.child >= 0 || item.kernel.kind != model::KernelKind::matmul) continue;
      const std::string name = any_block(fqn);
      const auto same = [&](const Linear& x) {
        return x.name == name && x.kernel.n == item.kernel.n && x.kernel.k == item.kernel.k && x.kernel.float8 == item.kernel.float8;
      };
      if (std::none_of(out.begin(), out.end(), same)) out.push_back({name, item.kernel});
    }
  });
  return out;
}

bool same_gemm(const graph::Gemm& a, const graph::Gemm& b) {
  return a.m == b.m && a.n == b.n && a.k == b.k && a.type == b.type && a.precise_accum == b.precise_accum;
}

// The linears and roles whose GEMM is this one, as the step builder makes them (graph/work.hpp):
// forward (tokens, n, k), grad_input (tokens, k, n), grad_weight (n, k, tokens), each with its
// type and accumulation.
std::vector<std::string> roles(const graph::Gemm& g, const std::vector<Linear>& ls, const std::vector<std::int64_t>& tokens) {
  const auto of_tokens = [&](std::int64_t rows) { return std::find(tokens.begin(), tokens.end(), rows) != tokens.end(); };
  std::vector<std::string> out;
  for (const auto& l : ls) {
    std::string r;
    const auto role = [&r](const char* name) { r += (r.empty() ? "" : "/") + std::string(name); };
    const graph::Batch rows{1, g.m, 1};
    if (of_tokens(g.m) && same_gemm(graph::forward_gemm(l.kernel, rows), g)) role("forward");
    if (of_tokens(g.m) && same_gemm(graph::grad_input_gemm(l.kernel, rows), g)) role("grad_input");
    graph::Work w;
    graph::add_backward_work(w, l.kernel, graph::Batch{1, g.k, 1}, false, true, false);
    if (of_tokens(g.k) && !w.gemms.empty() && same_gemm(w.gemms.front(), g)) role("grad_weight");
    if (!r.empty()) out.push_back(l.name + " " + r);
  }
  return out;
}

auto key(const graph::Gemm& g) {
  return std::make_tuple(g.m, g.n, g.k, g.type, g.precise_accum);
}

}  // namespace

std::vector<GemmRow> gemm_table(const graph::StepGraph& g, const model::Model& model, const config::ScenarioConfig& s, int stage, int step,
                                const engine::ComputeModel& compute) {
  std::vector<GemmRow> rows;
  for (std::size_t o = 0; o < g.size(); ++o) {
    const graph::Op& op = g.op(static_cast<int>(o));
    if (op.step != step || op.is_collective() || op.stream != graph::Stream::compute || !op.runs_on_stage(stage)) continue;
    for (const graph::Gemm& gemm : op.work.gemms) {
      auto it = std::find_if(rows.begin(), rows.end(), [&](const GemmRow& r) { return key(r.gemm) == key(gemm); });
      if (it == rows.end()) {
        graph::Op alone;
        alone.work.gemms.push_back(gemm);
        it = rows.insert(rows.end(), GemmRow{gemm, 0, compute.split(alone).gemm, {}});
        if (const int sms = s.cluster.topology.gpu.sms; sms > 0 && gemm.m > 0 && gemm.n > 0 && gemm.k > 0) {
          const engine::TileFill f = engine::gemm_tile_fill(gemm.m, gemm.n, gemm.k, sms);
          it->waves = f.waves;
          it->sm_fill = f.fill;
        }
      }
      ++it->count;
    }
  }
  const std::int64_t tokens = graph::micro_batch_sequences(s) * s.training.seq_len / s.parallelism.cp;
  std::vector<std::int64_t> rows_of{tokens};
  if (s.parallelism.tp_async && s.parallelism.tp > 1) rows_of.push_back(tokens / s.parallelism.tp);  // graph/async_tp.cpp chunk_of
  const auto ls = linears(model);
  for (auto& r : rows) r.of = roles(r.gemm, ls, rows_of);
  std::stable_sort(rows.begin(), rows.end(), [](const GemmRow& a, const GemmRow& b) { return a.total_seconds() > b.total_seconds(); });
  return rows;
}

std::string gemm_table_text(const std::vector<GemmRow>& rows, int stage, int stages, std::string_view high) {
  double total = 0;
  for (const auto& r : rows) total += r.total_seconds();
  std::string out = fmt::format("\nGEMMs of one step{}, by shape, each alone on the GPU (the compute model's): {:.4f} s\n",
                                stages > 1 ? fmt::format(" on pipeline stage {}", stage) : std::string(), total);
  out += fmt::format("  {:>24}  {:<12} {:>6}  {:>9}  {:>9}  {:>6}  {:>6}  {:>5}  {:>5}  {}\n", "m x n x k", "type", "count", "us each",
                     "ms all", "share", "TFLOPS", "waves", "fill", "linear (role)");
  for (const auto& r : rows) {
    const std::string shape = fmt::format("{} x {} x {}", r.gemm.m, r.gemm.n, r.gemm.k);
    const std::string_view name = r.gemm.type == graph::GemmType::high ? high : graph::gemm_type_name(r.gemm.type);
    const std::string type = fmt::format("{}{}", name, r.gemm.precise_accum ? " precise" : "");
    const double tflops = r.seconds > 0 ? r.gemm.flops() / r.seconds / 1e12 : 0;
    const std::string waves = r.waves > 0 ? fmt::format("{}", r.waves) : std::string("-");
    const std::string fill = r.waves > 0 ? fmt::format("{:.0f}%", 100 * r.sm_fill) : std::string("-");
    out += fmt::format(
        "  {:>24}  {:<12} {:>6}  {:>9.1f}  {:>9.3f}  {:>5.1f}%  {:>6.0f}  {:>5}  {:>5}  {}\n", shape, type, r.count, 1e6 * r.seconds,
        1e3 * r.total_seconds(), total > 0 ? 100 * r.total_seconds() / total : 0.0, tflops, waves, fill,
        r.of.empty() ? std::string("(no linear's shape: unfused attention, or a chunk)") : fmt::format("{}", fmt::join(r.of, ", ")));
  }
  return out;
}

nlohmann::json gemm_table_json(const std::vector<GemmRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows) {
    out.push_back({{"m", r.gemm.m},
                   {"n", r.gemm.n},
                   {"k", r.gemm.k},
                   {"type", graph::gemm_type_name(r.gemm.type)},
                   {"precise_accum", r.gemm.precise_accum},
                   {"count", r.count},
                   {"seconds_each", r.seconds},
                   {"flops_each", r.gemm.flops()},
                   {"of", r.of}});
    if (r.waves > 0) {
      out.back()["waves"] = r.waves;
      out.back()["sm_fill"] = r.sm_fill;
    }
  }
  return out;
}

}  // namespace shardsim::cli

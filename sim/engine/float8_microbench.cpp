#include "engine/float8_microbench.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "graph/work.hpp"
#include "model/kernels.hpp"

namespace shardsim::engine {

graph::Work float8_linear_work(std::int64_t tokens, std::int64_t in, std::int64_t out, model::Float8Recipe recipe, bool fused_casts) {
  model::Kernel k = model::matmul_kernel("linear", out, in);
  k.float8 = recipe;
  k.float8_fused_casts = fused_casts;
  const graph::Batch batch{1, tokens};
  graph::Work w;
  graph::add_forward_work(w, k, batch);
  graph::add_backward_work(w, k, batch);
  return w;
}

double ln_linear_sigmoid_seconds(const RooflineModel& m, std::int64_t tokens, std::int64_t in, std::int64_t out,
                                 model::Float8Recipe recipe) {
  graph::Op op;
  op.work = float8_linear_work(tokens, in, out, recipe, true);
  const double x = static_cast<double>(tokens) * static_cast<double>(in);
  const double g = static_cast<double>(tokens) * static_cast<double>(out);
  op.work.memory_bytes += (2 + 2) * (x + g) + 3 * 2 * (x + g);
  op.work.launches += 4;
  return m.duration(op);
}

std::vector<MeasuredSpeedup> read_speedup_table(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot read the speed-up table", path.string()));
  std::vector<MeasuredSpeedup> cells;
  std::string line;
  int columns = -1;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream row(line);
    std::int64_t m = 0;
    std::int64_t k = 0;
    if (!(row >> m >> k) || m <= 0 || k <= 0)
      throw std::runtime_error(fmt::format("{}:{}: expected M and K, then a speed-up per N", path.string(), number));
    int count = 0;
    for (double s = 0; row >> s; ++count) {
      if (!(s > 0)) throw std::runtime_error(fmt::format("{}:{}: a speed-up must be above 0", path.string(), number));
      cells.push_back(MeasuredSpeedup{m, k, std::int64_t{1024} << count, s});
    }
    if (!row.eof() || count == 0 || (columns >= 0 && count != columns))
      throw std::runtime_error(fmt::format("{}:{}: expected {} speed-ups after M and K", path.string(), number,
                                           columns >= 0 ? std::to_string(columns) : std::string("some")));
    columns = count;
  }
  return cells;
}

SpeedupFit fit_speedups(const RooflineModel& m, const std::vector<MeasuredSpeedup>& table, model::Float8Recipe recipe, std::int64_t least) {
  SpeedupFit fit;
  for (const MeasuredSpeedup& c : table) {
    if (c.m < least || c.k < least || c.n < least) continue;
    const double predicted =
        ln_linear_sigmoid_seconds(m, c.m, c.k, c.n, model::Float8Recipe::none) / ln_linear_sigmoid_seconds(m, c.m, c.k, c.n, recipe);
    const double error = predicted / c.speedup - 1;
    fit.mean += error;
    if (std::abs(error) > std::abs(fit.worst)) fit.worst = error;
    ++fit.cells;
  }
  if (fit.cells > 0) fit.mean /= fit.cells;
  return fit;
}

}  // namespace shardsim::engine

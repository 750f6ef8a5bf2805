// `shardsim run --gemms`: the step's GEMMs by shape, each as the compute model prices it alone on
// the GPU, with the linears (and their roles) that have that shape: where the GEMM time goes and
// at what rate each shape runs (a skinny one at HBM speed, a float8 one at the fp8 rate, the
// short-K ones under tensor parallelism below the topology's average, one whose tiles leave the
// last wave of SMs part-empty below one that fills it).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/scenario.hpp"
#include "engine/compute_model.hpp"
#include "graph/step_graph.hpp"
#include "model/transformer.hpp"

namespace shardsim::cli {

struct GemmRow {
  graph::Gemm gemm;             // its shape, type and accumulation
  std::int64_t count = 0;       // GEMMs of this shape in the step (on the stage shown)
  double seconds = 0;           // one of them, alone on the GPU
  std::vector<std::string> of;  // "layers.*.attention.wq forward", ...; empty: not a linear's
  // Its output tiles over the GPU's SMs (engine/gemm_tiles.hpp); waves 0 where the topology
  // gives no SM count.
  std::int64_t waves = 0;
  double sm_fill = 0;  // share of the SMs' tile-time the tiles use
  [[nodiscard]] double total_seconds() const { return seconds * static_cast<double>(count); }
};

// The GEMMs of step `step`'s compute ops that run on pipeline stage `stage`, grouped by shape,
// most time first. A shape is a linear's where the step builder makes that linear's GEMM so
// (graph/work.hpp) over a micro-batch's tokens (or async TP's 1/tp chunk of them).
[[nodiscard]] std::vector<GemmRow> gemm_table(const graph::StepGraph& g, const model::Model& model, const config::ScenarioConfig& s,
                                              int stage, int step, const engine::ComputeModel& compute);

// `high`: the name of the high-precision type (the compute dtype: bf16, fp16 or fp32).
[[nodiscard]] std::string gemm_table_text(const std::vector<GemmRow>& rows, int stage, int stages, std::string_view high);
[[nodiscard]] nlohmann::json gemm_table_json(const std::vector<GemmRow>& rows);

}  // namespace shardsim::cli

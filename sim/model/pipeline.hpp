// Pipeline parallelism's cut of a model into stages, as torchtitan's pipeline_module_split makes
// them: each stage keeps its consecutive blocks under their own names ("layers.12"), the first
// stage also the embeddings, the last the final norm, the output layer and the loss.
//
//   const auto spans = stage_spans(80, 4, {});         // layers [0, 20), [20, 40), ...
//   const Model s1 = stage_model(whole, 1, 4, spans[1]);
#pragma once

#include <string>
#include <vector>

#include "model/transformer.hpp"

namespace shardsim::model {

struct StageSpan {
  int first_layer = 0;
  int end_layer = 0;  // one past the last
  [[nodiscard]] int layers() const { return end_layer - first_layer; }
};

// The layers of each of `stages` stages: from `split_points` (the first layer of stages 1 ..,
// ascending), or evenly with the remainder to the earlier stages (the last holds the output layer
// and the loss). Returns an explanation in `error` and no spans when the cut leaves a stage empty.
[[nodiscard]] std::vector<StageSpan> stage_spans(int layers, int stages, const std::vector<int>& split_points, std::string& error);

// The part of `whole` that stage `stage` of `stages` holds; parameter counts for reports
// (total_params, MFU's FLOPs) stay the whole model's. With tied embeddings the last stage's
// output layer holds a copy of the embedding's weight.
[[nodiscard]] Model stage_model(const Model& whole, int stage, int stages, StageSpan span);

}  // namespace shardsim::model

#include "model/pipeline.hpp"

#include <fmt/format.h>

namespace shardsim::model {

std::vector<StageSpan> stage_spans(int layers, int stages, const std::vector<int>& split_points, std::string& error) {
  std::vector<int> firsts{0};
  if (split_points.empty()) {
    const int base = layers / stages;
    const int extra = layers % stages;
    for (int s = 1; s < stages; ++s) firsts.push_back(firsts.back() + base + (s - 1 < extra ? 1 : 0));
  } else {
    firsts.insert(firsts.end(), split_points.begin(), split_points.end());
  }
  firsts.push_back(layers);
  std::vector<StageSpan> out;
  for (int s = 0; s < stages; ++s) {
    const StageSpan span{firsts[static_cast<std::size_t>(s)], firsts[static_cast<std::size_t>(s) + 1]};
    if (span.layers() <= 0) {
      error =
          fmt::format("stage {} of {} would hold no layer (layers [{}, {}) of {})", s, stages, span.first_layer, span.end_layer, layers);
      return {};
    }
    out.push_back(span);
  }
  return out;
}

Model stage_model(const Model& whole, int stage, int stages, StageSpan span) {
  Model m = whole;
  const Module& root = whole.root;
  Module cut = root;
  cut.children.clear();
  cut.program.clear();
  // The root's own kernels and children before the blocks belong to the first stage, those after
  // them to the last.
  bool after_blocks = false;
  std::vector<int> new_index(root.children.size(), -1);
  for (const ProgramItem& item : root.program) {
    if (item.child < 0) {
      if (after_blocks ? stage == stages - 1 : stage == 0) cut.program.push_back(item);
      continue;
    }
    const Module& child = root.children[static_cast<std::size_t>(item.child)];
    const bool blocks = child.type == "ModuleList";
    bool keep = blocks || (after_blocks ? stage == stages - 1 : stage == 0);
    if (!keep) continue;
    int& index = new_index[static_cast<std::size_t>(item.child)];
    if (index < 0) {
      index = static_cast<int>(cut.children.size());
      Module c = child;
      if (blocks) {
        c.children.assign(child.children.begin() + span.first_layer, child.children.begin() + span.end_layer);
        c.program.clear();
        for (std::size_t i = 0; i < c.children.size(); ++i) c.program.push_back(ProgramItem{static_cast<int>(i), {}});
      }
      cut.children.push_back(std::move(c));
    }
    cut.program.push_back(ProgramItem{index, item.kernel});
    if (blocks) after_blocks = true;
  }
  // Tied embeddings: the last stage keeps its own copy of the embedding as the output layer's
  // weight (Megatron-LM's word-embedding copy; the pipeline builder all-reduces its gradient with
  // the first stage's).
  if (whole.spec.tie_embeddings && stages > 1 && stage == stages - 1) {
    for (Module& c : cut.children) {
      if (c.type == "Linear" && c.params.empty()) {
        const std::int64_t vocab_share = (whole.spec.vocab + whole.tp.degree - 1) / whole.tp.degree;
        c.params.push_back(Param{"weight", {vocab_share, whole.spec.hidden}});
        c.tied_weight = false;
      }
    }
  }
  m.root = std::move(cut);
  return m;
}

}  // namespace shardsim::model

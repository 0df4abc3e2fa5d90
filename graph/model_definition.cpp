#include "graph/model_definition.h"

namespace kiln {

void ModelDefinition::validate() const {
  graph.validate([&](const std::string& name) -> std::optional<std::vector<int64_t>> {
    auto it = weights.find(name);
    if (it == weights.end()) return std::nullopt;
    return it->second.shape;
  });
}

WeightLookup ModelDefinition::weight_lookup() const {
  return [this](const std::string& name) {
    const Tensor& t = weights.at(name);
    return WeightView{t.shape, {t.data.data(), t.data.size()}};
  };
}

}  // namespace kiln

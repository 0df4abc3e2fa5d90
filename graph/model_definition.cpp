#include "graph/model_definition.h"

namespace kiln {

void ModelDefinition::validate() const {
  graph.validate([&](const std::string& name) -> std::optional<std::vector<int64_t>> {
    auto it = weights.find(name);
    if (it == weights.end()) return std::nullopt;
    return it->second.shape;
  });
}

}  // namespace kiln

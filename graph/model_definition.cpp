#include "graph/model_definition.h"

#include "core/error.h"

namespace kiln {

void ModelDefinition::validate() const {
  KILN_CHECK(!graphs.empty(), "[model] {} defines no graph", architecture);
  for (const auto& [name, g] : graphs) {
    for (const Value& v : g.values()) {
      if (v.kind != ValueKind::Constant) continue;
      auto it = weights.find(v.name);
      KILN_CHECK(it != weights.end(), "[model] graph {}: constant '{}' has no weight", name, v.name);
      KILN_CHECK(fixed_shape(it->second.shape) == v.shape, "[model] graph {}: weight '{}' has shape {}, the graph {}",
                 name, v.name, to_string(it->second.shape), to_string(v.shape));
    }
    g.validate();
  }
}

ConstantLookup ModelDefinition::constants() const {
  return [this](const std::string& name) {
    auto it = weights.find(name);
    KILN_CHECK(it != weights.end(), "[model] no weight '{}'", name);
    const Tensor& t = it->second;
    return ConstantView{
        DType::F32, t.shape, {reinterpret_cast<const uint8_t*>(t.data.data()), t.data.size() * sizeof(float)}};
  };
}

}  // namespace kiln

#include "graph/rewrites/rewrite.h"

#include <algorithm>
#include <set>

namespace kiln {

ShapeOracle::ShapeOracle(const Graph& g) {
  Bindings a = g.example_bindings(), b = a;
  for (auto& [name, size] : b) {
    const SymbolSpec& spec = g.symbols().at(name);
    if (size + spec.multiple <= spec.max) size += spec.multiple;
  }
  a_ = g.infer_shapes(a);
  b_ = g.infer_shapes(b);
}

bool ShapeOracle::holds(const std::vector<int>& values, const std::function<bool(const std::vector<Shape>&)>& p) const {
  for (const auto* sizes : {&a_, &b_}) {
    std::vector<Shape> shapes;
    for (int v : values) shapes.push_back((*sizes)[v]);
    if (!p(shapes)) return false;
  }
  return true;
}

void prune(Graph& g) {
  for (bool changed = true; changed;) {
    changed = false;
    const auto readers = g.consumers();
    std::set<int> outputs;
    for (const auto& o : g.outputs()) outputs.insert(o.value);
    std::vector<bool> dead(g.nodes().size(), false);
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      const Node& n = g.nodes()[i];
      if (n.def().in_place()) continue;
      dead[i] = std::all_of(n.outputs.begin(), n.outputs.end(),
                            [&](int v) { return readers[v].empty() && !outputs.count(v); });
      changed = changed || dead[i];
    }
    if (changed) g.remove_nodes(dead);
  }
}

}  // namespace kiln

// A residual add after a conv or dense layer happens in that layer's epilogue: the layer's own
// output is never written.
#include <algorithm>
#include <set>

#include "graph/ops/conv2d.h"
#include "graph/ops/linear.h"
#include "graph/rewrites/rewrite.h"

namespace kiln {

void fuse_residual_add(Graph& g, const RewriteContext& c) {
  const ShapeOracle shapes(g);
  const auto producers = g.producers();
  const auto readers = g.consumers();
  std::set<int> outputs;
  for (const auto& o : g.outputs()) outputs.insert(o.value);
  std::vector<bool> dead(g.nodes().size(), false);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& add = g.nodes()[i];
    if (add.op != "add" || !c.mine(add)) continue;
    for (int side = 0; side < 2; ++side) {
      const int y = add.inputs[side], r = add.inputs[1 - side];
      const int p = producers[y];
      if (p < 0 || dead[p] || readers[y].size() != 1 || outputs.count(y) || !shapes.same_shape(y, r)) continue;
      const Node& layer = g.nodes()[p];
      const int slot = layer.op == "conv2d"   ? conv2d_input::Residual
                       : layer.op == "linear" ? linear_input::Residual
                                              : -1;
      if (slot < 0 || !c.mine(layer) || layer.outputs.size() != 1 || layer.input(slot) >= 0) continue;
      Node fused = layer;
      if (static_cast<int>(fused.inputs.size()) <= slot) fused.inputs.resize(slot + 1, -1);
      fused.inputs[slot] = r;
      fused.outputs = add.outputs;
      if (!c.supports(g, fused)) continue;
      g.node(p) = std::move(fused);
      dead[i] = true;
      break;
    }
  }
  if (std::find(dead.begin(), dead.end(), true) == dead.end()) return;
  g.remove_nodes(dead);
  // A layer now reads r, whose producer may come after it (in fp16, the cast of an f32 input
  // that the lowering appended).
  g.toposort();
}

}  // namespace kiln

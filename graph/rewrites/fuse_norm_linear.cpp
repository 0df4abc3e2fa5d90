// A layer_norm whose output a linear reads as its x becomes one norm_linear node with that
// linear: the GPU's few-rows kernel normalises the rows as it loads them, where each layer norm
// was a launch of its own (a 12-layer post-norm decoder step: 37 of about 150 launches). The
// normalised rows stay an output (the same value), for the norm's other readers: in a post-norm
// transformer, the residual of the layer after next.
#include <algorithm>

#include "graph/ops/linear.h"
#include "graph/rewrites/rewrite.h"

namespace kiln {

void fuse_norm_linear(Graph& g, const RewriteContext& c) {
  const auto readers = g.consumers();
  const auto producers = g.producers();
  std::vector<bool> dead(g.nodes().size(), false);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& norm = g.nodes()[i];
    if (norm.op != "layer_norm" || !c.mine(norm)) continue;
    const int y = norm.outputs[0];
    for (int j : readers[y]) {
      const Node& layer = g.nodes()[j];
      if (layer.op != "linear" || !c.mine(layer) || layer.inputs[linear_input::X] != y) continue;
      // The layer's other inputs must not come from the norm or after it (a residual that is y,
      // or is made from y): the fused node would read what it makes. Nodes are in topological
      // order, so this also passes over some that could fuse; none in a transformer block.
      bool after = false;
      for (size_t s = 0; s < layer.inputs.size(); ++s)
        if (s != linear_input::X && layer.inputs[s] >= 0 && producers[layer.inputs[s]] >= static_cast<int>(i))
          after = true;
      if (after) continue;
      Node fused = layer;
      fused.op = "norm_linear";
      fused.inputs.resize(linear_input::Beta + 1, -1);
      fused.inputs[linear_input::X] = norm.inputs[0];
      fused.inputs[linear_input::Gamma] = norm.input(1);
      fused.inputs[linear_input::Beta] = norm.input(2);
      fused.outputs = {layer.outputs[0], y};
      fused.attrs.set("eps", norm.attrs.get_float("eps"));
      if (!c.supports(g, fused)) continue;
      g.node(j) = std::move(fused);
      dead[i] = true;
      break;
    }
  }
  if (std::find(dead.begin(), dead.end(), true) == dead.end()) return;
  g.remove_nodes(dead);
  // The norm's other readers may come between it and the layer, which now makes its output.
  g.toposort();
}

}  // namespace kiln

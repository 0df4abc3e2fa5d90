// Squeeze-excite multiplies a map by a per-image, per-channel gate and feeds the product to a
// 1x1 conv: the conv scales its input by the gate as it loads it, and the product is never
// written.
#include <set>

#include "graph/ops/conv2d.h"
#include "graph/rewrites/rewrite.h"

namespace kiln {

void fuse_channel_gate(Graph& g, const RewriteContext& c) {
  const ShapeOracle shapes(g);
  const auto readers = g.consumers();
  std::set<int> outputs;
  for (const auto& o : g.outputs()) outputs.insert(o.value);
  std::vector<bool> dead(g.nodes().size(), false);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& mul = g.nodes()[i];
    if (mul.op != "mul" || !c.mine(mul)) continue;
    const int y = mul.outputs[0];
    if (readers[y].size() != 1 || outputs.count(y)) continue;
    const int k = readers[y][0];
    const Node& conv = g.nodes()[k];
    if (conv.op != "conv2d" || !c.mine(conv) || conv.inputs[conv2d_input::X] != y ||
        conv.input(conv2d_input::Gate) >= 0)
      continue;
    for (int side = 0; side < 2; ++side) {
      const int x = mul.inputs[side], gate = mul.inputs[1 - side];
      // x [N, H, W, C] and gate [N, 1, 1, C].
      const bool fits = shapes.holds(x, [](const Shape& s) { return s.size() == 4; }) &&
                        shapes.holds(gate, [](const Shape& s) { return s.size() == 4 && s[1] == 1 && s[2] == 1; }) &&
                        shapes(x)[0] == shapes(gate)[0] && shapes(x)[3] == shapes(gate)[3];
      if (!fits) continue;
      Node fused = conv;
      if (fused.inputs.size() <= conv2d_input::Gate) fused.inputs.resize(conv2d_input::Gate + 1, -1);
      fused.inputs[conv2d_input::X] = x;
      fused.inputs[conv2d_input::Gate] = gate;
      if (!c.supports(g, fused)) continue;
      g.node(k) = std::move(fused);
      dead[i] = true;
      break;
    }
  }
  g.remove_nodes(dead);
}

}  // namespace kiln

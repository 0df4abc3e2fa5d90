// An image network's first conv reads the f32 NCHW input through a transpose to NHWC (and, in
// fp16, a cast): a conv that reads NCHW f32 itself saves both passes over the input.
#include "core/dtype.h"
#include "graph/ops/conv2d.h"
#include "graph/rewrites/rewrite.h"

namespace kiln {

void fold_input_layout(Graph& g, const RewriteContext& c) {
  const auto producers = g.producers();
  const std::vector<int64_t> to_nhwc = {0, 2, 3, 1};
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& conv = g.nodes()[i];
    if (conv.op != "conv2d" || !c.mine(conv) || conv.attrs.get_string("input_layout") != "nhwc") continue;
    const int t = producers[conv.inputs[conv2d_input::X]];
    if (t < 0 || g.nodes()[t].op != "transpose" || !c.mine(g.nodes()[t]) ||
        g.nodes()[t].attrs.get_ints("perm") != to_nhwc)
      continue;
    int src = g.nodes()[t].inputs[0];
    const int k = producers[src];
    if (k >= 0 && g.nodes()[k].op == "cast" && c.mine(g.nodes()[k]) &&
        g.values()[g.nodes()[k].inputs[0]].dtype == DType::F32)
      src = g.nodes()[k].inputs[0];
    Node folded = conv;
    folded.inputs[conv2d_input::X] = src;
    folded.attrs.set("input_layout", std::string("nchw"));
    folded.attrs.set("out_dtype", std::string(dtype_name(g.values()[conv.outputs[0]].dtype)));
    if (!c.supports(g, folded)) continue;
    g.node(static_cast<int>(i)) = std::move(folded);
  }
  prune(g);
}

}  // namespace kiln

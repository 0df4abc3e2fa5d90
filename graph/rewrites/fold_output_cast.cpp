// A cast after a conv or dense layer (an fp16 network's f32 logits) is the layer writing that
// type directly.
#include <set>

#include "core/dtype.h"
#include "graph/rewrites/rewrite.h"

namespace kiln {

void fold_output_cast(Graph& g, const RewriteContext& c) {
  const auto producers = g.producers();
  const auto readers = g.consumers();
  std::set<int> outputs;
  for (const auto& o : g.outputs()) outputs.insert(o.value);
  std::vector<bool> dead(g.nodes().size(), false);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& cast = g.nodes()[i];
    if (cast.op != "cast" || !c.mine(cast)) continue;
    const int x = cast.inputs[0];
    const int p = producers[x];
    const DType to = parse_dtype(cast.attrs.get_string("to"));
    if (p < 0 || readers[x].size() != 1 || outputs.count(x) || !is_float(to) || to == DType::F8E4M3) continue;
    const Node& layer = g.nodes()[p];
    if ((layer.op != "conv2d" && layer.op != "linear" && layer.op != "mlp") || !c.mine(layer) ||
        layer.outputs.size() != 1)
      continue;
    Node folded = layer;
    folded.attrs.set("out_dtype", std::string(dtype_name(to)));
    folded.outputs = cast.outputs;
    if (!c.supports(g, folded)) continue;
    g.node(p) = std::move(folded);
    dead[i] = true;
  }
  g.remove_nodes(dead);
}

}  // namespace kiln

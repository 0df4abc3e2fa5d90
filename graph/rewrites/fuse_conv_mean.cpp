// Squeeze-excite averages a depthwise conv's output over H and W: a conv that accumulates
// that mean as it writes its output saves a pass over the widest maps. The mean is f32; its
// readers (dense layers) keep their output types through out_dtype.
#include <set>

#include "core/dtype.h"
#include "graph/rewrites/rewrite.h"

namespace kiln {

void fuse_conv_mean(Graph& g, const RewriteContext& c) {
  const auto producers = g.producers();
  const auto readers = g.consumers();
  std::set<int> outputs;
  for (const auto& o : g.outputs()) outputs.insert(o.value);
  std::vector<bool> dead(g.nodes().size(), false);
  for (size_t r = 0; r < g.nodes().size(); ++r) {
    const Node& reduce = g.nodes()[r];
    if (reduce.op != "reduce" || !c.mine(reduce) || reduce.attrs.get_string("op") != "mean" ||
        reduce.attrs.get_int("keepdims") != 1)
      continue;
    const auto& axes = reduce.attrs.get_ints("axes");
    if (!((axes == std::vector<int64_t>{1, 2}) || (axes == std::vector<int64_t>{-3, -2}))) continue;
    const int p = producers[reduce.inputs[0]];
    const int mean = reduce.outputs[0];
    if (p < 0 || g.nodes()[p].op != "conv2d" || !c.mine(g.nodes()[p]) || g.nodes()[p].attrs.get_int("mean_output") ||
        outputs.count(mean))
      continue;
    bool dense_readers = !readers[mean].empty();
    for (int n : readers[mean]) {
      const Node& reader = g.nodes()[n];
      dense_readers = dense_readers && reader.attrs.has("out_dtype") && reader.op != "conv2d" && c.mine(reader);
    }
    if (!dense_readers) continue;
    Node fused = g.nodes()[p];
    fused.attrs.set("mean_output", int64_t{1});
    if (!c.supports(g, fused)) continue;
    const int m = g.add_value({ValueKind::Activation, DType::F32, {}, {}});
    fused.outputs.push_back(m);
    g.node(p) = std::move(fused);
    for (int n : readers[mean]) {
      Node& reader = g.node(n);
      if (reader.attrs.get_string("out_dtype").empty())
        reader.attrs.set("out_dtype", std::string(dtype_name(g.values()[reader.outputs[0]].dtype)));
      for (int& v : reader.inputs)
        if (v == mean) v = m;
    }
    dead[r] = true;
  }
  g.remove_nodes(dead);
  for (size_t i = 0; i < g.nodes().size(); ++i) g.refresh_dtypes(static_cast<int>(i));
}

}  // namespace kiln

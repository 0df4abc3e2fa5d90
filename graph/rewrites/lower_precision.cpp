// A GPU computing in fp16 runs the graph with f16 activations: the graph says so explicitly, so
// that every kernel sees the types it computes in and the CPU (for nodes that fall back) too.
#include "core/dtype.h"
#include "graph/rewrites/rewrite.h"

namespace kiln {

void lower_precision(Graph& g, DType to) {
  const std::string to_name = dtype_name(to);
  std::vector<DType> output_types;
  for (const auto& o : g.outputs()) output_types.push_back(g.values()[o.value].dtype);
  // Constants and states: the graph's types (kernels that pack weights read the stored values).
  for (size_t v = 0; v < g.values().size(); ++v) {
    Value& val = g.value(static_cast<int>(v));
    if ((val.kind == ValueKind::Constant || val.kind == ValueKind::State) && val.dtype == DType::F32) val.dtype = to;
  }
  // Inputs keep their type: a cast after each f32 input feeds its readers.
  for (int in : g.inputs()) {
    if (g.values()[in].dtype != DType::F32) continue;
    const int cast = g.add_value({ValueKind::Activation, to, {}, {}});
    for (size_t i = 0; i < g.nodes().size(); ++i)
      for (int& v : g.node(static_cast<int>(i)).inputs)
        if (v == in) v = cast;
    for (size_t o = 0; o < g.outputs().size(); ++o)
      if (g.outputs()[o].value == in) g.set_output_value(o, cast);
    Node n;
    n.name = g.values()[in].name + ".to_" + to_name;
    n.op = "cast";
    n.inputs = {in};
    n.outputs = {cast};
    n.attrs.set("to", to_name);
    n.device = g.nodes().empty() ? std::string() : g.nodes().front().device;
    g.append_node(std::move(n));
  }
  g.toposort();
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    Node& n = g.node(static_cast<int>(i));
    if (n.op == "cast" && n.attrs.get_string("to") == "f32") n.attrs.set("to", to_name);
    if (n.attrs.has("out_dtype") && n.attrs.get_string("out_dtype") == "f32") n.attrs.set("out_dtype", to_name);
    g.refresh_dtypes(static_cast<int>(i));
  }
  // Outputs keep their type: a cast before each output that changed.
  for (size_t o = 0; o < g.outputs().size(); ++o) {
    const int v = g.outputs()[o].value;
    if (g.values()[v].dtype == output_types[o]) continue;
    const int back = g.add_value({ValueKind::Activation, output_types[o], {}, {}});
    Node n;
    n.name = g.outputs()[o].name + ".to_" + dtype_name(output_types[o]);
    n.op = "cast";
    n.inputs = {v};
    n.outputs = {back};
    n.attrs.set("to", std::string(dtype_name(output_types[o])));
    n.device = g.nodes().empty() ? std::string() : g.nodes().front().device;
    g.append_node(std::move(n));
    g.set_output_value(o, back);
  }
  g.toposort();
}

}  // namespace kiln

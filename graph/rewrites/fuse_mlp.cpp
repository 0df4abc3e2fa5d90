// Two dense layers in a row on pooled vectors (squeeze-excite's reduce and expand layers, one
// row per image) as one mlp node: one kernel instead of two tiny ones.
#include <set>

#include "core/dtype.h"
#include "graph/ops/linear.h"
#include "graph/rewrites/rewrite.h"

namespace kiln {

namespace {

// "blocks.1.0.se" for "blocks.1.0.se.conv_reduce" and "blocks.1.0.se.conv_expand".
std::string common_prefix(const std::string& a, const std::string& b) {
  size_t end = 0;
  for (size_t i = 0; i < a.size() && i < b.size() && a[i] == b[i]; ++i)
    if (a[i] == '.') end = i;
  return end ? a.substr(0, end) : a + "+" + b;
}

}  // namespace

void fuse_mlp(Graph& g, const RewriteContext& c) {
  const ShapeOracle shapes(g);
  const auto readers = g.consumers();
  std::set<int> outputs, names_taken;
  for (const auto& o : g.outputs()) outputs.insert(o.value);
  std::set<std::string> names;
  for (const Node& n : g.nodes()) names.insert(n.name);
  std::vector<bool> dead(g.nodes().size(), false);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& a = g.nodes()[i];
    // FP8 layers stay linears: mlp has no FP8 form.
    if (a.op != "linear" || !c.mine(a) || dead[i] || a.input(linear_input::Residual) >= 0 ||
        a.input(linear_input::WeightScale) >= 0)
      continue;
    const int h = a.outputs[0];
    if (readers[h].size() != 1 || outputs.count(h)) continue;
    const int j = readers[h][0];
    const Node& b = g.nodes()[j];
    if (b.op != "linear" || !c.mine(b) || b.inputs[linear_input::X] != h || b.input(linear_input::WeightScale) >= 0)
      continue;
    // One vector per image: every dim but the first and the last is 1.
    const bool pooled = shapes.holds(a.inputs[linear_input::X], [](const Shape& s) {
      for (size_t d = 1; d + 1 < s.size(); ++d)
        if (s[d] != 1) return false;
      return s.size() >= 2;
    });
    // A bottleneck (the first layer narrower than its input, as squeeze-excite's reduce): the
    // one-kernel form is for such small layers, not a transformer's widening feed-forward.
    const ShapeSpec& w1 = g.values()[a.inputs[linear_input::Weight]].shape;
    if (!pooled || w1.size() != 2 || w1[0].value >= w1[1].value) continue;
    Node m;
    m.name = common_prefix(a.name, b.name);
    if (names.count(m.name)) m.name = a.name + "+" + b.name;
    m.op = "mlp";
    m.inputs = {a.inputs[linear_input::X],      a.inputs[linear_input::Weight], a.input(linear_input::Bias),
                b.inputs[linear_input::Weight], b.input(linear_input::Bias),    b.input(linear_input::Residual)};
    m.outputs = b.outputs;
    m.attrs = {{"act1", a.attrs.get_string("act")},
               {"act2", b.attrs.get_string("act")},
               {"out_dtype", std::string(dtype_name(g.values()[b.outputs[0]].dtype))}};
    m.group = a.group;
    m.device = a.device;
    if (!c.supports(g, m)) continue;
    names.insert(m.name);
    dead[i] = dead[j] = true;
    g.append_node(std::move(m));
  }
  dead.resize(g.nodes().size(), false);
  g.remove_nodes(dead);
  g.toposort();
}

}  // namespace kiln

// log_softmax -> topk (the k largest along the last axis, nothing else reading the
// log-probabilities) as one log_softmax_topk node: a generator's last two steps, whose
// [rows, vocabulary] f32 scores the fused kernel never writes.
#include <optional>
#include <set>

#include "graph/rewrites/rewrite.h"

namespace kiln {

void fuse_log_softmax_topk(Graph& g, const RewriteContext& c) {
  std::optional<ShapeOracle> shapes;  // made for the first pair found: most graphs have none
  const auto readers = g.consumers();
  std::set<int> outputs;
  for (const auto& o : g.outputs()) outputs.insert(o.value);
  std::vector<bool> dead(g.nodes().size(), false);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& ls = g.nodes()[i];
    if (ls.op != "log_softmax" || !c.mine(ls)) continue;
    const int scores = ls.outputs[0];
    if (readers[scores].size() != 1 || outputs.count(scores)) continue;
    const int j = readers[scores][0];
    const Node& top = g.nodes()[j];
    if (top.op != "topk" || !c.mine(top) || top.attrs.get_int("largest") != 1) continue;
    if (!shapes) shapes.emplace(g);
    const int64_t rank = static_cast<int64_t>((*shapes)(scores).size()), axis = top.attrs.get_int("axis");
    if (axis != -1 && axis != rank - 1) continue;
    Node f;
    f.name = top.name;
    f.op = "log_softmax_topk";
    f.inputs = {ls.inputs[0]};
    if (ls.input(1) >= 0) f.inputs.push_back(ls.input(1));
    f.outputs = top.outputs;
    f.attrs = {{"k", top.attrs.get_int("k")}};
    f.group = top.group;
    f.device = top.device;
    if (!c.supports(g, f)) continue;
    dead[i] = dead[j] = true;
    g.append_node(std::move(f));
  }
  dead.resize(g.nodes().size(), false);
  g.remove_nodes(dead);
  g.toposort();
}

}  // namespace kiln

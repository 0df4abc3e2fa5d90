// A decoder step's self-attention, as a graph builder writes it (graph/builder.cpp,
// cached_self_attention): a stacked q/k/v projection split in three, each part's heads moved
// first, the keys and values written into their caches at the step's position, attention over
// the caches. It becomes one kv_cache_attention node reading the projection itself: on the GPU a
// layer's split, two cache writes and attention are one launch instead of four (a 12-layer
// decoder step at one row: 36 of about 137 launches).
#include <algorithm>

#include "graph/rewrites/head_moves.h"

namespace kiln {

void fuse_kv_cache_attention(Graph& g, const RewriteContext& c) {
  const HeadMoves heads(g, c);
  std::vector<bool> dead(g.nodes().size(), false);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& attention = g.nodes()[i];
    if (attention.op != "attention" || !c.mine(attention) || attention.input(3) >= 0) continue;  // no mask
    const int kw = heads.made_by(attention.inputs[1], "dynamic_update_slice");
    const int vw = heads.made_by(attention.inputs[2], "dynamic_update_slice");
    if (kw < 0 || vw < 0 || !heads.only_reader(attention.inputs[1], static_cast<int>(i)) ||
        !heads.only_reader(attention.inputs[2], static_cast<int>(i)))
      continue;
    const Node &k_write = g.nodes()[kw], &v_write = g.nodes()[vw];
    const auto on_sequence = [&](const Node& w) {
      const int64_t axis = w.attrs.get_int("axis");
      return axis == 2 || axis == -2;
    };
    if (!on_sequence(k_write) || !on_sequence(v_write) || k_write.inputs[2] != v_write.inputs[2]) continue;
    const auto q = heads.split_part(attention.inputs[0], static_cast<int>(i));
    const auto k = heads.split_part(k_write.inputs[1], kw);
    const auto v = heads.split_part(v_write.inputs[1], vw);
    if (!q || !k || !v || q->split != k->split || q->split != v->split) continue;
    const Node& split = g.nodes()[q->split];
    if (split.outputs.size() != 3 || q->part != 0 || k->part != 1 || v->part != 2) continue;
    Node fused = attention;
    fused.op = "kv_cache_attention";
    fused.inputs = {k_write.inputs[0], v_write.inputs[0],  split.inputs[0],
                    k_write.inputs[2], attention.input(4), attention.input(5)};
    fused.outputs = {k_write.outputs[0], v_write.outputs[0], attention.outputs[0]};
    if (!c.supports(g, fused)) continue;
    for (const auto* h : {&*q, &*k, &*v})
      for (int n : h->nodes) dead[n] = true;
    dead[q->split] = dead[kw] = dead[vw] = true;
    g.node(static_cast<int>(i)) = std::move(fused);
  }
  if (std::find(dead.begin(), dead.end(), true) == dead.end()) return;
  g.remove_nodes(dead);
  g.toposort();
}

}  // namespace kiln

// An encoder's self-attention, as a graph builder writes it (graph/builder.cpp, self_attention):
// a stacked q/k/v projection split in three, each part's heads moved first, attention, and its
// output's heads moved back and merged. It becomes one qkv_attention node reading the projection
// and writing the merged rows: on the GPU a layer's split, three transposes in and one out are
// no longer launches of their own (a 12-layer encoder at one source: 60 of about 220 launches).
#include <algorithm>

#include "graph/rewrites/head_moves.h"

namespace kiln {

void fuse_qkv_attention(Graph& g, const RewriteContext& c) {
  const HeadMoves heads(g, c);
  std::vector<bool> dead(g.nodes().size(), false);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& attention = g.nodes()[i];
    if (attention.op != "attention" || !c.mine(attention) || attention.input(5) >= 0) continue;  // no kv_rows
    const int node = static_cast<int>(i);
    const auto q = heads.split_part(attention.inputs[0], node);
    const auto k = heads.split_part(attention.inputs[1], node);
    const auto v = heads.split_part(attention.inputs[2], node);
    if (!q || !k || !v || q->split != k->split || q->split != v->split) continue;
    const Node& split = g.nodes()[q->split];
    if (split.outputs.size() != 3 || q->part != 0 || k->part != 1 || v->part != 2) continue;
    const auto merged = heads.merged(attention.outputs[0]);
    if (!merged) continue;
    // q [B, H, T, D], k and v [B, Hkv, T, D]: the key and value heads as wide as the query heads.
    const int qv = attention.inputs[0], kv = attention.inputs[1], vv = attention.inputs[2];
    const ShapeOracle& shapes = heads.shapes();
    const bool one_width = shapes.holds({qv, kv, vv}, [](const std::vector<Shape>& s) {
      return s[0].size() == 4 && s[1] == s[2] && s[1].size() == 4 && s[1][3] == s[0][3] && s[1][2] == s[0][2];
    });
    if (!one_width || !shapes.holds(qv, [&](const Shape& s) { return s[1] == shapes(qv)[1]; }) ||
        !shapes.holds(kv, [&](const Shape& s) { return s[1] == shapes(kv)[1]; }))
      continue;
    Node fused = attention;
    fused.op = "qkv_attention";
    fused.inputs = {split.inputs[0], attention.input(3), attention.input(4)};
    fused.outputs = {merged->merged};
    fused.attrs.set("heads", shapes(qv)[1]);
    fused.attrs.set("kv_heads", shapes(kv)[1]);
    if (!c.supports(g, fused)) continue;
    for (const auto* h : {&*q, &*k, &*v})
      for (int n : h->nodes) dead[n] = true;
    for (int n : merged->nodes) dead[n] = true;
    dead[q->split] = true;
    g.node(node) = std::move(fused);
  }
  if (std::find(dead.begin(), dead.end(), true) == dead.end()) return;
  g.remove_nodes(dead);
  g.toposort();
}

}  // namespace kiln

// A decoder step's self-attention, as a graph builder writes it (graph/builder.cpp,
// cached_self_attention): a stacked q/k/v projection split in three, each part's heads moved
// first, the keys and values written into their caches at the step's position, attention over
// the caches. It becomes one kv_cache_attention node reading the projection itself: on the GPU a
// layer's split, two cache writes and attention are one launch instead of four (a 12-layer
// decoder step at one row: 36 of about 137 launches).
#include <algorithm>
#include <optional>

#include "graph/rewrites/rewrite.h"

namespace kiln {

namespace {

struct Heads {
  int split = -1, part = -1;  // the split node and which of its outputs
  std::vector<int> nodes;     // the reshape (and transpose) between them
};

}  // namespace

void fuse_kv_cache_attention(Graph& g, const RewriteContext& c) {
  const auto readers = g.consumers();
  const auto producers = g.producers();
  const ShapeOracle shape(g);
  auto only_reader = [&](int v, int node) { return readers[v].size() == 1 && readers[v][0] == node; };
  // The node of `op` on this device that makes v, or -1.
  auto made_by = [&](int v, const char* op) {
    const int p = v >= 0 ? producers[v] : -1;
    return p >= 0 && g.nodes()[p].op == op && c.mine(g.nodes()[p]) ? p : -1;
  };
  // v = heads-first view [B, heads, T, D] of one part of a split of [B, T, W] along its last
  // axis: reshape to [B, T, heads, D], then a transpose (0, 2, 1, 3), or a reshape where T is 1.
  auto heads_of = [&](int v, int reader) -> std::optional<Heads> {
    Heads h;
    if (!only_reader(v, reader)) return std::nullopt;
    int second = made_by(v, "transpose");
    if (second >= 0 && g.nodes()[second].attrs.get_ints("perm") != std::vector<int64_t>{0, 2, 1, 3})
      return std::nullopt;
    if (second < 0) second = made_by(v, "reshape");
    if (second < 0) return std::nullopt;
    const int mid = g.nodes()[second].inputs[0];
    const int first = made_by(mid, "reshape");
    if (first < 0 || !only_reader(mid, second)) return std::nullopt;
    const int part = g.nodes()[first].inputs[0];
    h.split = made_by(part, "split");
    if (h.split < 0 || !only_reader(part, first)) return std::nullopt;
    const Node& split = g.nodes()[h.split];
    h.part = static_cast<int>(std::find(split.outputs.begin(), split.outputs.end(), part) - split.outputs.begin());
    const bool moves_heads = g.nodes()[second].op == "transpose";
    // [B, T, W] -> [B, T, heads, D] (heads * D the part's width) -> [B, heads, T, D].
    const bool layout = shape.holds({split.inputs[0], part, mid, v}, [&](const std::vector<Shape>& s) {
      const Shape &x = s[0], &p = s[1], &m = s[2], &y = s[3];
      return x.size() == 3 && m.size() == 4 && m[0] == x[0] && m[1] == x[1] && m[2] * m[3] == p[2] &&
             y == Shape{m[0], m[2], m[1], m[3]} && (moves_heads || m[1] == 1);
    });
    if (!layout) return std::nullopt;
    h.nodes = {first, second};
    return h;
  };

  std::vector<bool> dead(g.nodes().size(), false);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& attention = g.nodes()[i];
    if (attention.op != "attention" || !c.mine(attention) || attention.input(3) >= 0) continue;  // no mask
    const int kw = made_by(attention.inputs[1], "dynamic_update_slice");
    const int vw = made_by(attention.inputs[2], "dynamic_update_slice");
    if (kw < 0 || vw < 0 || !only_reader(attention.inputs[1], static_cast<int>(i)) ||
        !only_reader(attention.inputs[2], static_cast<int>(i)))
      continue;
    const Node &k_write = g.nodes()[kw], &v_write = g.nodes()[vw];
    const auto on_sequence = [&](const Node& w) {
      const int64_t axis = w.attrs.get_int("axis");
      return axis == 2 || axis == -2;
    };
    if (!on_sequence(k_write) || !on_sequence(v_write) || k_write.inputs[2] != v_write.inputs[2]) continue;
    const auto q = heads_of(attention.inputs[0], static_cast<int>(i));
    const auto k = heads_of(k_write.inputs[1], kw);
    const auto v = heads_of(v_write.inputs[1], vw);
    if (!q || !k || !v || q->split != k->split || q->split != v->split) continue;
    const Node& split = g.nodes()[q->split];
    if (split.outputs.size() != 3 || q->part != 0 || k->part != 1 || v->part != 2) continue;
    const int64_t axis = split.attrs.get_int("axis");
    if (axis != -1 && axis != 2) continue;
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

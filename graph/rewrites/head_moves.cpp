#include "graph/rewrites/head_moves.h"

#include <algorithm>

namespace kiln {

namespace {

const std::vector<int64_t> kSwapHeads = {0, 2, 1, 3};

}  // namespace

HeadMoves::HeadMoves(const Graph& g, const RewriteContext& c)
    : g_(g), c_(c), readers_(g.consumers()), producers_(g.producers()), shape_(g) {
  for (const auto& o : g.outputs()) outputs_.insert(o.value);
}

int HeadMoves::made_by(int v, const char* op) const {
  const int p = v >= 0 ? producers_[v] : -1;
  return p >= 0 && g_.nodes()[p].op == op && c_.mine(g_.nodes()[p]) ? p : -1;
}

std::optional<SplitHeads> HeadMoves::split_part(int v, int reader) const {
  SplitHeads h;
  if (!only_reader(v, reader)) return std::nullopt;
  int second = made_by(v, "transpose");
  if (second >= 0 && g_.nodes()[second].attrs.get_ints("perm") != kSwapHeads) return std::nullopt;
  if (second < 0) second = made_by(v, "reshape");
  if (second < 0) return std::nullopt;
  const int mid = g_.nodes()[second].inputs[0];
  const int first = made_by(mid, "reshape");
  if (first < 0 || !only_reader(mid, second)) return std::nullopt;
  const int part = g_.nodes()[first].inputs[0];
  h.split = made_by(part, "split");
  if (h.split < 0 || !only_reader(part, first)) return std::nullopt;
  const Node& split = g_.nodes()[h.split];
  const int64_t axis = split.attrs.get_int("axis");
  if (axis != -1 && axis != 2) return std::nullopt;
  h.part = static_cast<int>(std::find(split.outputs.begin(), split.outputs.end(), part) - split.outputs.begin());
  const bool moves_heads = g_.nodes()[second].op == "transpose";
  // [B, T, W] -> [B, T, heads, D] (heads * D the part's width) -> [B, heads, T, D].
  const bool layout = shape_.holds({split.inputs[0], part, mid, v}, [&](const std::vector<Shape>& s) {
    const Shape &x = s[0], &p = s[1], &m = s[2], &y = s[3];
    return x.size() == 3 && m.size() == 4 && m[0] == x[0] && m[1] == x[1] && m[2] * m[3] == p[2] &&
           y == Shape{m[0], m[2], m[1], m[3]} && (moves_heads || m[1] == 1);
  });
  if (!layout) return std::nullopt;
  h.nodes = {first, second};
  return h;
}

std::optional<MergedHeads> HeadMoves::merged(int y) const {
  if (readers_[y].size() != 1 || !only_reader(y, readers_[y][0])) return std::nullopt;
  const int first = readers_[y][0];
  const Node& move = g_.nodes()[first];
  if (!c_.mine(move) || move.inputs[0] != y) return std::nullopt;
  const bool moves_heads = move.op == "transpose";
  if (moves_heads ? move.attrs.get_ints("perm") != kSwapHeads : move.op != "reshape") return std::nullopt;
  const int mid = move.outputs[0];
  if (readers_[mid].size() != 1 || !only_reader(mid, readers_[mid][0])) return std::nullopt;
  const int second = readers_[mid][0];
  const Node& reshape = g_.nodes()[second];
  if (reshape.op != "reshape" || !c_.mine(reshape)) return std::nullopt;
  const int out = reshape.outputs[0];
  // [B, heads, T, D] -> [B, T, heads, D] -> [B, T, heads * D].
  const bool layout = shape_.holds({y, mid, out}, [&](const std::vector<Shape>& s) {
    const Shape &a = s[0], &m = s[1], &o = s[2];
    return a.size() == 4 && m == Shape{a[0], a[2], a[1], a[3]} && o == Shape{a[0], a[2], a[1] * a[3]} &&
           (moves_heads || a[2] == 1);
  });
  if (!layout) return std::nullopt;
  return MergedHeads{out, {first, second}};
}

}  // namespace kiln

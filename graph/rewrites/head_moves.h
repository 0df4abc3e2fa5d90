// The head moves a graph builder writes around attention (graph/builder.cpp: split_heads and
// merge_heads), as the fusions that read a stacked projection in place, or write heads merged,
// find them (fuse_kv_cache_attention, fuse_qkv_attention, fuse_write_heads). A value between
// moves must have one reader and not be a graph output: the fusions remove what makes it.
#pragma once

#include <optional>
#include <set>
#include <vector>

#include "graph/rewrites/rewrite.h"

namespace kiln {

// One part of a split of [B, T, W] along its last axis, seen heads first.
struct SplitHeads {
  int split = -1, part = -1;  // the split node and which of its outputs
  std::vector<int> nodes;     // the reshape (and transpose) between them
};

// [B, heads, T, D] seen as [B, T, heads * D].
struct MergedHeads {
  int merged = -1;         // the value [B, T, heads * D]
  std::vector<int> nodes;  // the transpose (or reshape) and the reshape that make it
};

class HeadMoves {
 public:
  HeadMoves(const Graph& g, const RewriteContext& c);
  // v = a heads-first view [B, heads, T, D] of one part of a split of [B, T, W] along its last
  // axis: reshape to [B, T, heads, D], then a transpose (0, 2, 1, 3), or a reshape where T is
  // 1; read only by `reader`, every node between on this device and read only by the next.
  std::optional<SplitHeads> split_part(int v, int reader) const;
  // y [B, heads, T, D] read only by a transpose (0, 2, 1, 3), or a reshape where T is 1, read
  // only by a reshape to [B, T, heads * D]; both on this device, neither y nor the value
  // between a graph output (the merged value may be one).
  std::optional<MergedHeads> merged(int y) const;
  // v is read by `node` alone and is not a graph output.
  bool only_reader(int v, int node) const {
    return readers_[v].size() == 1 && readers_[v][0] == node && !outputs_.count(v);
  }
  // The node of `op` on this device that makes v, or -1.
  int made_by(int v, const char* op) const;
  const ShapeOracle& shapes() const { return shape_; }

 private:
  const Graph& g_;
  const RewriteContext& c_;
  std::vector<std::vector<int>> readers_;
  std::vector<int> producers_;
  std::set<int> outputs_;  // values the graph outputs
  ShapeOracle shape_;
};

}  // namespace kiln

// Graph rewrites a backend applies to the nodes placed on it (Backend::convert / fuse): one
// file each. A fusion replaces a group of nodes by one node of a fused form (a conv2d with a
// gate input, an mlp, ...) only if the backend says it can run the result; every fused form is
// an op with a CPU reference (graph/ops/), so the harness checks it like any other op.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace kiln {

struct RewriteContext {
  std::string device;  // rewrite nodes with this Node::device only
  std::function<bool(const Graph&, const Node&)> supports;
  bool mine(const Node& n) const { return n.device == device; }
};

// Shapes of every value at the graph's example sizes and at each symbol one larger: a shape
// property a rewrite relies on (two values of one shape, a [N, 1, 1, C] gate) must hold at both.
class ShapeOracle {
 public:
  explicit ShapeOracle(const Graph& g);
  const Shape& operator()(int value) const { return a_[value]; }
  bool same_shape(int x, int y) const { return a_[x] == a_[y] && b_[x] == b_[y]; }
  // The predicate holds for the value's shape at both sizes.
  bool holds(int value, const std::function<bool(const Shape&)>& p) const { return p(a_[value]) && p(b_[value]); }
  // A property relating several values' shapes (given in the order of `values`) holds at both.
  bool holds(const std::vector<int>& values, const std::function<bool(const std::vector<Shape>&)>& p) const;

 private:
  std::vector<Shape> a_, b_;
};

// Drops nodes whose outputs nothing reads (and that are neither graph outputs nor in-place
// updates), repeatedly, and the values they leave unused.
void prune(Graph& g);

// --- Type conversion (before placement).
// Every f32 activation, state and float constant becomes `to`; graph inputs and outputs keep
// their types through casts at the edges; explicit f32 casts and out_dtype attributes follow.
void lower_precision(Graph& g, DType to);

// --- Fusions (after placement), in the order a backend usually applies them.
void transpose_as_reshape(Graph& g, const RewriteContext& c);     // a transpose moving only 1-sized dims
void fold_input_layout(Graph& g, const RewriteContext& c);        // cast/transpose NCHW->NHWC into the conv
void fuse_conv_mean(Graph& g, const RewriteContext& c);           // reduce mean over H, W into the conv
void fuse_mlp(Graph& g, const RewriteContext& c);                 // linear -> linear on pooled vectors
void fuse_channel_gate(Graph& g, const RewriteContext& c);        // x * gate[N, 1, 1, C] into the next conv
void fuse_residual_add(Graph& g, const RewriteContext& c);        // add(conv or linear, r) into its epilogue
void fold_output_cast(Graph& g, const RewriteContext& c);         // a cast after conv/linear/mlp into it
void fuse_fp8_output(Graph& g, const RewriteContext& c);          // E4M3 storage between FP8 layers
void fuse_norm_linear(Graph& g, const RewriteContext& c);         // layer_norm -> linear: a norm_linear
void fuse_log_softmax_topk(Graph& g, const RewriteContext& c);    // log_softmax -> topk: a generator's picks
void fuse_kv_cache_attention(Graph& g, const RewriteContext& c);  // split, cache writes, attention: one node
void fuse_qkv_attention(Graph& g, const RewriteContext& c);       // split, head moves, attention: one node
void fuse_write_heads(Graph& g, const RewriteContext& c);         // split, head moves, write_rows: one node

}  // namespace kiln

// What families build graphs with: weights registered as constants under their checkpoint
// names, and the usual layers (conv + folded batch norm, linear, squeeze-excite, layer norm,
// multi-head attention, feed-forward) as nodes named after the module they come from, so that
// a node's name finds its tensor in the checkpoint and its output in PyTorch.
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "graph/graph.h"
#include "graph/model_definition.h"
#include "graph/ops/activation.h"

namespace kiln {

struct ConvOptions {
  int stride = 1;
  int groups = 1;
  bool same = false;  // TensorFlow "same" padding; else `pad` on every side
  int pad = 0;
  Activation act = Activation::None;
  std::string group;  // reported by profiles
};

// The projections of one multi-head attention layer (q, k, v, out; weights [out, in]).
struct AttentionWeights {
  Tensor q_w, q_b, k_w, k_b, v_w, v_b, o_w, o_b;
};

// A KV cache of one attention layer: two states [batch, heads, capacity, head_dim], the
// position the step writes at ([1], i64) and each sequence's valid length after the write
// ([batch], i64).
struct KvCache {
  int k_state = -1, v_state = -1, position = -1, length = -1;
  int rows = -1;  // optional: attention's kv_rows (which cache row holds each position of a row's history)
};

class GraphBuilder {
 public:
  explicit GraphBuilder(ModelDefinition& def, const std::string& graph = "main");
  Graph& graph() { return g_; }

  int input(const std::string& name, DType dtype, ShapeSpec shape);
  // A weight: stored in the definition and read by the graph as a constant.
  int weight(const std::string& name, Tensor t, DType dtype = DType::F32);
  int op(const std::string& op, const std::string& name, std::vector<int> inputs, Attrs attrs = {},
         const std::string& group = {});
  void output(const std::string& name, int value) { g_.add_output(name, value); }
  void name_value(int value, const std::string& name) { g_.name_value(value, name); }

  // conv2d of an NHWC x with an OHWI weight; names its weights "<name>.weight" and ".bias".
  int conv2d(int x, const std::string& name, Tensor weight, Tensor bias, const ConvOptions& o);
  // linear over the last dim; weight [out, in]; an empty bias adds none.
  int linear(int x, const std::string& name, Tensor weight, Tensor bias, Activation act = Activation::None,
             const std::string& group = {}, int residual = -1);
  // Mean over H and W of an NHWC map, kept as [N, 1, 1, C].
  int global_avg_pool(int x, const std::string& name, const std::string& group = {});
  // Squeeze-excite: x * gate(mean(x)) with gate = sigmoid(expand(act(reduce(.)))).
  int squeeze_excite(int x, const std::string& prefix, Tensor reduce_w, Tensor reduce_b, Tensor expand_w,
                     Tensor expand_b, Activation act, const std::string& group = {});

  // layer_norm over the last dim; names its weights "<name>.weight" and ".bias".
  int layer_norm(int x, const std::string& name, Tensor gamma, Tensor beta, double eps, const std::string& group = {});
  // [B, S, H * Dh] -> [B, H, S, Dh] and back.
  int split_heads(int x, const std::string& name, int heads, int head_dim, const std::string& group = {});
  int merge_heads(int x, const std::string& name, const std::string& group = {});
  // Several dense layers over the same input (attention's q, k and v projections) as one: their
  // weights [N_i, K] and biases stacked by rows ("<name>.weight" [sum N_i, K]), the result split
  // back along its last dim. Returns the N_i-wide parts in order.
  std::vector<int> stacked_linear(int x, const std::string& name, std::vector<Tensor> weights,
                                  std::vector<Tensor> biases, const std::string& group = {});
  // Multi-head self-attention over x [B, S, D], with an optional additive mask broadcasting to
  // [B, heads, S, S] and optional valid key counts kv_length [B], then the output projection
  // and `residual` added. The weights are Hugging Face's encoder-decoder layout (q_proj, k_proj,
  // v_proj, out_proj); q, k and v become one stacked_linear "<name>.qkv_proj".
  int self_attention(int x, const std::string& name, AttentionWeights w, int heads, int mask, bool causal, int residual,
                     const std::string& group = "attention", int kv_length = -1);
  // Self-attention of a decoder step: the step's keys and values are written into the cache at
  // its position, and the queries attend to the cache's valid length (q, k, v stacked, as above).
  int cached_self_attention(int x, const std::string& name, AttentionWeights w, int heads, const KvCache& cache,
                            int residual, const std::string& group = "attention");
  // fc2(act(fc1(x))) + residual: two dense layers (GEMMs over every token; fuse_mlp makes one
  // node of them only where there are few rows). Names "<name>.fc1.weight", ...
  int feed_forward(int x, const std::string& name, Tensor fc1_w, Tensor fc1_b, Tensor fc2_w, Tensor fc2_b,
                   Activation act, int residual, const std::string& group = "feed_forward");

 private:
  ModelDefinition& def_;
  Graph& g_;
};

}  // namespace kiln

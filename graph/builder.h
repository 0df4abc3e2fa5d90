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

 private:
  ModelDefinition& def_;
  Graph& g_;
};

}  // namespace kiln

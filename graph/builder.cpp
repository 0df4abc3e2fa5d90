#include "graph/builder.h"

#include <numeric>

#include "core/error.h"

namespace kiln {

GraphBuilder::GraphBuilder(ModelDefinition& def, const std::string& graph) : def_(def), g_(def.graphs[graph]) {}

int GraphBuilder::input(const std::string& name, DType dtype, ShapeSpec shape) {
  return g_.add_input(name, dtype, std::move(shape));
}

int GraphBuilder::weight(const std::string& name, Tensor t, DType dtype) {
  const Shape shape = t.shape;
  auto [it, fresh] = def_.weights.emplace(name, std::move(t));
  KILN_CHECK(fresh || it->second.shape == shape, "[build] weight '{}' added twice with different shapes", name);
  return g_.add_constant(name, dtype, shape);
}

int GraphBuilder::op(const std::string& op, const std::string& name, std::vector<int> inputs, Attrs attrs,
                     const std::string& group) {
  return g_.add(op, name, std::move(inputs), std::move(attrs), group);
}

int GraphBuilder::conv2d(int x, const std::string& name, Tensor weight, Tensor bias, const ConvOptions& o) {
  Attrs a{{"stride", std::vector<int64_t>{o.stride, o.stride}},
          {"groups", int64_t{o.groups}},
          {"act", std::string(activation_name(o.act))}};
  if (o.same)
    a.set("pad_mode", std::string("same"));
  else
    a.set("pad", std::vector<int64_t>{o.pad, o.pad, o.pad, o.pad});
  const int w = this->weight(name + ".weight", std::move(weight));
  const int b = bias.shape.empty() ? -1 : this->weight(name + ".bias", std::move(bias));
  return g_.add("conv2d", name, {x, w, b}, a, o.group);
}

int GraphBuilder::linear(int x, const std::string& name, Tensor weight, Tensor bias, Activation act,
                         const std::string& group, int residual) {
  const int w = this->weight(name + ".weight", std::move(weight));
  const int b = bias.shape.empty() ? -1 : this->weight(name + ".bias", std::move(bias));
  std::vector<int> in = {x, w, b};
  if (residual >= 0) in.push_back(residual);
  return g_.add("linear", name, in, {{"act", std::string(activation_name(act))}}, group);
}

int GraphBuilder::global_avg_pool(int x, const std::string& name, const std::string& group) {
  return g_.add("reduce", name, {x}, {{"op", std::string("mean")}, {"axes", std::vector<int64_t>{1, 2}}}, group);
}

int GraphBuilder::squeeze_excite(int x, const std::string& prefix, Tensor reduce_w, Tensor reduce_b, Tensor expand_w,
                                 Tensor expand_b, Activation act, const std::string& group) {
  const int pooled = global_avg_pool(x, prefix + ".pool", group);
  const int r = linear(pooled, prefix + ".conv_reduce", std::move(reduce_w), std::move(reduce_b), act, group);
  const int gate =
      linear(r, prefix + ".conv_expand", std::move(expand_w), std::move(expand_b), Activation::Sigmoid, group);
  return g_.add("mul", prefix + ".gate", {x, gate}, {}, group);
}

int GraphBuilder::layer_norm(int x, const std::string& name, Tensor gamma, Tensor beta, double eps,
                             const std::string& group) {
  const int g = weight(name + ".weight", std::move(gamma));
  const int b = weight(name + ".bias", std::move(beta));
  return g_.add("layer_norm", name, {x, g, b}, {{"eps", eps}}, group);
}

int GraphBuilder::split_heads(int x, const std::string& name, int heads, int head_dim, const std::string& group) {
  const int r =
      g_.add("reshape", name + ".heads", {x}, {{"shape", std::vector<int64_t>{0, 0, heads, head_dim}}}, group);
  return g_.add("transpose", name + ".heads_first", {r}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}, group);
}

int GraphBuilder::merge_heads(int x, const std::string& name, const std::string& group) {
  const int t = g_.add("transpose", name + ".heads_last", {x}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}, group);
  return g_.add("reshape", name + ".merged", {t}, {{"shape", std::vector<int64_t>{0, 0, -1}}}, group);
}

namespace {

int head_dim_of(const Tensor& q_w, int heads) {
  KILN_CHECK(heads >= 1 && q_w.shape.size() == 2 && q_w.dim(0) % heads == 0,
             "[build] attention: {} heads do not divide the projection {}", heads, shape_string(q_w.shape));
  return static_cast<int>(q_w.dim(0) / heads);
}

}  // namespace

std::vector<int> GraphBuilder::stacked_linear(int x, const std::string& name, std::vector<Tensor> weights,
                                              std::vector<Tensor> biases, const std::string& group) {
  KILN_CHECK(!weights.empty() && weights.size() == biases.size(), "[build] {}: {} weights, {} biases", name,
             weights.size(), biases.size());
  const bool biased = !biases[0].shape.empty();
  Tensor w, b;
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < weights.size(); ++i) {
    KILN_CHECK(weights[i].shape.size() == 2 && weights[i].dim(1) == weights[0].dim(1),
               "[build] {}: weight {} is {}, not [N, {}]", name, i, shape_string(weights[i].shape), weights[0].dim(1));
    KILN_CHECK(biases[i].shape.empty() != biased, "[build] {}: some projections have a bias, some not", name);
    KILN_CHECK(!biased || biases[i].shape == std::vector<int64_t>{weights[i].dim(0)},
               "[build] {}: bias {} is {} for a weight of {} rows", name, i, shape_string(biases[i].shape),
               weights[i].dim(0));
    sizes.push_back(weights[i].dim(0));
    w.data.insert(w.data.end(), weights[i].data.begin(), weights[i].data.end());
    b.data.insert(b.data.end(), biases[i].data.begin(), biases[i].data.end());
  }
  const int64_t rows = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
  w.shape = {rows, weights[0].dim(1)};
  if (biased) b.shape = {rows};
  const int y = linear(x, name, std::move(w), std::move(b), Activation::None, group);
  return g_.add_node("split", name + ".parts", {y}, {{"axis", int64_t{-1}}, {"sizes", sizes}}, group);
}

int GraphBuilder::self_attention(int x, const std::string& name, AttentionWeights w, int heads, int mask, bool causal,
                                 int residual, const std::string& group, int kv_length) {
  const int dh = head_dim_of(w.q_w, heads);
  const auto qkv = stacked_linear(x, name + ".qkv_proj", {std::move(w.q_w), std::move(w.k_w), std::move(w.v_w)},
                                  {std::move(w.q_b), std::move(w.k_b), std::move(w.v_b)}, group);
  const int q = split_heads(qkv[0], name + ".q", heads, dh, group);
  const int k = split_heads(qkv[1], name + ".k", heads, dh, group);
  const int v = split_heads(qkv[2], name + ".v", heads, dh, group);
  const int a = g_.add("attention", name + ".sdpa", {q, k, v, mask, kv_length}, {{"causal", int64_t{causal}}}, group);
  return linear(merge_heads(a, name, group), name + ".out_proj", std::move(w.o_w), std::move(w.o_b), Activation::None,
                group, residual);
}

int GraphBuilder::cached_self_attention(int x, const std::string& name, AttentionWeights w, int heads,
                                        const KvCache& cache, int residual, const std::string& group) {
  const int dh = head_dim_of(w.q_w, heads);
  const auto qkv = stacked_linear(x, name + ".qkv_proj", {std::move(w.q_w), std::move(w.k_w), std::move(w.v_w)},
                                  {std::move(w.q_b), std::move(w.k_b), std::move(w.v_b)}, group);
  const int q = split_heads(qkv[0], name + ".q", heads, dh, group);
  const int k = split_heads(qkv[1], name + ".k", heads, dh, group);
  const int v = split_heads(qkv[2], name + ".v", heads, dh, group);
  const Attrs seq_axis{{"axis", int64_t{2}}};
  const int keys =
      g_.add("dynamic_update_slice", name + ".k_cache", {cache.k_state, k, cache.position}, seq_axis, group);
  const int values =
      g_.add("dynamic_update_slice", name + ".v_cache", {cache.v_state, v, cache.position}, seq_axis, group);
  const int a = g_.add("attention", name + ".sdpa", {q, keys, values, -1, cache.length, cache.rows}, {}, group);
  return linear(merge_heads(a, name, group), name + ".out_proj", std::move(w.o_w), std::move(w.o_b), Activation::None,
                group, residual);
}

int GraphBuilder::feed_forward(int x, const std::string& name, Tensor fc1_w, Tensor fc1_b, Tensor fc2_w, Tensor fc2_b,
                               Activation act, int residual, const std::string& group) {
  const int h = linear(x, name + ".fc1", std::move(fc1_w), std::move(fc1_b), act, group);
  return linear(h, name + ".fc2", std::move(fc2_w), std::move(fc2_b), Activation::None, group, residual);
}

}  // namespace kiln

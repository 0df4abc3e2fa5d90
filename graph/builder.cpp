#include "graph/builder.h"

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

}  // namespace kiln

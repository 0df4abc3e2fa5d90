// relu, silu, sigmoid, tanh, gelu: y = f(x), one op each, any float type.
#include "graph/ops/activation.h"

#include "core/error.h"
#include "graph/graph.h"

namespace kiln {

namespace {

constexpr std::pair<Activation, const char*> kActivations[] = {
    {Activation::None, "none"},         {Activation::ReLU, "relu"}, {Activation::SiLU, "silu"},
    {Activation::Sigmoid, "sigmoid"},   {Activation::Tanh, "tanh"}, {Activation::Gelu, "gelu"},
    {Activation::GeluTanh, "gelu_tanh"}};

class ActivationOp : public OpDef {
 public:
  explicit ActivationOp(Activation a) : act_(a) {}
  std::string name() const override { return act_ == Activation::GeluTanh ? "gelu" : activation_name(act_); }
  std::vector<OpInput> inputs() const override { return {{"x"}}; }
  // gelu: "none" (erf, exact) or "tanh" (the tanh approximation), as PyTorch's approximate=.
  std::vector<AttrSpec> attributes() const override {
    if (act_ != Activation::Gelu) return {};
    return {optional_attr("approximate", AttrType::String, std::string("none"))};
  }
  void check_attrs(const Node& n) const override {
    if (act_ != Activation::Gelu) return;
    const auto& a = n.attrs.get_string("approximate");
    KILN_CHECK(a == "none" || a == "tanh", "[gelu] {}: approximate must be none or tanh", n.name);
  }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    require_float(in[0], n, "x");
    return {*in[0]};
  }
  std::vector<Shape> infer_shapes(const Node&, const std::vector<std::optional<Shape>>& in) const override {
    return {*in[0]};
  }

 private:
  Activation act_;
};

}  // namespace

const char* activation_name(Activation a) {
  for (const auto& [e, name] : kActivations)
    if (e == a) return name;
  return "?";
}

Activation parse_activation(const std::string& name) {
  for (const auto& [e, n] : kActivations)
    if (name == n) return e;
  fail("[graph] unknown activation '{}'", name);
}

Activation node_activation(const Node& n) {
  if (n.op == "gelu") return n.attrs.get_string("approximate") == "tanh" ? Activation::GeluTanh : Activation::Gelu;
  return parse_activation(n.op);
}

KILN_REGISTER_OPS(activation) {
  for (Activation a : {Activation::ReLU, Activation::SiLU, Activation::Sigmoid, Activation::Tanh, Activation::Gelu})
    registry.add(std::make_unique<ActivationOp>(a));
}

}  // namespace kiln

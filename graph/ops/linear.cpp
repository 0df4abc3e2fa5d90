#include "graph/ops/linear.h"

#include <cmath>

#include "core/dtype.h"
#include "core/error.h"
#include "graph/graph.h"
#include "graph/ops/activation.h"

namespace kiln {

namespace {

std::optional<DType> opt_dtype(const std::vector<std::optional<DType>>& in, size_t slot) {
  return slot < in.size() ? in[slot] : std::nullopt;
}
const std::optional<Shape>& opt_shape(const std::vector<std::optional<Shape>>& in, size_t slot) {
  static const std::optional<Shape> none;
  return slot < in.size() ? in[slot] : none;
}

// The output dtype from out_dtype (empty: x's).
DType output_dtype(const Node& n, DType x) {
  const std::string& out = n.attrs.get_string("out_dtype");
  const DType y = out.empty() ? x : parse_dtype(out);
  KILN_CHECK(is_float(y) && y != DType::F8E4M3, "[{}] {}: bad out_dtype", n.op, n.name);
  return y;
}

// One dense layer's shapes: x [..., K] times weight [N, K] -> [..., N]; bias [N].
Shape dense(const Node& n, const Shape& x, const std::optional<Shape>& w, const std::optional<Shape>& b,
            const char* wname) {
  KILN_CHECK(!x.empty(), "[{}] {}: x must have rank 1 or more", n.op, n.name);
  KILN_CHECK(w && w->size() == 2 && (*w)[1] == x.back(), "[{}] {}: {} {} does not take x {}", n.op, n.name, wname,
             w ? to_string(*w) : "none", to_string(x));
  KILN_CHECK(!b || *b == Shape{(*w)[0]}, "[{}] {}: bias {} does not fit {} {}", n.op, n.name, to_string(*b), wname,
             to_string(*w));
  Shape y = x;
  y.back() = (*w)[0];
  return y;
}

class LinearOp : public OpDef {
 public:
  std::string name() const override { return "linear"; }
  std::vector<OpInput> inputs() const override {
    return {{"x"}, {"weight"}, {"bias", true}, {"residual", true}, {"weight_scale", true}};
  }
  std::vector<AttrSpec> attributes() const override {
    return {optional_attr("act", AttrType::String, std::string("none")),
            optional_attr("out_dtype", AttrType::String, std::string()),
            optional_attr("input_scale", AttrType::Float, 0.0)};
  }
  void check_attrs(const Node& n) const override {
    parse_activation(n.attrs.get_string("act"));
    const double s = n.attrs.get_float("input_scale");
    KILN_CHECK(std::isfinite(s) && s >= 0, "[linear] {}: bad input_scale", n.name);
  }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    using namespace linear_input;
    require_float(in[X], n, "x");
    require_float(in[Weight], n, "weight");
    KILN_CHECK(*in[X] != DType::F8E4M3, "[linear] {}: x is f8e4m3 (FP8 layers round their input themselves)", n.name);
    // Weights and input go to FP8 together: the GPU's FP8 GEMM takes both (graph/ops/linear.h).
    const bool fp8 = *in[Weight] == DType::F8E4M3;
    KILN_CHECK(fp8 == opt_dtype(in, WeightScale).has_value() && fp8 == (n.attrs.get_float("input_scale") > 0),
               "[linear] {}: an f8e4m3 weight goes with weight_scale and input_scale, and only with them", n.name);
    for (size_t s : {Bias, Residual, WeightScale})
      if (opt_dtype(in, s)) require_float(opt_dtype(in, s), n, inputs()[s].name.c_str());
    return {output_dtype(n, *in[X])};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    using namespace linear_input;
    Shape y = dense(n, *in[X], in[Weight], opt_shape(in, Bias), "weight");
    const auto& r = opt_shape(in, Residual);
    KILN_CHECK(!r || *r == y, "[linear] {}: residual {} is not the output's shape {}", n.name, to_string(*r),
               to_string(y));
    const auto& s = opt_shape(in, WeightScale);
    KILN_CHECK(!s || *s == Shape{(*in[Weight])[0]}, "[linear] {}: weight_scale {} is not one per output", n.name,
               to_string(*s));
    return {y};
  }
};

// layer_norm then linear, as one node: the GPU's few-rows kernel normalises each input row as it
// loads it. The normalised x is an output too: a post-norm transformer adds it back as the
// residual of the layer after next.
class NormLinearOp : public LinearOp {
 public:
  std::string name() const override { return "norm_linear"; }
  std::vector<OpInput> inputs() const override {
    std::vector<OpInput> in = LinearOp::inputs();
    in.push_back({"gamma", true});
    in.push_back({"beta", true});
    return in;
  }
  std::vector<AttrSpec> attributes() const override {
    std::vector<AttrSpec> a = LinearOp::attributes();
    a.push_back(optional_attr("eps", AttrType::Float, 1e-5));
    return a;
  }
  int num_outputs(const Node&) const override { return 2; }
  void check_attrs(const Node& n) const override {
    LinearOp::check_attrs(n);
    const double eps = n.attrs.get_float("eps");
    KILN_CHECK(std::isfinite(eps) && eps >= 0, "[norm_linear] {}: eps must be finite and not negative", n.name);
  }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    using namespace linear_input;
    for (size_t s : {Gamma, Beta})
      if (opt_dtype(in, s)) require_float(opt_dtype(in, s), n, inputs()[s].name.c_str());
    return {LinearOp::infer_dtypes(n, in)[0], *in[X]};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    using namespace linear_input;
    const Shape& x = *in[X];
    for (size_t s : {Gamma, Beta}) {
      const auto& p = opt_shape(in, s);
      KILN_CHECK(!p || *p == Shape{x.back()}, "[norm_linear] {}: {} {} does not fit x {}", n.name, inputs()[s].name,
                 to_string(*p), to_string(x));
    }
    return {LinearOp::infer_shapes(n, in)[0], x};
  }
};

class MlpOp : public OpDef {
 public:
  std::string name() const override { return "mlp"; }
  std::vector<OpInput> inputs() const override {
    return {{"x"}, {"w1"}, {"b1", true}, {"w2"}, {"b2", true}, {"residual", true}};
  }
  std::vector<AttrSpec> attributes() const override {
    return {optional_attr("act1", AttrType::String, std::string("none")),
            optional_attr("act2", AttrType::String, std::string("none")),
            optional_attr("out_dtype", AttrType::String, std::string())};
  }
  void check_attrs(const Node& n) const override {
    parse_activation(n.attrs.get_string("act1"));
    parse_activation(n.attrs.get_string("act2"));
  }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    using namespace mlp_input;
    require_float(in[X], n, "x");
    require_float(in[W1], n, "w1");
    require_float(in[W2], n, "w2");
    for (size_t s : {B1, B2, Residual})
      if (opt_dtype(in, s)) require_float(opt_dtype(in, s), n, inputs()[s].name.c_str());
    KILN_CHECK(*in[X] != DType::F8E4M3 && *in[W1] != DType::F8E4M3 && *in[W2] != DType::F8E4M3, "[mlp] {}: no FP8 mlp",
               n.name);
    return {output_dtype(n, *in[X])};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    using namespace mlp_input;
    Shape h = dense(n, *in[X], in[W1], opt_shape(in, B1), "w1");
    Shape y = dense(n, h, in[W2], opt_shape(in, B2), "w2");
    const auto& r = opt_shape(in, Residual);
    KILN_CHECK(!r || *r == y, "[mlp] {}: residual {} is not the output's shape {}", n.name, to_string(*r),
               to_string(y));
    return {y};
  }
};

}  // namespace

KILN_REGISTER_OPS(linear) {
  registry.add(std::make_unique<LinearOp>());
  registry.add(std::make_unique<NormLinearOp>());
  registry.add(std::make_unique<MlpOp>());
}

}  // namespace kiln

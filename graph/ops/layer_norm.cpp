// layer_norm: each row of x's last dim normalised, y = (x - mean) / sqrt(var + eps) * gamma +
// beta, with the biased variance (divided by D). x [..., D] float; gamma [D] and beta [D]
// (optional, float of any type); y has x's type and shape.
#include <cmath>

#include "core/dtype.h"
#include "core/error.h"
#include "graph/graph.h"

namespace kiln {

namespace {

class LayerNormOp : public OpDef {
 public:
  std::string name() const override { return "layer_norm"; }
  std::vector<OpInput> inputs() const override { return {{"x"}, {"gamma", true}, {"beta", true}}; }
  std::vector<AttrSpec> attributes() const override { return {optional_attr("eps", AttrType::Float, 1e-5)}; }
  void check_attrs(const Node& n) const override {
    const double eps = n.attrs.get_float("eps");
    KILN_CHECK(std::isfinite(eps) && eps >= 0, "[layer_norm] {}: eps must be finite and not negative", n.name);
  }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    require_float(in[0], n, "x");
    KILN_CHECK(*in[0] != DType::F8E4M3, "[layer_norm] {}: no FP8 layer_norm", n.name);
    for (size_t s = 1; s < in.size(); ++s)
      if (in[s]) require_float(in[s], n, inputs()[s].name.c_str());
    return {*in[0]};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    const Shape& x = *in[0];
    KILN_CHECK(!x.empty() && x.back() > 0, "[layer_norm] {}: x {} has no last dim to normalise", n.name, to_string(x));
    for (size_t s = 1; s < in.size(); ++s)
      KILN_CHECK(!in[s] || *in[s] == Shape{x.back()}, "[layer_norm] {}: {} {} does not fit x {}", n.name,
                 inputs()[s].name, to_string(*in[s]), to_string(x));
    return {x};
  }
};

}  // namespace

KILN_REGISTER_OPS(layer_norm) { registry.add(std::make_unique<LayerNormOp>()); }

}  // namespace kiln

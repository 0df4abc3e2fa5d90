// rms_norm: each row of x's last dim scaled to unit root mean square,
// y = x / sqrt(mean(x^2) + eps) * gamma. x [..., D] float; gamma [D] (optional, float of any
// type); y has x's type and shape.
#include <cmath>

#include "core/dtype.h"
#include "core/error.h"
#include "graph/graph.h"

namespace kiln {

namespace {

class RmsNormOp : public OpDef {
 public:
  std::string name() const override { return "rms_norm"; }
  std::vector<OpInput> inputs() const override { return {{"x"}, {"gamma", true}}; }
  std::vector<AttrSpec> attributes() const override { return {optional_attr("eps", AttrType::Float, 1e-6)}; }
  void check_attrs(const Node& n) const override {
    const double eps = n.attrs.get_float("eps");
    KILN_CHECK(std::isfinite(eps) && eps >= 0, "[rms_norm] {}: eps must be finite and not negative", n.name);
  }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    require_float(in[0], n, "x");
    KILN_CHECK(*in[0] != DType::F8E4M3, "[rms_norm] {}: no FP8 rms_norm", n.name);
    if (in.size() > 1 && in[1]) require_float(in[1], n, "gamma");
    return {*in[0]};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    const Shape& x = *in[0];
    KILN_CHECK(!x.empty() && x.back() > 0, "[rms_norm] {}: x {} has no last dim to normalise", n.name, to_string(x));
    KILN_CHECK(in.size() < 2 || !in[1] || *in[1] == Shape{x.back()}, "[rms_norm] {}: gamma {} does not fit x {}",
               n.name, to_string(*in[1]), to_string(x));
    return {x};
  }
};

}  // namespace

KILN_REGISTER_OPS(rms_norm) { registry.add(std::make_unique<RmsNormOp>()); }

}  // namespace kiln

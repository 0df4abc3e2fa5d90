// softmax along `axis`: y = exp(x + mask - max) / sum(exp(x + mask - max)). mask (optional) is
// additive, of any float type, and broadcasts to x's shape (NumPy rules): -inf where attention
// may not look. A row that is -inf everywhere (after the mask) gives zeros rather than NaN: the
// padding rows of attention must not poison the layers after it. y has x's type and shape.
#include "core/dtype.h"
#include "core/error.h"
#include "graph/graph.h"

namespace kiln {

namespace {

class SoftmaxOp : public OpDef {
 public:
  std::string name() const override { return "softmax"; }
  std::vector<OpInput> inputs() const override { return {{"x"}, {"mask", true}}; }
  std::vector<AttrSpec> attributes() const override { return {optional_attr("axis", AttrType::Int, int64_t{-1})}; }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    require_float(in[0], n, "x");
    KILN_CHECK(*in[0] != DType::F8E4M3, "[softmax] {}: no FP8 softmax", n.name);
    if (in.size() > 1 && in[1]) {
      require_float(in[1], n, "mask");
      KILN_CHECK(*in[1] != DType::F8E4M3, "[softmax] {}: no FP8 mask", n.name);
    }
    return {*in[0]};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    const Shape& x = *in[0];
    normalize_axis(n.attrs.get_int("axis"), x.size(), "[softmax] " + n.name);
    if (in.size() > 1 && in[1])
      KILN_CHECK(in[1]->size() <= x.size() && broadcast(x, *in[1], "[softmax] " + n.name) == x,
                 "[softmax] {}: mask {} does not broadcast to x {}", n.name, to_string(*in[1]), to_string(x));
    return {x};
  }
};

}  // namespace

KILN_REGISTER_OPS(softmax) { registry.add(std::make_unique<SoftmaxOp>()); }

}  // namespace kiln

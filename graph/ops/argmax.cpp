// argmax: the index (i64) of the largest element of x along `axis` (default -1), which is then
// dropped, or kept as size 1 when keepdims is 1. Ties go to the lowest index; NaN counts as
// larger than any number (as PyTorch). Float or integer x; the axis must not be empty.
#include "core/dtype.h"
#include "core/error.h"
#include "graph/graph.h"

namespace kiln {

namespace {

class ArgmaxOp : public OpDef {
 public:
  std::string name() const override { return "argmax"; }
  std::vector<OpInput> inputs() const override { return {{"x"}}; }
  std::vector<AttrSpec> attributes() const override {
    return {optional_attr("axis", AttrType::Int, int64_t{-1}), optional_attr("keepdims", AttrType::Int, int64_t{0})};
  }
  void check_attrs(const Node& n) const override {
    const int64_t k = n.attrs.get_int("keepdims");
    KILN_CHECK(k == 0 || k == 1, "[argmax] {}: keepdims must be 0 or 1", n.name);
  }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    KILN_CHECK(is_float(*in[0]) || is_integer(*in[0]), "[argmax] {}: x must be a float or integer tensor, not {}",
               n.name, dtype_name(*in[0]));
    return {DType::I64};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    const Shape& x = *in[0];
    const int64_t rank = static_cast<int64_t>(x.size()), axis = n.attrs.get_int("axis");
    KILN_CHECK(axis >= -rank && axis < rank, "[argmax] {}: axis {} is out of range for rank {}", n.name, axis, rank);
    const size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    KILN_CHECK(x[a] > 0, "[argmax] {}: x {} is empty along axis {}", n.name, to_string(x), a);
    Shape y = x;
    if (n.attrs.get_int("keepdims"))
      y[a] = 1;
    else
      y.erase(y.begin() + static_cast<std::ptrdiff_t>(a));
    return {y};
  }
};

}  // namespace

KILN_REGISTER_OPS(argmax) { registry.add(std::make_unique<ArgmaxOp>()); }

}  // namespace kiln

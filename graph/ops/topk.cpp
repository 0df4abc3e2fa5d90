// topk: the k largest (largest = 1, the default) or smallest elements of x along `axis`
// (default -1), best first, ties going to the lower index; NaN counts as larger than any number
// (as PyTorch). Two outputs: the values (x's type) and their indices (i64), both x's shape with
// k along the axis. Float x; k must not exceed the axis's size.
#include "core/error.h"
#include "graph/graph.h"

namespace kiln {

namespace {

class TopkOp : public OpDef {
 public:
  std::string name() const override { return "topk"; }
  std::vector<OpInput> inputs() const override { return {{"x"}}; }
  std::vector<AttrSpec> attributes() const override {
    return {required_attr("k", AttrType::Int), optional_attr("axis", AttrType::Int, int64_t{-1}),
            optional_attr("largest", AttrType::Int, int64_t{1})};
  }
  int num_outputs(const Node&) const override { return 2; }
  void check_attrs(const Node& n) const override {
    KILN_CHECK(n.attrs.get_int("k") >= 1, "[topk] {}: k must be at least 1", n.name);
    const int64_t l = n.attrs.get_int("largest");
    KILN_CHECK(l == 0 || l == 1, "[topk] {}: largest must be 0 or 1", n.name);
  }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    require_float(in[0], n, "x");
    return {*in[0], DType::I64};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    const Shape& x = *in[0];
    const int64_t rank = static_cast<int64_t>(x.size()), axis = n.attrs.get_int("axis"), k = n.attrs.get_int("k");
    KILN_CHECK(axis >= -rank && axis < rank, "[topk] {}: axis {} is out of range for rank {}", n.name, axis, rank);
    const size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    KILN_CHECK(k <= x[a], "[topk] {}: k = {} is more than x {} has along axis {}", n.name, k, to_string(x), a);
    Shape y = x;
    y[a] = k;
    return {y, y};
  }
};

}  // namespace

KILN_REGISTER_OPS(topk) { registry.add(std::make_unique<TopkOp>()); }

}  // namespace kiln

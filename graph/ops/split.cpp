// split: x cut along `axis` into one output per entry of `sizes` (each >= 0, summing to x's dim
// there), in order.
#include "core/error.h"
#include "graph/graph.h"

namespace kiln {

namespace {

class SplitOp : public OpDef {
 public:
  std::string name() const override { return "split"; }
  std::vector<OpInput> inputs() const override { return {{"x"}}; }
  std::vector<AttrSpec> attributes() const override {
    return {required_attr("axis", AttrType::Int), required_attr("sizes", AttrType::Ints)};
  }
  int num_outputs(const Node& n) const override { return static_cast<int>(n.attrs.get_ints("sizes").size()); }
  void check_attrs(const Node& n) const override {
    const auto& sizes = n.attrs.get_ints("sizes");
    KILN_CHECK(!sizes.empty(), "[split] {}: sizes is empty", n.name);
    for (int64_t s : sizes) KILN_CHECK(s >= 0, "[split] {}: size {} is negative", n.name, s);
  }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    return std::vector<DType>(n.attrs.get_ints("sizes").size(), *in[0]);
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    const Shape& x = *in[0];
    const int64_t rank = static_cast<int64_t>(x.size()), axis = n.attrs.get_int("axis");
    KILN_CHECK(axis >= -rank && axis < rank, "[split] {}: axis {} is out of range for rank {}", n.name, axis, rank);
    const size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    std::vector<Shape> out;
    int64_t total = 0;
    for (int64_t s : n.attrs.get_ints("sizes")) {
      // Each size checked before it is added keeps the sum from overflowing.
      KILN_CHECK(s <= x[a] - total, "[split] {}: sizes add up to more than x's dim {} ({})", n.name, a, x[a]);
      total += s;
      out.push_back(x);
      out.back()[a] = s;
    }
    KILN_CHECK(total == x[a], "[split] {}: sizes add up to {}, x's dim {} is {}", n.name, total, a, x[a]);
    return out;
  }
};

}  // namespace

KILN_REGISTER_OPS(split) { registry.add(std::make_unique<SplitOp>()); }

}  // namespace kiln

// concat: the inputs (at least one; one type and rank) joined along `axis`, where their dims may
// differ; every other dim must be equal.
#include <limits>

#include "core/error.h"
#include "graph/graph.h"

namespace kiln {

namespace {

class ConcatOp : public OpDef {
 public:
  std::string name() const override { return "concat"; }
  std::vector<OpInput> inputs() const override { return {{"x"}}; }
  bool variadic() const override { return true; }
  std::vector<AttrSpec> attributes() const override { return {required_attr("axis", AttrType::Int)}; }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    for (size_t i = 1; i < in.size(); ++i) require_same(in[0], in[i], n);
    return {*in[0]};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    const Shape& first = *in[0];
    const int64_t rank = static_cast<int64_t>(first.size()), axis = n.attrs.get_int("axis");
    KILN_CHECK(axis >= -rank && axis < rank, "[concat] {}: axis {} is out of range for rank {}", n.name, axis, rank);
    const size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    Shape y = first;
    y[a] = 0;
    for (const auto& s : in) {
      KILN_CHECK(s->size() == first.size(), "[concat] {}: inputs {} and {} differ in rank", n.name, to_string(first),
                 to_string(*s));
      for (size_t d = 0; d < first.size(); ++d)
        KILN_CHECK(d == a || (*s)[d] == first[d], "[concat] {}: inputs {} and {} differ in dim {}, not only the axis",
                   n.name, to_string(first), to_string(*s), d);
      KILN_CHECK((*s)[a] <= std::numeric_limits<int64_t>::max() - y[a], "[concat] {}: the output is too large", n.name);
      y[a] += (*s)[a];
    }
    return {y};
  }
};

}  // namespace

KILN_REGISTER_OPS(concat) { registry.add(std::make_unique<ConcatOp>()); }

}  // namespace kiln

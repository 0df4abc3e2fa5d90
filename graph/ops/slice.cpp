// slice: along each of `axes` (default 0, 1, ...; each at most once) the elements of x from
// starts[i] up to, not including, ends[i], every steps[i]-th (default 1; each >= 1). As NumPy:
// negative starts and ends count from the end, then both are clamped to [0, dim], and an end
// before its start takes nothing.
#include "graph/ops/slice.h"

#include <algorithm>

#include "core/error.h"

namespace kiln {

namespace {

class SliceOp : public OpDef {
 public:
  std::string name() const override { return "slice"; }
  std::vector<OpInput> inputs() const override { return {{"x"}}; }
  // An empty axes or steps list stands for the default.
  std::vector<AttrSpec> attributes() const override {
    return {required_attr("starts", AttrType::Ints), required_attr("ends", AttrType::Ints),
            optional_attr("axes", AttrType::Ints, std::vector<int64_t>{}),
            optional_attr("steps", AttrType::Ints, std::vector<int64_t>{})};
  }
  void check_attrs(const Node& n) const override {
    const size_t count = n.attrs.get_ints("starts").size();
    const auto& axes = n.attrs.get_ints("axes");
    const auto& steps = n.attrs.get_ints("steps");
    KILN_CHECK(n.attrs.get_ints("ends").size() == count, "[slice] {}: starts and ends differ in length", n.name);
    KILN_CHECK(axes.empty() || axes.size() == count, "[slice] {}: axes and starts differ in length", n.name);
    KILN_CHECK(steps.empty() || steps.size() == count, "[slice] {}: steps and starts differ in length", n.name);
    for (int64_t s : steps) KILN_CHECK(s >= 1, "[slice] {}: step {} is not positive", n.name, s);
  }
  std::vector<DType> infer_dtypes(const Node&, const std::vector<std::optional<DType>>& in) const override {
    return {*in[0]};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    Shape y;
    for (const SliceDim& d : slice_dims(n, *in[0])) y.push_back(d.size);
    return {y};
  }
};

}  // namespace

std::vector<SliceDim> slice_dims(const Node& n, const Shape& x) {
  const auto& starts = n.attrs.get_ints("starts");
  const auto& ends = n.attrs.get_ints("ends");
  const auto& axes = n.attrs.get_ints("axes");
  const auto& steps = n.attrs.get_ints("steps");
  const int64_t rank = static_cast<int64_t>(x.size());
  std::vector<SliceDim> dims;
  for (int64_t size : x) dims.push_back({0, 1, size});
  std::vector<bool> seen(x.size(), false);
  // Starts and ends may be any int64 (INT64_MAX for "to the end"): adding dim to a negative one
  // cannot overflow, and the clamp comes before any other arithmetic.
  auto clamp = [](int64_t i, int64_t dim) { return std::clamp(i < 0 ? i + dim : i, int64_t{0}, dim); };
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t axis = axes.empty() ? static_cast<int64_t>(i) : axes[i];
    KILN_CHECK(axis >= -rank && axis < rank, "[slice] {}: axis {} is out of range for rank {}", n.name, axis, rank);
    const size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    KILN_CHECK(!seen[a], "[slice] {}: axis {} is sliced twice", n.name, a);
    seen[a] = true;
    const int64_t start = clamp(starts[i], x[a]), end = clamp(ends[i], x[a]);
    const int64_t step = steps.empty() ? 1 : steps[i];
    const int64_t span = std::max<int64_t>(end - start, 0);
    dims[a] = {start, step, span / step + (span % step != 0)};
  }
  return dims;
}

KILN_REGISTER_OPS(slice) { registry.add(std::make_unique<SliceOp>()); }

}  // namespace kiln

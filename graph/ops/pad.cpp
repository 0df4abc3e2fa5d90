// pad: x with `value` added around it (constant mode). pads: [begin_0, ..., begin_{r-1}, end_0,
// ..., end_{r-1}], each >= 0, as ONNX orders them.
#include <cmath>
#include <limits>

#include "core/dtype.h"
#include "core/error.h"
#include "graph/graph.h"

namespace kiln {

namespace {

class PadOp : public OpDef {
 public:
  std::string name() const override { return "pad"; }
  std::vector<OpInput> inputs() const override { return {{"x"}}; }
  std::vector<AttrSpec> attributes() const override {
    return {required_attr("pads", AttrType::Ints), optional_attr("value", AttrType::Float, 0.0)};
  }
  void check_attrs(const Node& n) const override {
    for (int64_t p : n.attrs.get_ints("pads")) KILN_CHECK(p >= 0, "[pad] {}: pad {} is negative", n.name, p);
    // Bundles store attributes as JSON, which has no infinities or NaN.
    KILN_CHECK(std::isfinite(n.attrs.get_float("value")), "[pad] {}: value must be finite", n.name);
  }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    const double v = n.attrs.get_float("value");
    // Kernels write integer padding from the double itself, so it must be one of the type's values.
    if (*in[0] == DType::I32)
      KILN_CHECK(
          v == std::trunc(v) && v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max(),
          "[pad] {}: value {} is not an i32", n.name, v);
    if (*in[0] == DType::I64)
      KILN_CHECK(v == std::trunc(v) && v >= -0x1p63 && v < 0x1p63, "[pad] {}: value {} is not an i64", n.name, v);
    return {*in[0]};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    const Shape& x = *in[0];
    const auto& pads = n.attrs.get_ints("pads");
    const size_t rank = x.size();
    KILN_CHECK(pads.size() == 2 * rank, "[pad] {}: {} pads for x {} (2 per dim)", n.name, pads.size(), to_string(x));
    Shape y = x;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t begin = pads[d], end = pads[rank + d];
      KILN_CHECK(begin <= std::numeric_limits<int64_t>::max() - x[d] - end, "[pad] {}: the output is too large",
                 n.name);
      y[d] += begin + end;
    }
    return {y};
  }
};

}  // namespace

KILN_REGISTER_OPS(pad) { registry.add(std::make_unique<PadOp>()); }

}  // namespace kiln

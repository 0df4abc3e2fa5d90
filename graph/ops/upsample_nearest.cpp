// upsample_nearest: each pixel of x [N, H, W, C] repeated into an sh x sw block, giving
// [N, H * sh, W * sw, C]: y[n, i, j, c] = x[n, i / sh, j / sw, c] (PyTorch's nearest Upsample
// with integer scale factors, in NHWC). scale: [sh, sw], each 1..64.
#include <limits>

#include "core/error.h"
#include "graph/graph.h"

namespace kiln {

namespace {

class UpsampleNearestOp : public OpDef {
 public:
  std::string name() const override { return "upsample_nearest"; }
  std::vector<OpInput> inputs() const override { return {{"x"}}; }
  std::vector<AttrSpec> attributes() const override { return {required_attr("scale", AttrType::Ints)}; }
  void check_attrs(const Node& n) const override {
    const auto& s = n.attrs.get_ints("scale");
    KILN_CHECK(s.size() == 2 && s[0] >= 1 && s[0] <= 64 && s[1] >= 1 && s[1] <= 64,
               "[upsample_nearest] {}: scale must be [sh, sw], each 1..64", n.name);
  }
  std::vector<DType> infer_dtypes(const Node&, const std::vector<std::optional<DType>>& in) const override {
    return {*in[0]};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    require_rank(in[0], 4, n, "x");
    const auto& s = n.attrs.get_ints("scale");
    Shape y = *in[0];
    for (int d : {1, 2}) {
      KILN_CHECK(y[d] <= std::numeric_limits<int64_t>::max() / 64, "[upsample_nearest] {}: x {} is too large", n.name,
                 to_string(*in[0]));
      y[d] *= s[d - 1];
    }
    return {y};
  }
};

}  // namespace

KILN_REGISTER_OPS(upsample_nearest) { registry.add(std::make_unique<UpsampleNearestOp>()); }

}  // namespace kiln

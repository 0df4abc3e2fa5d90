// max_pool: the max of each kh x kw window of x [N, H, W, C] per channel, windows `stride` apart
// (default: the kernel), over x padded by `pad` [top, left, bottom, right] (default 0) with cells
// that never win. Output [N, OH, OW, C] as a conv's: OH = (H + top + bottom - kh) / sh + 1. Each
// pad is smaller than the kernel along it, so every window holds at least one cell of x. Float
// types; NaN propagates (as PyTorch).
#include "graph/ops/max_pool.h"

#include "core/error.h"

namespace kiln {

namespace {

class MaxPoolOp : public OpDef {
 public:
  std::string name() const override { return "max_pool"; }
  std::vector<OpInput> inputs() const override { return {{"x"}}; }
  // An empty stride stands for the kernel.
  std::vector<AttrSpec> attributes() const override {
    return {required_attr("kernel", AttrType::Ints), optional_attr("stride", AttrType::Ints, std::vector<int64_t>{}),
            optional_attr("pad", AttrType::Ints, std::vector<int64_t>{0, 0, 0, 0})};
  }
  void check_attrs(const Node& n) const override {
    const auto& k = n.attrs.get_ints("kernel");
    const auto& s = n.attrs.get_ints("stride");
    const auto& p = n.attrs.get_ints("pad");
    auto in = [](int64_t v, int64_t lo, int64_t hi) { return v >= lo && v <= hi; };
    KILN_CHECK(k.size() == 2 && in(k[0], 1, 64) && in(k[1], 1, 64),
               "[max_pool] {}: kernel must be [kh, kw], each 1..64", n.name);
    KILN_CHECK(s.empty() || (s.size() == 2 && in(s[0], 1, 64) && in(s[1], 1, 64)),
               "[max_pool] {}: stride must be [sh, sw], each 1..64", n.name);
    KILN_CHECK(p.size() == 4 && in(p[0], 0, k[0] - 1) && in(p[1], 0, k[1] - 1) && in(p[2], 0, k[0] - 1) &&
                   in(p[3], 0, k[1] - 1),
               "[max_pool] {}: pad must be [top, left, bottom, right], each >= 0 and smaller than the kernel", n.name);
  }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    require_float(in[0], n, "x");
    return {*in[0]};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    require_rank(in[0], 4, n, "x");
    const PoolGeometry g = max_pool_geometry(n, *in[0]);
    return {{g.n, g.oh, g.ow, g.c}};
  }
};

}  // namespace

PoolGeometry max_pool_geometry(const Node& n, const Shape& x) {
  KILN_CHECK(x.size() == 4, "[max_pool] {}: x must have rank 4, got {}", n.name, to_string(x));
  const auto& k = n.attrs.get_ints("kernel");
  const auto& s = n.attrs.get_ints("stride").empty() ? k : n.attrs.get_ints("stride");
  const auto& p = n.attrs.get_ints("pad");
  PoolGeometry g;
  g.n = x[0];
  g.h = x[1];
  g.w = x[2];
  g.c = x[3];
  g.kh = static_cast<int>(k[0]);
  g.kw = static_cast<int>(k[1]);
  g.stride_h = static_cast<int>(s[0]);
  g.stride_w = static_cast<int>(s[1]);
  g.pad_top = static_cast<int>(p[0]);
  g.pad_left = static_cast<int>(p[1]);
  const int64_t hh = g.h + p[0] + p[2] - g.kh, ww = g.w + p[1] + p[3] - g.kw;
  KILN_CHECK(hh >= 0 && ww >= 0, "[max_pool] {}: x {} padded is smaller than the {}x{} kernel", n.name, to_string(x),
             g.kh, g.kw);
  g.oh = hh / g.stride_h + 1;
  g.ow = ww / g.stride_w + 1;
  return g;
}

KILN_REGISTER_OPS(max_pool) { registry.add(std::make_unique<MaxPoolOp>()); }

}  // namespace kiln

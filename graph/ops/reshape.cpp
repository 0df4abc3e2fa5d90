// reshape: the same elements under another shape (a view: no data moves). shape: each dim a
// size, 0 (keep the input's dim at that position) or -1 (whatever makes the count match; at
// most one). With the optional input `like`, a 0 keeps like's dim at that position instead: the
// way back to a map's [B, H, W, C] from [B, H * W, heads, D] when H and W are known only per run
// (only like's shape is read, not its data).
#include "core/checked_math.h"
#include "core/error.h"
#include "graph/graph.h"

namespace kiln {

namespace {

class ReshapeOp : public OpDef {
 public:
  std::string name() const override { return "reshape"; }
  std::vector<OpInput> inputs() const override { return {{"x"}, {"like", true}}; }
  std::vector<AttrSpec> attributes() const override { return {required_attr("shape", AttrType::Ints)}; }
  void check_attrs(const Node& n) const override {
    const auto& s = n.attrs.get_ints("shape");
    int infer = 0;
    for (int64_t d : s) {
      KILN_CHECK(d >= -1, "[reshape] {}: bad dim {}", n.name, d);
      infer += d == -1;
    }
    KILN_CHECK(infer <= 1 && s.size() <= 8, "[reshape] {}: at most one -1 and 8 dims", n.name);
  }
  std::vector<DType> infer_dtypes(const Node&, const std::vector<std::optional<DType>>& in) const override {
    return {*in[0]};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    const Shape& x = *in[0];
    const Shape& source = in.size() > 1 && in[1] ? *in[1] : x;  // where a 0 copies its dim from
    const auto& spec = n.attrs.get_ints("shape");
    Shape y(spec.size());
    int64_t known = 1;
    int infer = -1;
    for (size_t i = 0; i < spec.size(); ++i) {
      if (spec[i] == -1) {
        infer = static_cast<int>(i);
        continue;
      }
      KILN_CHECK(spec[i] != 0 || i < source.size(), "[reshape] {}: dim {} copies a dim {} lacks", n.name, i,
                 to_string(source));
      y[i] = spec[i] == 0 ? source[i] : spec[i];
      known = static_cast<int64_t>(checked_mul(static_cast<uint64_t>(known), static_cast<uint64_t>(y[i]), "shape"));
    }
    const int64_t count = numel(x);
    if (infer >= 0) {
      KILN_CHECK(known > 0 && count % known == 0, "[reshape] {}: cannot reshape {} to {}", n.name, to_string(x),
                 to_string(Shape(spec.begin(), spec.end())));
      y[infer] = count / known;
    }
    KILN_CHECK(numel(y) == count, "[reshape] {}: cannot reshape {} ({} elements) to {}", n.name, to_string(x), count,
               to_string(y));
    return {y};
  }
  int aliases_input(int) const override { return 0; }
};

}  // namespace

KILN_REGISTER_OPS(reshape) { registry.add(std::make_unique<ReshapeOp>()); }

}  // namespace kiln

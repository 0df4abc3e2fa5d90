// matmul: y = alpha * op(a) @ op(b) over the last two dims, where op swaps them when
// transpose_a / transpose_b is 1: a [..., M, K] (or [..., K, M]), b [..., K, N] (or [..., N, K])
// -> y [..., M, N]. The leading (batch) dims broadcast NumPy-style, so a rank-2 b serves every
// batch of a rank-4 a. Both inputs float, of one type; y has that type.
#include <cmath>

#include "core/dtype.h"
#include "core/error.h"
#include "graph/graph.h"

namespace kiln {

namespace {

class MatmulOp : public OpDef {
 public:
  std::string name() const override { return "matmul"; }
  std::vector<OpInput> inputs() const override { return {{"a"}, {"b"}}; }
  std::vector<AttrSpec> attributes() const override {
    return {optional_attr("transpose_a", AttrType::Int, int64_t{0}),
            optional_attr("transpose_b", AttrType::Int, int64_t{0}), optional_attr("alpha", AttrType::Float, 1.0)};
  }
  void check_attrs(const Node& n) const override {
    for (const char* t : {"transpose_a", "transpose_b"}) {
      const int64_t v = n.attrs.get_int(t);
      KILN_CHECK(v == 0 || v == 1, "[matmul] {}: {} must be 0 or 1", n.name, t);
    }
    KILN_CHECK(std::isfinite(n.attrs.get_float("alpha")), "[matmul] {}: alpha must be finite", n.name);
  }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    require_float(in[0], n, "a");
    require_float(in[1], n, "b");
    require_same(in[0], in[1], n);
    KILN_CHECK(*in[0] != DType::F8E4M3, "[matmul] {}: no FP8 matmul", n.name);
    return {*in[0]};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    const Shape &a = *in[0], &b = *in[1];
    KILN_CHECK(a.size() >= 2 && b.size() >= 2, "[matmul] {}: a {} and b {} must have rank 2 or more", n.name,
               to_string(a), to_string(b));
    const bool ta = n.attrs.get_int("transpose_a") != 0, tb = n.attrs.get_int("transpose_b") != 0;
    const int64_t m = a[a.size() - (ta ? 1 : 2)], ka = a[a.size() - (ta ? 2 : 1)];
    const int64_t kb = b[b.size() - (tb ? 1 : 2)], nb = b[b.size() - (tb ? 2 : 1)];
    KILN_CHECK(ka == kb, "[matmul] {}: a {} and b {} disagree on K ({} and {})", n.name, to_string(a), to_string(b), ka,
               kb);
    Shape y = broadcast(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2), "[matmul] " + n.name);
    y.push_back(m);
    y.push_back(nb);
    return {y};
  }
};

}  // namespace

KILN_REGISTER_OPS(matmul) { registry.add(std::make_unique<MatmulOp>()); }

}  // namespace kiln

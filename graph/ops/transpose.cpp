// transpose: y[i_perm[0], i_perm[1], ...] = x[i_0, i_1, ...], i.e. y's dim d is x's dim perm[d].
#include <algorithm>

#include "core/error.h"
#include "graph/graph.h"

namespace kiln {

namespace {

class TransposeOp : public OpDef {
 public:
  std::string name() const override { return "transpose"; }
  std::vector<OpInput> inputs() const override { return {{"x"}}; }
  std::vector<AttrSpec> attributes() const override { return {required_attr("perm", AttrType::Ints)}; }
  void check_attrs(const Node& n) const override {
    auto p = n.attrs.get_ints("perm");
    std::sort(p.begin(), p.end());
    for (size_t i = 0; i < p.size(); ++i)
      KILN_CHECK(p[i] == static_cast<int64_t>(i), "[transpose] {}: perm is not a permutation", n.name);
  }
  std::vector<DType> infer_dtypes(const Node&, const std::vector<std::optional<DType>>& in) const override {
    return {*in[0]};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    const auto& perm = n.attrs.get_ints("perm");
    KILN_CHECK(perm.size() == in[0]->size(), "[transpose] {}: perm has {} dims, x {}", n.name, perm.size(),
               to_string(*in[0]));
    Shape y;
    for (int64_t p : perm) y.push_back((*in[0])[p]);
    return {y};
  }
};

}  // namespace

KILN_REGISTER_OPS(transpose) { registry.add(std::make_unique<TransposeOp>()); }

}  // namespace kiln

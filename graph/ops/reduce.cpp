// reduce: sum, mean or max over `axes` (each in [-rank, rank), none twice), keeping them as
// size-1 dims when keepdims is 1. Float inputs; sum and max also take integers.
#include <set>

#include "core/dtype.h"
#include "core/error.h"
#include "graph/graph.h"

namespace kiln {

namespace {

class ReduceOp : public OpDef {
 public:
  std::string name() const override { return "reduce"; }
  std::vector<OpInput> inputs() const override { return {{"x"}}; }
  std::vector<AttrSpec> attributes() const override {
    return {required_attr("op", AttrType::String), required_attr("axes", AttrType::Ints),
            optional_attr("keepdims", AttrType::Int, int64_t{1})};
  }
  void check_attrs(const Node& n) const override {
    const auto& op = n.attrs.get_string("op");
    KILN_CHECK(op == "sum" || op == "mean" || op == "max", "[reduce] {}: op must be sum, mean or max", n.name);
    KILN_CHECK(!n.attrs.get_ints("axes").empty(), "[reduce] {}: no axes", n.name);
  }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    const bool mean = n.attrs.get_string("op") == "mean";
    KILN_CHECK((is_float(*in[0]) && *in[0] != DType::F8E4M3) || (!mean && is_integer(*in[0])),
               "[reduce] {}: cannot {} {} values", n.name, n.attrs.get_string("op"), dtype_name(*in[0]));
    return {*in[0]};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    const Shape& x = *in[0];
    std::set<int> axes;
    for (int64_t a : n.attrs.get_ints("axes"))
      KILN_CHECK(axes.insert(normalize_axis(a, x.size(), "[reduce] " + n.name)).second, "[reduce] {}: axis twice",
                 n.name);
    Shape y;
    for (size_t d = 0; d < x.size(); ++d) {
      if (!axes.count(static_cast<int>(d)))
        y.push_back(x[d]);
      else if (n.attrs.get_int("keepdims"))
        y.push_back(1);
      if (axes.count(static_cast<int>(d))) KILN_CHECK(x[d] > 0, "[reduce] {}: reduces an empty dim", n.name);
    }
    return {y};
  }
};

}  // namespace

KILN_REGISTER_OPS(reduce) { registry.add(std::make_unique<ReduceOp>()); }

}  // namespace kiln

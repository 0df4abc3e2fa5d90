// cast: x converted to `to` (floats rounded to nearest even; float to integer truncates toward
// zero; to bool: != 0).
#include "core/dtype.h"
#include "graph/graph.h"

namespace kiln {

namespace {

class CastOp : public OpDef {
 public:
  std::string name() const override { return "cast"; }
  std::vector<OpInput> inputs() const override { return {{"x"}}; }
  std::vector<AttrSpec> attributes() const override { return {required_attr("to", AttrType::String)}; }
  void check_attrs(const Node& n) const override { parse_dtype(n.attrs.get_string("to")); }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>&) const override {
    return {parse_dtype(n.attrs.get_string("to"))};
  }
  std::vector<Shape> infer_shapes(const Node&, const std::vector<std::optional<Shape>>& in) const override {
    return {*in[0]};
  }
};

}  // namespace

KILN_REGISTER_OPS(cast) { registry.add(std::make_unique<CastOp>()); }

}  // namespace kiln

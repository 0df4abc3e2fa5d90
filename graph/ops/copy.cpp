// copy: the same tensor on another device ("cpu", "cuda"). Engines insert it where a value
// crosses from one backend to another (backends/placement.cpp); graphs in bundles need none.
#include "core/error.h"
#include "graph/graph.h"

namespace kiln {

namespace {

class CopyOp : public OpDef {
 public:
  std::string name() const override { return "copy"; }
  std::vector<OpInput> inputs() const override { return {{"x"}}; }
  std::vector<AttrSpec> attributes() const override { return {required_attr("device", AttrType::String)}; }
  std::vector<DType> infer_dtypes(const Node&, const std::vector<std::optional<DType>>& in) const override {
    return {*in[0]};
  }
  std::vector<Shape> infer_shapes(const Node&, const std::vector<std::optional<Shape>>& in) const override {
    return {*in[0]};
  }
};

}  // namespace

KILN_REGISTER_OPS(copy) { registry.add(std::make_unique<CopyOp>()); }

}  // namespace kiln

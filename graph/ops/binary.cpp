// add, sub, mul, div: elementwise with NumPy broadcasting; both inputs of one type (float or
// integer; integer div truncates toward zero).
#include "core/dtype.h"
#include "core/error.h"
#include "graph/graph.h"

namespace kiln {

namespace {

class BinaryOp : public OpDef {
 public:
  explicit BinaryOp(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::vector<OpInput> inputs() const override { return {{"a"}, {"b"}}; }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    require_same(in[0], in[1], n);
    KILN_CHECK(*in[0] != DType::Bool && *in[0] != DType::F8E4M3, "[{}] {}: no {} arithmetic", n.op, n.name,
               dtype_name(*in[0]));
    return {*in[0]};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    return {broadcast(*in[0], *in[1], "[" + n.op + "] " + n.name)};
  }

 private:
  std::string name_;
};

}  // namespace

KILN_REGISTER_OPS(binary) {
  for (const char* op : {"add", "sub", "mul", "div"}) registry.add(std::make_unique<BinaryOp>(op));
}

}  // namespace kiln

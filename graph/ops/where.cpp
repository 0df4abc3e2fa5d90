// where: y = cond ? a : b elementwise; cond is bool, a and b one type, and all three broadcast
// together (NumPy rules).
#include <algorithm>

#include "core/dtype.h"
#include "core/error.h"
#include "graph/graph.h"

namespace kiln {

namespace {

class WhereOp : public OpDef {
 public:
  std::string name() const override { return "where"; }
  std::vector<OpInput> inputs() const override { return {{"cond"}, {"a"}, {"b"}}; }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    KILN_CHECK(*in[0] == DType::Bool, "[where] {}: cond must be a bool tensor, not {}", n.name, dtype_name(*in[0]));
    require_same(in[1], in[2], n);
    return {*in[1]};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    const size_t rank = std::max({in[0]->size(), in[1]->size(), in[2]->size()});
    Shape y(rank, 1);
    for (const auto& s : in)
      for (size_t i = 0; i < s->size(); ++i) {
        const int64_t d = (*s)[i];
        int64_t& out = y[rank - s->size() + i];
        KILN_CHECK(d == out || d == 1 || out == 1, "[where] {}: shapes {}, {} and {} do not broadcast", n.name,
                   to_string(*in[0]), to_string(*in[1]), to_string(*in[2]));
        if (out == 1) out = d;
      }
    return {y};
  }
};

}  // namespace

KILN_REGISTER_OPS(where) { registry.add(std::make_unique<WhereOp>()); }

}  // namespace kiln

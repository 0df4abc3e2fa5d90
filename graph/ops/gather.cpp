// gather: y = data indexed along `axis` by every element of indices:
// y[o..., i..., r...] = data[o..., indices[i...], r...], so y's shape is data.shape[:axis] +
// indices.shape + data.shape[axis+1:]. Embedding lookup is gather(table [V, D], ids [B, S]) ->
// [B, S, D]. data of any type; indices i32 or i64, each in [0, data.shape[axis]) (kernels
// reject others: token ids are untrusted input, negative ones included).
#include "core/dtype.h"
#include "core/error.h"
#include "graph/graph.h"

namespace kiln {

namespace {

class GatherOp : public OpDef {
 public:
  std::string name() const override { return "gather"; }
  std::vector<OpInput> inputs() const override { return {{"data"}, {"indices"}}; }
  std::vector<AttrSpec> attributes() const override { return {optional_attr("axis", AttrType::Int, int64_t{0})}; }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    require_integer(in[1], n, "indices");
    return {*in[0]};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    const Shape &data = *in[0], &indices = *in[1];
    const int axis = normalize_axis(n.attrs.get_int("axis"), data.size(), "[gather] " + n.name);
    Shape y(data.begin(), data.begin() + axis);
    y.insert(y.end(), indices.begin(), indices.end());
    y.insert(y.end(), data.begin() + axis + 1, data.end());
    return {y};
  }
};

}  // namespace

KILN_REGISTER_OPS(gather) { registry.add(std::make_unique<GatherOp>()); }

}  // namespace kiln

// gather: y = data indexed along `axis` by every element of indices:
// y[o..., i..., r...] = data[o..., indices[i...], r...], so y's shape is data.shape[:axis] +
// indices.shape + data.shape[axis+1:]. Embedding lookup is gather(table [V, D], ids [B, S]) ->
// [B, S, D]. data of any type; indices i32 or i64, each in [0, data.shape[axis]) (kernels
// reject others: token ids are untrusted input, negative ones included).
// batch_dims = n (default 0): the first n dims of data and indices are the same batch dims, and
// each batch element reads its own indices (TensorFlow's batch_dims; PyTorch's gather along a dim
// with the index repeated over the row): y[b..., o..., i..., r...] = data[b..., o..., indices[b...,
// i...], r...], y's shape data.shape[:axis] + indices.shape[n:] + data.shape[axis+1:]. Picking the
// top-k rows of each image of a batch is gather(rows [B, A, C], top [B, K], axis 1, batch_dims 1).
#include "core/dtype.h"
#include "core/error.h"
#include "graph/graph.h"

namespace kiln {

namespace {

class GatherOp : public OpDef {
 public:
  std::string name() const override { return "gather"; }
  std::vector<OpInput> inputs() const override { return {{"data"}, {"indices"}}; }
  std::vector<AttrSpec> attributes() const override {
    return {optional_attr("axis", AttrType::Int, int64_t{0}), optional_attr("batch_dims", AttrType::Int, int64_t{0})};
  }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    require_integer(in[1], n, "indices");
    return {*in[0]};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    const Shape &data = *in[0], &indices = *in[1];
    const int axis = normalize_axis(n.attrs.get_int("axis"), data.size(), "[gather] " + n.name);
    const int64_t batch_dims = n.attrs.get_int("batch_dims");
    KILN_CHECK(batch_dims >= 0 && batch_dims <= axis && batch_dims <= static_cast<int64_t>(indices.size()),
               "[gather] {}: batch_dims {} must be in [0, min(axis {}, indices' rank {})]", n.name, batch_dims, axis,
               indices.size());
    for (int64_t d = 0; d < batch_dims; ++d)
      KILN_CHECK(data[d] == indices[d], "[gather] {}: data {} and indices {} differ in batch dim {}", n.name,
                 to_string(data), to_string(indices), d);
    Shape y(data.begin(), data.begin() + axis);
    y.insert(y.end(), indices.begin() + batch_dims, indices.end());
    y.insert(y.end(), data.begin() + axis + 1, data.end());
    return {y};
  }
};

}  // namespace

KILN_REGISTER_OPS(gather) { registry.add(std::make_unique<GatherOp>()); }

}  // namespace kiln

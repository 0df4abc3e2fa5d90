// reorder_beams: a beam search's cache rows replaced by their parents' rows, in place on a
// state. Rows come in groups (one source's beams): parent is [groups, beams] with groups x
// beams = x.shape[0], and row r = g * beams + b takes row g * beams + parent[g, b] of its own
// group (kernels check 0 <= parent[g, b] < beams): y[r, ..., t, ...] = x[that row, ..., t, ...]
// for t < length[r] along `axis` (t being that axis' index), y = x everywhere else. Only the
// positions a row has written move: at step t of a decoder, t positions of each cache move
// rather than its whole capacity, and rows that keep their own history do not move at all.
// parent and length ([x.shape[0]]) are i32 or i64; a length past the axis moves all of it, a
// negative one nothing.
#include "core/dtype.h"
#include "core/error.h"
#include "graph/graph.h"

namespace kiln {

namespace {

class ReorderBeamsOp : public OpDef {
 public:
  std::string name() const override { return "reorder_beams"; }
  std::vector<OpInput> inputs() const override { return {{"target"}, {"parent"}, {"length"}}; }
  std::vector<AttrSpec> attributes() const override { return {required_attr("axis", AttrType::Int)}; }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    require_integer(in[1], n, "parent");
    require_integer(in[2], n, "length");
    return {*in[0]};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    const Shape& target = *in[0];
    KILN_CHECK(target.size() >= 2 && target.size() <= 8, "[reorder_beams] {}: target {} must have rank 2 to 8", n.name,
               to_string(target));
    const int axis = normalize_axis(n.attrs.get_int("axis"), target.size(), "[reorder_beams] " + n.name);
    KILN_CHECK(axis >= 1, "[reorder_beams] {}: axis must not be the rows' axis 0", n.name);
    const Shape &parent = *in[1], &length = *in[2];
    // groups x beams = rows is for the kernels to check: a graph's symbols for the three
    // (sources, beams, rows) are independent, and shape checks try sizes of each on its own.
    KILN_CHECK(parent.size() == 2, "[reorder_beams] {}: parent {} must be [groups, beams]", n.name, to_string(parent));
    KILN_CHECK(length == Shape{target[0]}, "[reorder_beams] {}: length {} must be [{}]", n.name, to_string(length),
               target[0]);
    return {target};
  }
  int aliases_input(int) const override { return 0; }
  bool in_place() const override { return true; }
};

}  // namespace

KILN_REGISTER_OPS(reorder_beams) { registry.add(std::make_unique<ReorderBeamsOp>()); }

}  // namespace kiln

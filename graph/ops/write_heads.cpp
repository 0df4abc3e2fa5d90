// write_heads: write_rows of heads read where a stacked projection holds them:
//   target [R, H, S, D]: a state (cross-attention keys or values by slot), updated in place;
//   source [N, T, W] (T <= S): per row and position a projection's output, heads of D side by
//     side; attribute `column`: where the H heads start in W (column + H D <= W);
//   index [R] (i32 or i64): for each r with index[r] >= 0 (below N; kernels check), target[r, h,
//     t] = source[index[r], t, column + h D .. column + (h + 1) D) for t < T; rows with a
//     negative index, and positions t >= T, keep what they hold.
// Decomposition: slice source's columns [column, column + H D), reshape to [N, T, H, D],
// transpose to [N, H, T, D], write_rows into target. One launch instead of a transpose and a
// write per part and the split they share (the reshape is a view): an encoder writes the keys
// and values of every decoder layer this way, 24 writes for a 12-layer decoder.
#include "core/dtype.h"
#include "core/error.h"
#include "graph/graph.h"

namespace kiln {

namespace {

class WriteHeadsOp : public OpDef {
 public:
  std::string name() const override { return "write_heads"; }
  std::vector<OpInput> inputs() const override { return {{"target"}, {"source"}, {"index"}}; }
  std::vector<AttrSpec> attributes() const override { return {required_attr("column", AttrType::Int)}; }
  void check_attrs(const Node& n) const override {
    KILN_CHECK(n.attrs.get_int("column") >= 0, "[write_heads] {}: column must not be negative", n.name);
  }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    require_same(in[0], in[1], n);
    require_integer(in[2], n, "index");
    return {*in[0]};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    require_rank(in[0], 4, n, "target");
    require_rank(in[1], 3, n, "source");
    const Shape &target = *in[0], &source = *in[1], &index = *in[2];
    const int64_t heads = target[1], capacity = target[2], d = target[3], column = n.attrs.get_int("column");
    // column + heads * d <= source[2], without the overflow an untrusted column could cause.
    const bool fits = column <= source[2] && (d == 0 || heads <= (source[2] - column) / d);
    KILN_CHECK(source[1] <= capacity && fits,
               "[write_heads] {}: {} heads of {} from column {} of source {} do not fit target {}", n.name, heads, d,
               column, to_string(source), to_string(target));
    KILN_CHECK(index == Shape{target[0]}, "[write_heads] {}: index {} must be [{}]", n.name, to_string(index),
               target[0]);
    return {target};
  }
  int aliases_input(int) const override { return 0; }
  bool in_place() const override { return true; }
};

}  // namespace

KILN_REGISTER_OPS(write_heads) { registry.add(std::make_unique<WriteHeadsOp>()); }

}  // namespace kiln

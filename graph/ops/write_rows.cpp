// write_rows: target with some of its leading rows replaced by rows of update chosen at run
// time: for each r with index[r] >= 0, target[r] takes update[index[r]] in its leading corner
// (update's later dims may be shorter than target's). index is i32 or i64 of shape
// [target.shape[0]], each entry negative (keep the row) or below update.shape[0] (kernels check).
// In place on a state. A decoder uses it to put a new source's cross-attention keys into its
// slot (update shorter along the sequence).
#include "core/dtype.h"
#include "core/error.h"
#include "graph/graph.h"

namespace kiln {

namespace {

class WriteRowsOp : public OpDef {
 public:
  std::string name() const override { return "write_rows"; }
  std::vector<OpInput> inputs() const override { return {{"target"}, {"update"}, {"index"}}; }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    require_same(in[0], in[1], n);
    require_integer(in[2], n, "index");
    return {*in[0]};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    const Shape &target = *in[0], &update = *in[1], &index = *in[2];
    KILN_CHECK(!target.empty() && target.size() <= 8, "[write_rows] {}: target {} must have rank 1 to 8", n.name,
               to_string(target));
    bool fits = update.size() == target.size();
    for (size_t d = 1; fits && d < target.size(); ++d) fits = update[d] <= target[d];
    KILN_CHECK(fits, "[write_rows] {}: update {} does not fit the rows of target {}", n.name, to_string(update),
               to_string(target));
    KILN_CHECK(index == Shape{target[0]}, "[write_rows] {}: index {} must be [{}]", n.name, to_string(index),
               target[0]);
    return {target};
  }
  int aliases_input(int) const override { return 0; }
  bool in_place() const override { return true; }
};

}  // namespace

KILN_REGISTER_OPS(write_rows) { registry.add(std::make_unique<WriteRowsOp>()); }

}  // namespace kiln

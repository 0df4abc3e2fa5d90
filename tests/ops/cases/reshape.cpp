// reshape (a view) with kept and inferred dims, dims kept from another tensor (`like`), followed by
// an op so that the view is read.
#include "tests/ops/op_case.h"

namespace kiln::test {

KILN_OP_CASES(reshape) {
  std::vector<OpCase> cases;
  const std::vector<std::pair<Shape, std::vector<int64_t>>> specs = {
      {{2, 1, 1, 7}, {0, -1}}, {{3, 4, 10}, {0, 0, 2, 5}}, {{6}, {2, 3}}, {{1, 5, 6}, {-1}}};
  for (DType t : {DType::F32, DType::F16, DType::I64})
    for (const auto& [xs, spec] : specs) {
      OpCase c("reshape", t, xs, to_string(Shape(spec.begin(), spec.end())));
      const int x = c.input("x", t, xs, 1.0, -9, 9);
      const int y = c.graph.add("reshape", "reshape", {x}, {{"shape", spec}});
      c.output(c.graph.add("add", "use", {y, y}));
      cases.push_back(std::move(c));
    }
  for (DType t : {DType::F32, DType::F16}) {
    // [B, H * W, heads, D] back to the map [B, H, W, C] it came from.
    OpCase c("reshape", t, {2, 12, 2, 3}, "like [2, 3, 4, 6]");
    const int x = c.input("x", t, {2, 12, 2, 3}, 1.0, -9, 9);
    const int like = c.input("like", t, {2, 3, 4, 6}, 1.0, -9, 9);
    const int y = c.graph.add("reshape", "reshape", {x, like}, {{"shape", std::vector<int64_t>{0, 0, 0, -1}}});
    c.output(c.graph.add("add", "use", {y, like}));
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace kiln::test

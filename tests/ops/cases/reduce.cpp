// reduce: a global average pool (axes 1, 2 of NHWC), the last axis, the first, and all of
// them; sum and max on integers too.
#include "tests/ops/op_case.h"

namespace kiln::test {

KILN_OP_CASES(reduce) {
  std::vector<OpCase> cases;
  const std::vector<std::pair<Shape, std::vector<int64_t>>> specs = {
      {{2, 7, 9, 24}, {1, 2}}, {{3, 17}, {-1}}, {{4, 5, 6}, {0}}, {{2, 3, 4}, {0, 1, 2}}, {{1, 112, 112, 32}, {1, 2}}};
  for (const char* op : {"mean", "sum", "max"})
    for (DType t : {DType::F32, DType::F16, DType::I64})
      for (const auto& [xs, axes] : specs)
        for (int64_t keep : {0, 1}) {
          if (t == DType::I64 && std::string(op) == "mean") continue;
          OpCase c("reduce", t, xs, fmt::format("{}{}{}", op, to_string(Shape(axes.begin(), axes.end())), keep));
          const int x = c.input("x", t, xs, 1.0, -20, 20);
          c.output(c.graph.add("reduce", "reduce", {x}, {{"op", std::string(op)}, {"axes", axes}, {"keepdims", keep}}));
          // Long f16 sums lose digits in any order of summation.
          c.tolerance_f16 = 3e-2;
          cases.push_back(std::move(c));
        }
  return cases;
}

}  // namespace kiln::test

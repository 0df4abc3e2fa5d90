// transpose: NCHW <-> NHWC, attention's head split, and a 2-d swap, for floats and integers.
#include "tests/ops/op_case.h"

namespace kiln::test {

KILN_OP_CASES(transpose) {
  std::vector<OpCase> cases;
  const std::vector<std::pair<Shape, std::vector<int64_t>>> specs = {{{2, 3, 5, 7}, {0, 2, 3, 1}},
                                                                     {{2, 5, 7, 3}, {0, 3, 1, 2}},
                                                                     {{2, 9, 4, 8}, {0, 2, 1, 3}},
                                                                     {{13, 1}, {1, 0}},
                                                                     {{1, 64, 33}, {2, 1, 0}}};
  for (DType t : {DType::F32, DType::F16, DType::I32})
    for (const auto& [xs, perm] : specs) {
      OpCase c("transpose", t, xs, to_string(Shape(perm.begin(), perm.end())));
      const int x = c.input("x", t, xs, 1.0, -100, 100);
      c.output(c.graph.add("transpose", "transpose", {x}, {{"perm", perm}}));
      cases.push_back(std::move(c));
    }
  return cases;
}

}  // namespace kiln::test

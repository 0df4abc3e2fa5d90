// concat: one to three and ten inputs along the first, a middle and the last axis (negative
// too), size 1, an empty input, and NHWC channel concats (one over 1 MiB), for floats and integers.
#include <fmt/format.h>

#include "tests/ops/op_case.h"

namespace kiln::test {

KILN_OP_CASES(concat) {
  std::vector<OpCase> cases;
  const std::vector<std::pair<std::vector<Shape>, int64_t>> specs = {
      {{{1}, {1}}, 0},
      {{{3, 5}, {3, 2}, {3, 1}}, -1},
      {{{2, 3, 4, 5}, {2, 1, 4, 5}}, 1},
      {{{2, 7, 3}, {2, 7, 3}}, -3},
      {{{4, 3}}, 1},
      {{{3, 0}, {3, 4}}, 1},
      // NHWC channel concats whose runs the GPU copies 16 and 8 bytes at a time
      {{{2, 5, 6, 16}, {2, 5, 6, 8}, {2, 5, 6, 24}}, -1},
      {{{1, 3, 4, 12}, {1, 3, 4, 4}}, 3},
      // over 1 MiB: the CPU kernel's rows over the threads
      {{{1, 64, 80, 16}, {1, 64, 80, 16}, {1, 64, 80, 32}}, -1},
      // more inputs than the GPU copies in one launch
      {std::vector<Shape>(10, Shape{2, 3}), -1}};
  for (DType t : {DType::F32, DType::F16, DType::I32})
    for (const auto& [shapes, axis] : specs) {
      std::string variant = fmt::format("axis{}", axis);
      for (size_t i = 1; i < shapes.size(); ++i) variant += "+" + to_string(shapes[i]);
      OpCase c("concat", t, shapes[0], variant);
      std::vector<int> xs;
      for (size_t i = 0; i < shapes.size(); ++i)
        xs.push_back(c.input(fmt::format("x{}", i), t, shapes[i], 1.0, -50, 50));
      c.output(c.graph.add("concat", "concat", xs, {{"axis", axis}}));
      cases.push_back(std::move(c));
    }
  return cases;
}

}  // namespace kiln::test

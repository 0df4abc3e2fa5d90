// upsample_nearest: scale 2 (a detector neck's upsample), uneven scales and a single pixel, for
// floats and integers.
#include <fmt/format.h>

#include "tests/ops/op_case.h"

namespace kiln::test {

KILN_OP_CASES(upsample_nearest) {
  std::vector<OpCase> cases;
  const std::vector<std::pair<Shape, std::vector<int64_t>>> specs = {
      {{1, 1, 1, 1}, {2, 2}},  {{2, 3, 5, 3}, {2, 2}}, {{1, 4, 3, 7}, {3, 1}}, {{1, 2, 3, 2}, {1, 4}},
      {{2, 3, 4, 16}, {2, 2}}, {{1, 2, 3, 12}, {2, 3}}};  // channel runs the GPU copies 16 and 8 bytes at a time
  for (DType t : {DType::F32, DType::F16, DType::I32})
    for (const auto& [xs, scale] : specs) {
      OpCase c("upsample_nearest", t, xs, fmt::format("x{}x{}", scale[0], scale[1]));
      const int x = c.input("x", t, xs, 1.0, -50, 50);
      c.output(c.graph.add("upsample_nearest", "upsample", {x}, {{"scale", scale}}));
      cases.push_back(std::move(c));
    }
  return cases;
}

}  // namespace kiln::test

// split: two, three and ten parts, a single part, an empty part, along first, middle and last
// axes (negative too), NHWC channel splits (one over 1 MiB), for floats and integers.
#include <fmt/format.h>

#include "tests/ops/op_case.h"

namespace kiln::test {

KILN_OP_CASES(split) {
  std::vector<OpCase> cases;
  struct Spec {
    Shape x;
    int64_t axis;
    std::vector<int64_t> sizes;
  };
  const std::vector<Spec> specs = {
      {{5}, 0, {2, 3}},
      {{3, 7}, -1, {1, 4, 2}},
      {{2, 6, 3, 4}, 1, {6}},
      {{4, 5}, 0, {0, 4}},
      {{2, 9, 5}, -2, {3, 3, 3}},
      {{2, 5, 3, 32}, -1, {16, 8, 8}},  // NHWC channel splits: wide copies
      {{1, 4, 3, 12}, 3, {4, 8}},
      {{1, 64, 80, 64}, -1, {32, 32}},                // the last over 1 MiB: rows over the threads
      {{3, 1536}, -1, {512, 512, 512}},               // a decoder step's stacked q, k, v
      {{2, 20}, 1, {2, 2, 2, 2, 2, 2, 2, 2, 2, 2}}};  // more parts than the GPU copies in one launch
  for (DType t : {DType::F32, DType::F16, DType::I64})
    for (const Spec& s : specs) {
      OpCase c("split", t, s.x, fmt::format("axis{}{}", s.axis, to_string(Shape(s.sizes.begin(), s.sizes.end()))));
      const int x = c.input("x", t, s.x, 1.0, -50, 50);
      for (int y : c.graph.add_node("split", "split", {x}, {{"axis", s.axis}, {"sizes", s.sizes}})) c.output(y);
      cases.push_back(std::move(c));
    }
  return cases;
}

}  // namespace kiln::test

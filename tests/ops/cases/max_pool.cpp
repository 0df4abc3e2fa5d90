// max_pool: a 3x3 stride-2 pad-1 pool (a stem's), a 5x5 stride-1 pad-2 one (SPPF's), the
// default stride, a 1x1 kernel on one pixel and an uneven kernel, stride and padding; channels
// a multiple of 8 (the GPU's 16-byte fp16 path) with a stride, padding and an uneven kernel.
#include <fmt/format.h>

#include "tests/ops/op_case.h"

namespace kiln::test {

KILN_OP_CASES(max_pool) {
  std::vector<OpCase> cases;
  struct Spec {
    Shape x;
    std::vector<int64_t> kernel, stride, pad;
  };
  const std::vector<Spec> specs = {{{1, 7, 9, 5}, {3, 3}, {2, 2}, {1, 1, 1, 1}},
                                   {{2, 13, 13, 8}, {5, 5}, {1, 1}, {2, 2, 2, 2}},
                                   {{1, 6, 7, 3}, {2, 2}, {}, {}},
                                   {{1, 1, 1, 1}, {1, 1}, {}, {}},
                                   {{1, 5, 8, 4}, {3, 2}, {1, 2}, {1, 0, 0, 1}},
                                   {{2, 9, 11, 24}, {3, 3}, {2, 2}, {1, 1, 1, 1}},
                                   {{1, 6, 10, 16}, {3, 2}, {1, 2}, {1, 0, 0, 1}}};
  auto list = [](const std::vector<int64_t>& v) { return to_string(Shape(v.begin(), v.end())); };
  for (DType t : {DType::F32, DType::F16})
    for (const Spec& s : specs) {
      OpCase c("max_pool", t, s.x, fmt::format("k{}s{}p{}", list(s.kernel), list(s.stride), list(s.pad)));
      const int x = c.input("x", t, s.x);
      Attrs a{{"kernel", s.kernel}};
      if (!s.stride.empty()) a.set("stride", s.stride);
      if (!s.pad.empty()) a.set("pad", s.pad);
      c.output(c.graph.add("max_pool", "pool", {x}, a));
      cases.push_back(std::move(c));
    }
  return cases;
}

}  // namespace kiln::test

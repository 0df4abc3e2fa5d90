// slice: negative and out-of-range starts and ends (INT64_MAX for "to the end"), steps over 1,
// explicit and negative axes, an NHWC crop, an empty result and size 1, for floats and integers.
#include <fmt/format.h>

#include <limits>

#include "tests/ops/op_case.h"

namespace kiln::test {

KILN_OP_CASES(slice) {
  std::vector<OpCase> cases;
  constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();
  struct Spec {
    Shape x;
    std::vector<int64_t> starts, ends, axes, steps;
  };
  const std::vector<Spec> specs = {{{10}, {-7}, {100}, {}, {2}},
                                   {{1}, {0}, {1}, {}, {}},
                                   {{3, 8, 5}, {1, 0}, {kEnd, 8}, {-1, 1}, {3, 3}},
                                   {{2, 5, 6, 3}, {1, -4}, {-1, 6}, {1, 2}, {}},
                                   {{4, 4}, {-100}, {2}, {}, {}},
                                   {{6, 5}, {4}, {1}, {}, {}},
                                   {{3, 9, 7}, {2, -1, 0}, {3, 9, -2}, {}, {1, 4, 5}}};
  auto list = [](const std::vector<int64_t>& v) { return to_string(Shape(v.begin(), v.end())); };
  for (DType t : {DType::F32, DType::F16, DType::I32})
    for (const Spec& s : specs) {
      OpCase c("slice", t, s.x, list(s.starts) + list(s.ends) + list(s.axes) + list(s.steps));
      const int x = c.input("x", t, s.x, 1.0, -50, 50);
      Attrs a{{"starts", s.starts}, {"ends", s.ends}};
      if (!s.axes.empty()) a.set("axes", s.axes);
      if (!s.steps.empty()) a.set("steps", s.steps);
      c.output(c.graph.add("slice", "slice", {x}, a));
      cases.push_back(std::move(c));
    }
  return cases;
}

}  // namespace kiln::test

// pad: 1-d to 4-d (NHWC spatial padding), uneven begin and end pads, no padding, a scalar, and
// an empty x that becomes all padding, with zero and non-zero values, for floats and integers.
#include <fmt/format.h>

#include "core/dtype.h"
#include "tests/ops/op_case.h"

namespace kiln::test {

KILN_OP_CASES(pad) {
  std::vector<OpCase> cases;
  struct Spec {
    Shape x;
    std::vector<int64_t> pads;
    double value;
  };
  const std::vector<Spec> specs = {{{3}, {2, 1}, 0},
                                   {{1}, {0, 0}, 5},
                                   {{2, 3}, {1, 0, 2, 3}, 9},
                                   {{1, 5, 7, 3}, {0, 1, 2, 0, 0, 3, 1, 0}, 0},
                                   {{2, 3, 4}, {1, 1, 1, 1, 1, 1}, -2},
                                   {{}, {}, 1},
                                   {{0, 3}, {1, 0, 1, 1}, 4}};
  for (DType t : {DType::F32, DType::F16, DType::I32})
    for (const Spec& s : specs) {
      // Floats get a fraction f16 holds exactly; integers need a whole number.
      const double value = is_float(t) ? s.value + 0.25 : s.value;
      OpCase c("pad", t, s.x, fmt::format("{}={}", to_string(Shape(s.pads.begin(), s.pads.end())), value));
      const int x = c.input("x", t, s.x, 1.0, -50, 50);
      c.output(c.graph.add("pad", "pad", {x}, {{"pads", s.pads}, {"value", value}}));
      cases.push_back(std::move(c));
    }
  return cases;
}

}  // namespace kiln::test

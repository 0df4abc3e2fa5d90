// argmax: first, middle and last axes (negative too), keepdims, size 1, and deliberate ties,
// for floats and integers. Values are multiples of 0.25 that f16 holds exactly: distinct ones
// (no ties that rounding could make or break) or, for the ties case, only -1, 0, 1 and 2.
#include <fmt/format.h>

#include <algorithm>

#include "core/dtype.h"
#include "tests/ops/op_case.h"

namespace kiln::test {

KILN_OP_CASES(argmax) {
  std::vector<OpCase> cases;
  struct Spec {
    Shape x;
    int64_t axis, keepdims;
    bool ties;
  };
  const std::vector<Spec> specs = {{{1}, -1, 0, false},         {{3, 17}, -1, 0, false},      {{4, 6, 5}, 1, 1, false},
                                   {{2, 5, 7, 9}, 0, 0, false}, {{2, 5, 7, 9}, -2, 1, false}, {{5, 12}, -1, 0, true}};
  for (DType t : {DType::F32, DType::F16, DType::I32})
    for (const Spec& s : specs) {
      OpCase c("argmax", t, s.x, fmt::format("axis{}keep{}{}", s.axis, s.keepdims, s.ties ? "ties" : ""));
      const int64_t n = numel(s.x);
      std::vector<float> v(static_cast<size_t>(n));
      const float step = is_float(t) ? 0.25f : 1.0f;
      for (int64_t i = 0; i < n; ++i) v[i] = s.ties ? static_cast<float>(i % 4 - 1) : (i - n / 2) * step;
      std::shuffle(v.begin(), v.end(), c.rng);
      const int x = c.input_values("x", t, s.x, v);
      c.output(c.graph.add("argmax", "argmax", {x}, {{"axis", s.axis}, {"keepdims", s.keepdims}}));
      cases.push_back(std::move(c));
    }
  return cases;
}

}  // namespace kiln::test

// topk: k = 1, a few and the whole axis, largest and smallest, first, middle and last axes
// (negative too), and deliberate ties; long rows with k <= 32 (a decoder's vocabulary: one,
// two and three levels of per-segment picks on CUDA) and with large k (a detection head's top
// 300: the radix select on CUDA; ties at the k-th value). Values are ones f16 holds exactly:
// distinct multiples of 0.25, for the ties cases only -1, 0, 1 and 2, and in the long rows 4096
// multiples of 0.5 each repeated (ties across segments, broken by the index) with -0, +0 and two
// NaNs among them. k of 40 and 48 over long rows are the fast CPU kernel's single pass at its
// largest.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "tests/ops/op_case.h"

namespace kiln::test {

KILN_OP_CASES(topk) {
  std::vector<OpCase> cases;
  struct Spec {
    Shape x;
    int64_t k, axis, largest;
    bool ties;
  };
  const std::vector<Spec> specs = {
      {{1}, 1, -1, 1, false},          {{3, 17}, 1, -1, 1, false},     {{3, 17}, 5, -1, 1, false},
      {{3, 17}, 17, -1, 0, false},     {{4, 9, 6}, 3, 1, 0, false},    {{2, 5, 8}, 2, -3, 1, false},
      {{6, 10}, 4, -1, 1, true},       {{6, 10}, 10, 1, 0, true},      {{2, 1500}, 1, -1, 1, false},
      {{3, 58101}, 16, -1, 1, false},  {{2, 40000}, 32, 1, 0, false},  {{2, 5000}, 16, -1, 1, true},
      {{2, 8400}, 300, -1, 1, false},  {{3, 24000}, 300, -1, 1, true}, {{1, 700}, 33, -1, 0, true},
      {{2, 3000}, 2048, -1, 0, false}, {{2, 5000}, 40, -1, 1, false},  {{2, 5000}, 48, -1, 0, false},
      {{4, 3000}, 8, -1, 0, false},    {{4, 3000}, 8, -1, 1, true}};
  for (DType t : {DType::F32, DType::F16})
    for (const Spec& s : specs) {
      OpCase c("topk", t, s.x,
               fmt::format("k{}axis{}{}{}", s.k, s.axis, s.largest ? "largest" : "smallest", s.ties ? "ties" : ""));
      const int64_t n = numel(s.x);
      std::vector<float> v(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i)
        v[i] = s.ties ? static_cast<float>(i % 4 - 1) : n > 1000 ? (i % 4096 - 2048) * 0.5f : (i - n / 2) * 0.25f;
      if (n > 1000) {  // long rows: signed zeros and NaNs too
        v[1] = -0.0f;
        v[2] = 0.0f;
        v[3] = v[4] = std::numeric_limits<float>::quiet_NaN();
      }
      std::shuffle(v.begin(), v.end(), c.rng);
      const int x = c.input_values("x", t, s.x, v);
      const auto ys = c.graph.add_node("topk", "topk", {x}, {{"k", s.k}, {"axis", s.axis}, {"largest", s.largest}});
      c.output(ys[0], "values");
      c.output(ys[1], "indices");
      cases.push_back(std::move(c));
    }
  return cases;
}

}  // namespace kiln::test

// where: equal shapes, scalars-as-[1], and each input broadcasting against the others (ranks
// and size-1 dims), for floats and integers.
#include <fmt/format.h>

#include "tests/ops/op_case.h"

namespace kiln::test {

KILN_OP_CASES(where) {
  std::vector<OpCase> cases;
  struct Spec {
    Shape cond, a, b;
  };
  const std::vector<Spec> specs = {{{3, 17}, {3, 17}, {3, 17}}, {{1}, {1}, {1}},
                                   {{2, 1, 5}, {3, 1}, {5}},    {{4, 6}, {1}, {4, 1}},
                                   {{1, 7}, {3, 1, 7}, {1}},    {{2, 3, 4, 5}, {2, 3, 4, 5}, {1, 1, 1, 5}}};
  for (DType t : {DType::F32, DType::F16, DType::I64})
    for (const Spec& s : specs) {
      OpCase c("where", t, s.cond, fmt::format("{}{}", to_string(s.a), to_string(s.b)));
      const int cond = c.input("cond", DType::Bool, s.cond);
      const int a = c.input("a", t, s.a, 1.0, -50, 50);
      const int b = c.input("b", t, s.b, 1.0, -50, 50);
      c.output(c.graph.add("where", "where", {cond, a, b}));
      cases.push_back(std::move(c));
    }
  return cases;
}

}  // namespace kiln::test

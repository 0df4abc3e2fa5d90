// cast between every pair of float and integer types kiln computes with (and to bool).
#include "tests/ops/op_case.h"

namespace kiln::test {

KILN_OP_CASES(cast) {
  std::vector<OpCase> cases;
  const DType types[] = {DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64};
  for (DType from : types)
    for (DType to : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64, DType::Bool}) {
      if (from == to) continue;
      OpCase c("cast", from, {3, 17}, dtype_name(to));
      // Floats normal(0, 30): casts to integers truncate them, and must agree exactly.
      const int x = c.input("x", from, {3, 17}, 30.0, -100, 100);
      c.output(c.graph.add("cast", "cast", {x}, {{"to", std::string(dtype_name(to))}}));
      cases.push_back(std::move(c));
    }
  return cases;
}

}  // namespace kiln::test

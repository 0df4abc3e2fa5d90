// add, sub, mul, div: same shapes, broadcasting both ways, scalars, and integer types.
#include "tests/ops/op_case.h"

namespace kiln::test {

KILN_OP_CASES(binary) {
  std::vector<OpCase> cases;
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{1}, {1}}, {{3, 17}, {3, 17}}, {{2, 5, 7, 33}, {2, 1, 1, 33}}, {{4, 1, 6}, {5, 1}}, {{3, 8}, {1}}};
  for (const char* op : {"add", "sub", "mul", "div"})
    for (DType t : {DType::F32, DType::F16, DType::I32, DType::I64})
      for (const auto& [sa, sb] : shapes) {
        OpCase c(op, t, sa, to_string(sb));
        const bool integer = t == DType::I32 || t == DType::I64;
        const int a = c.input("a", t, sa, 1.0, -50, 50);
        // Divisors away from zero (integers 1..9, floats normal + 3).
        const int b =
            std::string(op) == "div" && !integer
                ? c.input_values("b", t, sb, std::vector<float>(numel(sb), 3.0f))
                : c.input("b", t, sb, 1.0, std::string(op) == "div" ? 1 : -50, std::string(op) == "div" ? 10 : 50);
        c.output(c.graph.add(op, op, {a, b}));
        cases.push_back(std::move(c));
      }
  return cases;
}

}  // namespace kiln::test

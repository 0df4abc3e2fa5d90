// matmul: square and odd sizes, size 1, each transpose, alpha, and batch dims that broadcast
// (rank 4 against rank 2, and 1 against 3 in the middle), as x @ y and q @ k^T use it. Cases
// with a transpose or alpha also check the decomposition transpose -> matmul -> mul by alpha.
#include "core/dtype.h"
#include "tests/ops/op_case.h"

namespace kiln::test {

namespace {

struct MatmulShape {
  Shape a, b;
  int64_t ta = 0, tb = 0;
  double alpha = 1;
  const char* variant;
};

// The same product with the transposes as transpose nodes and alpha as a constant "alpha" [1].
Graph decomposition(const MatmulShape& s, DType t) {
  Graph g;
  auto operand = [&](const char* name, const Shape& shape, int64_t transposed) {
    const int x = g.add_input(name, t, fixed_shape(shape));
    if (!transposed) return x;
    std::vector<int64_t> perm(shape.size());
    for (size_t d = 0; d < perm.size(); ++d) perm[d] = static_cast<int64_t>(d);
    std::swap(perm[perm.size() - 2], perm[perm.size() - 1]);
    return g.add("transpose", std::string(name) + "_t", {x}, {{"perm", perm}});
  };
  const int a = operand("a", s.a, s.ta), b = operand("b", s.b, s.tb);
  const int y = g.add("matmul", "matmul", {a, b});
  g.add_output("y0", s.alpha == 1 ? y : g.add("mul", "alpha", {y, g.add_constant("alpha", t, {1})}));
  return g;
}

}  // namespace

KILN_OP_CASES(matmul) {
  const std::vector<MatmulShape> shapes = {
      {{1, 1}, {1, 1}, 0, 0, 1, "plain"},
      {{3, 17}, {17, 5}, 0, 0, 1, "plain"},
      {{17, 3}, {17, 5}, 1, 0, 1, "ta"},
      {{3, 17}, {5, 17}, 0, 1, 1, "tb"},
      {{17, 3}, {5, 17}, 1, 1, 0.5, "ta_tb_alpha"},
      {{2, 3, 7, 9}, {9, 4}, 0, 0, 1, "b_rank2"},
      {{2, 1, 5, 8}, {3, 8, 6}, 0, 0, -2, "broadcast"},
      {{1, 2, 70, 16}, {1, 2, 70, 16}, 0, 1, 0.25, "qk"},
  };
  std::vector<OpCase> cases;
  for (DType t : {DType::F32, DType::F16})
    for (const MatmulShape& s : shapes) {
      OpCase c("matmul", t, s.a, to_string(s.b) + "/" + s.variant);
      const int a = c.input("a", t, s.a);
      const int b = c.input("b", t, s.b);
      c.output(
          c.graph.add("matmul", "matmul", {a, b}, {{"transpose_a", s.ta}, {"transpose_b", s.tb}, {"alpha", s.alpha}}));
      if (s.ta || s.tb || s.alpha != 1) {
        c.constants["alpha"] = HostTensor::from_f32("alpha", {1}, {static_cast<float>(s.alpha)});
        c.decomposition = [s, t] { return decomposition(s, t); };
      }
      cases.push_back(std::move(c));
    }
  return cases;
}

}  // namespace kiln::test

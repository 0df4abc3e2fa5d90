// relu, silu, sigmoid, tanh, gelu (erf and tanh forms) over sizes from 1 to past a block, and a
// size that is a multiple of 8 (the GPU's 16-byte fp16 path).
#include "tests/ops/op_case.h"

namespace kiln::test {

KILN_OP_CASES(activation) {
  std::vector<OpCase> cases;
  for (const char* op : {"relu", "silu", "sigmoid", "tanh", "gelu", "gelu_tanh"})
    for (DType t : {DType::F32, DType::F16})
      for (const Shape& s : {Shape{1}, Shape{3, 17}, Shape{2, 5, 7, 129}, Shape{3, 40, 84}}) {
        const std::string name = std::string(op) == "gelu_tanh" ? "gelu" : op;
        OpCase c(name, t, s, op);
        const int x = c.input("x", t, s, 3.0);
        Attrs a;
        if (name == "gelu") a.set("approximate", std::string(op) == "gelu_tanh" ? "tanh" : "none");
        c.output(c.graph.add(name, name, {x}, a));
        cases.push_back(std::move(c));
      }
  return cases;
}

}  // namespace kiln::test

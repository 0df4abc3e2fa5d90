// rms_norm: with and without gamma, sizes from 1 to past a block, and tiny inputs where eps
// matters.
#include "tests/ops/op_case.h"

namespace kiln::test {

KILN_OP_CASES(rms_norm) {
  std::vector<OpCase> cases;
  for (DType t : {DType::F32, DType::F16})
    for (const Shape& s : {Shape{1, 1}, Shape{3, 17}, Shape{2, 5, 129}})
      for (bool gamma : {true, false}) {
        OpCase c("rms_norm", t, s, gamma ? "gamma" : "none");
        std::vector<int> in = {c.input("x", t, s, 2.0)};
        if (gamma) in.push_back(c.constant("gamma", t, {s.back()}));
        c.output(c.graph.add("rms_norm", "rms_norm", in, {{"eps", 1e-6}}));
        cases.push_back(std::move(c));
      }
  OpCase c("rms_norm", DType::F32, {3, 8}, "small");
  c.output(c.graph.add("rms_norm", "rms_norm", {c.input("x", DType::F32, {3, 8}, 1e-3)}, {{"eps", 1e-6}}));
  cases.push_back(std::move(c));
  return cases;
}

}  // namespace kiln::test

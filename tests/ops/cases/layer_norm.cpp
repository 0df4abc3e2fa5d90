// layer_norm: with gamma and beta, gamma only and neither; sizes from 1 to past a block, and rows
// of whole 16-byte vectors (CUDA's warp a row: 1 to 4 vectors a lane, some lanes with fewer, in
// f16 and f32; 130 rows of 1024 halves); the same after another node, where gamma and beta are
// constants no earlier kernel writes (CUDA reads them before it waits); rows whose mean is large
// against their spread (where a one-pass variance cancels), in both forms.
#include "tests/ops/op_case.h"

namespace kiln::test {

KILN_OP_CASES(layer_norm) {
  std::vector<OpCase> cases;
  for (DType t : {DType::F32, DType::F16})
    for (const Shape& s : {Shape{1, 1}, Shape{3, 17}, Shape{2, 5, 129}, Shape{5, 24}, Shape{4, 192}, Shape{4, 320},
                           Shape{4, 512}, Shape{3, 640}, Shape{3, 776}, Shape{130, 1024}})
      for (const char* affine : {"gamma_beta", "gamma", "none"}) {
        OpCase c("layer_norm", t, s, affine);
        const int x = c.input("x", t, s, 2.0);
        std::vector<int> in = {x};
        if (std::string(affine) != "none") in.push_back(c.constant("gamma", t, {s.back()}));
        if (std::string(affine) == "gamma_beta") in.push_back(c.constant("beta", t, {s.back()}));
        c.output(c.graph.add("layer_norm", "layer_norm", in, {{"eps", 1e-5}}));
        cases.push_back(std::move(c));
      }
  for (DType t : {DType::F32, DType::F16}) {
    const Shape s{6, 256};
    OpCase c("layer_norm", t, s, "after_add");
    const int x = c.input("x", t, s, 2.0);
    const int doubled = c.graph.add("add", "twice", {x, x});
    c.output(c.graph.add("layer_norm", "layer_norm",
                         {doubled, c.constant("gamma", t, {s.back()}), c.constant("beta", t, {s.back()})},
                         {{"eps", 1e-5}}));
    cases.push_back(std::move(c));
  }
  // f32 only: in f16, 1000 + x keeps no more than x's sign.
  for (int64_t d : {33, 64}) {
    OpCase c("layer_norm", DType::F32, {4, d}, "offset");
    std::vector<float> values(static_cast<size_t>(4 * d));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& v : values) v = 1000.0f + normal(c.rng);
    c.output(c.graph.add("layer_norm", "layer_norm", {c.input_values("x", DType::F32, {4, d}, values)}));
    c.tolerance_f32 = 1e-4;
    c.fp16_precision = false;
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace kiln::test

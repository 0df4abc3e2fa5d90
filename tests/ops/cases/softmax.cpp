// softmax: last and middle axes, size 1, rows past a block, many short rows (the GPU's thread per
// row: a detection head's 16 DFL bins), and additive masks that broadcast, hold -inf, blank out
// whole rows (which must give zeros) or differ in type from x, on long and on short rows.
#include <cmath>

#include "core/dtype.h"
#include "tests/ops/op_case.h"

namespace kiln::test {

namespace {

// A 0 / -inf mask of `shape`: about one in three entries -inf, and the first row (along the
// last dim) all -inf when `blank_row`.
std::vector<float> random_mask(OpCase& c, const Shape& shape, bool blank_row) {
  std::vector<float> m(static_cast<size_t>(numel(shape)));
  std::uniform_int_distribution<int> d(0, 2);
  for (size_t i = 0; i < m.size(); ++i)
    m[i] = (blank_row && i < static_cast<size_t>(shape.back())) || d(c.rng) == 0 ? -INFINITY : 0.0f;
  return m;
}

}  // namespace

KILN_OP_CASES(softmax) {
  std::vector<OpCase> cases;
  for (DType t : {DType::F32, DType::F16}) {
    for (const Shape& s : {Shape{1, 1}, Shape{3, 17}, Shape{2, 3, 70}, Shape{2, 300, 16}}) {
      OpCase c("softmax", t, s);
      c.output(c.graph.add("softmax", "softmax", {c.input("x", t, s, 3.0)}));
      cases.push_back(std::move(c));
    }
    {
      OpCase c("softmax", t, {2, 5, 7}, "axis1");
      c.output(c.graph.add("softmax", "softmax", {c.input("x", t, {2, 5, 7}, 3.0)}, {{"axis", int64_t{1}}}));
      cases.push_back(std::move(c));
    }
    {
      OpCase c("softmax", t, {3, 17}, "mask[1, 17]");  // additive and finite
      const int x = c.input("x", t, {3, 17}, 3.0);
      c.output(c.graph.add("softmax", "softmax", {x, c.input("mask", t, {1, 17}, 2.0)}));
      cases.push_back(std::move(c));
    }
    for (DType mt : {t, DType::F32}) {
      // Attention-shaped scores [B, H, Sq, Sk] with a padding mask [B, 1, Sq, Sk].
      for (int64_t sk : {70, 12}) {
        const Shape s = {2, 3, 4, sk}, ms = {2, 1, 4, sk};
        OpCase c("softmax", t, s, std::string("mask-inf/") + dtype_name(mt));
        const int x = c.input("x", t, s, 3.0);
        c.output(c.graph.add("softmax", "softmax", {x, c.input_values("mask", mt, ms, random_mask(c, ms, true))}));
        cases.push_back(std::move(c));
      }
    }
  }
  return cases;
}

}  // namespace kiln::test

// reorder_beams: a state filled whole, then its rows replaced by their parents' within groups of
// beams, as a beam search reorders a KV cache [rows, H, capacity, D] along the sequence axis:
// parents that swap, repeat and stay, lengths of 0, part of the axis, all of it and past it
// (and negative); a single beam (nothing moves), 64 beams, the axis last and first after the
// rows; every element type, i32 and i64 indices.
#include "core/dtype.h"
#include "tests/ops/op_case.h"

namespace kiln::test {

namespace {

struct Reorder {
  Shape target;
  int64_t beams, axis;
  std::vector<float> parent, length;  // parent: the beam within the group
};

std::vector<float> wide_parents(int64_t rows, int64_t beams) {
  std::vector<float> p(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) p[r] = static_cast<float>((r * 7 + 3) % beams);
  return p;
}

}  // namespace

KILN_OP_CASES(reorder_beams) {
  const std::vector<Reorder> shapes = {{{8, 2, 9, 4}, 4, 2, {1, 1, 3, 0, 0, 1, 3, 2}, {3, 0, 9, 20, 5, 5, 2, -1}},
                                       {{6, 5}, 3, 1, {2, 0, 1, 2, 2, 0}, {5, 2, 4, 1, 5, 3}},
                                       {{4, 3, 7, 6}, 2, 1, {1, 0, 1, 1}, {2, 3, 1, 3}},
                                       {{3, 2, 5, 3}, 1, 2, {0, 0, 0}, {5, 5, 5}},
                                       {{64, 2, 3, 8}, 64, -2, wide_parents(64, 64), std::vector<float>(64, 2)}};
  std::vector<OpCase> cases;
  for (DType t : {DType::F32, DType::F16, DType::I32, DType::I64})
    for (const Reorder& s : shapes) {
      const DType it = s.target.size() % 2 ? DType::I32 : DType::I64;
      OpCase c("reorder_beams", t, s.target, "beams" + std::to_string(s.beams) + "/" + dtype_name(it));
      const int state = c.graph.add_state("cache", t, fixed_shape(s.target));
      const int fill = c.input("fill", t, s.target, 1.0, -100, 100);
      std::vector<float> all(s.target[0]);
      for (size_t r = 0; r < all.size(); ++r) all[r] = static_cast<float>(r);
      const int whole = c.input_values("whole", it, {s.target[0]}, all);
      const int filled = c.graph.add("write_rows", "fill", {state, fill, whole});
      const int parent = c.input_values("parent", it, {s.target[0] / s.beams, s.beams}, s.parent);
      const int length = c.input_values("length", it, {s.target[0]}, s.length);
      c.output(c.graph.add("reorder_beams", "reorder", {filled, parent, length}, {{"axis", s.axis}}));
      cases.push_back(std::move(c));
    }
  return cases;
}

}  // namespace kiln::test

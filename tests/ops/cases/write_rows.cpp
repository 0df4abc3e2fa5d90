// write_rows: a state filled whole, then some rows replaced by rows of an update (others kept
// with a negative index), as a new source's cross-attention keys land in its slot of a cache
// [slots, H, capacity, D] (update shorter along the sequence), and an update as large as
// the target with a row taken twice; every element type, i32 and i64 indices.
#include "core/dtype.h"
#include "tests/ops/op_case.h"

namespace kiln::test {

namespace {

struct RowsShape {
  Shape target, update;
  std::vector<float> index;
};

}  // namespace

KILN_OP_CASES(write_rows) {
  const std::vector<RowsShape> shapes = {{{1}, {1}, {0}},
                                         {{5, 3}, {2, 3}, {-1, 1, 0, -1, 1}},
                                         {{4, 2, 9, 3}, {2, 2, 5, 3}, {1, 1, -1, 0}},
                                         {{4, 2, 9, 4}, {4, 2, 9, 4}, {3, 0, 0, 2}},
                                         {{3, 7}, {1, 2}, {0, -1, 0}}};
  std::vector<OpCase> cases;
  for (DType t : {DType::F32, DType::F16, DType::I32, DType::I64})
    for (const RowsShape& s : shapes) {
      const DType it = s.target.size() % 2 ? DType::I32 : DType::I64;
      OpCase c("write_rows", t, s.target, to_string(s.update) + "/" + dtype_name(it));
      const int state = c.graph.add_state("cache", t, fixed_shape(s.target));
      const int fill = c.input("fill", t, s.target, 1.0, -100, 100);
      const int update = c.input("update", t, s.update, 1.0, -100, 100);
      std::vector<float> all(s.target[0]);
      for (size_t r = 0; r < all.size(); ++r) all[r] = static_cast<float>(r);
      const int whole = c.input_values("whole", it, {s.target[0]}, all);
      const int index = c.input_values("index", it, {s.target[0]}, s.index);
      const int filled = c.graph.add("write_rows", "fill", {state, fill, whole});
      c.output(c.graph.add("write_rows", "write", {filled, update, index}));
      cases.push_back(std::move(c));
    }
  return cases;
}

}  // namespace kiln::test

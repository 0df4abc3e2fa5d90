// gather: embedding lookups (2-d ids into a table), other axes, a scalar index, size 1, batch dims
// (each batch element's own indices: a detection head's top-k rows), and every data type with i32
// and i64 indices.
#include "core/dtype.h"
#include "tests/ops/op_case.h"

namespace kiln::test {

namespace {

struct GatherShape {
  Shape data, indices;
  int64_t axis, batch_dims = 0;
};

}  // namespace

KILN_OP_CASES(gather) {
  const std::vector<GatherShape> shapes = {
      {{1}, {1}, 0},          {{11, 7}, {2, 5}, 0},       {{3, 9, 4}, {6}, 1},          {{2, 5}, {}, -1},
      {{4, 1, 3}, {2, 3}, 0}, {{3, 50, 4}, {3, 7}, 1, 1}, {{2, 3, 9, 5}, {2, 4}, 2, 1}, {{2, 3, 6}, {2, 3, 2}, 2, 2}};
  std::vector<OpCase> cases;
  for (DType t : {DType::F32, DType::F16, DType::I32, DType::I64})
    for (DType it : {DType::I32, DType::I64})
      for (const GatherShape& s : shapes) {
        OpCase c("gather", t, s.data,
                 to_string(s.indices) + "/" + dtype_name(it) + "/axis" + std::to_string(s.axis) +
                     (s.batch_dims ? "/batch_dims" + std::to_string(s.batch_dims) : ""));
        const int64_t dim = s.data[s.axis < 0 ? s.axis + s.data.size() : s.axis];
        const int data = c.input("data", t, s.data, 1.0, -100, 100);
        const int indices = c.input("indices", it, s.indices, 1.0, 0, dim);
        c.output(c.graph.add("gather", "gather", {data, indices}, {{"axis", s.axis}, {"batch_dims", s.batch_dims}}));
        cases.push_back(std::move(c));
      }
  return cases;
}

}  // namespace kiln::test

// dynamic_update_slice: a state filled whole from one input, then part of it overwritten from
// another (two in-place updates chained on one state), along first, middle and last axes, as
// a KV cache [B, H, capacity, D] takes a step's keys, with one offset for all or one per
// leading row (sequences at different steps); every element type, i32 and i64 offsets, size 1,
// an update as large as the target, and one ending at the target's end.
#include "core/dtype.h"
#include "tests/ops/op_case.h"

namespace kiln::test {

namespace {

struct UpdateShape {
  Shape target, update;
  int64_t axis;
  std::vector<float> offsets;
};

}  // namespace

KILN_OP_CASES(dynamic_update_slice) {
  const std::vector<UpdateShape> shapes = {{{1}, {1}, 0, {0}},
                                           {{4, 6}, {1, 6}, 0, {2}},
                                           {{2, 3, 16, 5}, {2, 3, 3, 5}, 2, {13}},
                                           {{2, 3, 16, 5}, {2, 3, 1, 5}, -2, {0}},
                                           {{3, 7}, {3, 7}, 1, {0}},
                                           {{3, 7}, {3, 2}, -1, {4}},
                                           {{3, 2, 16, 4}, {3, 2, 1, 4}, 2, {5, 0, 15}},
                                           {{4, 9}, {4, 3}, 1, {6, 0, 2, 6}}};
  std::vector<OpCase> cases;
  for (DType t : {DType::F32, DType::F16, DType::I32, DType::I64})
    for (const UpdateShape& s : shapes) {
      const DType ot = s.axis % 2 ? DType::I64 : DType::I32;
      const Shape offset_shape = {static_cast<int64_t>(s.offsets.size())};
      OpCase c("dynamic_update_slice", t, s.target,
               to_string(s.update) + "/axis" + std::to_string(s.axis) + "/" + dtype_name(ot) + "/offsets" +
                   to_string(offset_shape));
      const int state = c.graph.add_state("cache", t, fixed_shape(s.target));
      const int fill = c.input("fill", t, s.target, 1.0, -100, 100);
      const int update = c.input("update", t, s.update, 1.0, -100, 100);
      const int zero = c.input_values("zero", ot, {1}, {0});
      const int offset = c.input_values("offset", ot, offset_shape, s.offsets);
      const Attrs axis = {{"axis", s.axis}};
      const int filled = c.graph.add("dynamic_update_slice", "fill", {state, fill, zero}, axis);
      c.output(c.graph.add("dynamic_update_slice", "update", {filled, update, offset}, axis));
      cases.push_back(std::move(c));
    }
  return cases;
}

}  // namespace kiln::test

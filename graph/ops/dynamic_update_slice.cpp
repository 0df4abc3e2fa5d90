// dynamic_update_slice: target with update written into it at [offset, offset + n) along
// `axis`, n being update's size there; offset is read at run time (i32 or i64) and must keep
// the slice inside target (kernels check). Offset is [1] (one for all), or, when axis > 0,
// [target.shape[0]]: one per leading row, for batches whose sequences are at different steps
// (a decoder step of several sources, each at its own position). update has target's type and
// rank and its dims except along axis, where it may be shorter. In place: the output is
// target's memory, which must be a state, as when a decoder step appends its keys and values
// to a KV cache.
#include "core/dtype.h"
#include "core/error.h"
#include "graph/graph.h"

namespace kiln {

namespace {

class DynamicUpdateSliceOp : public OpDef {
 public:
  std::string name() const override { return "dynamic_update_slice"; }
  std::vector<OpInput> inputs() const override { return {{"target"}, {"update"}, {"offset"}}; }
  std::vector<AttrSpec> attributes() const override { return {required_attr("axis", AttrType::Int)}; }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    require_same(in[0], in[1], n);
    require_integer(in[2], n, "offset");
    return {*in[0]};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    const Shape &target = *in[0], &update = *in[1];
    const int axis = normalize_axis(n.attrs.get_int("axis"), target.size(), "[dynamic_update_slice] " + n.name);
    bool fits = update.size() == target.size();
    for (size_t d = 0; fits && d < target.size(); ++d)
      fits = static_cast<int>(d) == axis ? update[d] <= target[d] : update[d] == target[d];
    KILN_CHECK(fits, "[dynamic_update_slice] {}: update {} does not fit target {} along axis {}", n.name,
               to_string(update), to_string(target), axis);
    KILN_CHECK(*in[2] == Shape{1} || (axis > 0 && *in[2] == Shape{target[0]}),
               "[dynamic_update_slice] {}: offset {} must be [1]{}", n.name, to_string(*in[2]),
               axis > 0 ? fmt::format(" or [{}]", target[0]) : "");
    return {target};
  }
  int aliases_input(int) const override { return 0; }
  bool in_place() const override { return true; }
};

}  // namespace

KILN_REGISTER_OPS(dynamic_update_slice) { registry.add(std::make_unique<DynamicUpdateSliceOp>()); }

}  // namespace kiln

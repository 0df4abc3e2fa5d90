// slice (graph/ops/slice.cpp): what each dim of the output takes from x, resolved for one
// shape of x, for the backends' kernels.
#pragma once

#include <vector>

#include "graph/graph.h"

namespace kiln {

// Output dim d holds x's elements start, start + step, ... (size of them) along dim d.
struct SliceDim {
  int64_t start = 0, step = 1, size = 0;
};

// One entry per dim of x (dims the node does not slice: all of it); throws "[slice] node: ..."
// where the attributes do not fit x.
std::vector<SliceDim> slice_dims(const Node& node, const Shape& x);

}  // namespace kiln

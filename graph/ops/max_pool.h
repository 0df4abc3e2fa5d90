// max_pool (graph/ops/max_pool.cpp): its window geometry for one shape of x, for the backends'
// kernels.
#pragma once

#include "graph/graph.h"

namespace kiln {

// Output pixel (oy, ox) is the max over x's rows oy * stride_h - pad_top + [0, kh) and columns
// ox * stride_w - pad_left + [0, kw) that lie inside x.
struct PoolGeometry {
  int64_t n = 0, h = 0, w = 0, c = 0, oh = 0, ow = 0;
  int kh = 1, kw = 1, stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0;
};

// Throws "[max_pool] node: ..." where x [N, H, W, C] does not fit the node's attributes.
PoolGeometry max_pool_geometry(const Node& node, const Shape& x);

}  // namespace kiln

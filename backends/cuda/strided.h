// The host side of backends/cuda/strided.cuh: views of tensors built from their shapes, for the
// generic kernels' launch functions.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "backends/cuda/strided.cuh"
#include "core/error.h"
#include "graph/shape.h"

namespace kiln::cuda {

using Strides = std::vector<int64_t>;

// Row-major strides of a shape.
inline Strides row_major_strides(const Shape& s) {
  Strides st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

// Strides of `in` read along the dims of `out` it broadcasts to (NumPy: aligned at the last dim;
// missing and size-1 dims repeat, stride 0).
inline Strides broadcast_strides(const Shape& in, const Shape& out) {
  Strides st(out.size(), 0);
  const Strides own = row_major_strides(in);
  for (size_t d = 0; d < in.size(); ++d)
    if (in[d] != 1) st[out.size() - in.size() + d] = own[d];
  return st;
}

// One view per tensor of a walk over `shape`, tensor t's dim d at strides[t][d]. Size-1 dims
// drop out and neighbours merge where every tensor steps through them as one dim (dim d's stride
// is dim d+1's times its size), so that threads divide as little as possible.
template <size_t N>
std::array<StridedIndex, N> strided_views(const Shape& shape, const std::array<Strides, N>& strides) {
  KILN_CHECK(shape.size() <= static_cast<size_t>(kMaxRank), "[cuda] rank {} is over {}", shape.size(), kMaxRank);
  std::array<StridedIndex, N> v{};
  int rank = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = rank > 0;
    for (size_t t = 0; t < N && merge; ++t) merge = v[t].stride[rank - 1] == strides[t][d] * shape[d];
    if (merge) {
      for (size_t t = 0; t < N; ++t) {
        v[t].size[rank - 1] *= shape[d];
        v[t].stride[rank - 1] = strides[t][d];
      }
      continue;
    }
    for (size_t t = 0; t < N; ++t) {
      v[t].size[rank] = shape[d];
      v[t].stride[rank] = strides[t][d];
    }
    ++rank;
  }
  for (auto& view : v) view.rank = rank;
  return v;
}

// `shape` as [outer, dim, inner] around `axis` (in [0, rank)).
inline AxisView axis_view(const Shape& shape, int axis) {
  AxisView a;
  for (int d = 0; d < axis; ++d) a.outer *= shape[d];
  a.dim = shape[axis];
  for (size_t d = axis + 1; d < shape.size(); ++d) a.inner *= shape[d];
  return a;
}

}  // namespace kiln::cuda

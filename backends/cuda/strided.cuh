// Index arithmetic the generic kernels share: a tensor seen through a view of another shape
// (a broadcast, a permutation, a slice, a padded frame, an axis). backends/cuda/strided.h
// builds the views from shapes on the host; a thread maps its element's flat index to an offset.
// Plain structs (kernel arguments); the mapping functions exist for nvcc only.
#pragma once

#include <cstdint>

namespace kiln::cuda {

inline constexpr int kMaxRank = 8;  // the graph's limit on any tensor's rank

// Element i of a row-major walk over size[0..rank) sits at sum_d coord_d * stride[d] of the
// viewed tensor. A stride may be 0 (a broadcast dim), permuted (a transpose) or scaled (a
// slice's step). Rank 0 is one element at offset 0.
struct StridedIndex {
  int rank = 0;
  int64_t size[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};
#ifdef __CUDACC__
  // i must be below the product of the sizes: the outermost coordinate is then what remains of
  // i, with no division. The unrolled loop indexes the arrays with constants, so that they stay
  // in the parameter bank rather than being copied to local memory.
  __device__ __forceinline__ int64_t operator()(int64_t i) const {
    int64_t offset = 0;
#pragma unroll
    for (int d = kMaxRank - 1; d > 0; --d)
      if (d < rank) {
        offset += (i % size[d]) * stride[d];
        i /= size[d];
      }
    return rank > 0 ? offset + i * stride[0] : offset;
  }
#endif
};

// Output element i of a constant pad: its coordinates over size[] minus begin[] are x's
// coordinates; where one falls outside [0, x_size) the element is padding.
struct PadIndex {
  int rank = 0;
  int64_t size[kMaxRank] = {};
  int64_t begin[kMaxRank] = {};
  int64_t x_size[kMaxRank] = {};
  int64_t x_stride[kMaxRank] = {};
#ifdef __CUDACC__
  // x's offset, or -1 for padding.
  __device__ __forceinline__ int64_t operator()(int64_t i) const {
    int64_t offset = 0;
    bool inside = true;
#pragma unroll
    for (int d = kMaxRank - 1; d >= 0; --d)
      if (d < rank) {
        const int64_t c = i % size[d] - begin[d];
        i /= size[d];
        inside = inside && c >= 0 && c < x_size[d];
        offset += c * x_stride[d];
      }
    return inside ? offset : -1;
  }
#endif
};

// A row-major tensor as [outer, dim, inner] around one axis: element (o, k, i) is at
// (o * dim + k) * inner + i.
struct AxisView {
  int64_t outer = 1, dim = 1, inner = 1;
};

// Threads per block of the generic kernels, and blocks for one thread per element of n: capped,
// the kernels' grid-stride loops take the rest.
inline constexpr int kBlockThreads = 256;
inline unsigned grid_blocks(int64_t n, int threads = kBlockThreads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < (int64_t{1} << 20) ? blocks : (int64_t{1} << 20));
}

}  // namespace kiln::cuda

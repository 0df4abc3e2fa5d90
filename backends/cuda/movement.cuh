// Data movement of any element type (elem_size 1, 2, 4 or 8 bytes), one thread per output
// element: transpose, slice, concat, split and upsample_nearest are each one or more strided
// copies; pad and where have kernels of their own. Views come from backends/cuda/strided.h.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "backends/cuda/strided.cuh"

namespace kiln::cuda {

// y[y_base + dst(i)] = x[x_base + src(i)] for i in [0, n); bases and views count elements.
struct StridedCopyArgs {
  const void* x = nullptr;
  int64_t x_base = 0;
  StridedIndex src;
  void* y = nullptr;
  int64_t y_base = 0;
  StridedIndex dst;
  int64_t n = 0;
  int elem_size = 4;
};
void launch_strided_copy(const StridedCopyArgs& args, cudaStream_t stream);
// Several copies in one launch where they move elements of one size (a split's outputs, a
// concat's inputs): a launch in a captured replay costs about as much as a small copy, and a
// decoder step split its stacked q, k, v in three launches per layer.
void launch_strided_copies(const std::vector<StridedCopyArgs>& copies, cudaStream_t stream);

// y[i] = x[pad(i)] for i in [0, n), or `fill` where pad(i) is padding (fill holds the element's
// bytes in its low bytes, little-endian). x is not read where every element is padding.
void launch_pad(const void* x, void* y, int64_t n, int elem_size, const PadIndex& pad, uint64_t fill,
                cudaStream_t stream);

// y[i] = cond[c(i)] ? a[ia(i)] : b[ib(i)] for i in [0, n); cond is bytes, non-zero for true.
struct WhereArgs {
  const uint8_t* cond = nullptr;
  const void* a = nullptr;
  const void* b = nullptr;
  void* y = nullptr;
  StridedIndex c, ia, ib;
  int64_t n = 0;
  int elem_size = 4;
};
void launch_where(const WhereArgs& args, cudaStream_t stream);

}  // namespace kiln::cuda

// Launch function for softmax (softmax.cu): along one axis of x, viewed as [outer, dim, inner],
// with an optional additive mask that broadcasts to x.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kiln/tensor.h"

namespace kiln::cuda {

inline constexpr int kSoftmaxMaxMaskRank = 8;

// Where the mask element of x's element i (flat, row-major) sits: i split into coordinates over
// `dims` (x's shape with adjacent dims merged where the mask walks them alike), each times the
// mask's stride there (0 where it broadcasts).
struct SoftmaxMaskIndex {
  int rank = 0;
  int64_t dims[kSoftmaxMaxMaskRank] = {};
  int64_t strides[kSoftmaxMaxMaskRank] = {};
};

// x and y of one type, mask (optional) of its own; both F32 or F16. Rows that are -inf
// everywhere after the mask give zeros.
struct SoftmaxArgs {
  const void* x = nullptr;
  void* y = nullptr;
  DType type = DType::F32;
  const void* mask = nullptr;
  DType mask_type = DType::F32;
  SoftmaxMaskIndex mask_index;
  int64_t mask_axis_stride = 0;  // the mask's stride along the softmax axis
  int64_t outer = 0, dim = 0, inner = 0;
};

void launch_softmax(const SoftmaxArgs& args, cudaStream_t stream);

}  // namespace kiln::cuda

// max_pool over NHWC windows (graph/ops/max_pool.h's geometry).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kiln/tensor.h"

namespace kiln::cuda {

// y[n, oy, ox, c] = the max of x[n, iy, ix, c] over iy = oy * stride_h - pad_top + [0, kh) and
// ix = ox * stride_w - pad_left + [0, kw) inside x; NaN wins and stays. x and y of one float type
// (f32, f16, bf16, f8e4m3).
struct MaxPoolArgs {
  const void* x = nullptr;
  void* y = nullptr;
  DType type = DType::F32;
  int64_t n = 0, h = 0, w = 0, c = 0, oh = 0, ow = 0;
  int kh = 1, kw = 1, stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0;
};
void launch_max_pool(const MaxPoolArgs& args, cudaStream_t stream);

}  // namespace kiln::cuda

// max_pool (backends/cuda/max_pool.cuh): each thread computes one output element (n, oy, ox, c)
// at a time (grid-stride), channels fastest so that a warp reads consecutive channels of each
// window cell; fp16 maps with channels a multiple of 8 take 8 channels per thread in 16-byte
// loads (one element per thread left a detector's 5x5 pooling pyramid at a few percent of the GPU's
// bandwidth).
#include <cmath>
#include <cstdint>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/alignment.cuh"
#include "backends/cuda/launch.cuh"
#include "backends/cuda/max_pool.cuh"
#include "backends/cuda/numeric.cuh"
#include "backends/cuda/strided.cuh"

namespace kiln::cuda {

namespace {

// Output element `pixel` (n, oy, ox) of the grid-stride loops: calls cell(offset) with the pixel
// offset in x of every cell of its window that lies inside the map. Every window holds at least
// one (each pad is smaller than the kernel), so the -inf the kernels start from never survives.
template <typename Cell>
__device__ __forceinline__ void for_each_window_cell(const MaxPoolArgs& p, int64_t pixel, Cell&& cell) {
  const int64_t ox = pixel % p.ow, oy = pixel / p.ow % p.oh, n = pixel / (p.ow * p.oh);
  for (int ky = 0; ky < p.kh; ++ky) {
    const int64_t iy = oy * p.stride_h - p.pad_top + ky;
    if (iy < 0 || iy >= p.h) continue;
    for (int kx = 0; kx < p.kw; ++kx) {
      const int64_t ix = ox * p.stride_w - p.pad_left + kx;
      if (ix >= 0 && ix < p.w) cell((n * p.h + iy) * p.w + ix);
    }
  }
}

template <typename T>
__global__ void max_pool_kernel(MaxPoolArgs p) {
  wait_for_predecessor();
  const T* x = static_cast<const T*>(p.x);
  T* y = static_cast<T*>(p.y);
  const int64_t total = p.n * p.oh * p.ow * p.c;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t c = i % p.c;
    float best = -INFINITY;
    for_each_window_cell(p, i / p.c, [&](int64_t at) {
      const float v = to_float(x[at * p.c + c]);
      if (v > best || isnan(v)) best = v;  // NaN, once in, stays
    });
    y[i] = from_float<T>(best);  // one of x's values: exact in T
  }
}

__global__ void max_pool_half8_kernel(MaxPoolArgs p) {
  wait_for_predecessor();
  const uint4* x = static_cast<const uint4*>(p.x);
  uint4* y = static_cast<uint4*>(p.y);
  const int64_t groups = p.c / 8, total = p.n * p.oh * p.ow * groups;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t g = i % groups;
    Half8 best;
    for (__half2& b : best.h2) b = __half2half2(__ushort_as_half(0xfc00));  // -inf
    for_each_window_cell(p, i / groups, [&](int64_t at) {
      Half8 v;
      v.u = x[at * groups + g];
#pragma unroll
      for (int e = 0; e < 4; ++e) best.h2[e] = __hmax2_nan(best.h2[e], v.h2[e]);  // NaN, once in, stays
    });
    y[i] = best.u;
  }
}

}  // namespace

void launch_max_pool(const MaxPoolArgs& p, cudaStream_t stream) {
  const int64_t total = p.n * p.oh * p.ow * p.c;
  if (total <= 0) return;
  if (p.type == DType::F16 && p.c % 8 == 0 && aligned16(p.x, p.y)) {
    launch(max_pool_half8_kernel, grid_blocks(total / 8), kBlockThreads, 0, stream, p);
    return;
  }
  dispatch_float(p.type, "max_pool", [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch(max_pool_kernel<T>, grid_blocks(total), kBlockThreads, 0, stream, p);
  });
}

}  // namespace kiln::cuda

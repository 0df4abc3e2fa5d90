// Device-only helpers: a sum or max over a warp (attention.cu) or over a block that takes a row
// (norm.cu, softmax.cu), returned to every thread. The block's size must be a multiple of 32 (at most
// 1024); every thread of the block must call, with `scratch` 32 floats of shared memory.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

namespace kiln::cuda::block_reduce {

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

// Each warp reduces, then every warp reduces the warps' results in the same order, so that all
// threads hold the same value. The first barrier keeps a previous call's readers of `scratch`
// ahead of this call's writers.
template <bool kMax>
__device__ __forceinline__ float block_reduce(float v, float* scratch) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  v = kMax ? warp_max(v) : warp_sum(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const float identity = kMax ? -INFINITY : 0.0f;
  v = lane < warps ? scratch[lane] : identity;
  return kMax ? warp_max(v) : warp_sum(v);
}

__device__ __forceinline__ float block_sum(float v, float* scratch) { return block_reduce<false>(v, scratch); }
__device__ __forceinline__ float block_max(float v, float* scratch) { return block_reduce<true>(v, scratch); }

// Threads for a block that walks a row of n elements: n rounded up to whole warps, at most `cap`.
inline unsigned row_threads(int64_t n, unsigned cap) {
  const int64_t threads = (n + 31) / 32 * 32;
  return threads < 32 ? 32u : threads > cap ? cap : static_cast<unsigned>(threads);
}

}  // namespace kiln::cuda::block_reduce

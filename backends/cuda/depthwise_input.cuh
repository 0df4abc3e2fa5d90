// How the depthwise kernels (depthwise_conv.cu, depthwise_mma.cu) read 8 input channels at one
// pixel in each of the layer's input modes (kernels.cuh, DepthwiseInput).
#pragma once

#include "backends/cuda/fp8.cuh"
#include "backends/cuda/kernels.cuh"

namespace kiln::cuda {

// 8 input channels at one pixel as floats; an FP8 mode yields the E4M3 values before the scale.
template <DepthwiseInput kMode>
__device__ __forceinline__ void load_input8(const DepthwiseArgs& p, int64_t offset, float (&xf)[8]) {
  if constexpr (kMode == DepthwiseInput::E4M3) {
    const uint2 q = __ldg(reinterpret_cast<const uint2*>(static_cast<const uint8_t*>(p.x) + offset));
    const uint32_t words[2] = {q.x, q.y};
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float2 f = from_e4m3x2(static_cast<uint16_t>(words[e / 2] >> (16 * (e % 2))));
      xf[2 * e] = f.x;
      xf[2 * e + 1] = f.y;
    }
  } else {
    Half8 xv;
    xv.u = __ldg(reinterpret_cast<const uint4*>(static_cast<const __half*>(p.x) + offset));
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      float2 f = __half22float2(xv.h2[e]);
      if constexpr (kMode == DepthwiseInput::F16ToE4M3)
        f = from_e4m3x2(to_e4m3x2(f.x * p.x_inv_scale, f.y * p.x_inv_scale));
      xf[2 * e] = f.x;
      xf[2 * e + 1] = f.y;
    }
  }
}

}  // namespace kiln::cuda

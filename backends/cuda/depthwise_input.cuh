// What the depthwise kernels (depthwise_conv.cu, depthwise_mma.cu) share: how they read and
// stage 8 input channels at one pixel in each of the layer's input modes (kernels.cuh,
// DepthwiseInput), and the layer's kernel size, stride and input mode as template arguments.
#pragma once

#include <type_traits>

#include "backends/cuda/fp8.cuh"
#include "backends/cuda/kernels.cuh"
#include "backends/cuda/ptx.cuh"

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

// 8 input channels at one pixel into a 16-byte slot of a shared-memory tile, as fp16 (E4M3
// values are exact in fp16); zeros where the pixel is outside the map (`inside` false: the
// offset is not read). An fp16 input goes by cp.async, which holds no registers while the load is
// in flight: a tile block issues all its loads before one barrier (wait_staged).
template <DepthwiseInput kMode>
__device__ __forceinline__ void stage_input8(const DepthwiseArgs& p, uint4* slot, int64_t offset, bool inside) {
  if constexpr (kMode == DepthwiseInput::F16) {
    ptx::copy_async16(slot, static_cast<const __half*>(p.x) + (inside ? offset : 0), inside ? 16 : 0);
  } else {
    Half8 v;
    v.u = make_uint4(0, 0, 0, 0);
    if (inside) {
      float xf[8];
      load_input8<kMode>(p, offset, xf);
#pragma unroll
      for (int e = 0; e < 4; ++e) v.h2[e] = __floats2half2_rn(xf[2 * e], xf[2 * e + 1]);
    }
    *slot = v.u;
  }
}

// This thread's stage_input8 copies have landed (the block's, after the barrier that follows).
template <DepthwiseInput kMode>
__device__ __forceinline__ void wait_staged() {
  if constexpr (kMode == DepthwiseInput::F16) ptx::copy_async_wait_all();
}

// with_depthwise_shape's second step, for one kernel size and stride: the input mode.
template <int K, int S, typename Launch>
void with_depthwise_mode(const DepthwiseArgs& p, Launch&& launch) {
  using Kc = std::integral_constant<int, K>;
  using Sc = std::integral_constant<int, S>;
  if (p.x_mode == DepthwiseInput::E4M3)
    launch(Kc{}, Sc{}, std::integral_constant<DepthwiseInput, DepthwiseInput::E4M3>{});
  else if (p.x_mode == DepthwiseInput::F16ToE4M3)
    launch(Kc{}, Sc{}, std::integral_constant<DepthwiseInput, DepthwiseInput::F16ToE4M3>{});
  else
    launch(Kc{}, Sc{}, std::integral_constant<DepthwiseInput, DepthwiseInput::F16>{});
}

// Calls launch(K, S, kMode) with the layer's kernel size, stride and input mode as
// std::integral_constant arguments (their ::value are template arguments): 3x3 and 5x5 at stride
// 1 or 2, 7x7 at stride 1 (large-kernel blocks, RepVGG-style, merged); depthwise_supported
// (kernels.cuh) admits no other.
template <typename Launch>
void with_depthwise_shape(const DepthwiseArgs& p, Launch&& launch) {
  if (p.kernel == 3 && p.stride == 1)
    with_depthwise_mode<3, 1>(p, launch);
  else if (p.kernel == 3)
    with_depthwise_mode<3, 2>(p, launch);
  else if (p.kernel == 7)
    with_depthwise_mode<7, 1>(p, launch);
  else if (p.stride == 1)
    with_depthwise_mode<5, 1>(p, launch);
  else
    with_depthwise_mode<5, 2>(p, launch);
}

}  // namespace kiln::cuda

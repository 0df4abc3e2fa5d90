// E4M3 conversions on the device, with the numerics of core/fp8.h (round to nearest even,
// saturating to +-448, NaN kept): cvt.rn.satfinite on sm_89 and newer.
#pragma once

#include <cuda_fp8.h>

#include "backends/cuda/activation.cuh"

namespace kiln::cuda {

// Two floats to two E4M3 bytes, the first in the low byte.
__device__ __forceinline__ uint16_t to_e4m3x2(float a, float b) {
  return __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3);
}

// Two E4M3 bytes (the first in the low byte) to floats; every E4M3 value is exact in fp16.
__device__ __forceinline__ float2 from_e4m3x2(uint16_t q) {
  return __half22float2(__half2(__nv_cvt_fp8x2_to_halfraw2(q, __NV_E4M3)));
}

// 8 halves times `scale`, in fp32, each rounded to E4M3, as 8 halves (E4M3 values are exact
// in fp16).
__device__ __forceinline__ uint4 round_to_e4m3(const Half8& v, float scale) {
  Half8 out;
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const float2 f = __half22float2(v.h2[e]);
    out.h2[e] = __half2(__nv_cvt_fp8x2_to_halfraw2(to_e4m3x2(f.x * scale, f.y * scale), __NV_E4M3));
  }
  return out.u;
}

// 8 E4M3 bytes (in element order) as 8 halves.
__device__ __forceinline__ uint4 widen_e4m3(uint2 q) {
  Half8 out;
  const uint32_t words[2] = {q.x, q.y};
#pragma unroll
  for (int e = 0; e < 4; ++e)
    out.h2[e] = __half2(__nv_cvt_fp8x2_to_halfraw2(static_cast<uint16_t>(words[e / 2] >> (16 * (e % 2))), __NV_E4M3));
  return out.u;
}

}  // namespace kiln::cuda

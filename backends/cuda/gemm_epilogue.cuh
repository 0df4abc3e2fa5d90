// The GEMM epilogue both GEMM kernels (gemm.cu, gemm_mma.cu) and the split-K reduction share:
// bias, activation, residual and the store of 8 consecutive outputs of one row.
#pragma once

#include "backends/cuda/fp8.cuh"

namespace kiln::cuda {

// v: 8 fp32 sums for row gm, columns gn..gn+7. The output is fp32, E4M3 (the fp16 value the
// consumer would otherwise read, times out_inv_scale, rounded: the FP8 node semantics) or fp16.
template <bool kResidual, bool kOutF32, bool kOutE4M3 = false>
__device__ __forceinline__ void store_outputs(const GemmArgs& p, int gm, int gn, float (&v)[8]) {
  if (p.bias) {
    const float4 b0 = __ldg(reinterpret_cast<const float4*>(p.bias + gn)),
                 b1 = __ldg(reinterpret_cast<const float4*>(p.bias + gn + 4));
    v[0] += b0.x, v[1] += b0.y, v[2] += b0.z, v[3] += b0.w, v[4] += b1.x, v[5] += b1.y, v[6] += b1.z, v[7] += b1.w;
  }
#pragma unroll
  for (int e = 0; e < 8; ++e) v[e] = activate(v[e], p.act);
  if (p.out_cols) {  // rows of out_cols outputs, not 16-byte aligned: element by element
    const int64_t at = static_cast<int64_t>(gm) * p.out_cols + gn;
#pragma unroll
    for (int e = 0; e < 8; ++e)
      if (gn + e < p.out_cols) {
        if constexpr (kOutF32)
          static_cast<float*>(p.out)[at + e] = v[e];
        else
          static_cast<__half*>(p.out)[at + e] = __float2half_rn(v[e]);
      }
    return;
  }
  const int64_t off = static_cast<int64_t>(gm) * p.n + gn;
  if constexpr (kResidual) {
    Half8 r;
    r.u = __ldg(reinterpret_cast<const uint4*>(p.residual + off));
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] += __half2float(r.h[e]);
  }
  if constexpr (kOutF32) {
    float4* o = reinterpret_cast<float4*>(static_cast<float*>(p.out) + off);
    o[0] = make_float4(v[0], v[1], v[2], v[3]);
    o[1] = make_float4(v[4], v[5], v[6], v[7]);
  } else if constexpr (kOutE4M3) {
    uint32_t q[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float2 h = __half22float2(__floats2half2_rn(v[2 * e], v[2 * e + 1]));
      q[e] = to_e4m3x2(h.x * p.out_inv_scale, h.y * p.out_inv_scale);
    }
    *reinterpret_cast<uint2*>(static_cast<uint8_t*>(p.out) + off) = make_uint2(q[0] | q[1] << 16, q[2] | q[3] << 16);
  } else {
    Half8 o;
#pragma unroll
    for (int e = 0; e < 4; ++e) o.h2[e] = __floats2half2_rn(v[2 * e], v[2 * e + 1]);
    *reinterpret_cast<uint4*>(static_cast<__half*>(p.out) + off) = o.u;
  }
}

}  // namespace kiln::cuda

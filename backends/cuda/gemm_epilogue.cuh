// The GEMM epilogue the GEMM kernels (gemm.cu, gemm_mma.cu, gemv.cu) and the split-K reduction
// share: bias, activation, residual and the store of 8 consecutive outputs of one row.
#pragma once

#include "backends/cuda/fp8.cuh"

namespace kiln::cuda {

// What the epilogue adds to the sums of row gm, columns gn..gn+7: the bias (a constant, which a
// kernel may load before it waits for its predecessor: launch.cuh) and the residual (written by
// earlier kernels, loaded after the wait). A kernel whose sums come after a barrier loads them
// before it, so that their latency overlaps the sums instead of following them.
struct EpilogueBias {
  float b[8];
};

__device__ __forceinline__ EpilogueBias load_bias(const GemmArgs& p, int gn) {
  EpilogueBias e = {};
  if (p.bias) {
    const float4 b0 = __ldg(reinterpret_cast<const float4*>(p.bias + gn)),
                 b1 = __ldg(reinterpret_cast<const float4*>(p.bias + gn + 4));
    e = {{b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w}};
  }
  return e;
}

// Rows of out_cols outputs take no residual (uint4 zeros then, as without kResidual).
template <bool kResidual>
__device__ __forceinline__ uint4 load_residual(const GemmArgs& p, int gm, int gn) {
  if (!kResidual || p.out_cols) return make_uint4(0, 0, 0, 0);
  return __ldg(reinterpret_cast<const uint4*>(p.residual + static_cast<int64_t>(gm) * p.n + gn));
}

// v: 8 fp32 sums for row gm, columns gn..gn+7, with their bias and residual loaded. The output
// is fp32, E4M3 (the fp16 value the consumer would otherwise read, times out_inv_scale, rounded:
// the FP8 node semantics) or fp16.
template <bool kResidual, bool kOutF32, bool kOutE4M3 = false>
__device__ __forceinline__ void store_loaded(const GemmArgs& p, int gm, int gn, float (&v)[8], const EpilogueBias& bias,
                                             uint4 residual) {
  if (p.bias)  // only then: adding a zero bias would turn a -0 sum into +0
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] += bias.b[e];
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
    r.u = residual;
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

// The same, loading the bias and residual here.
template <bool kResidual, bool kOutF32, bool kOutE4M3 = false>
__device__ __forceinline__ void store_outputs(const GemmArgs& p, int gm, int gn, float (&v)[8]) {
  store_loaded<kResidual, kOutF32, kOutE4M3>(p, gm, gn, v, load_bias(p, gn), load_residual<kResidual>(p, gm, gn));
}

}  // namespace kiln::cuda

// Device-side activations, matching backends/cpu/activation.h's definitions in fp32.
#pragma once

#include "backends/cuda/kernels.cuh"

namespace kiln::cuda {

// The activations image networks use (none, SiLU, sigmoid) inline; the others out of line, so
// that their code (erf, tanh) does not take registers from every kernel with an epilogue.
__device__ __noinline__ inline float activate_other(float v, Act act) {
  switch (act) {
    case Act::ReLU:
      return v > 0.0f ? v : 0.0f;
    case Act::Tanh:
      return tanhf(v);
    case Act::Gelu:
      return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    case Act::GeluTanh:
      return 0.5f * v * (1.0f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)));
    default:
      return v;
  }
}

// __fdividef: two instructions where an IEEE division takes about ten, which counted in the
// epilogues of bandwidth-bound kernels; its 2 ulp are far below fp16 rounding and the fp32 paths'
// tolerances. It returns 0 for a divisor past 2^126, the right limit for a very negative v.
__device__ __forceinline__ float activate(float v, Act act) {
  if (act == Act::SiLU) return __fdividef(v, 1.0f + __expf(-v));
  if (act == Act::Sigmoid) return __fdividef(1.0f, 1.0f + __expf(-v));
  if (act == Act::None) return v;
  return activate_other(v, act);
}

// 8 halves in one 16-byte word.
union Half8 {
  uint4 u;
  __half2 h2[4];
  __half h[8];
};

// 16 bytes of fp16 as 8 floats.
__device__ __forceinline__ void unpack8(const uint4& u, float (&out)[8]) {
  Half8 b;
  b.u = u;
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const float2 f = __half22float2(b.h2[e]);
    out[2 * e] = f.x;
    out[2 * e + 1] = f.y;
  }
}

}  // namespace kiln::cuda

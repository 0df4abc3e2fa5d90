// Device-side activations, matching backends/cpu/activation.h's definitions in fp32.
#pragma once

#include "backends/cuda/kernels.cuh"

namespace kiln::cuda {

__device__ __forceinline__ float activate(float v, Act act) {
  if (act == Act::SiLU) return v / (1.0f + __expf(-v));
  if (act == Act::Sigmoid) return 1.0f / (1.0f + __expf(-v));
  return v;
}

// 8 halves in one 16-byte word.
union Half8 {
  uint4 u;
  __half2 h2[4];
  __half h[8];
};

}  // namespace kiln::cuda

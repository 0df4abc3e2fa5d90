// Device-only helpers for kernels templated over a float element type (float or __half) that
// compute in fp32: loads widen, stores round to nearest. norm.cu, softmax.cu and attention.cu
// use them.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kiln/tensor.h"

namespace kiln::cuda::float_io {

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }

// 16 bytes of T as one load or store, its elements addressed one by one.
template <typename T>
union Vector16 {
  uint4 u;
  T t[16 / sizeof(T)];
};

__device__ __forceinline__ void store(float* p, float v) { *p = v; }
__device__ __forceinline__ void store(__half* p, float v) { *p = __float2half_rn(v); }

// Element i of a tensor whose type (F32 or F16) is known only at run time: for small operands
// (gamma, beta) where a template parameter per type would multiply the kernels.
__device__ __forceinline__ float load(const void* p, DType type, int64_t i) {
  return type == DType::F16 ? __half2float(static_cast<const __half*>(p)[i]) : static_cast<const float*>(p)[i];
}

}  // namespace kiln::cuda::float_io

// Element types of the generic kernels: the device type of each DType, conversions of the float
// types to and from fp32 (with core/dtype.h's numerics: round to nearest even; E4M3 saturating
// at 448), and the host-side dispatch from a DType to a kernel template's type. Device code only
// (nvcc): launch functions in backends/cuda/*.cu include it.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "kiln/tensor.h"

namespace kiln::cuda {

// Bool elements: one byte, non-zero read as true, 1 written.
struct BoolByte {
  uint8_t v;
};

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
// Every E4M3 value is exact in fp16 (0x7f and 0xff decode to NaN).
__device__ __forceinline__ float to_float(__nv_fp8_e4m3 v) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(v.__x, __NV_E4M3)));
}

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ __forceinline__ __nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float v) {
  __nv_fp8_e4m3 q;
  q.__x = __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
  return q;
}

// Element i of a float tensor whose type is known only at run time (f32, f16, bf16, f8e4m3).
__device__ __forceinline__ float load_float(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::F16:
      return to_float(static_cast<const __half*>(p)[i]);
    case DType::BF16:
      return to_float(static_cast<const __nv_bfloat16*>(p)[i]);
    case DType::F8E4M3:
      return to_float(static_cast<const __nv_fp8_e4m3*>(p)[i]);
    default:
      return static_cast<const float*>(p)[i];
  }
}

__device__ __forceinline__ void store_float(void* p, DType t, int64_t i, float v) {
  switch (t) {
    case DType::F16:
      static_cast<__half*>(p)[i] = from_float<__half>(v);
      return;
    case DType::BF16:
      static_cast<__nv_bfloat16*>(p)[i] = from_float<__nv_bfloat16>(v);
      return;
    case DType::F8E4M3:
      static_cast<__nv_fp8_e4m3*>(p)[i] = from_float<__nv_fp8_e4m3>(v);
      return;
    default:
      static_cast<float*>(p)[i] = v;
  }
}

// A type as a value, for dispatch: f(TypeTag<float>{}).
template <typename T>
struct TypeTag {
  using type = T;
};

[[noreturn]] inline void unsupported_type(const char* what, DType t) {
  // supports() of the op's kernel keeps other types away: reaching this is a bug.
  throw std::logic_error(std::string("[cuda] ") + what + ": no kernel for element type " +
                         std::to_string(static_cast<int>(t)));
}

// f(TypeTag<T>{}) with T the device type of a float DType.
template <typename F>
void dispatch_float(DType t, const char* what, F&& f) {
  switch (t) {
    case DType::F32:
      return f(TypeTag<float>{});
    case DType::F16:
      return f(TypeTag<__half>{});
    case DType::BF16:
      return f(TypeTag<__nv_bfloat16>{});
    case DType::F8E4M3:
      return f(TypeTag<__nv_fp8_e4m3>{});
    default:
      unsupported_type(what, t);
  }
}

// The float types, then i32 and i64 as int32_t and int64_t.
template <typename F>
void dispatch_number(DType t, const char* what, F&& f) {
  switch (t) {
    case DType::I32:
      return f(TypeTag<int32_t>{});
    case DType::I64:
      return f(TypeTag<int64_t>{});
    default:
      return dispatch_float(t, what, f);
  }
}

// Every DType (bool as BoolByte).
template <typename F>
void dispatch_any(DType t, const char* what, F&& f) {
  if (t == DType::Bool) return f(TypeTag<BoolByte>{});
  return dispatch_number(t, what, f);
}

// f(TypeTag<U>{}) with U an unsigned integer of the element size (1, 2, 4 or 8 bytes): for
// kernels that only move elements.
template <typename F>
void dispatch_size(int elem_size, const char* what, F&& f) {
  switch (elem_size) {
    case 1:
      return f(TypeTag<uint8_t>{});
    case 2:
      return f(TypeTag<uint16_t>{});
    case 4:
      return f(TypeTag<uint32_t>{});
    case 8:
      return f(TypeTag<unsigned long long>{});
    default:
      throw std::logic_error(std::string("[cuda] ") + what + ": no kernel for " + std::to_string(elem_size) +
                             "-byte elements");
  }
}

}  // namespace kiln::cuda

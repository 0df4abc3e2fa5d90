// Generic cast (backends/cuda/cast.cuh): each thread converts one element at a time
// (grid-stride).
#include <type_traits>

#include "backends/cuda/cast.cuh"
#include "backends/cuda/launch.cuh"
#include "backends/cuda/numeric.cuh"
#include "backends/cuda/strided.cuh"

namespace kiln::cuda {

namespace {

template <typename T>
__device__ __forceinline__ float load_f32(T v) {
  if constexpr (std::is_same_v<T, BoolByte>)
    return v.v ? 1.0f : 0.0f;
  else if constexpr (std::is_integral_v<T>)
    return static_cast<float>(v);  // round to nearest, as the host's conversion
  else
    return to_float(v);
}

template <typename T>
__device__ __forceinline__ T store_f32(float f) {
  if constexpr (std::is_same_v<T, BoolByte>)
    return BoolByte{static_cast<uint8_t>(f != 0.0f)};
  else if constexpr (std::is_integral_v<T>)
    return static_cast<T>(f);  // truncates toward zero (cvt.rzi: saturating, NaN to 0)
  else
    return from_float<T>(f);
}

template <typename From, typename To>
__device__ __forceinline__ To convert(From v) {
  if constexpr (std::is_same_v<From, To>)
    return v;
  else if constexpr (std::is_same_v<From, int64_t> && std::is_same_v<To, int32_t>)
    return static_cast<int32_t>(static_cast<uint32_t>(v));  // the low 32 bits
  else if constexpr (std::is_same_v<From, int32_t> && std::is_same_v<To, int64_t>)
    return v;
  else
    return store_f32<To>(load_f32(v));
}

template <typename From, typename To>
__global__ void cast_kernel(const From* x, To* y, int64_t n) {
  wait_for_predecessor();
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = convert<From, To>(x[i]);
}

}  // namespace

void launch_cast(DType from, DType to, const void* x, void* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  dispatch_any(from, "cast", [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    dispatch_any(to, "cast", [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      launch(cast_kernel<From, To>, grid_blocks(n), kBlockThreads, 0, stream, static_cast<const From*>(x),
             static_cast<To*>(y), n);
    });
  });
}

}  // namespace kiln::cuda

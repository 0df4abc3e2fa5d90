// Activations (backends/cuda/unary.cuh): each thread computes one element at a time (grid-stride),
// in fp32; aligned fp16 tensors of a multiple of 8 elements take 8 per thread in 16-byte loads
// (a detection head's class scores, 21.5M elements at batch 32, ran at a third of the bandwidth
// one element at a time).
#include <cstdint>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/alignment.cuh"
#include "backends/cuda/launch.cuh"
#include "backends/cuda/numeric.cuh"
#include "backends/cuda/strided.cuh"
#include "backends/cuda/unary.cuh"

namespace kiln::cuda {

namespace {

template <typename T>
__global__ void activation_kernel(const T* x, T* y, int64_t n, Act act) {
  wait_for_predecessor();
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = from_float<T>(activate(to_float(x[i]), act));
}

__global__ void activation_half8_kernel(const uint4* x, uint4* y, int64_t n8, Act act) {
  wait_for_predecessor();
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n8;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    Half8 v;
    v.u = x[i];
#pragma unroll
    for (int e = 0; e < 8; ++e) v.h[e] = __float2half_rn(activate(__half2float(v.h[e]), act));
    y[i] = v.u;
  }
}

}  // namespace

void launch_activation(Act act, DType type, const void* x, void* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  if (type == DType::F16 && n % 8 == 0 && aligned16(x, y)) {
    launch(activation_half8_kernel, grid_blocks(n / 8), kBlockThreads, 0, stream, static_cast<const uint4*>(x),
           static_cast<uint4*>(y), n / 8, act);
    return;
  }
  dispatch_float(type, "activation", [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch(activation_kernel<T>, grid_blocks(n), kBlockThreads, 0, stream, static_cast<const T*>(x), static_cast<T*>(y),
           n, act);
  });
}

}  // namespace kiln::cuda

// Generic activations (backends/cuda/unary.cuh): each thread computes one element at a time
// (grid-stride), in fp32.
#include "backends/cuda/activation.cuh"
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

}  // namespace

void launch_activation(Act act, DType type, const void* x, void* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  dispatch_float(type, "activation", [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch(activation_kernel<T>, grid_blocks(n), kBlockThreads, 0, stream, static_cast<const T*>(x), static_cast<T*>(y),
           n, act);
  });
}

}  // namespace kiln::cuda

// Two dense layers on few rows (squeeze-excite's reduce and expand layers on pooled means): the
// row in shared memory, the hidden layer one warp per unit (shuffle-reduced), the output layer
// one thread per unit. A block per (row, chunk of 256 outputs): each block recomputes the
// small hidden layer so that the output layer spreads over many blocks, which matters at
// batch 1 where one block per row left the GPU idle.
#include "backends/cuda/activation.cuh"
#include "backends/cuda/launch.cuh"

namespace kiln::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kMaxSharedFloats = 48 * 1024 / 4;

__device__ __forceinline__ float load(const void* p, bool f32, int64_t i) {
  return f32 ? static_cast<const float*>(p)[i] : __half2float(static_cast<const __half*>(p)[i]);
}

__global__ void mlp_kernel(MlpArgs p) {
  wait_for_predecessor();
  extern __shared__ float shared[];
  float* x = shared;             // [k]
  float* hidden = shared + p.k;  // [h]
  const int row = blockIdx.y;
  for (int i = threadIdx.x; i < p.k; i += blockDim.x) x[i] = load(p.x, p.x_f32, static_cast<int64_t>(row) * p.k + i);
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  for (int j = warp; j < p.h; j += warps) {
    float s = 0.0f;
    for (int i = lane; i < p.k; i += 32) s = fmaf(p.w1[static_cast<int64_t>(j) * p.k + i], x[i], s);
#pragma unroll
    for (int off = 16; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0) hidden[j] = activate(s + (p.b1 ? p.b1[j] : 0.0f), p.act1);
  }
  __syncthreads();
  const int o = blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= p.n) return;
  float s = p.b2 ? p.b2[o] : 0.0f;
  for (int j = 0; j < p.h; ++j) s = fmaf(p.w2[static_cast<int64_t>(j) * p.n + o], hidden[j], s);
  s = activate(s, p.act2);
  const int64_t at = static_cast<int64_t>(row) * p.n + o;
  if (p.residual) s += load(p.residual, p.y_f32, at);
  if (p.y_f32)
    static_cast<float*>(p.y)[at] = s;
  else
    static_cast<__half*>(p.y)[at] = __float2half(s);
}

}  // namespace

bool mlp_supported(int k, int h) { return k >= 1 && h >= 1 && k + h <= kMaxSharedFloats; }

void launch_mlp(const MlpArgs& p, cudaStream_t s) {
  dim3 grid((p.n + kThreads - 1) / kThreads, p.rows);
  launch(mlp_kernel, grid, kThreads, (p.k + p.h) * sizeof(float), s, p);
}

}  // namespace kiln::cuda

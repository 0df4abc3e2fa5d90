// The squeeze-excite MLP: mean of the pooled sums, reduce layer and its activation (one warp per
// output, shuffle-reduced), expand layer and sigmoid: the per-channel gate that the next
// pointwise GEMM applies to its input. A block per (image, chunk of 256 channels): each block
// recomputes the small reduce layer so that the expand layer spreads over many blocks, which
// matters at batch 1 where one block per image left the GPU idle.
#include "backends/cuda/activation.cuh"
#include "backends/cuda/launch.cuh"

namespace kiln::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void squeeze_excite_kernel(SqueezeExciteArgs p) {
  wait_for_predecessor();
  extern __shared__ float shared[];
  float* mean = shared;           // [c]
  float* reduced = shared + p.c;  // [rd]
  const int n = blockIdx.y;
  const float inv = 1.0f / p.pixels;
  for (int c = threadIdx.x; c < p.c; c += blockDim.x) mean[c] = p.pool[static_cast<int64_t>(n) * p.c + c] * inv;
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  for (int j = warp; j < p.rd; j += warps) {
    float s = 0.0f;
    for (int c = lane; c < p.c; c += 32) s = fmaf(p.w1[static_cast<int64_t>(j) * p.c + c], mean[c], s);
#pragma unroll
    for (int off = 16; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0) reduced[j] = activate(s + p.b1[j], p.act1);
  }
  __syncthreads();
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= p.c) return;
  float s = p.b2[c];
  for (int j = 0; j < p.rd; ++j) s = fmaf(p.w2[static_cast<int64_t>(j) * p.c + c], reduced[j], s);
  p.gate[static_cast<int64_t>(n) * p.c + c] = __float2half(activate(s, p.act2));
}

}  // namespace

void launch_squeeze_excite(const SqueezeExciteArgs& p, cudaStream_t s) {
  dim3 grid((p.c + kThreads - 1) / kThreads, p.batch);
  launch(squeeze_excite_kernel, grid, kThreads, (p.c + p.rd) * sizeof(float), s, p);
}

}  // namespace kiln::cuda

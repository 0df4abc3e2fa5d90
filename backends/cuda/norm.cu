// layer_norm and rms_norm. A block per row of d elements (blocks stride over the rows when there
// are more than the grid holds); thread t of the block reads elements t, t + blockDim, ... of the
// row, sums in fp32 and the block reduces (block_reduce.cuh), so every thread of the block holds
// the row's statistics before it writes its elements.
//   layer_norm, three passes over the row (it stays in L1/L2): the sum of x - x0, x0 being the
//   row's first element, gives the mean of the shifted values; the sum of squares about that
//   mean the variance; then the output. The shift keeps fp32 exact where the mean is large
//   against the spread (1000 + N(0, 1)): a mean of the raw values would carry an error of
//   about ulp(1000) into every output.
//   rms_norm, two passes: the sum of squares, then the output.
// Rows of up to 1024 halves (512 floats) in 16-byte vectors, as a decoder's are, take a warp
// each instead (layer_norm_warp_kernel): the row in the lanes' registers, loaded once, the same
// three passes over registers, warp shuffles for the sums; gamma and beta loaded before the wait
// where they are settled. The block form read each element three times in 2-byte loads and
// waited on four barriers: 6.8 us over 128 rows of 1024 halves on an H100 (a 12-layer
// encoder-decoder's decoder step of width 1024 at 128 rows runs 37 of them).
#include "backends/cuda/alignment.cuh"
#include "backends/cuda/block_reduce.cuh"
#include "backends/cuda/float_io.cuh"
#include "backends/cuda/launch.cuh"
#include "backends/cuda/norm.cuh"

namespace kiln::cuda {

namespace {

using block_reduce::block_sum;
using float_io::load;
using float_io::store;
using float_io::to_f32;
using float_io::Vector16;

constexpr unsigned kMaxThreads = 256;
constexpr int64_t kMaxBlocks = 1 << 20;
constexpr int kWarpRowsPerBlock = 2;  // layer_norm_warp_kernel: rows (warps) a block

template <typename T>
__global__ void layer_norm_kernel(NormArgs p) {
  wait_for_predecessor();
  __shared__ float scratch[32];
  const float d = static_cast<float>(p.d);
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const T* x = static_cast<const T*>(p.x) + row * p.d;
    T* y = static_cast<T*>(p.y) + row * p.d;
    const float x0 = to_f32(x[0]);
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < p.d; i += blockDim.x) s += to_f32(x[i]) - x0;
    const float mean = block_sum(s, scratch) / d;  // of x - x0
    float v = 0.0f;
    for (int64_t i = threadIdx.x; i < p.d; i += blockDim.x) {
      const float c = (to_f32(x[i]) - x0) - mean;
      v = fmaf(c, c, v);
    }
    const float inv = 1.0f / sqrtf(block_sum(v, scratch) / d + p.eps);
    for (int64_t i = threadIdx.x; i < p.d; i += blockDim.x) {
      float out = ((to_f32(x[i]) - x0) - mean) * inv;
      if (p.gamma) out *= load(p.gamma, p.gamma_type, i);
      if (p.beta) out += load(p.beta, p.beta_type, i);
      store(y + i, out);
    }
  }
}

// N 16-byte vectors a lane: vector lane + 32 m of the row for m < N (those past the row none).
template <typename T, int N>
__global__ void __launch_bounds__(kWarpRowsPerBlock * 32) layer_norm_warp_kernel(NormArgs p) {
  constexpr int V = 16 / sizeof(T);  // values a vector
  const int lane = threadIdx.x % 32;
  const int64_t vectors = p.d / V;
  float g[N][V], b[N][V];
  auto params = [&] {
#pragma unroll
    for (int m = 0; m < N; ++m)
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const int64_t i = (lane + 32 * m) * int64_t{V} + e;
        const bool in = lane + 32 * m < vectors;
        g[m][e] = p.gamma && in ? load(p.gamma, p.gamma_type, i) : 1.0f;
        b[m][e] = p.beta && in ? load(p.beta, p.beta_type, i) : 0.0f;
      }
  };
  if (p.params_settled) params();
  wait_for_predecessor();
  if (!p.params_settled) params();
  const float d = static_cast<float>(p.d);
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpRowsPerBlock + threadIdx.x / 32; row < p.rows;
       row += static_cast<int64_t>(gridDim.x) * kWarpRowsPerBlock) {
    const uint4* x = reinterpret_cast<const uint4*>(static_cast<const T*>(p.x) + row * p.d);
    uint4* y = reinterpret_cast<uint4*>(static_cast<T*>(p.y) + row * p.d);
    float v[N][V];
#pragma unroll
    for (int m = 0; m < N; ++m) {
      Vector16<T> w;
      w.u = lane + 32 * m < vectors ? x[lane + 32 * m] : uint4{};
#pragma unroll
      for (int e = 0; e < V; ++e) v[m][e] = to_f32(w.t[e]);
    }
    const float x0 = __shfl_sync(0xffffffffu, v[0][0], 0);
    float s = 0.0f;
#pragma unroll
    for (int m = 0; m < N; ++m)
      if (lane + 32 * m < vectors)
#pragma unroll
        for (int e = 0; e < V; ++e) s += v[m][e] - x0;
    const float mean = block_reduce::warp_sum(s) / d;  // of x - x0
    float var = 0.0f;
#pragma unroll
    for (int m = 0; m < N; ++m)
      if (lane + 32 * m < vectors)
#pragma unroll
        for (int e = 0; e < V; ++e) {
          const float c = (v[m][e] - x0) - mean;
          var = fmaf(c, c, var);
        }
    const float inv = 1.0f / sqrtf(block_reduce::warp_sum(var) / d + p.eps);
#pragma unroll
    for (int m = 0; m < N; ++m) {
      if (lane + 32 * m >= vectors) continue;
      Vector16<T> w;
#pragma unroll
      for (int e = 0; e < V; ++e) store(&w.t[e], ((v[m][e] - x0) - mean) * inv * g[m][e] + b[m][e]);
      y[lane + 32 * m] = w.u;
    }
  }
}

template <typename T>
__global__ void rms_norm_kernel(NormArgs p) {
  wait_for_predecessor();
  __shared__ float scratch[32];
  const float d = static_cast<float>(p.d);
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const T* x = static_cast<const T*>(p.x) + row * p.d;
    T* y = static_cast<T*>(p.y) + row * p.d;
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < p.d; i += blockDim.x) {
      const float v = to_f32(x[i]);
      s = fmaf(v, v, s);
    }
    const float inv = 1.0f / sqrtf(block_sum(s, scratch) / d + p.eps);
    for (int64_t i = threadIdx.x; i < p.d; i += blockDim.x) {
      float out = to_f32(x[i]) * inv;
      if (p.gamma) out *= load(p.gamma, p.gamma_type, i);
      store(y + i, out);
    }
  }
}

// The warp form for rows of whole 16-byte vectors, at most 4 a lane.
template <typename T>
bool launch_layer_norm_warp(const NormArgs& p, cudaStream_t s) {
  constexpr int64_t V = 16 / sizeof(T);
  if (p.d % V != 0 || p.d > 4 * 32 * V || !aligned16(p.x, p.y)) return false;
  const int64_t blocks = (p.rows + kWarpRowsPerBlock - 1) / kWarpRowsPerBlock;
  const dim3 grid(static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks));
  const int n = static_cast<int>((p.d / V + 31) / 32);
  auto go = [&](auto kernel) { launch(kernel, grid, kWarpRowsPerBlock * 32, 0, s, p); };
  if (n == 1)
    go(layer_norm_warp_kernel<T, 1>);
  else if (n == 2)
    go(layer_norm_warp_kernel<T, 2>);
  else
    go(layer_norm_warp_kernel<T, 4>);  // 3 too: its fourth vectors are past the row
  return true;
}

}  // namespace

void launch_layer_norm(const NormArgs& p, cudaStream_t s) {
  if (p.rows <= 0 || p.d <= 0) return;
  if (p.type == DType::F16 ? launch_layer_norm_warp<__half>(p, s) : launch_layer_norm_warp<float>(p, s)) return;
  const dim3 grid(static_cast<unsigned>(p.rows < kMaxBlocks ? p.rows : kMaxBlocks));
  const unsigned threads = block_reduce::row_threads(p.d, kMaxThreads);
  if (p.type == DType::F16)
    launch(layer_norm_kernel<__half>, grid, threads, 0, s, p);
  else
    launch(layer_norm_kernel<float>, grid, threads, 0, s, p);
}

void launch_rms_norm(const NormArgs& p, cudaStream_t s) {
  if (p.rows <= 0 || p.d <= 0) return;
  const dim3 grid(static_cast<unsigned>(p.rows < kMaxBlocks ? p.rows : kMaxBlocks));
  const unsigned threads = block_reduce::row_threads(p.d, kMaxThreads);
  if (p.type == DType::F16)
    launch(rms_norm_kernel<__half>, grid, threads, 0, s, p);
  else
    launch(rms_norm_kernel<float>, grid, threads, 0, s, p);
}

}  // namespace kiln::cuda

// The ops that run on their own when the planner finds nothing to fuse them into.
#include "backends/cuda/activation.cuh"
#include "backends/cuda/launch.cuh"

namespace kiln::cuda {

namespace {

constexpr int kThreads = 256;

unsigned blocks(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

__global__ void pool_kernel(const __half* x, __half* y, int pixels, int c) {
  wait_for_predecessor();
  const int n = blockIdx.y, ch = blockIdx.x * blockDim.x + threadIdx.x;
  if (ch >= c) return;
  const __half* px = x + static_cast<int64_t>(n) * pixels * c + ch;
  float s = 0.0f;
  for (int p = 0; p < pixels; ++p) s += __half2float(px[static_cast<int64_t>(p) * c]);
  y[static_cast<int64_t>(n) * c + ch] = __float2half(s / pixels);
}

__global__ void scale_kernel(const __half* x, const __half* gate, __half* y, int64_t total, int pixels, int c) {
  wait_for_predecessor();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int ch = static_cast<int>(i % c);
  const int64_t n = i / (static_cast<int64_t>(pixels) * c);
  y[i] = __hmul(x[i], gate[n * c + ch]);
}

__global__ void add_kernel(const __half* a, const __half* b, __half* y, int64_t n) {
  wait_for_predecessor();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __float2half(__half2float(a[i]) + __half2float(b[i]));
}

__device__ __forceinline__ float load(const void* p, bool f32, int64_t i) {
  return f32 ? static_cast<const float*>(p)[i] : __half2float(static_cast<const __half*>(p)[i]);
}

__global__ void linear_small_kernel(LinearSmallArgs p) {
  wait_for_predecessor();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= p.rows * p.out) return;
  const int o = static_cast<int>(i % p.out);
  const int64_t row = i / p.out;
  float s = p.bias ? p.bias[o] : 0.0f;
  for (int k = 0; k < p.in; ++k)
    s = fmaf(load(p.x, p.x_f32, row * p.in + k), p.w[static_cast<int64_t>(o) * p.in + k], s);
  s = activate(s, p.act);
  if (p.residual) s += load(p.residual, p.y_f32, i);
  if (p.y_f32)
    static_cast<float*>(p.y)[i] = s;
  else
    static_cast<__half*>(p.y)[i] = __float2half(s);
}

__global__ void half_to_float_kernel(const __half* x, float* y, int64_t n) {
  wait_for_predecessor();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __half2float(x[i]);
}

}  // namespace

void launch_global_avg_pool(const __half* x, __half* y, int batch, int pixels, int c, cudaStream_t s) {
  launch(pool_kernel, dim3((c + kThreads - 1) / kThreads, batch), kThreads, 0, s, x, y, pixels, c);
}

void launch_scale_channels(const __half* x, const __half* gate, __half* y, int batch, int pixels, int c,
                           cudaStream_t s) {
  const int64_t total = static_cast<int64_t>(batch) * pixels * c;
  launch(scale_kernel, blocks(total), kThreads, 0, s, x, gate, y, total, pixels, c);
}

void launch_add(const __half* a, const __half* b, __half* y, int64_t n, cudaStream_t s) {
  launch(add_kernel, blocks(n), kThreads, 0, s, a, b, y, n);
}

void launch_linear_small(const LinearSmallArgs& p, cudaStream_t s) {
  launch(linear_small_kernel, blocks(p.rows * p.out), kThreads, 0, s, p);
}

void launch_half_to_float(const __half* x, float* y, int64_t n, cudaStream_t s) {
  launch(half_to_float_kernel, blocks(n), kThreads, 0, s, x, y, n);
}

}  // namespace kiln::cuda

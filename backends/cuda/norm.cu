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

constexpr unsigned kMaxThreads = 256;
constexpr int64_t kMaxBlocks = 1 << 20;

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

}  // namespace

void launch_layer_norm(const NormArgs& p, cudaStream_t s) {
  if (p.rows <= 0 || p.d <= 0) return;
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

// log_softmax: a block per row (blocks stride over the rows when there are more than the grid
// holds). Two passes over x in fp32 (the max, then the sum of exp(x - max)) reduced over the
// block, a third writes x - max - log(sum); after a barrier the block's threads take the row's
// banned entries and write -inf there.
#include "backends/cuda/block_reduce.cuh"
#include "backends/cuda/float_io.cuh"
#include "backends/cuda/launch.cuh"
#include "backends/cuda/log_softmax.cuh"

namespace kiln::cuda {

namespace {

using block_reduce::block_max;
using block_reduce::block_sum;
using float_io::to_f32;

constexpr unsigned kMaxThreads = 512;
constexpr int64_t kMaxBlocks = 1 << 20;

template <typename T, typename I>
__global__ void log_softmax_kernel(LogSoftmaxArgs p) {
  wait_for_predecessor();
  __shared__ float scratch[32];
  const T* x = static_cast<const T*>(p.x);
  const I* banned = static_cast<const I*>(p.banned);
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const T* xr = x + row * p.dim;
    float* yr = p.y + row * p.dim;
    float max = -INFINITY;
    for (int64_t j = threadIdx.x; j < p.dim; j += blockDim.x) max = fmaxf(max, to_f32(xr[j]));
    max = block_max(max, scratch);
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < p.dim; j += blockDim.x) sum += expf(to_f32(xr[j]) - max);
    sum = block_sum(sum, scratch);
    const float log_sum = max + logf(sum);
    for (int64_t j = threadIdx.x; j < p.dim; j += blockDim.x) yr[j] = to_f32(xr[j]) - log_sum;
    if (!banned) continue;
    __syncthreads();
    for (int64_t b = threadIdx.x; b < p.per_row; b += blockDim.x) {
      const int64_t t = static_cast<int64_t>(banned[row * p.per_row + b]);
      if (t >= p.dim)
        atomicOr(p.error, p.error_bit);
      else if (t >= 0)
        yr[t] = -INFINITY;
    }
    __syncthreads();
  }
}

template <typename T>
void launch_typed(const LogSoftmaxArgs& p, dim3 grid, unsigned threads, cudaStream_t s) {
  if (p.banned_type == DType::I32)
    launch(log_softmax_kernel<T, int32_t>, grid, threads, 0, s, p);
  else
    launch(log_softmax_kernel<T, int64_t>, grid, threads, 0, s, p);
}

}  // namespace

void launch_log_softmax(const LogSoftmaxArgs& p, cudaStream_t s) {
  if (p.rows <= 0 || p.dim <= 0) return;
  const dim3 grid(static_cast<unsigned>(p.rows < kMaxBlocks ? p.rows : kMaxBlocks));
  const unsigned threads = block_reduce::row_threads(p.dim, kMaxThreads);
  if (p.type == DType::F16)
    launch_typed<__half>(p, grid, threads, s);
  else
    launch_typed<float>(p, grid, threads, s);
}

}  // namespace kiln::cuda

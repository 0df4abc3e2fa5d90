// log_softmax: a block per row (blocks stride over the rows when there are more than the grid
// holds). Two passes over x in fp32 (the max, then the sum of exp(x - max)) reduced over the
// block, a third writes x - max - log(sum); after a barrier the block's threads take the row's
// banned entries and write -inf there. A row longer than a chunk (a decoder's vocabulary) is
// split over blocks instead, so that a few rows still fill the GPU: each block finds its chunk's
// max and sum of exp (kept in the workspace), then each combines its row's chunks, writes its
// own chunk and the -inf of the banned entries that fall in it.
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

constexpr int64_t kChunk = 4096;
constexpr unsigned kChunkThreads = 256;
constexpr int64_t kMaxRows = 65535;  // gridDim.y

int64_t chunks_of(int64_t dim) { return (dim + kChunk - 1) / kChunk; }

// Block (c, row): the max of chunk c of the row and the sum of exp(x - max) over it.
template <typename T>
__global__ void __launch_bounds__(kChunkThreads) chunk_stats_kernel(LogSoftmaxArgs p) {
  wait_for_predecessor();
  __shared__ float scratch[32];
  const int64_t row = blockIdx.y, begin = blockIdx.x * kChunk, end = min(p.dim, begin + kChunk);
  const T* xr = static_cast<const T*>(p.x) + row * p.dim;
  float max = -INFINITY;
  for (int64_t j = begin + threadIdx.x; j < end; j += blockDim.x) max = fmaxf(max, to_f32(xr[j]));
  max = block_max(max, scratch);
  float sum = 0.0f;  // a chunk of -inf only adds nothing (not the NaN of -inf - -inf)
  if (max != -INFINITY)
    for (int64_t j = begin + threadIdx.x; j < end; j += blockDim.x) sum += expf(to_f32(xr[j]) - max);
  sum = block_sum(sum, scratch);
  if (threadIdx.x == 0) reinterpret_cast<float2*>(p.workspace)[row * gridDim.x + blockIdx.x] = make_float2(max, sum);
}

template <typename T, typename I>
__global__ void __launch_bounds__(kChunkThreads) chunk_write_kernel(LogSoftmaxArgs p) {
  wait_for_predecessor();
  const int64_t row = blockIdx.y, begin = blockIdx.x * kChunk, end = min(p.dim, begin + kChunk);
  const float2* stats = reinterpret_cast<const float2*>(p.workspace) + row * gridDim.x;
  float max = -INFINITY;
  for (unsigned c = 0; c < gridDim.x; ++c) max = fmaxf(max, stats[c].x);
  float sum = 0.0f;
  for (unsigned c = 0; c < gridDim.x; ++c)
    if (stats[c].x != -INFINITY) sum += stats[c].y * expf(stats[c].x - max);
  const float log_sum = max + logf(sum);
  const T* xr = static_cast<const T*>(p.x) + row * p.dim;
  float* yr = p.y + row * p.dim;
  for (int64_t j = begin + threadIdx.x; j < end; j += blockDim.x) yr[j] = to_f32(xr[j]) - log_sum;
  if (!p.banned) return;
  __syncthreads();
  const I* banned = static_cast<const I*>(p.banned) + row * p.per_row;
  for (int64_t b = threadIdx.x; b < p.per_row; b += blockDim.x) {
    const int64_t t = static_cast<int64_t>(banned[b]);
    if (t >= p.dim) {
      if (blockIdx.x == 0) atomicOr(p.error, p.error_bit);
    } else if (t >= begin && t < end) {
      yr[t] = -INFINITY;
    }
  }
}

bool split_rows(const LogSoftmaxArgs& p) { return p.dim > kChunk && p.rows <= kMaxRows; }

template <typename T, typename I>
void launch_row_type(const LogSoftmaxArgs& p, cudaStream_t s) {
  if (split_rows(p)) {
    const dim3 grid(static_cast<unsigned>(chunks_of(p.dim)), static_cast<unsigned>(p.rows));
    launch(chunk_stats_kernel<T>, grid, kChunkThreads, 0, s, p);
    launch(chunk_write_kernel<T, I>, grid, kChunkThreads, 0, s, p);
    return;
  }
  const dim3 grid(static_cast<unsigned>(p.rows < kMaxBlocks ? p.rows : kMaxBlocks));
  launch(log_softmax_kernel<T, I>, grid, block_reduce::row_threads(p.dim, kMaxThreads), 0, s, p);
}

template <typename T>
void launch_typed(const LogSoftmaxArgs& p, cudaStream_t s) {
  if (p.banned_type == DType::I32)
    launch_row_type<T, int32_t>(p, s);
  else
    launch_row_type<T, int64_t>(p, s);
}

}  // namespace

size_t log_softmax_workspace_bytes(const LogSoftmaxArgs& p) {
  return split_rows(p) ? static_cast<size_t>(p.rows * chunks_of(p.dim)) * sizeof(float2) : 0;
}

void launch_log_softmax(const LogSoftmaxArgs& p, cudaStream_t s) {
  if (p.rows <= 0 || p.dim <= 0) return;
  if (p.type == DType::F16)
    launch_typed<__half>(p, s);
  else
    launch_typed<float>(p, s);
}

}  // namespace kiln::cuda

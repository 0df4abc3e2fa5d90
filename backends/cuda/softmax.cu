// softmax along an axis, x viewed as [outer, dim, inner]: a row is the dim elements at
// base + j * inner, base = o * dim * inner + r for row o * inner + r. A block per row (blocks
// stride over the rows when there are more than the grid holds); thread t of the block takes
// j = t, t + blockDim, ... Three passes in fp32, reading x (and the mask) each time: the max of
// x + mask, the sum of exp(x + mask - max), then exp(x + mask - max) / sum. The max and the sum
// are reduced over the block (block_reduce.cuh), so the whole block sees the same values. A row
// whose max is -inf (every element masked) is written as zeros, as the CPU reference does.
// The mask element of x's element base + j * inner is at mask_offset(base) + j * mask_axis_stride.
// Rows of up to 32 elements take a thread each instead (softmax_short_kernel).
#include "backends/cuda/block_reduce.cuh"
#include "backends/cuda/float_io.cuh"
#include "backends/cuda/launch.cuh"
#include "backends/cuda/softmax.cuh"
#include "backends/cuda/strided.cuh"

namespace kiln::cuda {

namespace {

using block_reduce::block_max;
using block_reduce::block_sum;
using float_io::store;
using float_io::to_f32;

constexpr unsigned kMaxThreads = 256;
constexpr int64_t kMaxBlocks = 1 << 20;

__device__ __forceinline__ int64_t mask_offset(const SoftmaxMaskIndex& index, int64_t i) {
  int64_t off = 0;
  for (int d = index.rank - 1; d >= 0; --d) {
    const int64_t q = i / index.dims[d];
    off += (i - q * index.dims[d]) * index.strides[d];
    i = q;
  }
  return off;
}

template <typename T, typename M>
__global__ void softmax_kernel(SoftmaxArgs p) {
  wait_for_predecessor();
  __shared__ float scratch[32];
  const T* x = static_cast<const T*>(p.x);
  T* y = static_cast<T*>(p.y);
  const M* mask = static_cast<const M*>(p.mask);
  const int64_t rows = p.outer * p.inner;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t base = (row / p.inner) * p.dim * p.inner + row % p.inner;
    const int64_t mask_base = mask ? mask_offset(p.mask_index, base) : 0;
    auto value = [&](int64_t j) {
      const float v = to_f32(x[base + j * p.inner]);
      return mask ? v + to_f32(mask[mask_base + j * p.mask_axis_stride]) : v;
    };
    float max = -INFINITY;
    for (int64_t j = threadIdx.x; j < p.dim; j += blockDim.x) max = fmaxf(max, value(j));
    max = block_max(max, scratch);
    if (max == -INFINITY) {  // the same in every thread: the block skips the row together
      for (int64_t j = threadIdx.x; j < p.dim; j += blockDim.x) store(y + base + j * p.inner, 0.0f);
      continue;
    }
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < p.dim; j += blockDim.x) sum += expf(value(j) - max);
    sum = block_sum(sum, scratch);
    for (int64_t j = threadIdx.x; j < p.dim; j += blockDim.x) store(y + base + j * p.inner, expf(value(j) - max) / sum);
  }
}

// Rows of up to kShortRow elements (a detection head's DFL bins: 16), a thread per row with the
// row in registers: a block per row left most of a warp idle and paid two block reductions for
// a handful of values. Same arithmetic as softmax_kernel.
constexpr int kShortRow = 32;

template <typename T, typename M>
__global__ void softmax_short_kernel(SoftmaxArgs p) {
  wait_for_predecessor();
  const T* x = static_cast<const T*>(p.x);
  T* y = static_cast<T*>(p.y);
  const M* mask = static_cast<const M*>(p.mask);
  const int64_t rows = p.outer * p.inner;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; row < rows;
       row += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t base = (row / p.inner) * p.dim * p.inner + row % p.inner;
    const int64_t mask_base = mask ? mask_offset(p.mask_index, base) : 0;
    float v[kShortRow];
    float max = -INFINITY;
#pragma unroll
    for (int j = 0; j < kShortRow; ++j) {
      if (j >= p.dim) break;
      v[j] = to_f32(x[base + j * p.inner]);
      if (mask) v[j] += to_f32(mask[mask_base + j * p.mask_axis_stride]);
      max = fmaxf(max, v[j]);
    }
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < kShortRow; ++j) {
      if (j >= p.dim) break;
      v[j] = expf(v[j] - max);
      sum += v[j];
    }
#pragma unroll
    for (int j = 0; j < kShortRow; ++j) {
      if (j >= p.dim) break;
      store(y + base + j * p.inner, max == -INFINITY ? 0.0f : v[j] / sum);  // every element masked: zeros
    }
  }
}

template <typename T, typename M>
void launch_masked(const SoftmaxArgs& p, dim3 grid, unsigned threads, cudaStream_t s) {
  const int64_t rows = p.outer * p.inner;
  if (p.dim <= kShortRow)
    launch(softmax_short_kernel<T, M>, grid_blocks(rows), kBlockThreads, 0, s, p);
  else
    launch(softmax_kernel<T, M>, grid, threads, 0, s, p);
}

template <typename T>
void launch_typed(const SoftmaxArgs& p, dim3 grid, unsigned threads, cudaStream_t s) {
  if (p.mask && p.mask_type == DType::F16)
    launch_masked<T, __half>(p, grid, threads, s);
  else
    launch_masked<T, float>(p, grid, threads, s);
}

}  // namespace

void launch_softmax(const SoftmaxArgs& p, cudaStream_t s) {
  const int64_t rows = p.outer * p.inner;
  if (rows <= 0 || p.dim <= 0) return;
  const dim3 grid(static_cast<unsigned>(rows < kMaxBlocks ? rows : kMaxBlocks));
  const unsigned threads = block_reduce::row_threads(p.dim, kMaxThreads);
  if (p.type == DType::F16)
    launch_typed<__half>(p, grid, threads, s);
  else
    launch_typed<float>(p, grid, threads, s);
}

}  // namespace kiln::cuda

// Data movement kernels (backends/cuda/movement.cuh). Each thread computes one output element
// at a time (grid-stride): its flat index mapped through the views to the source (and, for a
// strided copy, destination) offsets, and the element moved as an unsigned integer of its size
// (a strided copy widens its elements first where it can: widened()).
#include <algorithm>
#include <vector>

#include "backends/cuda/launch.cuh"
#include "backends/cuda/movement.cuh"
#include "backends/cuda/numeric.cuh"

namespace kiln::cuda {

namespace {

__device__ __forceinline__ int64_t first_index() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t grid_stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

template <typename T>
__global__ void strided_copy_kernel(StridedCopyArgs a) {
  wait_for_predecessor();
  const T* x = static_cast<const T*>(a.x) + a.x_base;
  T* y = static_cast<T*>(a.y) + a.y_base;
  for (int64_t i = first_index(); i < a.n; i += grid_stride()) y[a.dst(i)] = x[a.src(i)];
}

// Up to kBatchedCopies copies, block row blockIdx.y doing copy blockIdx.y; each copy is picked
// by a constant index (the unrolled loop), so that its views stay in the parameter bank.
constexpr int kBatchedCopies = 8;
struct CopyBatch {
  StridedCopyArgs copy[kBatchedCopies];
};

template <typename T>
__global__ void strided_copies_kernel(CopyBatch batch) {
  wait_for_predecessor();
#pragma unroll
  for (int c = 0; c < kBatchedCopies; ++c) {
    if (c != static_cast<int>(blockIdx.y)) continue;
    const StridedCopyArgs& a = batch.copy[c];
    const T* x = static_cast<const T*>(a.x) + a.x_base;
    T* y = static_cast<T*>(a.y) + a.y_base;
    for (int64_t i = first_index(); i < a.n; i += grid_stride()) y[a.dst(i)] = x[a.src(i)];
  }
}

template <typename T>
__global__ void pad_kernel(const T* x, T* y, int64_t n, PadIndex pad, uint64_t fill) {
  wait_for_predecessor();
  const T value = static_cast<T>(fill);
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t src = pad(i);
    y[i] = src < 0 ? value : x[src];
  }
}

template <typename T>
__global__ void where_kernel(WhereArgs w) {
  wait_for_predecessor();
  const T* a = static_cast<const T*>(w.a);
  const T* b = static_cast<const T*>(w.b);
  T* y = static_cast<T*>(w.y);
  for (int64_t i = first_index(); i < w.n; i += grid_stride()) y[i] = w.cond[w.c(i)] ? a[w.ia(i)] : b[w.ib(i)];
}

}  // namespace

namespace {

// The copy with f elements moved as one integer of f x elem_size bytes (up to 16), where the
// innermost run allows it: both views step through their last dim one element at a time, and
// that dim's size, every other stride, both bases and both addresses are multiples of f. Concat,
// split, slice and upsample of NHWC maps whose channel counts are a multiple of 8 then move 16
// bytes per thread and index step instead of 2.
StridedCopyArgs widened(StridedCopyArgs a) {
  const int r = a.src.rank;
  if (r == 0 || a.src.stride[r - 1] != 1 || a.dst.stride[r - 1] != 1) return a;
  const auto x = reinterpret_cast<uintptr_t>(a.x), y = reinterpret_cast<uintptr_t>(a.y);
  for (int f = 16 / a.elem_size; f > 1; f /= 2) {
    const int64_t bytes = int64_t{f} * a.elem_size;
    bool ok = a.src.size[r - 1] % f == 0 && a.x_base % f == 0 && a.y_base % f == 0 && x % bytes == 0 && y % bytes == 0;
    for (int d = 0; d + 1 < r && ok; ++d) ok = a.src.stride[d] % f == 0 && a.dst.stride[d] % f == 0;
    if (!ok) continue;
    a.src.size[r - 1] /= f;
    a.dst.size[r - 1] /= f;
    for (int d = 0; d + 1 < r; ++d) {
      a.src.stride[d] /= f;
      a.dst.stride[d] /= f;
    }
    a.x_base /= f;
    a.y_base /= f;
    a.n /= f;
    a.elem_size = static_cast<int>(bytes);
    return a;
  }
  return a;
}

}  // namespace

void launch_strided_copy(const StridedCopyArgs& copy, cudaStream_t stream) {
  if (copy.n <= 0) return;
  const StridedCopyArgs args = widened(copy);
  if (args.elem_size == 16) {
    launch(strided_copy_kernel<uint4>, grid_blocks(args.n), kBlockThreads, 0, stream, args);
    return;
  }
  dispatch_size(args.elem_size, "strided copy", [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch(strided_copy_kernel<T>, grid_blocks(args.n), kBlockThreads, 0, stream, args);
  });
}

void launch_strided_copies(const std::vector<StridedCopyArgs>& copies, cudaStream_t stream) {
  std::vector<StridedCopyArgs> todo;
  for (const StridedCopyArgs& c : copies)
    if (c.n > 0) todo.push_back(widened(c));
  const bool one_size =
      std::all_of(todo.begin(), todo.end(), [&](const StridedCopyArgs& c) { return c.elem_size == todo[0].elem_size; });
  if (todo.size() < 2 || !one_size) {
    for (const StridedCopyArgs& c : todo) launch_strided_copy(c, stream);
    return;
  }
  for (size_t first = 0; first < todo.size(); first += kBatchedCopies) {
    const size_t count = std::min<size_t>(kBatchedCopies, todo.size() - first);
    CopyBatch batch;
    int64_t most = 0;
    for (size_t c = 0; c < count; ++c) {
      batch.copy[c] = todo[first + c];
      most = std::max(most, batch.copy[c].n);
    }
    const dim3 grid(grid_blocks(most), static_cast<unsigned>(count));
    if (todo[0].elem_size == 16) {
      launch(strided_copies_kernel<uint4>, grid, kBlockThreads, 0, stream, batch);
      continue;
    }
    dispatch_size(todo[0].elem_size, "strided copy", [&](auto tag) {
      using T = typename decltype(tag)::type;
      launch(strided_copies_kernel<T>, grid, kBlockThreads, 0, stream, batch);
    });
  }
}

void launch_pad(const void* x, void* y, int64_t n, int elem_size, const PadIndex& pad, uint64_t fill,
                cudaStream_t stream) {
  if (n <= 0) return;
  dispatch_size(elem_size, "pad", [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch(pad_kernel<T>, grid_blocks(n), kBlockThreads, 0, stream, static_cast<const T*>(x), static_cast<T*>(y), n,
           pad, fill);
  });
}

void launch_where(const WhereArgs& args, cudaStream_t stream) {
  if (args.n <= 0) return;
  dispatch_size(args.elem_size, "where", [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch(where_kernel<T>, grid_blocks(args.n), kBlockThreads, 0, stream, args);
  });
}

}  // namespace kiln::cuda

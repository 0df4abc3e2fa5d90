// gather and dynamic_update_slice: rows of bytes copied to or from a place an index in device
// memory names. Rows move in units of 16, 8, 4, 2 or 1 bytes: the largest that divides the row
// and both pointers' alignment, so that an embedding row of fp16 moves 16 bytes per load.
// One thread per unit of the output (gather) or of the update (dynamic_update_slice); threads
// stride over the units when there are more than the grid holds.
//   gather: unit e of out is (o, i, r) over [outer, count, inner units]; it reads indices[i],
//   and copies unit r of data row (o, indices[i]), or writes zero and sets the error bit (the
//   thread of r == 0 only, one atomic per bad index and row) when the index is outside [0, dim).
//   dynamic_update_slice: every thread reads the offset; when it is outside [0, dim - n] no
//   thread writes and thread 0 of block 0 sets the error bit. Else unit e of update, (o, i, r)
//   over [outer, n, inner units], goes to out row (o, offset + i).
#include "backends/cuda/indexed_copy.cuh"
#include "backends/cuda/launch.cuh"

namespace kiln::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 1 << 20;

// The largest power of two up to 16 that divides the row and both addresses.
int unit_bytes(int64_t row_bytes, const void* a, const void* b) {
  const auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  for (int u = 16; u > 1; u /= 2)
    if (row_bytes % u == 0 && pa % u == 0 && pb % u == 0) return u;
  return 1;
}

dim3 grid_for(int64_t units) {
  const int64_t blocks = (units + kThreads - 1) / kThreads;
  return dim3(static_cast<unsigned>(blocks < 1 ? 1 : blocks < kMaxBlocks ? blocks : kMaxBlocks));
}

template <typename U, typename I>
__global__ void gather_kernel(GatherArgs p, int64_t inner) {
  wait_for_predecessor();
  const U* data = static_cast<const U*>(p.data);
  U* out = static_cast<U*>(p.out);
  const I* indices = static_cast<const I*>(p.indices);
  const int64_t total = p.outer * p.count * inner;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = e % inner, q = e / inner, i = q % p.count, o = q / p.count;
    const int64_t index = static_cast<int64_t>(indices[i]);
    if (index < 0 || index >= p.dim) {
      out[e] = U{};
      if (r == 0) atomicOr(p.error, p.error_bit);
      continue;
    }
    out[e] = data[(o * p.dim + index) * inner + r];
  }
}

template <typename U, typename I>
__global__ void update_slice_kernel(UpdateSliceArgs p, int64_t inner) {
  wait_for_predecessor();
  const int64_t offset = static_cast<int64_t>(*static_cast<const I*>(p.offset));
  if (offset < 0 || offset > p.dim - p.n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) atomicOr(p.error, p.error_bit);
    return;
  }
  const U* update = static_cast<const U*>(p.update);
  U* out = static_cast<U*>(p.out);
  const int64_t total = p.outer * p.n * inner;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = e % inner, q = e / inner, i = q % p.n, o = q / p.n;
    out[(o * p.dim + offset + i) * inner + r] = update[e];
  }
}

template <typename I>
void gather_units(const GatherArgs& p, int unit, cudaStream_t s) {
  const int64_t inner = p.row_bytes / unit;
  const dim3 grid = grid_for(p.outer * p.count * inner);
  switch (unit) {
    case 16:
      return launch(gather_kernel<uint4, I>, grid, kThreads, 0, s, p, inner);
    case 8:
      return launch(gather_kernel<uint2, I>, grid, kThreads, 0, s, p, inner);
    case 4:
      return launch(gather_kernel<uint32_t, I>, grid, kThreads, 0, s, p, inner);
    case 2:
      return launch(gather_kernel<uint16_t, I>, grid, kThreads, 0, s, p, inner);
    default:
      return launch(gather_kernel<uint8_t, I>, grid, kThreads, 0, s, p, inner);
  }
}

template <typename I>
void update_slice_units(const UpdateSliceArgs& p, int unit, cudaStream_t s) {
  const int64_t inner = p.row_bytes / unit;
  const dim3 grid = grid_for(p.outer * p.n * inner);  // one block at least: the offset is checked
  switch (unit) {
    case 16:
      return launch(update_slice_kernel<uint4, I>, grid, kThreads, 0, s, p, inner);
    case 8:
      return launch(update_slice_kernel<uint2, I>, grid, kThreads, 0, s, p, inner);
    case 4:
      return launch(update_slice_kernel<uint32_t, I>, grid, kThreads, 0, s, p, inner);
    case 2:
      return launch(update_slice_kernel<uint16_t, I>, grid, kThreads, 0, s, p, inner);
    default:
      return launch(update_slice_kernel<uint8_t, I>, grid, kThreads, 0, s, p, inner);
  }
}

}  // namespace

void launch_gather(const GatherArgs& p, cudaStream_t s) {
  if (p.outer <= 0 || p.count <= 0 || p.row_bytes <= 0) return;  // no unit to write, no index to read
  const int unit = unit_bytes(p.row_bytes, p.data, p.out);
  if (p.index_type == DType::I64)
    gather_units<int64_t>(p, unit, s);
  else
    gather_units<int32_t>(p, unit, s);
}

void launch_update_slice(const UpdateSliceArgs& p, cudaStream_t s) {
  const int unit = unit_bytes(p.row_bytes, p.update, p.out);
  if (p.offset_type == DType::I64)
    update_slice_units<int64_t>(p, unit, s);
  else
    update_slice_units<int32_t>(p, unit, s);
}

}  // namespace kiln::cuda

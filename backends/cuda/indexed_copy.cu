// gather, dynamic_update_slice and write_rows: rows of bytes copied to or from a
// place an index in device memory names. Rows move in units of 16, 8, 4, 2 or 1 bytes: the
// largest that divides the row and both pointers' alignment, so that an embedding row of fp16
// moves 16 bytes per load.
// One thread per unit of the output (gather) or of the update (dynamic_update_slice); threads
// stride over the units when there are more than the grid holds.
//   gather: unit e of out is (o, i, r) over [outer, count, inner units]; it reads indices[g, i]
//   (g = o / outer_per_group, the batch element),
//   and copies unit r of data row (o, indices[i]), or writes zero and sets the error bit (the
//   thread of r == 0 only, one atomic per bad index and row) when the index is outside [0, dim).
//   dynamic_update_slice: unit e of update, (o, i, r) over [outer, n, inner units], goes to out
//   row (o, offset + i) with the offset of o's group; a group whose offset is outside
//   [0, dim - n] is not written, and block 0 sets the error bit for it.
//   write_rows: unit e of (row r, unit k of the update's row) copies unit k of update row
//   index[r] to its place in out row r; rows with a negative index are left alone.
//   write_heads: unit e of (row r, head h, position t, unit k of a head) copies unit k of head h
//   at position t of source row index[r] to its place in out row r, likewise.
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
    const int64_t index = static_cast<int64_t>(indices[(o / p.outer_per_group) * p.count + i]);
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
  const I* offsets = static_cast<const I*>(p.offset);
  const int64_t per_offset = p.outer / p.offsets;
  if (blockIdx.x == 0)
    for (int64_t k = threadIdx.x; k < p.offsets; k += blockDim.x) {
      const int64_t offset = static_cast<int64_t>(offsets[k]);
      if (offset < 0 || offset > p.dim - p.n) atomicOr(p.error, p.error_bit);
    }
  const U* update = static_cast<const U*>(p.update);
  U* out = static_cast<U*>(p.out);
  const int64_t total = p.outer * p.n * inner;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = e % inner, q = e / inner, i = q % p.n, o = q / p.n;
    const int64_t offset = static_cast<int64_t>(offsets[o / per_offset]);
    if (offset < 0 || offset > p.dim - p.n) continue;
    out[(o * p.dim + offset + i) * inner + r] = update[e];
  }
}

// write_rows' and write_heads' source row for row r: index[r], or -1 where the row is left alone
// (a negative index) or is past the source's count; then `report` (one thread per row) sets the
// error bit.
template <typename I>
__device__ __forceinline__ int64_t source_row(const I* index, int64_t r, int64_t count, bool report, uint32_t* error,
                                              uint32_t error_bit) {
  const int64_t j = static_cast<int64_t>(index[r]);
  if (j >= count) {
    if (report) atomicOr(error, error_bit);
    return -1;
  }
  return j < 0 ? -1 : j;
}

// dims: the dims after the first, the last counted in units of U.
struct RowDims {
  int64_t out[8], update[8];
};

template <typename U, typename I>
__global__ void write_rows_kernel(WriteRowsArgs p, RowDims dims, int64_t out_row, int64_t update_row) {
  wait_for_predecessor();
  const I* index = static_cast<const I*>(p.index);
  const U* update = static_cast<const U*>(p.update);
  U* out = static_cast<U*>(p.out);
  const int64_t total = p.rows * update_row;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = e / update_row, k = e % update_row;
    const int64_t j = source_row(index, r, p.count, k == 0, p.error, p.error_bit);
    if (j < 0) continue;
    int64_t rest = k, at = 0, stride = 1;
    for (int d = p.rank - 2; d >= 0; --d) {
      at += (rest % dims.update[d]) * stride;
      rest /= dims.update[d];
      stride *= dims.out[d];
    }
    out[r * out_row + at] = update[j * update_row + k];
  }
}

template <typename U, typename I>
__global__ void write_heads_kernel(WriteHeadsArgs p, int64_t head_units, int64_t width_units, int64_t column_units) {
  wait_for_predecessor();
  const I* index = static_cast<const I*>(p.index);
  const U* source = static_cast<const U*>(p.source);
  U* out = static_cast<U*>(p.out);
  const int64_t total = p.rows * p.heads * p.positions * head_units;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t k = e % head_units, t = e / head_units % p.positions, h = e / (head_units * p.positions) % p.heads,
                  r = e / (head_units * p.positions * p.heads);
    const int64_t j =
        source_row(index, r, p.count, e % (head_units * p.positions * p.heads) == 0, p.error, p.error_bit);
    if (j < 0) continue;
    out[((r * p.heads + h) * p.capacity + t) * head_units + k] =
        source[(j * p.positions + t) * width_units + column_units + h * head_units + k];
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

template <typename U, typename I>
void write_rows_typed(const WriteRowsArgs& p, int unit, cudaStream_t s) {
  RowDims dims{};
  int64_t out_row = 1, update_row = 1;
  for (int d = 0; d + 1 < p.rank; ++d) {
    const bool last = d + 2 == p.rank;
    dims.out[d] = last ? p.out_dims[d] * p.elem_bytes / unit : p.out_dims[d];
    dims.update[d] = last ? p.update_dims[d] * p.elem_bytes / unit : p.update_dims[d];
    out_row *= dims.out[d];
    update_row *= dims.update[d];
  }
  if (p.rank == 1) out_row = update_row = p.elem_bytes / unit;
  launch(write_rows_kernel<U, I>, grid_for(p.rows * update_row), kThreads, 0, s, p, dims, out_row, update_row);
}

template <typename I>
void write_rows_units(const WriteRowsArgs& p, int unit, cudaStream_t s) {
  switch (unit) {
    case 16:
      return write_rows_typed<uint4, I>(p, unit, s);
    case 8:
      return write_rows_typed<uint2, I>(p, unit, s);
    case 4:
      return write_rows_typed<uint32_t, I>(p, unit, s);
    case 2:
      return write_rows_typed<uint16_t, I>(p, unit, s);
    default:
      return write_rows_typed<uint8_t, I>(p, unit, s);
  }
}

void launch_write_rows(const WriteRowsArgs& p, cudaStream_t s) {
  if (p.rows <= 0) return;
  // The unit must divide both last rows (the update's row lands inside the output's).
  const int64_t last_out = p.rank > 1 ? p.out_dims[p.rank - 2] : 1,
                last_update = p.rank > 1 ? p.update_dims[p.rank - 2] : 1;
  int unit = unit_bytes(last_update * p.elem_bytes, p.update, p.out);
  while (unit > 1 && (last_out * p.elem_bytes) % unit != 0) unit /= 2;
  if (p.index_type == DType::I64)
    write_rows_units<int64_t>(p, unit, s);
  else
    write_rows_units<int32_t>(p, unit, s);
}

template <typename I>
void write_heads_units(const WriteHeadsArgs& p, int unit, cudaStream_t s) {
  const int64_t head = p.d * p.elem_bytes / unit, width = p.width * p.elem_bytes / unit,
                column = p.column * p.elem_bytes / unit;
  const dim3 grid = grid_for(p.rows * p.heads * p.positions * head);
  switch (unit) {
    case 16:
      return launch(write_heads_kernel<uint4, I>, grid, kThreads, 0, s, p, head, width, column);
    case 8:
      return launch(write_heads_kernel<uint2, I>, grid, kThreads, 0, s, p, head, width, column);
    case 4:
      return launch(write_heads_kernel<uint32_t, I>, grid, kThreads, 0, s, p, head, width, column);
    case 2:
      return launch(write_heads_kernel<uint16_t, I>, grid, kThreads, 0, s, p, head, width, column);
    default:
      return launch(write_heads_kernel<uint8_t, I>, grid, kThreads, 0, s, p, head, width, column);
  }
}

void launch_write_heads(const WriteHeadsArgs& p, cudaStream_t s) {
  if (p.rows <= 0 || p.heads <= 0 || p.positions <= 0 || p.d <= 0) return;
  // The unit must divide a head, the source's row and the column where the heads start.
  int unit = unit_bytes(p.d * p.elem_bytes, p.source, p.out);
  while (unit > 1 && ((p.width * p.elem_bytes) % unit != 0 || (p.column * p.elem_bytes) % unit != 0)) unit /= 2;
  if (p.index_type == DType::I64)
    write_heads_units<int64_t>(p, unit, s);
  else
    write_heads_units<int32_t>(p, unit, s);
}

void launch_update_slice(const UpdateSliceArgs& p, cudaStream_t s) {
  const int unit = unit_bytes(p.row_bytes, p.update, p.out);
  if (p.offset_type == DType::I64)
    update_slice_units<int64_t>(p, unit, s);
  else
    update_slice_units<int32_t>(p, unit, s);
}

}  // namespace kiln::cuda

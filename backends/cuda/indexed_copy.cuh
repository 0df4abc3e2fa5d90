// Launch functions for the ops that move rows of any element type to or from a place an index
// in device memory names (indexed_copy.cu): gather, dynamic_update_slice, write_rows and
// write_heads. Indices
// are untrusted: one out of range reads and writes nothing outside the tensors and sets
// `error_bit` in `*error` (the backend's error word) instead.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kiln/tensor.h"

namespace kiln::cuda {

// out[o, i, :] = data[o, indices[g, i], :] with data [outer, dim, row] and out [outer, count, row],
// row being row_bytes bytes, g = o / outer_per_group (the batch element of a gather with batch
// dims; 0 for all rows without); an index outside [0, dim) gives a row of zeros.
struct GatherArgs {
  const void* data = nullptr;
  void* out = nullptr;
  const void* indices = nullptr;
  DType index_type = DType::I32;  // I32 or I64
  int64_t outer = 0, outer_per_group = 0, dim = 0, count = 0, row_bytes = 0;
  uint32_t* error = nullptr;
  uint32_t error_bit = 0;
};
void launch_gather(const GatherArgs& args, cudaStream_t stream);

// out[o, offset[k] + i, :] = update[o, i, :] for i < n, with out [outer, dim, row], update
// [outer, n, row] and k = o / (outer / offsets): one offset for all, or one per group of outer
// rows (per sequence of a batch). Offsets are read from device memory; the rows of one outside
// [0, dim - n] are not written.
struct UpdateSliceArgs {
  const void* update = nullptr;
  void* out = nullptr;
  const void* offset = nullptr;
  DType offset_type = DType::I32;  // I32 or I64
  int64_t offsets = 1;             // how many; divides outer
  int64_t outer = 0, dim = 0, n = 0, row_bytes = 0;
  uint32_t* error = nullptr;
  uint32_t error_bit = 0;
};
void launch_update_slice(const UpdateSliceArgs& args, cudaStream_t stream);

// For each r < rows with index[r] >= 0: out[r, <update's extent>] = update[index[r]], out being
// [rows, ...] and update [count, ...] of the same rank with every later dim at most out's (the
// update lands in the leading corner of the row). dims holds both shapes' dims after the first
// (rank - 1 of them, at most 7); an index >= count writes nothing for its row.
struct WriteRowsArgs {
  const void* update = nullptr;
  void* out = nullptr;
  const void* index = nullptr;
  DType index_type = DType::I32;  // I32 or I64
  int64_t rows = 0, count = 0, elem_bytes = 0;
  int rank = 1;
  int64_t out_dims[8] = {}, update_dims[8] = {};
  uint32_t* error = nullptr;
  uint32_t error_bit = 0;
};
void launch_write_rows(const WriteRowsArgs& args, cudaStream_t stream);

// For each r < rows with index[r] >= 0 (an index >= count writes nothing for its row): out[r, h,
// t, :] = source[index[r], t, column + h * d ..] for h < heads, t < positions, with out [rows,
// heads, capacity, d] and source [count, positions, width]; sizes in elements of elem_bytes.
struct WriteHeadsArgs {
  const void* source = nullptr;
  void* out = nullptr;
  const void* index = nullptr;
  DType index_type = DType::I32;  // I32 or I64
  int64_t rows = 0, heads = 0, capacity = 0, d = 0, count = 0, positions = 0, width = 0, column = 0, elem_bytes = 0;
  uint32_t* error = nullptr;
  uint32_t error_bit = 0;
};
void launch_write_heads(const WriteHeadsArgs& args, cudaStream_t stream);

}  // namespace kiln::cuda

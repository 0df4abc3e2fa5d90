// Launch functions for the ops that move rows of any element type to or from a place an index
// in device memory names (indexed_copy.cu): gather and dynamic_update_slice. Indices are
// untrusted: one out of range reads and writes nothing outside the tensors and sets
// `error_bit` in `*error` (the backend's error word) instead.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kiln/tensor.h"

namespace kiln::cuda {

// out[o, i, :] = data[o, indices[i], :] with data [outer, dim, row] and out [outer, count, row],
// row being row_bytes bytes; an index outside [0, dim) gives a row of zeros.
struct GatherArgs {
  const void* data = nullptr;
  void* out = nullptr;
  const void* indices = nullptr;
  DType index_type = DType::I32;  // I32 or I64
  int64_t outer = 0, dim = 0, count = 0, row_bytes = 0;
  uint32_t* error = nullptr;
  uint32_t error_bit = 0;
};
void launch_gather(const GatherArgs& args, cudaStream_t stream);

// out[o, offset + i, :] = update[o, i, :] for i < n, with out [outer, dim, row] and update
// [outer, n, row]; offset is read from device memory, and one outside [0, dim - n] writes nothing.
struct UpdateSliceArgs {
  const void* update = nullptr;
  void* out = nullptr;
  const void* offset = nullptr;
  DType offset_type = DType::I32;  // I32 or I64
  int64_t outer = 0, dim = 0, n = 0, row_bytes = 0;
  uint32_t* error = nullptr;
  uint32_t error_bit = 0;
};
void launch_update_slice(const UpdateSliceArgs& args, cudaStream_t stream);

}  // namespace kiln::cuda

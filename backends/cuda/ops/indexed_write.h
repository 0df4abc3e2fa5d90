// What the host sides of write_rows and write_heads (write_rows.cpp, write_heads.cpp here) share:
// both are in place on their target, written at rows an index input names.
#pragma once

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_kernel.h"

namespace kiln {

// The index (input 2) is I32 or I64.
inline bool supports_indexed_write(const Graph& g, const Node& n) {
  const DType t = input_dtype(g, n, 2);
  return t == DType::I32 || t == DType::I64;
}

// The output is normally the target's own memory; where the engine gave it memory of its own,
// the target is copied there first, so that the rows not written keep their values.
inline void copy_target_unless_in_place(const TensorRef& target, const TensorRef& y, cudaStream_t stream) {
  if (y.data != target.data)
    KILN_CUDA_CHECK(cudaMemcpyAsync(y.data, target.data, target.bytes(), cudaMemcpyDeviceToDevice, stream));
}

}  // namespace kiln

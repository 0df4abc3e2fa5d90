// Launch function for log_softmax (log_softmax.cu): rows of x (f32 or f16) to f32
// log-probabilities, then banned entries (i64, -1 padding) set to -inf.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kiln/tensor.h"

namespace kiln::cuda {

struct LogSoftmaxArgs {
  const void* x = nullptr;
  DType type = DType::F32;
  float* y = nullptr;
  const void* banned = nullptr;  // [rows, per_row] or null
  DType banned_type = DType::I64;
  int64_t rows = 0, dim = 0, per_row = 0;
  uint32_t* error = nullptr;  // an index >= dim sets error_bit and is skipped
  uint32_t error_bit = 0;
  void* workspace = nullptr;  // log_softmax_workspace_bytes(args) bytes
};
size_t log_softmax_workspace_bytes(const LogSoftmaxArgs& args);

void launch_log_softmax(const LogSoftmaxArgs& args, cudaStream_t stream);

}  // namespace kiln::cuda

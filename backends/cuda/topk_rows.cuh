// top-k along contiguous long rows for small k (topk_rows.cu): the path launch_topk takes for a
// decoder's vocabulary, where one block walking a row k times leaves the GPU idle; and the same
// levels for log_softmax_topk.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "backends/cuda/reduce.cuh"

namespace kiln::cuda {

bool topk_rows_fits(const TopkArgs& args);
size_t topk_rows_workspace_bytes(const TopkArgs& args);  // args.workspace must hold this many bytes
void launch_topk_rows(const TopkArgs& args, cudaStream_t stream);

// log_softmax_topk on the same levels (topk_rows_fits(args.topk), args.topk.largest): the k best
// log-probabilities of x's rows, banned entries -inf, values f32.
struct LogSoftmaxTopkArgs {
  TopkArgs topk;
  const void* banned = nullptr;  // [rows, per_row] or null
  DType banned_type = DType::I64;
  int64_t per_row = 0;
  uint32_t* error = nullptr;  // an index >= the row's length sets error_bit and is skipped
  uint32_t error_bit = 0;
};
size_t log_softmax_topk_rows_workspace_bytes(const LogSoftmaxTopkArgs& args);
void launch_log_softmax_topk_rows(const LogSoftmaxTopkArgs& args, cudaStream_t stream);

}  // namespace kiln::cuda

// log_softmax_topk with one block a row in one launch (log_softmax_topk_block.cu): rows of at most
// 65536 entries (a decoder's vocabulary), k <= 32, x f32 or f16. No workspace.
#pragma once

#include <cuda_runtime.h>

#include "backends/cuda/topk_rows.cuh"

namespace kiln::cuda {

bool log_softmax_topk_block_fits(const LogSoftmaxTopkArgs& args);
void launch_log_softmax_topk_block(const LogSoftmaxTopkArgs& args, cudaStream_t stream);

}  // namespace kiln::cuda

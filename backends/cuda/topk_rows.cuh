// top-k along contiguous long rows for small k (topk_rows.cu): the path launch_topk takes for a
// decoder's vocabulary, where one block walking a row k times leaves the GPU idle.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "backends/cuda/reduce.cuh"

namespace kiln::cuda {

bool topk_rows_fits(const TopkArgs& args);
size_t topk_rows_workspace_bytes(const TopkArgs& args);  // args.workspace must hold this many bytes
void launch_topk_rows(const TopkArgs& args, cudaStream_t stream);

}  // namespace kiln::cuda

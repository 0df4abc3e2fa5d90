// top-k of contiguous rows for large k (up to kTopkSelectMaxK): a radix select of the k-th best
// key, then the k best sorted in shared memory. The kernel of a detection head's top 300 of 8400
// anchors or 24000 (anchor, class) scores, where k rounds of a reduction each reread the row.
#pragma once

#include <cuda_runtime.h>

#include "backends/cuda/reduce.cuh"

namespace kiln::cuda {

constexpr int64_t kTopkSelectMaxK = 2048;

bool topk_select_fits(const TopkArgs& args);
void launch_topk_select(const TopkArgs& args, cudaStream_t stream);

}  // namespace kiln::cuda

// The mma.sync GEMM kernels (gemm_mma.cu), dispatched by launch_gemm (gemm.cu).
#pragma once

#include "backends/cuda/kernels.cuh"

namespace kiln::cuda {

inline constexpr int kMmaTiles = 5;
extern const char* const kMmaTileNames[kMmaTiles];
void launch_gemm_mma(const GemmArgs& args, int tile, cudaStream_t stream);
// Split-K partial sums only (args.splits slices of K, fp16, a squeeze-excite gate on A or an
// implicit-GEMM view), for tile 1 (64 x 64)
// or 3 (32 x 64); split_k_reduce (gemm.cu) finishes them.
void launch_gemm_mma_partials(const GemmArgs& args, int tile, cudaStream_t stream);

}  // namespace kiln::cuda

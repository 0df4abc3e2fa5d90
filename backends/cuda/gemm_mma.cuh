// The mma.sync GEMM kernels (gemm_mma.cu), dispatched by launch_gemm (gemm.cu).
#pragma once

#include "backends/cuda/kernels.cuh"

namespace kiln::cuda {

inline constexpr int kMmaTiles = 5;
extern const char* const kMmaTileNames[kMmaTiles];
void launch_gemm_mma(const GemmArgs& args, int tile, cudaStream_t stream);

}  // namespace kiln::cuda

// The short-K streaming GEMM kernels (gemm_stream.cu), dispatched by launch_gemm (gemm.cu).
#pragma once

#include "backends/cuda/kernels.cuh"

namespace kiln::cuda {

// Columns per warp: 32 (K up to 128) or 64 (K up to 64).
inline constexpr int kStreamTiles = 2;
extern const char* const kStreamTileNames[kStreamTiles];
// fp16 in and out, K and N multiples of 8, no gate, residual, FP8 or implicit GEMM.
bool gemm_stream_supports(const GemmArgs& args, int tile);
void launch_gemm_stream(const GemmArgs& args, int tile, cudaStream_t stream);

}  // namespace kiln::cuda

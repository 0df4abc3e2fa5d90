// The pipelined GEMM kernels (gemm_pipe.cu), dispatched by launch_gemm (gemm.cu).
#pragma once

#include "backends/cuda/kernels.cuh"

namespace kiln::cuda {

// Block tiles: 128 x 32 (three stages) and 64 x 64 (four stages).
inline constexpr int kPipeTiles = 2;
extern const char* const kPipeTileNames[kPipeTiles];
// fp16 in and out, K and N multiples of 8, no FP8, fp32 output or implicit GEMM; with a gate,
// a tile's rows may span at most four images.
bool gemm_pipe_supports(const GemmArgs& args, int tile);
void launch_gemm_pipe(const GemmArgs& args, int tile, cudaStream_t stream);

}  // namespace kiln::cuda

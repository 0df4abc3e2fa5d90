// The GEMM for few rows (gemv.cu): a decoder step multiplies one or a few token rows by each
// weight matrix, which is a walk over the weights, not a tiled multiply.
#pragma once

#include <cuda_runtime.h>

#include "backends/cuda/kernels.cuh"

namespace kiln::cuda {

inline constexpr int kGemvMaxRows = 64;
bool gemv_supports(const GemmArgs& args);  // fp16 or E4M3 weights, no gate, no E4M3 output, m <= kGemvMaxRows
void launch_gemv(const GemmArgs& args, cudaStream_t stream);

}  // namespace kiln::cuda

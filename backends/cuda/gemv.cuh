// The GEMM for few rows (gemv.cu): a decoder step multiplies one or a few token rows by each
// weight matrix, which is a walk over the weights, not a tiled multiply.
#pragma once

#include <cuda_runtime.h>

#include "backends/cuda/kernels.cuh"

namespace kiln::cuda {

inline constexpr int kGemvMaxRows = 64;
bool gemv_supports(const GemmArgs& args);  // fp16 or E4M3 weights, no gate, no E4M3 output, m <= kGemvMaxRows
// Whether the few-rows kernel is a GEMM's default (gemm_default_variant): up to 16 rows.
bool gemv_by_default(const GemmArgs& args);

// A norm_linear's layer norm, done as the rows of a are loaded: gamma and beta [k] (either may be
// null); the normalised rows are also written to out ([m, k] fp16), the layer norm's output.
// fp16 weights only (launch_gemv throws for FP8 ones).
struct GemvNorm {
  const float* gamma = nullptr;
  const float* beta = nullptr;
  float eps = 0.0f;
  __half* out = nullptr;
};

void launch_gemv(const GemmArgs& args, cudaStream_t stream, const GemvNorm* norm = nullptr);

}  // namespace kiln::cuda

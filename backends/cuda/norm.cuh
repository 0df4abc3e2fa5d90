// Launch functions for layer_norm and rms_norm (norm.cu): each row of x's last dim normalised,
// fp32 sums whatever x's type.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kiln/tensor.h"

namespace kiln::cuda {

// x and y [rows, d] of one type (F32 or F16); gamma and beta [d] (F32 or F16, each its own type)
// are optional (nullptr), and rms_norm reads no beta.
struct NormArgs {
  const void* x = nullptr;
  void* y = nullptr;
  DType type = DType::F32;
  const void* gamma = nullptr;
  DType gamma_type = DType::F32;
  const void* beta = nullptr;
  DType beta_type = DType::F32;
  int64_t rows = 0, d = 0;
  float eps = 0.0f;
  // gamma and beta are written by no kernel before this one in the run (constants, as a
  // layer's weights are): a kernel may read them before it waits for its predecessor.
  bool params_settled = false;
};

// The rows of x's last dim (d) normalised into y, neither gamma nor beta set.
inline NormArgs norm_rows(const void* x, void* y, DType type, int64_t numel, int64_t d, float eps) {
  NormArgs p;
  p.x = x;
  p.y = y;
  p.type = type;
  p.d = d;
  p.rows = numel / d;
  p.eps = eps;
  return p;
}

// y = (x - mean) / sqrt(var + eps) * gamma + beta, var the biased variance.
void launch_layer_norm(const NormArgs& args, cudaStream_t stream);
// y = x / sqrt(mean(x^2) + eps) * gamma.
void launch_rms_norm(const NormArgs& args, cudaStream_t stream);

}  // namespace kiln::cuda

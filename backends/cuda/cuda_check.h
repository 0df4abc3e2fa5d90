// Every CUDA runtime call goes through KILN_CUDA_CHECK: a failure becomes a kiln::Error naming
// the call, never a silent wrong answer.
#pragma once

#include <cuda_runtime.h>

#include "core/error.h"

#define KILN_CUDA_CHECK(expr)                                                                          \
  do {                                                                                                 \
    cudaError_t kiln_err_ = (expr);                                                                    \
    if (kiln_err_ != cudaSuccess) ::kiln::fail("[cuda] {}: {}", #expr, cudaGetErrorString(kiln_err_)); \
  } while (0)

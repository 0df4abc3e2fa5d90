// The activation ops (relu, silu, sigmoid, tanh, gelu and its tanh approximation) on their own.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/kernels.cuh"
#include "kiln/tensor.h"

namespace kiln::cuda {

// y[i] = act(x[i]) for i in [0, n), x and y of one float type (f32, f16, bf16, f8e4m3),
// computed in fp32 (activate(), backends/cuda/activation.cuh) and rounded.
void launch_activation(Act act, DType type, const void* x, void* y, int64_t n, cudaStream_t stream);

}  // namespace kiln::cuda

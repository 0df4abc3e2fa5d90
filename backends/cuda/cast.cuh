// cast between any two element types.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kiln/tensor.h"

namespace kiln::cuda {

// y[i] = x[i] converted from `from` to `to` for i in [0, n), as the CPU reference converts
// (backends/cpu/ops/cast.cpp, core/dtype.cpp): the same type is copied; i64 -> i32 wraps and
// i32 -> i64 extends; every other pair goes through fp32: integers rounded to the nearest float,
// bool as 0 or 1, E4M3 decoded; then floats rounded to nearest even (E4M3 saturating at 448),
// integers truncated toward zero, bool = (value != 0). A float outside the integer's range (or
// NaN), undefined in C++, saturates here (NaN gives 0).
void launch_cast(DType from, DType to, const void* x, void* y, int64_t n, cudaStream_t stream);

}  // namespace kiln::cuda

// add, sub, mul, div with NumPy broadcasting (views from backends/cuda/strided.h).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/strided.cuh"
#include "kiln/tensor.h"

namespace kiln::cuda {

enum class BinaryFn : int { Add, Sub, Mul, Div };

// out[i] = a[ia(i)] fn b[ib(i)] for i in [0, n), all three of `type`. Float types (f32, f16,
// bf16) compute in fp32 and round the result. Integers (i32, i64) wrap on overflow and divide
// truncating toward zero; an integer division by zero gives 0 (the CPU reference fails instead:
// a GPU kernel cannot), and INT_MIN / -1 wraps to INT_MIN.
struct BinaryArgs {
  BinaryFn fn = BinaryFn::Add;
  DType type = DType::F32;
  const void* a = nullptr;
  const void* b = nullptr;
  void* out = nullptr;
  StridedIndex ia, ib;
  int64_t n = 0;
};
void launch_binary(const BinaryArgs& args, cudaStream_t stream);

}  // namespace kiln::cuda

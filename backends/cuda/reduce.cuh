// Reductions: reduce (sum, mean, max over any axes), argmax and topk along one axis.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/strided.cuh"
#include "kiln/tensor.h"

namespace kiln::cuda {

enum class ReduceFn : int { Sum, Mean, Max };

// y[o] = fn over r in [0, count) of x[kept(o) + reduced(r)], for o in [0, outputs): `kept` walks
// the output's dims and `reduced` the reduced ones, both with x's strides. x and y of one type:
// f32, f16, bf16 (sums and means in double, max in fp32, rounded once) or i32, i64 (Sum, Max;
// sums in i64, wrapping, then cast to the type). Max skips NaN as the CPU reference's std::max
// does (all NaN gives -inf).
struct ReduceArgs {
  const void* x = nullptr;
  void* y = nullptr;
  DType type = DType::F32;
  ReduceFn fn = ReduceFn::Sum;
  int64_t outputs = 0, count = 0;
  StridedIndex kept, reduced;
};
void launch_reduce(const ReduceArgs& args, cudaStream_t stream);

// For x viewed as [outer, dim, inner] (dim >= 1): y[o * inner + i] = the k of the largest
// x[o, k, i]; ties go to the lowest k, NaN is larger than any number (the first NaN wins). x is
// f32, f16, bf16, f8e4m3, i32 or i64.
void launch_argmax(const void* x, DType type, int64_t* y, const AxisView& view, cudaStream_t stream);

// For x viewed as [outer, dim, inner] and 1 <= k <= dim: values[o, j, i] and indices[o, j, i]
// (outputs [outer, k, inner]) are the j-th best x[o, e, i] and its e, best first: the largest
// (or smallest), ties to the lower e, NaN above every number and NaNs equal. x and values of one
// float type (f32, f16, bf16, f8e4m3).
struct TopkArgs {
  const void* x = nullptr;
  DType type = DType::F32;
  void* values = nullptr;
  int64_t* indices = nullptr;
  AxisView view;
  int64_t k = 1;
  bool largest = true;
  void* workspace = nullptr;  // topk_workspace_bytes(args) bytes
};
size_t topk_workspace_bytes(const TopkArgs& args);
void launch_topk(const TopkArgs& args, cudaStream_t stream);

}  // namespace kiln::cuda

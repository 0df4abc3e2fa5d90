// What the host sides of attention and kv_cache_attention (attention.cpp and
// kv_cache_attention.cpp here) fill alike in the kernels' AttentionArgs.
#pragma once

#include <cmath>
#include <initializer_list>

#include "backends/cuda/attention.cuh"
#include "backends/cuda/cuda_kernel.h"

namespace kiln {

// Once p.d is set: the scale (the attribute's 0 meaning 1 / sqrt(d)), causal, kv_length and
// kv_rows where given (inputs kv_length and kv_length + 1), and the error word with the bits that
// a length or a row out of range sets.
inline void set_attention_common(cuda::AttentionArgs& p, const KernelArgs& a, size_t kv_length, double scale,
                                 bool causal, uint32_t* error) {
  p.scale = static_cast<float>(scale != 0 ? scale : 1.0 / std::sqrt(static_cast<double>(p.d)));
  p.causal = causal;
  if (a.inputs.size() > kv_length && a.inputs[kv_length].data) {
    p.kv_length = a.inputs[kv_length].data;
    p.kv_length_type = a.inputs[kv_length].dtype;
  }
  if (a.inputs.size() > kv_length + 1 && a.inputs[kv_length + 1].data) {
    p.kv_rows = a.inputs[kv_length + 1].data;
    p.kv_rows_type = a.inputs[kv_length + 1].dtype;
  }
  p.error = error;
  p.error_bit = kCudaLengthOutOfRange;
  p.index_error_bit = kCudaIndexOutOfRange;
}

// Whether the inputs at these slots are all settled (absent ones count as settled).
inline bool all_settled(const KernelArgs& a, std::initializer_list<int> slots) {
  for (int s : slots)
    if (static_cast<size_t>(s) < a.inputs.size() && a.inputs[s].data && !a.inputs[s].settled) return false;
  return true;
}

}  // namespace kiln

// What the host sides of attention, qkv_attention and kv_cache_attention (attention.cpp,
// qkv_attention.cpp and kv_cache_attention.cpp here) share: the types they take, and what they
// fill alike in the kernels' AttentionArgs.
#pragma once

#include <cmath>
#include <initializer_list>

#include "backends/cuda/attention.cuh"
#include "backends/cuda/cuda_kernel.h"

namespace kiln {

// Whether the kernels take the node's types: fp32 or fp16 at input `values` (q, or the stacked
// projection) and in the output, at input `mask` where given, and integers at `indices` (lengths,
// rows, offsets) where given.
inline bool attention_types_supported(const Graph& g, const Node& n, int values, int mask,
                                      std::initializer_list<int> indices) {
  const auto real = [](DType t) { return t == DType::F32 || t == DType::F16; };
  if (!real(input_dtype(g, n, values)) || !real(output_dtypes(g, n)[0])) return false;
  if (mask >= 0 && n.input(mask) >= 0 && !real(input_dtype(g, n, mask))) return false;
  for (int slot : indices) {
    if (n.input(slot) < 0) continue;
    const DType t = input_dtype(g, n, slot);
    if (t != DType::I32 && t != DType::I64) return false;
  }
  return true;
}

// Once the sizes are set: the contiguous layouts (a packed form sets its own after), the scale
// (the attribute's 0 meaning 1 / sqrt(d)), causal, kv_length and kv_rows where given (inputs
// kv_length and kv_length + 1), and the error word with the bits that a length or a row out of
// range sets.
inline void set_attention_common(cuda::AttentionArgs& p, const KernelArgs& a, size_t kv_length, double scale,
                                 bool causal, uint32_t* error) {
  cuda::set_contiguous_layouts(p);
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

// The mask at input `slot`, where given: rank <= 4, aligned to the scores [B, H, Sq, Sk] on the
// right, stride 0 along the dims it broadcasts over.
inline void set_attention_mask(cuda::AttentionArgs& p, const KernelArgs& a, size_t slot) {
  if (a.inputs.size() <= slot || !a.inputs[slot].data) return;
  const Shape& m = a.inputs[slot].shape;
  p.mask = a.inputs[slot].data;
  p.mask_type = a.inputs[slot].dtype;
  int64_t step = 1;
  for (size_t d = m.size(); d-- > 0;) {
    p.mask_strides[4 - m.size() + d] = m[d] == 1 ? 0 : step;
    step *= m[d];
  }
}

// Whether the inputs at these slots are all settled (absent ones count as settled).
inline bool all_settled(const KernelArgs& a, std::initializer_list<int> slots) {
  for (int s : slots)
    if (static_cast<size_t>(s) < a.inputs.size() && a.inputs[s].data && !a.inputs[s].settled) return false;
  return true;
}

}  // namespace kiln

// Launch function for attention (attention.cu): y = softmax(scale * q k^T + mask) v per query
// row, without a score matrix in memory; graph/ops/attention.cpp defines the op.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kiln/tensor.h"

namespace kiln::cuda {

// q [batch, heads, sq, d], k [kv_batch, kv_heads, sk, d], v [kv_batch, kv_heads, sk, dv] and
// y [batch, heads, sq, dv] (or where `packed` layouts say), all of `type` (F32 or F16); head h
// reads kv head h / (heads / kv_heads).
//   mask (optional, F32 or F16): element (b, h, i, j) at b * s[0] + h * s[1] + i * s[2] + j * s[3]
//   with s = mask_strides (0 along dims it broadcasts over).
//   kv_length (optional, I32 or I64 [batch]): keys j >= kv_length[b] are ignored. A length
//   outside [0, sk] is clamped into it and sets error_bit in *error.
//   kv_rows (optional, I32 or I64 [batch, sk]): key and value j of batch b are those of row
//   kv_rows[b, j] of k and v, which then have kv_batch rows (batch without kv_rows). An entry
//   outside [0, kv_batch) reads row 0 and sets index_error_bit.
//   causal: query i sees key j only if j <= i + (kv_length[b] or sk) - sq.
// A query that sees no key (or only -inf mask entries) gives zeros.
struct AttentionArgs {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* y = nullptr;
  DType type = DType::F32;
  const void* mask = nullptr;
  DType mask_type = DType::F32;
  int64_t mask_strides[4] = {};
  const void* kv_length = nullptr;
  DType kv_length_type = DType::I32;
  const void* kv_rows = nullptr;
  DType kv_rows_type = DType::I32;
  int64_t batch = 0, kv_batch = 0, heads = 0, kv_heads = 0, sq = 0, sk = 0, d = 0, dv = 0;
  float scale = 1.0f;
  bool causal = false;
  // k, v, kv_length, kv_rows and offset are settled (TensorRef::settled): the step kernel may read
  // them before it waits for its predecessor, which writes q.
  bool settled = false;
  uint32_t* error = nullptr;
  uint32_t error_bit = 0, index_error_bit = 0;
  // kv_cache_attention's form (the step kernel only, attention_step.cu): q is read from a
  // stacked projection [batch, sq, q_stride] (query head h at h * d), whose key heads follow the
  // query heads and whose value heads follow the key heads. Those sq new keys and values of row b
  // go to positions offset[b] .. offset[b] + sq - 1 of k_out and v_out (the caches k and v read)
  // and, wherever a row reads them in the same launch, are read from the projection. An offset
  // outside [0, sk - sq] writes nothing and sets offset_error_bit.
  int64_t q_stride = 0;  // 0: q is [batch, heads, sq, d]
  const void* offset = nullptr;
  DType offset_type = DType::I64;
  int64_t offsets = 0;  // 1 (for every row) or batch
  uint32_t offset_error_bit = 0;
  void* k_out = nullptr;
  void* v_out = nullptr;
  // qkv_attention's form (attention.cu and attention_mma.cu only; the step kernel takes the
  // contiguous form): element (b, h, i, 0) of q, k, v and y at b * batch + h * head + i * row
  // of its pointer, a row's D (or Dv) elements contiguous. q, k and v then point into one
  // stacked projection [batch, sq, (heads + 2 kv_heads) d] and y into [batch, sq, heads dv].
  bool packed = false;
  struct Layout {
    int64_t batch = 0, head = 0, row = 0;
  } q_layout, k_layout, v_layout, y_layout;
};

// The layouts of contiguous q [batch, heads, sq, d], k and v [kv_batch, kv_heads, sk, d or dv]
// and y [batch, heads, sq, dv] (packed false), from the sizes.
inline void set_contiguous_layouts(AttentionArgs& p) {
  p.packed = false;
  p.q_layout = {p.heads * p.sq * p.d, p.sq * p.d, p.d};
  p.k_layout = {p.kv_heads * p.sk * p.d, p.sk * p.d, p.d};
  p.v_layout = {p.kv_heads * p.sk * p.dv, p.sk * p.dv, p.dv};
  p.y_layout = {p.heads * p.sq * p.dv, p.sq * p.dv, p.dv};
}

void launch_attention(const AttentionArgs& args, cudaStream_t stream);

#if defined(__CUDACC__)
// Keys the queries of batch b may see: kv_length[b], or sk without kv_length. A length outside
// [0, sk] is clamped into it, and sets error_bit where `report` (one thread per batch reports).
__device__ __forceinline__ int64_t kv_limit(const AttentionArgs& p, int64_t b, bool report) {
  if (!p.kv_length) return p.sk;
  const int64_t len = p.kv_length_type == DType::I64 ? static_cast<const int64_t*>(p.kv_length)[b]
                                                     : static_cast<const int32_t*>(p.kv_length)[b];
  if (len >= 0 && len <= p.sk) return len;
  if (report) atomicOr(p.error, p.error_bit);
  return len < 0 ? 0 : p.sk;
}

// Of the first `len` keys, how many query i sees: all, or with causal those j <= i + len - sq.
// Never decreases with i.
__device__ __forceinline__ int64_t keys_seen(const AttentionArgs& p, int64_t i, int64_t len) {
  if (!p.causal) return len;
  const int64_t seen = i + len - p.sq + 1;
  return seen < 0 ? 0 : seen > len ? len : seen;
}

// The row of k and v a kernel's k and v pointers for batch b start from: b, or with kv_rows
// row 0 (k and v may have fewer rows than q then); kv_batch's rows are reached from it.
__device__ __forceinline__ int64_t kv_base(const AttentionArgs& p, int64_t b) { return p.kv_rows ? 0 : b; }

// The row of k and v whose key and value j batch b reads: kv_rows[b, j], or b without kv_rows.
__device__ __forceinline__ int64_t kv_batch(const AttentionArgs& p, int64_t b, int64_t j) {
  if (!p.kv_rows) return b;
  const int64_t at = b * p.sk + j;
  const int64_t from = p.kv_rows_type == DType::I64 ? static_cast<const int64_t*>(p.kv_rows)[at]
                                                    : static_cast<const int32_t*>(p.kv_rows)[at];
  if (from >= 0 && from < p.kv_batch) return from;
  atomicOr(p.error, p.index_error_bit);
  return 0;
}
#endif

}  // namespace kiln::cuda

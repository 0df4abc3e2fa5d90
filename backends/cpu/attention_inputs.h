// What the attention kernels (reference and fast) read from a node and its inputs: the
// attributes; Q [B, H, Sq, D], K [Bkv, Hkv, Sk, D], V [Bkv, Hkv, Sk, Dv] (Bkv = B without
// kv_rows), kv_length, the mask and kv_rows; and per query row where its query, keys, values
// and mask entries are and how many keys it sees.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/backend.h"

namespace kiln::cpu {

struct AttentionAttrs {
  double scale = 0;  // 0: 1 / sqrt(D)
  bool causal = false;
};
AttentionAttrs attention_attrs(const Graph& graph, int node);

class AttentionRows {
 public:
  // Checks kv_length against Sk (per batch, in [0, Sk]) and the kv_rows a row sees against Bkv.
  AttentionRows(const KernelArgs& a, const AttentionAttrs& attrs);

  struct Row {
    const float* q;
    const float* mask;  // null when there is none; steps along the keys by mask_stride()
    int64_t seen;       // keys the row sees: past kv_length, or after the row under causal, are skipped
    const float* key(int64_t j) const { return k + (from ? from[j] * k_batch : 0) + j * d; }
    const float* value(int64_t j) const { return v + (from ? from[j] * v_batch : 0) + j * dv; }

    // Key j is at k + j * d, or with kv_rows at k + from[j] * k_batch + j * d (k is then batch
    // 0's); likewise the values.
    const float *k, *v;
    const int64_t* from;
    int64_t k_batch, v_batch, d, dv;
  };
  int64_t count() const { return nb_ * nh_ * sq_; }  // rows, in the output's order
  Row row(int64_t r) const;

  int64_t d() const { return d_; }
  int64_t batch() const { return nb_; }
  int64_t kv_heads() const { return nkv_; }
  int64_t sq() const { return sq_; }
  int64_t rows_per_kv_head() const { return sq_ * (nh_ / nkv_); }
  const float* keys() const { return k_; }                 // K [Bkv, Hkv, Sk, D]
  bool gathers_rows() const { return !kv_rows_.empty(); }  // keys and values come from other batches' rows
  int64_t dv() const { return dv_; }
  int64_t sk() const { return sk_; }
  double scale() const { return scale_; }
  int64_t mask_stride() const { return mask_stride_[3]; }

 private:
  const float *q_, *k_, *v_, *mask_ = nullptr;
  int64_t nb_, nh_, sq_, d_, nkv_, sk_, dv_;
  double scale_;
  bool causal_;
  int64_t mask_stride_[4] = {0, 0, 0, 0};  // along each of [B, H, Sq, Sk]: 0 where it broadcasts
  std::vector<int64_t> lengths_;           // kv_length per batch; Sk where there is none
  std::vector<int64_t> kv_rows_;           // [B, Sk] when the node has kv_rows
};

}  // namespace kiln::cpu

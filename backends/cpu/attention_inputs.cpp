#include "backends/cpu/attention_inputs.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu/cpu_kernel.h"
#include "core/dtype.h"
#include "core/error.h"

namespace kiln::cpu {

namespace {

enum : int { Q = 0, K, V, Mask, KvLength, KvRows };

}  // namespace

AttentionAttrs attention_attrs(const Graph& graph, int node) {
  const Node& n = graph.nodes()[node];
  return {n.attrs.get_float("scale"), n.attrs.get_int("causal") != 0};
}

AttentionRows::AttentionRows(const KernelArgs& a, const AttentionAttrs& attrs) {
  const TensorRef &q = a.inputs[Q], &k = a.inputs[K], &v = a.inputs[V];
  q_ = q.as<const float>();
  k_ = k.as<const float>();
  v_ = v.as<const float>();
  nb_ = q.shape[0], nh_ = q.shape[1], sq_ = q.shape[2], d_ = q.shape[3];
  nkv_ = k.shape[1], sk_ = k.shape[2], dv_ = v.shape[3];
  scale_ = attrs.scale != 0 ? attrs.scale : 1.0 / std::sqrt(static_cast<double>(d_));
  causal_ = attrs.causal;
  lengths_.assign(static_cast<size_t>(nb_), sk_);
  if (a.inputs.size() > KvLength && a.inputs[KvLength].data) {
    const TensorRef& t = a.inputs[KvLength];
    for (int64_t b = 0; b < nb_; ++b) {
      lengths_[b] = index_at(t, b);
      KILN_CHECK(lengths_[b] >= 0 && lengths_[b] <= sk_, "[attention] {}: kv_length[{}] = {} is out of range [0, {}]",
                 a.node->name, b, lengths_[b], sk_);
    }
  }
  if (a.inputs.size() > KvRows && a.inputs[KvRows].data) {
    const TensorRef& t = a.inputs[KvRows];
    const int64_t kv_batch = k.shape[0];  // may differ from q's with kv_rows
    kv_rows_.resize(static_cast<size_t>(nb_ * sk_));
    for (int64_t b = 0; b < nb_; ++b)
      for (int64_t j = 0; j < sk_; ++j) {
        const int64_t from = index_at(t, b * sk_ + j);
        // Entries past the keys a row sees are never read, and may hold anything.
        KILN_CHECK(j >= lengths_[b] || (from >= 0 && from < kv_batch),
                   "[attention] {}: kv_rows[{}, {}] = {} is out of range [0, {})", a.node->name, b, j, from, kv_batch);
        kv_rows_[b * sk_ + j] = j < lengths_[b] ? from : 0;
      }
  }
  if (a.inputs.size() > Mask && a.inputs[Mask].data) {
    const Shape& shape = a.inputs[Mask].shape;
    mask_ = a.inputs[Mask].as<const float>();
    int64_t s = 1;
    for (size_t i = shape.size(); i-- > 0;) {
      mask_stride_[4 - shape.size() + i] = shape[i] == 1 ? 0 : s;
      s *= shape[i];
    }
  }
}

AttentionRows::Row AttentionRows::row(int64_t r) const {
  const int64_t b = r / (nh_ * sq_), h = r / sq_ % nh_, i = r % sq_, g = h / (nh_ / nkv_);
  const int64_t len = lengths_[b];
  const int64_t* from = kv_rows_.empty() ? nullptr : kv_rows_.data() + b * sk_;
  const int64_t kv = ((from ? 0 : b) * nkv_ + g) * sk_;
  Row row;
  row.q = q_ + r * d_;
  row.mask = mask_ ? mask_ + b * mask_stride_[0] + h * mask_stride_[1] + i * mask_stride_[2] : nullptr;
  row.seen = causal_ ? std::clamp<int64_t>(i + len - sq_ + 1, 0, len) : len;
  row.k = k_ + kv * d_;
  row.v = v_ + kv * dv_;
  row.from = from;
  row.k_batch = nkv_ * sk_ * d_;
  row.v_batch = nkv_ * sk_ * dv_;
  row.d = d_;
  row.dv = dv_;
  return row;
}

}  // namespace kiln::cpu

// attention: fused scaled-dot-product attention,
//   y[b, h, i] = sum_j softmax_j(scale * q[b, h, i] . k[b, g, j] + mask[b, h, i, j]) v[b, g, j]
// with q [B, H, Sq, D], k [B, Hkv, Sk, D], v [B, Hkv, Sk, Dv] -> y [B, H, Sq, Dv] (q's type).
// With kv_rows, k and v may have another batch size Bkv than q (below).
// Grouped-query attention: H % Hkv == 0 and head h reads kv head g = h / (H / Hkv).
//   mask (optional): additive, any float type, broadcasts to [B, H, Sq, Sk].
//   kv_length (optional): i32 or i64 [B], each in [0, Sk]: keys at j >= kv_length[b] are
//     ignored, so a KV cache can have a fixed capacity Sk and hold L = kv_length[b] keys.
//   kv_rows (optional): i32 or i64 [B, Sk]: key and value j of batch row b are those of row
//     kv_rows[b, j] of k and v (same head, same position j), which must be in [0, Bkv) for the
//     positions below kv_length[b] (the others are not read). Beam search keeps one KV
//     cache row per beam and, when beams are reordered, rewrites this table of where each
//     position of a beam's history lives instead of moving the cache rows themselves; and
//     the beams of a source read its cross-attention keys from one row (Bkv sources, B beams).
//   scale: 0 (the default) means 1 / sqrt(D).
//   causal: query i sees key j only if j <= i + (L - Sq), L being kv_length[b] or Sk: the
//     queries are the last Sq positions of the L, so a decoder step (Sq = 1) sees all L keys.
// A query that can see no key (all masked) gives zeros, as softmax does for a -inf row.
// Decomposition (no kv_length or kv_rows, H == Hkv): matmul(q, k, transpose_b, alpha=scale) -> add mask
// (and a 0 / -inf causal mask) -> softmax -> matmul(., v).
#include <cmath>

#include "core/dtype.h"
#include "core/error.h"
#include "graph/ops/attention.h"

namespace kiln {

std::vector<AttrSpec> attention_attrs() {
  return {optional_attr("scale", AttrType::Float, 0.0), optional_attr("causal", AttrType::Int, int64_t{0})};
}

void check_attention_attrs(const Node& n, const char* op) {
  KILN_CHECK(std::isfinite(n.attrs.get_float("scale")), "[{}] {}: scale must be finite", op, n.name);
  const int64_t causal = n.attrs.get_int("causal");
  KILN_CHECK(causal == 0 || causal == 1, "[{}] {}: causal must be 0 or 1", op, n.name);
}

void check_kv_table_dtypes(const Node& n, const std::vector<std::optional<DType>>& in, size_t kv_length) {
  if (in.size() > kv_length && in[kv_length]) require_integer(in[kv_length], n, "kv_length");
  if (in.size() > kv_length + 1 && in[kv_length + 1]) require_integer(in[kv_length + 1], n, "kv_rows");
}

void check_kv_table_shapes(const Node& n, const std::vector<std::optional<Shape>>& in, size_t kv_length, int64_t b,
                           int64_t sk, const char* op) {
  if (in.size() > kv_length && in[kv_length])
    KILN_CHECK(*in[kv_length] == Shape{b}, "[{}] {}: kv_length {} must be [{}]", op, n.name, to_string(*in[kv_length]),
               b);
  if (in.size() > kv_length + 1 && in[kv_length + 1])
    KILN_CHECK(*in[kv_length + 1] == (Shape{b, sk}), "[{}] {}: kv_rows {} must be [{}, {}]", op, n.name,
               to_string(*in[kv_length + 1]), b, sk);
}

namespace {

enum : int { Q = 0, K, V, Mask, KvLength, KvRows };

class AttentionOp : public OpDef {
 public:
  std::string name() const override { return "attention"; }
  std::vector<OpInput> inputs() const override {
    return {{"q"}, {"k"}, {"v"}, {"mask", true}, {"kv_length", true}, {"kv_rows", true}};
  }
  std::vector<AttrSpec> attributes() const override { return attention_attrs(); }
  void check_attrs(const Node& n) const override { check_attention_attrs(n, "attention"); }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    require_float(in[Q], n, "q");
    KILN_CHECK(*in[Q] != DType::F8E4M3, "[attention] {}: no FP8 attention", n.name);
    require_same(in[Q], in[K], n);
    require_same(in[Q], in[V], n);
    if (in.size() > Mask && in[Mask]) {
      require_float(in[Mask], n, "mask");
      KILN_CHECK(*in[Mask] != DType::F8E4M3, "[attention] {}: no FP8 mask", n.name);
    }
    check_kv_table_dtypes(n, in, KvLength);
    return {*in[Q]};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    require_rank(in[Q], 4, n, "q");
    require_rank(in[K], 4, n, "k");
    require_rank(in[V], 4, n, "v");
    const Shape &q = *in[Q], &k = *in[K], &v = *in[V];
    const int64_t b = q[0], h = q[1], sq = q[2], d = q[3], hkv = k[1], sk = k[2];
    const bool gathers = in.size() > KvRows && in[KvRows];
    KILN_CHECK((k[0] == b || (gathers && k[0] > 0)) && k[3] == d && v[0] == k[0] && v[1] == hkv && v[2] == sk,
               "[attention] {}: q {}, k {} and v {} do not fit [B, H, Sq, D], [Bkv, Hkv, Sk, D], [Bkv, Hkv, Sk, Dv] "
               "(Bkv = B without kv_rows)",
               n.name, to_string(q), to_string(k), to_string(v));
    KILN_CHECK(hkv > 0 && h % hkv == 0, "[attention] {}: {} query heads do not group over {} kv heads", n.name, h, hkv);
    KILN_CHECK(d > 0, "[attention] {}: q {} has an empty head dim", n.name, to_string(q));
    const Shape scores = {b, h, sq, sk};
    if (in.size() > Mask && in[Mask])
      KILN_CHECK(in[Mask]->size() <= 4 && broadcast(scores, *in[Mask], "[attention] " + n.name) == scores,
                 "[attention] {}: mask {} does not broadcast to the scores {}", n.name, to_string(*in[Mask]),
                 to_string(scores));
    check_kv_table_shapes(n, in, KvLength, b, sk, "attention");
    return {{b, h, sq, v[3]}};
  }
};

}  // namespace

KILN_REGISTER_OPS(attention) { registry.add(std::make_unique<AttentionOp>()); }

}  // namespace kiln

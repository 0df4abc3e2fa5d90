// kv_cache_attention: a decoder's self-attention over its KV cache, this call's keys and values
// appended first, all read from one stacked q/k/v projection:
//   k_cache [B, Hkv, S, D] and v_cache [B, Hkv, S, Dv]: states, updated in place;
//   qkv [B, T, H * D + Hkv * D + Hkv * Dv]: per row and position the H query heads, then the Hkv
//     key heads, then the Hkv value heads (the output of a stacked projection);
//   offset [1] or [B] (i32 or i64): row b's T new keys and values go to positions offset[b] ..
//     offset[b] + T - 1 of its row of the caches (kernels check the range);
//   kv_length [B], kv_rows [B, S] (optional): as attention's.
// Outputs: the two caches (their inputs' memory) and y [B, H, T, Dv] = attention(q, k_cache,
// v_cache, kv_length, kv_rows) of the updated caches, q[b, h, t] being qkv[b, t]'s head h, with
// attention's scale and causal.
// Decomposition: split(qkv) into q, k, v; each reshaped to [B, T, heads, D] and transposed to
// [B, heads, T, D]; dynamic_update_slice of each cache along axis 2 at offset; attention.
// One node instead of those four launches (split, two cache writes, attention; the reshapes
// are views) is what a decoder step on the GPU wants: its launches, not its bytes, are its time.
#include "core/dtype.h"
#include "core/error.h"
#include "graph/ops/attention.h"

namespace kiln {

namespace {

enum : int { KCache = 0, VCache, Qkv, Offset, KvLength, KvRows };

class KvCacheAttentionOp : public OpDef {
 public:
  std::string name() const override { return "kv_cache_attention"; }
  std::vector<OpInput> inputs() const override {
    return {{"k_cache"}, {"v_cache"}, {"qkv"}, {"offset"}, {"kv_length", true}, {"kv_rows", true}};
  }
  std::vector<AttrSpec> attributes() const override { return attention_attrs(); }
  int num_outputs(const Node&) const override { return 3; }
  void check_attrs(const Node& n) const override { check_attention_attrs(n, "kv_cache_attention"); }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    require_float(in[Qkv], n, "qkv");
    KILN_CHECK(*in[Qkv] != DType::F8E4M3, "[kv_cache_attention] {}: no FP8 attention", n.name);
    require_same(in[Qkv], in[KCache], n);
    require_same(in[Qkv], in[VCache], n);
    require_integer(in[Offset], n, "offset");
    check_kv_table_dtypes(n, in, KvLength);
    return {*in[KCache], *in[VCache], *in[Qkv]};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    require_rank(in[KCache], 4, n, "k_cache");
    require_rank(in[VCache], 4, n, "v_cache");
    require_rank(in[Qkv], 3, n, "qkv");
    const Shape &kc = *in[KCache], &vc = *in[VCache], &qkv = *in[Qkv];
    const int64_t b = kc[0], hkv = kc[1], s = kc[2], d = kc[3], dv = vc[3], t = qkv[1];
    KILN_CHECK(vc[0] == b && vc[1] == hkv && vc[2] == s && qkv[0] == b,
               "[kv_cache_attention] {}: caches {} and {} and qkv {} do not fit [B, Hkv, S, D], [B, Hkv, S, Dv], "
               "[B, T, W]",
               n.name, to_string(kc), to_string(vc), to_string(qkv));
    KILN_CHECK(hkv > 0 && d > 0 && dv > 0 && t >= 1 && t <= s,
               "[kv_cache_attention] {}: {} new positions for a cache {}", n.name, t, to_string(kc));
    const int64_t q_width = qkv[2] - hkv * (d + dv);
    KILN_CHECK(q_width > 0 && q_width % d == 0 && (q_width / d) % hkv == 0,
               "[kv_cache_attention] {}: qkv's {} columns are not H query heads of {} and {} key and value heads "
               "(H a multiple of {})",
               n.name, qkv[2], d, hkv, hkv);
    KILN_CHECK(*in[Offset] == Shape{1} || *in[Offset] == Shape{b},
               "[kv_cache_attention] {}: offset {} must be [1] or [{}]", n.name, to_string(*in[Offset]), b);
    check_kv_table_shapes(n, in, KvLength, b, s, "kv_cache_attention");
    return {kc, vc, {b, q_width / d, t, dv}};
  }
  int aliases_input(int output) const override { return output < 2 ? output : -1; }
  bool in_place() const override { return true; }
};

}  // namespace

KILN_REGISTER_OPS(kv_cache_attention) { registry.add(std::make_unique<KvCacheAttentionOp>()); }

}  // namespace kiln

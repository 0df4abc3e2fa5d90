// qkv_attention: self-attention read from one stacked q/k/v projection, its heads merged in the
// output:
//   qkv [B, T, (H + 2 Hkv) D]: per row and position the H query heads, then the Hkv key heads,
//     then the Hkv value heads (the output of a stacked projection);
//   mask (optional): additive, f32, f16 or bf16, broadcasts to the scores [B, H, T, T];
//   kv_length (optional): i32 or i64 [B], each in [0, T]: keys at j >= kv_length[b] are ignored
//     (a padded batch's source lengths);
//   heads (H) and kv_heads (Hkv; H a multiple of it), scale and causal as attention's.
// y [B, T, H D]: y[b, t, h D .. h D + D) = attention(q, k, v, mask, kv_length)[b, h, t], q, k
// and v being qkv's parts with their heads moved first.
// Decomposition: split(qkv) into q, k, v; each reshaped to [B, T, heads, D] and transposed to
// [B, heads, T, D]; attention; the output transposed back to [B, T, H, D] and reshaped. One node
// instead of five launches (the split, three transposes in, one out; the reshapes are views):
// an encoder layer at one source is a dozen launches, and their count, not their bytes, is its
// time on a GPU.
#include "core/checked_math.h"
#include "core/dtype.h"
#include "core/error.h"
#include "graph/ops/attention.h"

namespace kiln {

namespace {

enum : int { Qkv = 0, Mask, KvLength };

class QkvAttentionOp : public OpDef {
 public:
  std::string name() const override { return "qkv_attention"; }
  std::vector<OpInput> inputs() const override { return {{"qkv"}, {"mask", true}, {"kv_length", true}}; }
  std::vector<AttrSpec> attributes() const override {
    std::vector<AttrSpec> a = attention_attrs();
    a.push_back(required_attr("heads", AttrType::Int));
    a.push_back(required_attr("kv_heads", AttrType::Int));
    return a;
  }
  void check_attrs(const Node& n) const override {
    check_attention_attrs(n, "qkv_attention");
    const int64_t h = n.attrs.get_int("heads"), hkv = n.attrs.get_int("kv_heads");
    KILN_CHECK(h > 0 && hkv > 0 && h % hkv == 0, "[qkv_attention] {}: {} query heads do not group over {} kv heads",
               n.name, h, hkv);
  }
  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    require_float(in[Qkv], n, "qkv");
    KILN_CHECK(*in[Qkv] != DType::F8E4M3, "[qkv_attention] {}: no FP8 attention", n.name);
    if (in.size() > Mask && in[Mask]) {
      require_float(in[Mask], n, "mask");
      KILN_CHECK(*in[Mask] != DType::F8E4M3, "[qkv_attention] {}: no FP8 mask", n.name);
    }
    if (in.size() > KvLength && in[KvLength]) require_integer(in[KvLength], n, "kv_length");
    return {*in[Qkv]};
  }
  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    require_rank(in[Qkv], 3, n, "qkv");
    const Shape& qkv = *in[Qkv];
    const int64_t b = qkv[0], t = qkv[1], h = n.attrs.get_int("heads"), hkv = n.attrs.get_int("kv_heads");
    // Attributes come from untrusted bundles: their sum is checked (check_attrs made both positive).
    const uint64_t parts =
        checked_add(static_cast<uint64_t>(h), checked_mul(2, static_cast<uint64_t>(hkv), "heads"), "heads");
    KILN_CHECK(qkv[2] > 0 && static_cast<uint64_t>(qkv[2]) % parts == 0,
               "[qkv_attention] {}: qkv's {} columns are not {} query and 2 x {} key and value heads of one width",
               n.name, qkv[2], h, hkv);
    const int64_t d = static_cast<int64_t>(static_cast<uint64_t>(qkv[2]) / parts);  // h * d <= qkv[2]
    const Shape scores = {b, h, t, t};
    if (in.size() > Mask && in[Mask])
      KILN_CHECK(in[Mask]->size() <= 4 && broadcast(scores, *in[Mask], "[qkv_attention] " + n.name) == scores,
                 "[qkv_attention] {}: mask {} does not broadcast to the scores {}", n.name, to_string(*in[Mask]),
                 to_string(scores));
    if (in.size() > KvLength && in[KvLength])
      KILN_CHECK(*in[KvLength] == Shape{b}, "[qkv_attention] {}: kv_length {} must be [{}]", n.name,
                 to_string(*in[KvLength]), b);
    return {{b, t, h * d}};
  }
};

}  // namespace

KILN_REGISTER_OPS(qkv_attention) { registry.add(std::make_unique<QkvAttentionOp>()); }

}  // namespace kiln

// qkv_attention against its decomposition (split, heads moved first, attention, heads moved back
// and merged): one position and a few (the GPU's CUDA-core kernel, a warp per 4 rows and per
// row), 16 or more (its tensor-core kernel: tiles of 64 keys, a partial last one), an encoder at
// one source of bart-large's width and a batch of padded sources (kv_length, a length of 0),
// a padding mask in f32, a bias mask with an explicit scale, causal, grouped-query heads, head
// widths that are not a multiple of 8 (element loads) or are padded up to the kernel's, and
// heads too wide for the tensor cores (CUDA cores at many rows, and past 256 columns).
#include "core/dtype.h"
#include "tests/ops/op_case.h"

namespace kiln::test {

namespace {

enum class MaskKind { None, Padding, Bias };

struct QkvShape {
  int64_t b, h, hkv, t, d;
  const char* variant;
  bool causal = false;
  MaskKind mask = MaskKind::None;
  double scale = 0;                   // 0: 1 / sqrt(D)
  std::vector<float> kv_length = {};  // per batch; empty: none
};

Shape mask_shape(const QkvShape& s) {
  return s.mask == MaskKind::Padding ? Shape{s.b, 1, 1, s.t} : Shape{1, s.h, s.t, s.t};
}

// 0 / -inf over the keys, about one in three -inf, every row keeping its first key.
std::vector<float> padding_mask(OpCase& c, const QkvShape& s) {
  std::vector<float> m(static_cast<size_t>(s.b * s.t));
  std::uniform_int_distribution<int> d(0, 2);
  for (size_t i = 0; i < m.size(); ++i) m[i] = i % s.t != 0 && d(c.rng) == 0 ? -INFINITY : 0.0f;
  return m;
}

Graph decomposition(const QkvShape& s, DType t, DType mask_type) {
  Graph g;
  const int qkv = g.add_input("qkv", t, fixed_shape({s.b, s.t, (s.h + 2 * s.hkv) * s.d}));
  const auto parts =
      g.add_node("split", "parts", {qkv},
                 {{"axis", int64_t{-1}}, {"sizes", std::vector<int64_t>{s.h * s.d, s.hkv * s.d, s.hkv * s.d}}});
  auto heads_first = [&](int x, const std::string& name, int64_t heads) {
    const int r = g.add("reshape", name + ".heads", {x}, {{"shape", std::vector<int64_t>{0, 0, heads, s.d}}});
    return g.add("transpose", name + ".heads_first", {r}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  };
  std::vector<int> in = {heads_first(parts[0], "q", s.h), heads_first(parts[1], "k", s.hkv),
                         heads_first(parts[2], "v", s.hkv), -1};
  if (s.mask != MaskKind::None) in[3] = g.add_input("mask", mask_type, fixed_shape(mask_shape(s)));
  if (!s.kv_length.empty()) in.push_back(g.add_input("kv_length", DType::I64, fixed_shape({s.b})));
  const int y = g.add("attention", "attention", in, {{"scale", s.scale}, {"causal", int64_t{s.causal}}});
  const int moved = g.add("transpose", "heads_last", {y}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  g.add_output("y0", g.add("reshape", "merged", {moved}, {{"shape", std::vector<int64_t>{0, 0, -1}}}));
  return g;
}

}  // namespace

KILN_OP_CASES(qkv_attention) {
  using M = MaskKind;
  const std::vector<QkvShape> shapes = {
      {1, 2, 2, 1, 8, "one_position"},
      {2, 3, 3, 5, 12, "few_rows"},
      {2, 4, 2, 9, 20, "gqa_odd_width", false, M::Bias, 0.3},
      {2, 2, 2, 6, 16, "causal", true},
      {2, 4, 4, 19, 16, "rows_padding_mask", false, M::Padding},
      {2, 2, 2, 17, 24, "rows_kv_length_zero", false, M::None, 0, {0, 17}},
      {1, 16, 16, 48, 64, "encoder_one_source", false, M::None, 0, {48}},
      {3, 8, 8, 70, 64, "encoder_padded_batch", false, M::None, 0, {70, 41, 9}},
      {2, 4, 2, 80, 48, "tiles_gqa_padded_heads_causal", true, M::None, 0, {80, 65}},
      {1, 2, 2, 130, 32, "tiles_bias_mask", false, M::Bias},
      // Heads past the tensor-core kernel's 128 (in fp16 too: CUDA cores, four rows a warp, and
      // past 256 columns, two column chunks).
      {2, 2, 2, 20, 136, "rows_wide_heads", false, M::None, 0, {20, 13}},
      {1, 2, 1, 17, 264, "rows_past_256_gqa_causal", true},
  };
  std::vector<OpCase> cases;
  for (DType t : {DType::F32, DType::F16})
    for (const QkvShape& s : shapes) {
      OpCase c("qkv_attention", t, {s.b, s.t, (s.h + 2 * s.hkv) * s.d}, s.variant);
      std::vector<int> in = {c.input("qkv", t, {s.b, s.t, (s.h + 2 * s.hkv) * s.d}), -1};
      // Padding masks in f32 whatever qkv's type: the mixed-type path.
      const DType mask_type = s.mask == M::Padding ? DType::F32 : t;
      if (s.mask == M::Padding)
        in[1] = c.input_values("mask", mask_type, mask_shape(s), padding_mask(c, s));
      else if (s.mask == M::Bias)
        in[1] = c.input("mask", mask_type, mask_shape(s));
      if (!s.kv_length.empty()) in.push_back(c.input_values("kv_length", DType::I64, {s.b}, s.kv_length));
      const Attrs attrs = {{"scale", s.scale}, {"causal", int64_t{s.causal}}, {"heads", s.h}, {"kv_heads", s.hkv}};
      c.output(c.graph.add("qkv_attention", "attention", in, attrs));
      c.decomposition = [s, t, mask_type] { return decomposition(s, t, mask_type); };
      cases.push_back(std::move(c));
    }
  return cases;
}

}  // namespace kiln::test

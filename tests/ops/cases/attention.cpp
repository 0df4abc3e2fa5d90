// attention: size 1, odd sizes with Dv != D, sequences past 64, causal with Sq == Sk and with a
// prefix (Sq < Sk), padding masks (with a fully masked row, and in f32 under f16 q), finite bias
// masks, a rank-1 mask, an explicit scale, kv_length (i32 and i64, a decoder step, a length of
// 0), grouped-query heads, decoder-step shapes (many keys, heads of 64 to 160 wide), and 16 or
// more query rows (image tokens) with masks, causal and kv_length, and the shapes of the GPU's
// tensor-core kernel (tiles of 64 keys, padded head widths); thousands of step rows; kv_rows (beam search's table
// of cache rows) on each GPU kernel's path, its entries past kv_length out of range (never read), and with fewer
// rows of k and v than queries (a source's keys shared by its beams). Cases without
// kv_length, kv_rows or GQA also check the decomposition matmul -> add mask -> softmax -> matmul, with causal as an
// explicit 0 / -inf constant mask.
#include <cmath>

#include "core/dtype.h"
#include "tests/ops/op_case.h"

namespace kiln::test {

namespace {

enum class MaskKind { None, Padding, Bias, Rank1 };

struct AttentionShape {
  int64_t b, h, hkv, sq, sk, d, dv;
  bool causal = false;
  MaskKind mask = MaskKind::None;
  double scale = 0;                   // 0: 1 / sqrt(D)
  std::vector<float> kv_length = {};  // per batch; empty: none
  DType kv_dtype = DType::I32;
  const char* variant = "";
  bool kv_rows = false;  // a kv_rows table of kv_dtype
  int64_t kv_batch = 0;  // rows of k and v with kv_rows (0: b)
  // q made by a node (q_in + q_in): k, v, kv_length and kv_rows are then settled inputs, which
  // the GPU's step kernel reads before it waits for that node (TensorRef::settled).
  bool settled = false;
  int64_t kb() const { return kv_batch ? kv_batch : b; }
};

// Key j of batch b from row (7b + 3j + 1) mod Bkv of k and v; past b's kv_length, an index no
// row has.
std::vector<float> kv_rows_table(const AttentionShape& s) {
  std::vector<float> t(static_cast<size_t>(s.b * s.sk));
  for (int64_t b = 0; b < s.b; ++b)
    for (int64_t j = 0; j < s.sk; ++j) {
      const int64_t len = s.kv_length.empty() ? s.sk : static_cast<int64_t>(s.kv_length[b]);
      t[b * s.sk + j] = j < len ? static_cast<float>((7 * b + 3 * j + 1) % s.kb()) : 1000.0f;
    }
  return t;
}

// Lengths 1 .. sk spread over b batches (a batch of beams at different steps).
std::vector<float> spread_lengths(int64_t b, int64_t sk) {
  std::vector<float> out(static_cast<size_t>(b));
  for (int64_t i = 0; i < b; ++i) out[i] = static_cast<float>(1 + (i * 37) % sk);
  return out;
}

Shape mask_shape(const AttentionShape& s) {
  switch (s.mask) {
    case MaskKind::Padding:
      return {s.b, 1, s.sq, s.sk};
    case MaskKind::Bias:
      return {1, s.h, s.sq, s.sk};
    case MaskKind::Rank1:
      return {s.sk};
    case MaskKind::None:
      break;
  }
  return {};
}

// 0 / -inf, about one in three -inf, and batch 0's first query row all -inf.
std::vector<float> padding_mask(OpCase& c, const Shape& shape) {
  std::vector<float> m(static_cast<size_t>(numel(shape)));
  std::uniform_int_distribution<int> d(0, 2);
  for (size_t i = 0; i < m.size(); ++i)
    m[i] = i < static_cast<size_t>(shape.back()) || d(c.rng) == 0 ? -INFINITY : 0.0f;
  return m;
}

// The decomposition's graph: the same inputs, and a constant "causal_mask" [Sq, Sk] when causal.
Graph decomposition(const AttentionShape& s, DType t, DType mask_type) {
  Graph g;
  const int q = g.add_input("q", t, fixed_shape({s.b, s.h, s.sq, s.d}));
  const int k = g.add_input("k", t, fixed_shape({s.b, s.hkv, s.sk, s.d}));
  const int v = g.add_input("v", t, fixed_shape({s.b, s.hkv, s.sk, s.dv}));
  const double scale = s.scale != 0 ? s.scale : 1.0 / std::sqrt(static_cast<double>(s.d));
  int scores = g.add("matmul", "scores", {q, k}, {{"transpose_b", int64_t{1}}, {"alpha", scale}});
  if (s.mask != MaskKind::None) {
    int mask = g.add_input("mask", mask_type, fixed_shape(mask_shape(s)));
    if (mask_type != t) mask = g.add("cast", "mask_cast", {mask}, {{"to", std::string(dtype_name(t))}});
    scores = g.add("add", "masked", {scores, mask});
  }
  if (s.causal) scores = g.add("add", "causal", {scores, g.add_constant("causal_mask", t, {s.sq, s.sk})});
  const int probs = g.add("softmax", "probs", {scores});
  g.add_output("y0", g.add("matmul", "out", {probs, v}));
  return g;
}

}  // namespace

KILN_OP_CASES(attention) {
  using M = MaskKind;
  const std::vector<AttentionShape> shapes = {
      {1, 1, 1, 1, 1, 1, 1, false, M::None, 0, {}, DType::I32, "size1"},
      {2, 3, 3, 5, 7, 8, 6, false, M::None, 0, {}, DType::I32, "odd"},
      {1, 2, 2, 70, 70, 16, 16, true, M::None, 0, {}, DType::I32, "causal"},
      {2, 2, 2, 3, 9, 8, 8, true, M::None, 0, {}, DType::I32, "causal_prefix"},
      {2, 2, 2, 4, 70, 8, 8, false, M::Padding, 0, {}, DType::I32, "padding_mask"},
      {1, 3, 3, 5, 6, 4, 4, false, M::Bias, 0.3, {}, DType::I32, "bias_mask_scale"},
      {2, 2, 2, 4, 11, 8, 8, true, M::Rank1, 0, {}, DType::I32, "causal_rank1_mask"},
      {3, 2, 2, 1, 16, 8, 8, true, M::None, 0, {1, 16, 7}, DType::I32, "decode_kv_length"},
      {2, 2, 2, 3, 10, 8, 8, false, M::None, 0, {0, 6}, DType::I64, "kv_length_zero"},
      {2, 2, 2, 4, 12, 8, 8, true, M::None, 0, {4, 9}, DType::I64, "causal_kv_length"},
      {1, 4, 2, 5, 9, 8, 8, false, M::None, 0, {}, DType::I32, "gqa"},
      {2, 6, 1, 70, 70, 16, 8, true, M::None, 0, {}, DType::I32, "gqa_causal"},
      {2, 4, 2, 1, 20, 8, 8, true, M::Padding, 0, {3, 20}, DType::I64, "gqa_decode_mask_kv_length"},
      // Fewer than 16 rows with heads up to 128 wide (the GPU's step kernel): many keys (chunks
      // over all four warps), heads of 64 and of 128, D != Dv, widths that are not a multiple
      // of 8 (element loads), and heads past 128 (the generic kernel again).
      {2, 8, 8, 1, 300, 64, 64, true, M::None, 0, {300, 137}, DType::I64, "step_many_keys"},
      {1, 2, 2, 3, 150, 96, 128, false, M::Padding, 0, {}, DType::I32, "step_wide_heads"},
      {1, 2, 2, 2, 45, 20, 36, false, M::Bias, 0, {}, DType::I32, "step_odd_heads"},
      {1, 1, 1, 2, 40, 160, 160, true, M::None, 0, {}, DType::I32, "step_past_128"},
      // 16 query rows or more: a warp takes 4 rows at once (Sq not a multiple of 4 here)
      {2, 2, 2, 50, 50, 32, 64, false, M::None, 0, {}, DType::I32, "image_tokens"},
      {2, 2, 2, 19, 70, 8, 8, false, M::Padding, 0, {}, DType::I32, "rows_padding_mask"},
      {1, 3, 3, 18, 20, 4, 4, false, M::Bias, 0.3, {}, DType::I32, "rows_bias_mask"},
      {2, 2, 2, 17, 40, 8, 8, true, M::None, 0, {30, 40}, DType::I64, "rows_causal_kv_length"},
      // 16 rows or more in fp16 on the GPU's tensor-core kernel: key tiles of 64 with a partial
      // last one, PSA's 400 image tokens (d 32, dv 64), an encoder's padding mask, heads padded
      // up to the kernel's width (48 -> 64, 80 -> 128) with grouped-query heads and an f16 bias,
      // causal with kv_length at 128 wide, and a kv_length of 0 (rows that see nothing)
      {1, 2, 2, 400, 400, 32, 64, false, M::None, 0, {}, DType::I32, "psa_tokens"},
      {2, 4, 4, 70, 70, 64, 64, false, M::Padding, 0, {}, DType::I32, "encoder_padding_mask"},
      {1, 4, 2, 33, 65, 48, 80, false, M::Bias, 0.2, {}, DType::I32, "rows_gqa_padded_heads"},
      {2, 2, 2, 80, 100, 128, 128, true, M::None, 0, {100, 37}, DType::I64, "rows_causal_wide"},
      {2, 2, 2, 20, 30, 8, 8, false, M::None, 0, {0, 30}, DType::I32, "rows_kv_length_zero"},
      // kv_rows: decoder steps of beams (the step kernel, with GQA), heads past 128 (the generic
      // kernel), 16 rows or more, and no kv_length (every entry read)
      {4, 2, 2, 1, 12, 8, 8, true, M::None, 0, {5, 12, 1, 9}, DType::I32, "step_kv_rows", true},
      {4, 4, 2, 1, 70, 64, 64, true, M::Padding, 0, {70, 3, 33, 64}, DType::I64, "step_gqa_kv_rows", true},
      // Many step rows: the step kernel gives a row fewer warps as rows fill the GPU (on an
      // H200, 768 rows two warps each, 2560 one).
      {24, 32, 32, 1, 70, 64, 64, true, M::None, 0, spread_lengths(24, 70), DType::I64, "step_rows_2_warps", true},
      {80, 32, 32, 1, 70, 32, 32, false, M::Padding, 0, spread_lengths(80, 70), DType::I32, "step_rows_1_warp", true},
      {2, 1, 1, 2, 20, 160, 160, false, M::None, 0, {20, 11}, DType::I32, "kv_rows_past_128", true},
      {2, 2, 2, 17, 30, 8, 8, true, M::None, 0, {30, 20}, DType::I64, "rows_kv_rows", true},
      {3, 2, 2, 2, 9, 8, 8, false, M::Bias, 0, {}, DType::I32, "kv_rows_no_length", true},
      // Fewer rows of k and v than queries (the beams of a source reading its cross-attention
      // keys from one row): the step kernel, the generic one and 16 rows or more.
      {8,
       8,
       8,
       1,
       40,
       64,
       64,
       false,
       M::None,
       0,
       {40, 40, 7, 7, 40, 40, 33, 33},
       DType::I32,
       "step_kv_rows_shared",
       true,
       2},
      {4, 2, 2, 1, 20, 160, 160, false, M::None, 0, {20, 11, 20, 3}, DType::I64, "kv_rows_shared_past_128", true, 3},
      {3, 2, 2, 17, 30, 8, 8, false, M::Bias, 0, {}, DType::I32, "rows_kv_rows_shared", true, 1},
      // Settled keys and values (the step kernel's first chunk read before the wait) at 4, 2
      // and 1 warps a row: warps whose first chunk is past a row's keys, keys clamped to the
      // last one, grouped-query heads with D != Dv (lanes past d, past dv), a length of 0 under
      // a padding mask, kv_rows, and blocks with rows past the last.
      {2, 8, 8, 1, 300, 64, 64, true, M::None, 0, {300, 37}, DType::I64, "settled_4_warps", false, 0, true},
      {4, 4, 2, 1, 50, 48, 32, false, M::Padding, 0, {50, 0, 7, 33}, DType::I32, "settled_2_warps", true, 0, true},
      {3, 2, 2, 1, 20, 64, 64, true, M::None, 0, {20, 1, 7}, DType::I64, "settled_1_warp", true, 0, true},
  };
  std::vector<OpCase> cases;
  for (DType t : {DType::F32, DType::F16})
    for (const AttentionShape& s : shapes) {
      OpCase c("attention", t, {s.b, s.h, s.sq, s.d}, s.variant);
      int q = c.input(s.settled ? "q_in" : "q", t, {s.b, s.h, s.sq, s.d});
      if (s.settled) q = c.graph.add("add", "q", {q, q});
      const int k = c.input("k", t, {s.kb(), s.hkv, s.sk, s.d});
      const int v = c.input("v", t, {s.kb(), s.hkv, s.sk, s.dv});
      std::vector<int> in = {q, k, v, -1};
      // Padding masks in f32 whatever q's type: the mixed-type path.
      const DType mask_type = s.mask == M::Padding ? DType::F32 : t;
      if (s.mask != M::None) {
        const Shape ms = mask_shape(s);
        in[3] = s.mask == M::Padding ? c.input_values("mask", mask_type, ms, padding_mask(c, ms))
                                     : c.input("mask", mask_type, ms);
      }
      if (!s.kv_length.empty())
        in.push_back(c.input_values("kv_length", s.kv_dtype, {s.b}, s.kv_length));
      else if (s.kv_rows)
        in.push_back(-1);
      else if (in[3] < 0)
        in.pop_back();
      if (s.kv_rows) in.push_back(c.input_values("kv_rows", s.kv_dtype, {s.b, s.sk}, kv_rows_table(s)));
      Attrs attrs = {{"scale", s.scale}, {"causal", int64_t{s.causal}}};
      c.output(c.graph.add("attention", "attention", in, attrs));
      if (s.kv_length.empty() && !s.kv_rows && !s.settled && s.h == s.hkv) {
        if (s.causal) {
          std::vector<float> causal(static_cast<size_t>(s.sq * s.sk));
          for (int64_t i = 0; i < s.sq; ++i)
            for (int64_t j = 0; j < s.sk; ++j) causal[i * s.sk + j] = j <= i + s.sk - s.sq ? 0.0f : -INFINITY;
          c.constants["causal_mask"] = HostTensor::from_f32("causal_mask", {s.sq, s.sk}, causal);
        }
        c.decomposition = [s, t, mask_type] { return decomposition(s, t, mask_type); };
      }
      cases.push_back(std::move(c));
    }
  return cases;
}

}  // namespace kiln::test

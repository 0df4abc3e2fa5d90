// kv_cache_attention: caches filled with a history first (a dynamic_update_slice of the whole
// state), then one step (or a few positions) appended and attended over, against the
// decomposition (split, heads moved first, two dynamic_update_slice, attention), which also
// checks the updated caches. A decoder step with one offset per row and with one for all,
// grouped-query heads, D != Dv, no kv_length (every position read), several new positions under
// causal, the last position of the cache, a decoder step of the GPU's widths, and kv_rows
// tables: beam search's (a row's history in other rows, its new position its own) and one where
// rows read other rows' new positions (as if every row were written before any is read; the GPU
// kernel reads new positions from the projection). "Settled" cases start the states from random
// contents given with the inputs (no node writes them) and make qkv with a node before the
// attention, as a decoder step does: the GPU kernel then reads its first keys and values before
// it waits for that node (TensorRef::settled), with 1, 2 and 4 warps a row.
#include "core/dtype.h"
#include "tests/ops/op_case.h"

namespace kiln::test {

namespace {

struct CacheShape {
  int64_t b, h, hkv, t, s, d, dv;
  std::vector<float> offsets, kv_length;  // kv_length empty: none
  const char* variant;
  bool causal = false;
  int kv_rows = 0;       // 0: none; 1: beam search's table; 2: rows reading others' new positions
  bool settled = false;  // states given with the inputs, qkv made by a node (qkv_in + qkv_in)
};

// Row b's history from row (b + j) mod B at positions before its new ones; its new positions its
// own (1), or the next row's (2).
std::vector<float> kv_rows_table(const CacheShape& s) {
  std::vector<float> t(static_cast<size_t>(s.b * s.s));
  for (int64_t b = 0; b < s.b; ++b) {
    const int64_t first = static_cast<int64_t>(s.offsets.size() == 1 ? s.offsets[0] : s.offsets[b]);
    for (int64_t j = 0; j < s.s; ++j) {
      const bool fresh = j >= first && j < first + s.t;
      const int64_t from = fresh ? (s.kv_rows == 1 ? b : (b + 1) % s.b) : (b + j) % s.b;
      t[b * s.s + j] = static_cast<float>(from);
    }
  }
  return t;
}

Graph decomposition(const CacheShape& s, DType t, DType index) {
  Graph g;
  const int k_state = g.add_state("k_cache", t, fixed_shape({s.b, s.hkv, s.s, s.d}));
  const int v_state = g.add_state("v_cache", t, fixed_shape({s.b, s.hkv, s.s, s.dv}));
  const Attrs seq = {{"axis", int64_t{2}}};
  int k_cache = k_state, v_cache = v_state;
  if (!s.settled) {
    const int k_fill = g.add_input("k_fill", t, fixed_shape({s.b, s.hkv, s.s, s.d}));
    const int v_fill = g.add_input("v_fill", t, fixed_shape({s.b, s.hkv, s.s, s.dv}));
    const int zero = g.add_input("zero", index, fixed_shape({1}));
    k_cache = g.add("dynamic_update_slice", "k_fill", {k_state, k_fill, zero}, seq);
    v_cache = g.add("dynamic_update_slice", "v_fill", {v_state, v_fill, zero}, seq);
  }
  const Shape qkv_shape = {s.b, s.t, s.h * s.d + s.hkv * (s.d + s.dv)};
  int qkv = g.add_input(s.settled ? "qkv_in" : "qkv", t, fixed_shape(qkv_shape));
  if (s.settled) qkv = g.add("add", "qkv", {qkv, qkv});
  const int offset = g.add_input("offset", index, fixed_shape({static_cast<int64_t>(s.offsets.size())}));
  const auto parts =
      g.add_node("split", "parts", {qkv},
                 {{"axis", int64_t{-1}}, {"sizes", std::vector<int64_t>{s.h * s.d, s.hkv * s.d, s.hkv * s.dv}}});
  auto heads_first = [&](int x, const std::string& name, int64_t heads, int64_t width) {
    const int r = g.add("reshape", name + ".heads", {x}, {{"shape", std::vector<int64_t>{0, 0, heads, width}}});
    return g.add("transpose", name + ".heads_first", {r}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  };
  const int q = heads_first(parts[0], "q", s.h, s.d);
  const int keys =
      g.add("dynamic_update_slice", "k_step", {k_cache, heads_first(parts[1], "k", s.hkv, s.d), offset}, seq);
  const int values =
      g.add("dynamic_update_slice", "v_step", {v_cache, heads_first(parts[2], "v", s.hkv, s.dv), offset}, seq);
  std::vector<int> in = {q, keys, values, -1};
  in.push_back(s.kv_length.empty() ? -1 : g.add_input("kv_length", index, fixed_shape({s.b})));
  in.push_back(s.kv_rows ? g.add_input("kv_rows", index, fixed_shape({s.b, s.s})) : -1);
  const int y = g.add("attention", "attention", in, {{"causal", int64_t{s.causal}}});
  g.add_output("y0", keys);
  g.add_output("y1", values);
  g.add_output("y2", y);
  return g;
}

}  // namespace

KILN_OP_CASES(kv_cache_attention) {
  const std::vector<CacheShape> shapes = {
      {3, 4, 4, 1, 16, 8, 8, {5, 0, 15}, {6, 1, 16}, "step"},
      {2, 2, 2, 1, 10, 16, 16, {3}, {4, 4}, "one_offset"},
      {2, 4, 2, 1, 12, 8, 8, {2, 7}, {3, 8}, "gqa"},
      {1, 2, 2, 1, 20, 20, 36, {19}, {20}, "d_dv_last_position"},
      {2, 2, 2, 1, 6, 8, 8, {5, 5}, {}, "no_kv_length"},
      {2, 2, 2, 3, 10, 8, 8, {0, 4}, {3, 7}, "positions_causal", true},
      {4, 2, 2, 1, 12, 64, 64, {4, 9, 0, 11}, {5, 10, 1, 12}, "beam_kv_rows", false, 1},
      {3, 2, 2, 1, 9, 8, 8, {6}, {7, 7, 7}, "kv_rows_reading_new_keys", false, 2},
      {8,
       16,
       16,
       1,
       96,
       64,
       64,
       {47, 3, 95, 60, 12, 88, 0, 31},
       {48, 4, 96, 61, 13, 89, 1, 32},
       "step_gpu_widths",
       false,
       1},
      {2, 4, 2, 1, 40, 64, 64, {20, 39}, {21, 40}, "two_warps"},
      {2, 4, 2, 1, 96, 64, 64, {40, 95}, {41, 96}, "settled_four_warps", false, 0, true},
      {3, 1, 1, 1, 40, 48, 32, {33, 3, 39}, {34, 4, 40}, "settled_two_warps_d_dv", false, 0, true},
      {3, 2, 2, 1, 20, 64, 64, {5, 0, 19}, {6, 1, 20}, "settled_one_warp_beam_kv_rows", false, 1, true},
  };
  std::vector<OpCase> cases;
  for (DType t : {DType::F32, DType::F16})
    for (const CacheShape& s : shapes) {
      const DType index = s.kv_rows == 1 ? DType::I32 : DType::I64;
      OpCase c("kv_cache_attention", t, {s.b, s.h, s.t, s.d}, s.variant);
      // Settled: the state starts from random contents; otherwise a fill node writes it.
      const auto cache = [&](const std::string& name, const Shape& shape) {
        return s.settled ? c.state(name, t, shape) : c.graph.add_state(name, t, fixed_shape(shape));
      };
      const int k_state = cache("k_cache", {s.b, s.hkv, s.s, s.d});
      const int v_state = cache("v_cache", {s.b, s.hkv, s.s, s.dv});
      int k_cache = k_state, v_cache = v_state;
      if (!s.settled) {
        const int k_fill = c.input("k_fill", t, {s.b, s.hkv, s.s, s.d});
        const int v_fill = c.input("v_fill", t, {s.b, s.hkv, s.s, s.dv});
        const int zero = c.input_values("zero", index, {1}, {0});
        const Attrs seq = {{"axis", int64_t{2}}};
        k_cache = c.graph.add("dynamic_update_slice", "k_fill", {k_state, k_fill, zero}, seq);
        v_cache = c.graph.add("dynamic_update_slice", "v_fill", {v_state, v_fill, zero}, seq);
      }
      const Shape qkv_shape = {s.b, s.t, s.h * s.d + s.hkv * (s.d + s.dv)};
      int qkv = c.input(s.settled ? "qkv_in" : "qkv", t, qkv_shape);
      if (s.settled) qkv = c.graph.add("add", "qkv", {qkv, qkv});
      const int offset = c.input_values("offset", index, {static_cast<int64_t>(s.offsets.size())}, s.offsets);
      std::vector<int> in = {k_cache, v_cache, qkv, offset};
      in.push_back(s.kv_length.empty() ? -1 : c.input_values("kv_length", index, {s.b}, s.kv_length));
      in.push_back(s.kv_rows ? c.input_values("kv_rows", index, {s.b, s.s}, kv_rows_table(s)) : -1);
      const auto outs = c.graph.add_node("kv_cache_attention", "attention", in, {{"causal", int64_t{s.causal}}});
      for (int o : outs) c.output(o);
      c.decomposition = [s, t, index] { return decomposition(s, t, index); };
      cases.push_back(std::move(c));
    }
  return cases;
}

}  // namespace kiln::test

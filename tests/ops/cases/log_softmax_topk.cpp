// log_softmax_topk: f32 and f16 scores.
// - Decoder vocabularies: 128 rows with k = 16 and 40 rows of 5000 (CUDA's block a row), 3 rows
//   with k = 16, 2 with k = 32 and one with k = 2 (a cluster of blocks a row), rows past 65536
//   entries with k = 8 and 32 (CUDA's levelled picks, two and three levels), k = 1 over a row just
//   past one segment; rows of 13 and of 5 (entries outside the block kernel's 16-byte vectors: a
//   row's first and last few, or all of a row shorter than a vector); short rows and k above 32 (CUDA's two-op form).
// - Without bans and with banned indices in i32 and i64 (padding -1, a token banned twice, the
//   row's best banned); a row where all but three entries are banned (-inf picked); a row whose
//   first 5000 scores are -inf; a row of one value throughout and a row whose best, some of them
//   banned, sit at its end (the floors of both CUDA forms, in a block's row and in the levels).
// Scores are multiples of 1/64 or 1/128 below 16 in magnitude, which f16 holds exactly (so an f32
// case run in fp16 ranks the same), each repeated (ties, broken by the index); distinct ones stay
// distinct after the f32 subtraction.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "core/dtype.h"
#include "tests/ops/op_case.h"

namespace kiln::test {

KILN_OP_CASES(log_softmax_topk) {
  std::vector<OpCase> cases;
  struct Spec {
    Shape x;
    int64_t k, banned;  // banned: entries per row, 0 for no input
  };
  // k = 32 over 70000: 2208 candidates after the first level, so a middle level runs too.
  const std::vector<Spec> specs = {{{128, 58101}, 16, 8}, {{3, 58101}, 16, 0}, {{2, 58101}, 32, 4}, {{1, 50264}, 2, 2},
                                   {{40, 5000}, 4, 2},    {{2, 70000}, 8, 4},  {{2, 70000}, 32, 0}, {{2, 1025}, 1, 4},
                                   {{4, 300}, 8, 4},      {{5, 13}, 3, 2},     {{3, 5}, 2, 0},      {{2, 3000}, 40, 3},
                                   {{1, 40}, 40, 0}};
  for (DType t : {DType::F32, DType::F16})
    for (const Spec& s : specs)
      for (DType it : s.banned ? std::vector<DType>{DType::I32, DType::I64} : std::vector<DType>{DType::I64}) {
        OpCase c("log_softmax_topk", t, s.x,
                 fmt::format("k{}{}", s.k, s.banned ? std::string("banned/") + dtype_name(it) : ""));
        const int64_t rows = s.x[0], dim = s.x[1];
        std::vector<float> v(static_cast<size_t>(rows * dim));
        for (int64_t r = 0; r < rows; ++r) {
          std::vector<float> row(static_cast<size_t>(dim));
          for (int64_t j = 0; j < dim; ++j) row[j] = static_cast<float>(j % 2048) / 64.0f - 16.0f;
          std::shuffle(row.begin(), row.end(), c.rng);
          std::copy(row.begin(), row.end(), v.begin() + r * dim);
        }
        const int x = c.input_values("x", t, s.x, v);
        std::vector<int> inputs = {x};
        if (s.banned) {
          std::vector<float> banned;
          for (int64_t r = 0; r < rows; ++r) {
            const int64_t best = std::max_element(v.begin() + r * dim, v.begin() + (r + 1) * dim) - v.begin() - r * dim;
            banned.push_back(static_cast<float>(best));
            banned.push_back(-1);
            for (int64_t b = 2; b < s.banned; ++b) banned.push_back(static_cast<float>((r * 7 + b * 131) % dim));
            if (s.banned >= 4) banned.back() = banned[banned.size() - 2];  // banned twice
          }
          inputs.push_back(c.input_values("banned", it, {rows, s.banned}, banned));
        }
        const auto ys = c.graph.add_node("log_softmax_topk", "log_softmax_topk", inputs, {{"k", s.k}});
        c.output(ys[0], "values");
        c.output(ys[1], "indices");
        cases.push_back(std::move(c));
      }
  for (DType t : {DType::F32, DType::F16}) {
    // All but three banned: the k = 8 picks end in five -inf, in index order. And a row whose
    // first 5000 entries are -inf (segments of nothing but -inf).
    const Shape s{2, 2100};
    OpCase c("log_softmax_topk", t, s, "mostly_banned");
    std::vector<float> v(static_cast<size_t>(numel(s)));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 977) / 64.0f;
    std::vector<float> banned;
    for (int64_t j = 0; j < 2100; ++j)
      if (j != 5 && j != 700 && j != 2099) banned.push_back(static_cast<float>(j));
    const int64_t per_row = static_cast<int64_t>(banned.size());
    std::vector<float> both = banned;
    both.insert(both.end(), banned.begin(), banned.end());
    const int x = c.input_values("x", t, s, v);
    const auto ys =
        c.graph.add_node("log_softmax_topk", "log_softmax_topk",
                         {x, c.input_values("banned", DType::I32, {2, per_row}, both)}, {{"k", int64_t{8}}});
    c.output(ys[0], "values");
    c.output(ys[1], "indices");
    cases.push_back(std::move(c));
    const Shape m{2, 9000};
    OpCase d("log_softmax_topk", t, m, "masked_segments");
    std::vector<float> w(static_cast<size_t>(numel(m)));
    for (size_t i = 0; i < w.size(); ++i)
      w[i] = i % 9000 < 5000 ? -std::numeric_limits<float>::infinity() : static_cast<float>(i % 1999) / 128.0f;
    const auto zs =
        d.graph.add_node("log_softmax_topk", "log_softmax_topk", {d.input_values("x", t, m, w)}, {{"k", int64_t{16}}});
    d.output(zs[0], "values");
    d.output(zs[1], "indices");
    cases.push_back(std::move(d));
    for (int64_t dim : {40000, 70000}) {
      const Shape f{2, dim};
      OpCase e("log_softmax_topk", t, f, "floor_ties");
      std::vector<float> u(static_cast<size_t>(numel(f)), 0.5f);
      for (int64_t j = 0; j < dim; ++j) u[static_cast<size_t>(dim + j)] = j >= dim - 10 ? 1.0f : 0.0f;
      const std::vector<float> banned = {0, 2, static_cast<float>(dim - 10), static_cast<float>(dim - 9)};
      const auto es = e.graph.add_node(
          "log_softmax_topk", "log_softmax_topk",
          {e.input_values("x", t, f, u), e.input_values("banned", DType::I64, {2, 2}, banned)}, {{"k", int64_t{4}}});
      e.output(es[0], "values");
      e.output(es[1], "indices");
      cases.push_back(std::move(e));
    }
  }
  return cases;
}

}  // namespace kiln::test

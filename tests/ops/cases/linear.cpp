// linear (with bias, activation, residual) over rank 2 to 4 inputs, with and without the
// residual, FP8 linears, norm_linear against layer_norm and linear, and mlp against its two
// linears. On CUDA, up to 16 rows take the few-rows kernel (9 rows: two groups of rows), more
// the tiled GEMMs; FP8 only the FP8 tiles.
#include <cmath>
#include <tuple>

#include "core/fp8.h"
#include "tests/ops/op_case.h"

namespace kiln::test {

KILN_OP_CASES(linear) {
  std::vector<OpCase> cases;
  for (DType t : {DType::F32, DType::F16})
    for (const Shape& xs : {Shape{1, 8}, Shape{5, 24}, Shape{2, 7, 40}, Shape{3, 1, 1, 1280}})
      for (int n : {8, 10, 1000}) {
        const int64_t k = xs.back();
        OpCase c("linear", t, xs, fmt::format("n{}", n));
        const int x = c.input("x", t, xs);
        const int w = c.constant("w", DType::F32, {n, k}, 1.0 / std::sqrt(static_cast<double>(k)));
        const int b = c.constant("b", DType::F32, {n}, 0.5);
        Shape ys = xs;
        ys.back() = n;
        const int r = c.input("r", t, ys);
        c.output(c.graph.add("linear", "fc", {x, w, b, r}, {{"act", std::string(n == 10 ? "gelu" : "silu")}}));
        cases.push_back(std::move(c));
      }
  for (DType t : {DType::F32, DType::F16})
    for (const Shape& xs : {Shape{9, 64}, Shape{1, 1, 512}, Shape{40, 96}}) {
      const int64_t k = xs.back(), n = k == 512 ? 1000 : 24;
      OpCase c("linear", t, xs, fmt::format("n{}_no_residual", n));
      const int x = c.input("x", t, xs);
      const int w = c.constant("w", DType::F32, {n, k}, 1.0 / std::sqrt(static_cast<double>(k)));
      const int b = c.constant("b", DType::F32, {n}, 0.5);
      c.output(c.graph.add("linear", "fc", {x, w, b}, {{"act", std::string("none")}}));
      cases.push_back(std::move(c));
    }
  // Weights stored as f16 (an fp16 bundle's): on the CPU up to 8 rows read them as halves in the
  // matrix-vector loop (K = 7: no whole vector; 37 and 40: 5 and 8 left over after the pairs;
  // 48: one vector after the pairs; 512: pairs only), more rows run oneDNN on the weights widened
  // then; 70 outputs leave a partial block of columns.
  for (const Shape& xs :
       {Shape{1, 7}, Shape{2, 37}, Shape{1, 40}, Shape{3, 48}, Shape{1, 1, 512}, Shape{8, 48}, Shape{12, 40}})
    for (int n : {24, 70}) {
      const int64_t k = xs.back();
      OpCase c("linear", DType::F32, xs, fmt::format("n{}_stored_f16", n));
      const int x = c.input("x", DType::F32, xs);
      const int w = c.constant_stored_f16("w", {n, k}, 1.0 / std::sqrt(static_cast<double>(k)));
      const int b = c.constant("b", DType::F32, {n}, 0.5);
      c.output(c.graph.add("linear", "fc", {x, w, b}, {{"act", std::string("silu")}}));
      cases.push_back(std::move(c));
    }
  // FP8: E4M3 weights with per-output scales, the input rounded to E4M3 at a calibrated scale
  // (some inputs saturate); with and without a residual, a padded output count (20).
  for (const auto& [xs, n, residual] : {std::tuple{Shape{1, 64}, 24, true}, std::tuple{Shape{9, 64}, 20, false},
                                        std::tuple{Shape{2, 7, 40}, 32, true}, std::tuple{Shape{40, 96}, 24, false}}) {
    const int64_t k = xs.back();
    OpCase c("linear", DType::F16, xs, fmt::format("fp8_n{}{}", n, residual ? "_residual" : ""));
    const int x = c.input("x", DType::F16, xs);
    std::vector<float> wq(static_cast<size_t>(n * k)), scale(n);
    for (size_t i = 0; i < wq.size(); ++i) wq[i] = round_to_e4m3(static_cast<float>((i * 37) % 29) - 14.0f);
    for (int o = 0; o < n; ++o) scale[o] = 0.01f * (1 + o % 5);
    const int w = c.constant_values("w", DType::F8E4M3, {n, k}, wq);
    const int ws = c.constant_values("ws", DType::F32, {n}, scale);
    const int b = c.constant("b", DType::F32, {n}, 0.5);
    Shape ys = xs;
    ys.back() = n;
    const int r = residual ? c.input("r", DType::F16, ys) : -1;
    c.output(c.graph.add("linear", "fc", {x, w, b, r, ws},
                         {{"act", std::string(residual ? "none" : "relu")}, {"input_scale", 2.0 / 448}}));
    c.tolerance_f16 = 3e-2;  // one E4M3 step of a rounding taken the other way
    cases.push_back(std::move(c));
  }
  return cases;
}

// norm_linear against layer_norm then linear: one row (CUDA's few-rows kernel does both, one
// vector of x per thread at K = 1024), 2 rows into 20 outputs (padded to 24 on CUDA) of f32, with
// gamma and no beta, 3 rows over a K of 40 (no whole warp of vectors), 9 rows (two groups of
// rows) with a K of 4096 (several vectors per thread in the statistics) and neither gamma nor
// beta, 40 rows (layer_norm's kernel, then the tiles). Inputs sit at an offset of 3 (x0's shift).
KILN_OP_CASES(norm_linear) {
  std::vector<OpCase> cases;
  struct Spec {
    Shape x;
    int64_t n;
    bool residual, gamma, beta;
    std::string out_dtype;
  };
  const std::vector<Spec> specs = {{{1, 1, 1024}, 64, true, true, true, ""},
                                   {{2, 64}, 20, false, true, false, "f32"},
                                   {{3, 40}, 24, false, true, true, ""},
                                   {{9, 4096}, 16, true, false, false, ""},
                                   {{40, 96}, 1000, false, true, true, ""}};
  for (DType t : {DType::F32, DType::F16})
    for (const Spec& s : specs) {
      const int64_t k = s.x.back();
      OpCase c("norm_linear", t, s.x,
               fmt::format("n{}{}{}{}{}", s.n, s.residual ? "_residual" : "", s.gamma ? "" : "_no_gamma",
                           s.beta ? "" : "_no_beta", s.out_dtype.empty() ? "" : "_" + s.out_dtype));
      std::vector<float> xv(static_cast<size_t>(numel(s.x)));
      std::normal_distribution<float> normal(3.0f, 1.0f);
      for (float& v : xv) v = normal(c.rng);
      const int x = c.input_values("x", t, s.x, xv);
      const int w = c.constant("w", DType::F32, {s.n, k}, 1.0 / std::sqrt(static_cast<double>(k)));
      const int b = c.constant("b", DType::F32, {s.n}, 0.5);
      Shape ys = s.x;
      ys.back() = s.n;
      const int r = s.residual ? c.input("r", t, ys) : -1;
      const int gamma = s.gamma ? c.constant("gamma", DType::F32, {k}, 1.0) : -1;
      const int beta = s.beta ? c.constant("beta", DType::F32, {k}, 0.5) : -1;
      const Attrs attrs = {{"act", std::string("gelu")}, {"eps", 1e-5}, {"out_dtype", s.out_dtype}};
      const auto outs = c.graph.add_node("norm_linear", "fc", {x, w, b, r, -1, gamma, beta}, attrs);
      c.output(outs[0], "y");
      c.output(outs[1], "normalized");
      c.decomposition = [s, t, k] {
        Graph g;
        const int x = g.add_input("x", t, fixed_shape(s.x));
        const int w = g.add_constant("w", DType::F32, {s.n, k});
        const int b = g.add_constant("b", DType::F32, {s.n});
        Shape ys = s.x;
        ys.back() = s.n;
        const int r = s.residual ? g.add_input("r", t, fixed_shape(ys)) : -1;
        const int gamma = s.gamma ? g.add_constant("gamma", DType::F32, {k}) : -1;
        const int beta = s.beta ? g.add_constant("beta", DType::F32, {k}) : -1;
        const int normed = g.add("layer_norm", "norm", {x, gamma, beta}, {{"eps", 1e-5}});
        g.add_output(
            "y", g.add("linear", "fc", {normed, w, b, r}, {{"act", std::string("gelu")}, {"out_dtype", s.out_dtype}}));
        g.add_output("normalized", normed);
        return g;
      };
      cases.push_back(std::move(c));
    }
  return cases;
}

KILN_OP_CASES(mlp) {
  std::vector<OpCase> cases;
  for (DType t : {DType::F32, DType::F16})
    for (const auto& [xs, hidden] : {std::pair{Shape{2, 1, 1, 96}, 4}, std::pair{Shape{3, 9, 32}, 128}}) {
      const int64_t k = xs.back();
      OpCase c("mlp", t, xs, fmt::format("h{}", hidden));
      const int x = c.input("x", t, xs);
      const int w1 = c.constant("w1", DType::F32, {hidden, k}, 1.0 / std::sqrt(static_cast<double>(k)));
      const int b1 = c.constant("b1", DType::F32, {hidden}, 0.5);
      const int w2 = c.constant("w2", DType::F32, {k, hidden}, 1.0 / std::sqrt(static_cast<double>(hidden)));
      const int b2 = c.constant("b2", DType::F32, {k}, 0.5);
      c.output(c.graph.add("mlp", "mlp", {x, w1, b1, w2, b2},
                           {{"act1", std::string("silu")}, {"act2", std::string("sigmoid")}}));
      c.decomposition = [xs, t, k, hidden] {
        Graph g;
        const int x = g.add_input("x", t, fixed_shape(xs));
        const int w1 = g.add_constant("w1", DType::F32, {hidden, k});
        const int b1 = g.add_constant("b1", DType::F32, {hidden});
        const int w2 = g.add_constant("w2", DType::F32, {k, hidden});
        const int b2 = g.add_constant("b2", DType::F32, {k});
        const int h = g.add("linear", "fc1", {x, w1, b1}, {{"act", std::string("silu")}});
        g.add_output("y0", g.add("linear", "fc2", {h, w2, b2}, {{"act", std::string("sigmoid")}}));
        return g;
      };
      cases.push_back(std::move(c));
    }
  return cases;
}

}  // namespace kiln::test

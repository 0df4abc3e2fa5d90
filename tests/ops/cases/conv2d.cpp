// conv2d in every form the backends implement separately: pointwise (a GEMM), depthwise 3x3 and
// 5x5 at stride 1 and 2 and 7x7 at stride 1, dense (the stem, with NCHW input; k x k with channels a multiple of 8,
// an implicit GEMM on the GPU, also dilated and with a residual or an f32 output), grouped, "same"
// padding, and the fused inputs and outputs (gate, residual, mean, FP8), each against its
// decomposition where the fused form has one.
#include <cmath>

#include "core/fp8.h"
#include "tests/ops/op_case.h"

namespace kiln::test {

namespace {

struct ConvSpec {
  int c, o, k, stride, groups;
  bool same = false;
  int dilation = 1;
};

Attrs conv_attrs(const ConvSpec& s, const char* act) {
  const int64_t p = (s.k - 1) / 2 * s.dilation;
  Attrs a{
      {"stride", std::vector<int64_t>{s.stride, s.stride}}, {"groups", int64_t{s.groups}}, {"act", std::string(act)}};
  if (s.dilation != 1) a.set("dilation", std::vector<int64_t>{s.dilation, s.dilation});
  if (s.same)
    a.set("pad_mode", std::string("same"));
  else
    a.set("pad", std::vector<int64_t>{p, p, p, p});
  return a;
}

}  // namespace

KILN_OP_CASES(conv2d) {
  std::vector<OpCase> cases;
  const std::vector<ConvSpec> specs = {{16, 24, 1, 1, 1},          {48, 48, 3, 1, 48},      {48, 48, 3, 2, 48, true},
                                       {32, 32, 5, 1, 32},         {40, 40, 5, 2, 40},      {3, 16, 3, 2, 1},
                                       {12, 18, 3, 1, 3},          {8, 8, 1, 1, 1},         {16, 24, 3, 1, 1},
                                       {16, 40, 3, 2, 1},          {24, 16, 5, 1, 1, true}, {8, 16, 7, 2, 1},
                                       {16, 8, 3, 1, 1, false, 2}, {64, 64, 1, 2, 1},       {32, 32, 7, 1, 32}};
  for (DType t : {DType::F32, DType::F16})
    for (const ConvSpec& s : specs)
      for (const Shape& x_shape : {Shape{1, 7, 9, s.c}, Shape{3, 16, 13, s.c}}) {
        OpCase c("conv2d", t, x_shape,
                 fmt::format("k{}s{}g{}{}{}", s.k, s.stride, s.groups, s.same ? "same" : "",
                             s.dilation != 1 ? fmt::format("d{}", s.dilation) : ""));
        const int x = c.input("x", t, x_shape);
        const int w =
            c.constant("w", DType::F32, {s.o, s.k, s.k, s.c / s.groups}, 1.0 / std::sqrt(s.k * s.k * s.c / s.groups));
        const int b = c.constant("b", DType::F32, {s.o}, 0.5);
        c.output(c.graph.add("conv2d", "conv", {x, w, b}, conv_attrs(s, "silu")));
        cases.push_back(std::move(c));
      }
  // The stem: NCHW f32 input (the network's), output in the compute type. 3x3 with 16 to 64
  // outputs (on CUDA one kernel per width) and a 5x5 (the generic kernel).
  for (DType t : {DType::F32, DType::F16})
    for (const ConvSpec& s : {ConvSpec{3, 16, 3, 2, 1}, ConvSpec{3, 32, 3, 2, 1}, ConvSpec{3, 40, 3, 2, 1},
                              ConvSpec{3, 48, 3, 2, 1}, ConvSpec{3, 64, 3, 2, 1}, ConvSpec{3, 16, 5, 2, 1}}) {
      const Shape xs{2, 3, 17, 20};
      OpCase c("conv2d", t, xs, fmt::format("nchw-k{}o{}", s.k, s.o));
      const int x = c.input("x", DType::F32, xs);
      const int w = c.constant("w", DType::F32, {s.o, s.k, s.k, 3}, 0.2);
      const int b = c.constant("b", DType::F32, {s.o}, 0.5);
      Attrs a = conv_attrs(s, "silu");
      a.set("input_layout", std::string("nchw"));
      a.set("out_dtype", std::string(dtype_name(t)));
      c.output(c.graph.add("conv2d", "stem", {x, w, b}, a));
      c.decomposition = [](DType t2, ConvSpec s2, Shape xs2) {
        return [t2, s2, xs2] {
          Graph g;
          const int x = g.add_input("x", DType::F32, fixed_shape(xs2));
          int y = g.add("transpose", "nhwc", {x}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
          if (t2 != DType::F32) y = g.add("cast", "cast", {y}, {{"to", std::string(dtype_name(t2))}});
          const int w = g.add_constant("w", DType::F32, {s2.o, s2.k, s2.k, 3});
          const int b = g.add_constant("b", DType::F32, {s2.o});
          g.add_output("y0", g.add("conv2d", "stem", {y, w, b}, conv_attrs(s2, "silu")));
          return g;
        };
      }(t, s, xs);
      cases.push_back(std::move(c));
    }
  // A dense 3x3 conv with a residual, and one with an f32 output (an implicit GEMM's epilogues).
  for (DType t : {DType::F32, DType::F16})
    for (const bool residual : {true, false}) {
      const Shape xs{2, 9, 11, 16};
      OpCase c("conv2d", t, xs, residual ? "k3+residual" : "k3->f32");
      const int x = c.input("x", t, xs);
      const int w = c.constant("w", DType::F32, {16, 3, 3, 16}, 0.1);
      const int b = c.constant("b", DType::F32, {16}, 0.5);
      Attrs a = conv_attrs({16, 16, 3, 1, 1}, "silu");
      if (!residual) {
        a.set("out_dtype", std::string("f32"));
        c.output(c.graph.add("conv2d", "conv", {x, w, b}, a));
        cases.push_back(std::move(c));
        continue;
      }
      const int r = c.input("r", t, xs);
      c.output(c.graph.add("conv2d", "conv", {x, w, b, -1, -1, r}, a));
      c.decomposition = [xs, t] {
        Graph g;
        const int x = g.add_input("x", t, fixed_shape(xs));
        const int r = g.add_input("r", t, fixed_shape(xs));
        const int w = g.add_constant("w", DType::F32, {16, 3, 3, 16});
        const int b = g.add_constant("b", DType::F32, {16});
        const int y = g.add("conv2d", "conv", {x, w, b}, conv_attrs({16, 16, 3, 1, 1}, "silu"));
        g.add_output("y0", g.add("add", "residual", {y, r}));
        return g;
      };
      cases.push_back(std::move(c));
    }
  // Squeeze-excite gate on the input, residual on the output, and the output's mean: the forms
  // the rewrites fuse, each against the separate ops.
  for (DType t : {DType::F32, DType::F16})
    for (const Shape& xs : {Shape{1, 5, 6, 32}, Shape{3, 11, 7, 48}}) {
      const int C = static_cast<int>(xs[3]), O = 24;
      OpCase c("conv2d", t, xs, "gate+residual");
      const int x = c.input("x", t, xs);
      const int gate = c.input("gate", t, {xs[0], 1, 1, C}, 0.5);
      const int r = c.input("r", t, {xs[0], xs[1], xs[2], O});
      const int w = c.constant("w", DType::F32, {O, 1, 1, C}, 0.2);
      const int b = c.constant("b", DType::F32, {O}, 0.5);
      c.output(c.graph.add("conv2d", "conv", {x, w, b, -1, gate, r}, conv_attrs({C, O, 1, 1, 1}, "none")));
      c.decomposition = [xs, t, C, O] {
        Graph g;
        const int x = g.add_input("x", t, fixed_shape(xs));
        const int gate = g.add_input("gate", t, fixed_shape({xs[0], 1, 1, C}));
        const int r = g.add_input("r", t, fixed_shape({xs[0], xs[1], xs[2], O}));
        const int gated = g.add("mul", "gate", {x, gate});
        const int w = g.add_constant("w", DType::F32, {O, 1, 1, C});
        const int b = g.add_constant("b", DType::F32, {O});
        const int y = g.add("conv2d", "conv", {gated, w, b}, conv_attrs({C, O, 1, 1, 1}, "none"));
        g.add_output("y0", g.add("add", "residual", {y, r}));
        return g;
      };
      cases.push_back(std::move(c));

      OpCase m("conv2d", t, xs, "depthwise+mean");
      const int mx = m.input("x", t, xs);
      const int mw = m.constant("w", DType::F32, {C, 3, 3, 1}, 0.3);
      const int mb = m.constant("b", DType::F32, {C}, 0.5);
      Attrs a = conv_attrs({C, C, 3, 1, C}, "silu");
      a.set("mean_output", int64_t{1});
      const auto outs = m.graph.add_node("conv2d", "dw", {mx, mw, mb}, a);
      m.output(outs[0]);
      m.output(outs[1]);
      m.decomposition = [xs, t, C] {
        Graph g;
        const int x = g.add_input("x", t, fixed_shape(xs));
        const int w = g.add_constant("w", DType::F32, {C, 3, 3, 1});
        const int b = g.add_constant("b", DType::F32, {C});
        const int y = g.add("conv2d", "dw", {x, w, b}, conv_attrs({C, C, 3, 1, C}, "silu"));
        g.add_output("y0", y);
        int mean = g.add("reduce", "pool", {y}, {{"op", std::string("mean")}, {"axes", std::vector<int64_t>{1, 2}}});
        if (t != DType::F32) mean = g.add("cast", "cast", {mean}, {{"to", std::string("f32")}});
        g.add_output("y1", mean);
        return g;
      };
      cases.push_back(std::move(m));
    }
  // FP8: an E4M3 input at a calibrated scale, E4M3 weights with per-channel scales, and an
  // E4M3 output for an FP8 consumer.
  for (const Shape& xs : {Shape{2, 6, 5, 16}, Shape{1, 9, 9, 32}}) {
    const int C = static_cast<int>(xs[3]), O = 32;
    OpCase c("conv2d", DType::F16, xs, "fp8");
    const int x = c.input("x", DType::F16, xs);
    std::vector<float> wq(static_cast<size_t>(O) * C), scale(O);
    for (size_t i = 0; i < wq.size(); ++i) wq[i] = round_to_e4m3(static_cast<float>((i * 37) % 29) - 14.0f);
    for (int o = 0; o < O; ++o) scale[o] = 0.01f * (1 + o % 5);
    const int w = c.constant_values("w", DType::F8E4M3, {O, 1, 1, C}, wq);
    const int ws = c.constant_values("ws", DType::F32, {O}, scale);
    const int b = c.constant("b", DType::F32, {O}, 0.5);
    Attrs a = conv_attrs({C, O, 1, 1, 1}, "silu");
    a.set("input_scale", 2.0 / 448);  // inputs beyond 2 saturate
    const int y = c.graph.add("conv2d", "conv", {x, w, b, ws}, a);
    c.output(y);
    c.tolerance_f16 = 3e-2;  // one E4M3 step of a rounding taken the other way
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace kiln::test

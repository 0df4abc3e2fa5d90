// conv2d on the CPU (graph/ops/conv2d.h): a 1x1 conv is one GEMM, a depthwise conv a loop over
// taps with channels innermost, any other ungrouped conv a GEMM over patches gathered a block of
// output pixels at a time (im2col: NHWC input and OHWI weights make a patch row the weight row's
// layout), a grouped one a direct loop. Weights are repacked once for the loop that reads them; FP8 layers are emulated
// exactly (the input rounded to E4M3 as fp16, weights as stored E4M3 values times their channel's scale).
#include <algorithm>
#include <vector>

#include "backends/cpu/activation.h"
#include "backends/cpu/cpu_kernel.h"
#include "backends/cpu/gemm.h"
#include "core/error.h"
#include "core/fp8.h"
#include "graph/ops/conv2d.h"

namespace kiln {

namespace {

using namespace conv2d_input;

// Taps summed straight into the output (bias first, then each tap in order), channels innermost,
// each pixel's activation applied while it is in cache. Built for AVX-512, AVX2 and the baseline
// like bias_activation: the channel loops are most of an MBConv network's time.
__attribute__((target_clones("avx512f", "avx2", "default"))) void depthwise(const float* x, const float* w_kkc,
                                                                            const float* bias, float* y,
                                                                            const ConvGeometry& g,
                                                                            const Conv2dParams& p) {
  const int C = g.c;
#pragma omp parallel for collapse(2) schedule(static)
  for (int n = 0; n < g.n; ++n)
    for (int oy = 0; oy < g.oh; ++oy)
      for (int ox = 0; ox < g.ow; ++ox) {
        float* __restrict py = y + ((static_cast<int64_t>(n) * g.oh + oy) * g.ow + ox) * C;
        for (int c = 0; c < C; ++c) py[c] = bias ? bias[c] : 0.0f;
        for (int ky = 0; ky < p.kh; ++ky) {
          const int iy = oy * p.stride_h - g.pad_top + ky * p.dilation_h;
          if (iy < 0 || iy >= g.h) continue;
          for (int kx = 0; kx < p.kw; ++kx) {
            const int ix = ox * p.stride_w - g.pad_left + kx * p.dilation_w;
            if (ix < 0 || ix >= g.w) continue;
            const float* __restrict px = x + ((static_cast<int64_t>(n) * g.h + iy) * g.w + ix) * C;
            const float* __restrict pw = w_kkc + (ky * p.kw + kx) * C;
            for (int c = 0; c < C; ++c) py[c] += px[c] * pw[c];
          }
        }
        cpu::bias_activation_row(py, C, nullptr, p.act);
      }
}

// y[pixels, out] = patches[pixels, kh * kw * c] * w[out, kh * kw * c]^T for one group, the patches
// gathered for a block of output pixels at a time so that the buffer stays in cache-sized pieces
// (zeros where a tap falls in the padding).
void im2col_gemm(const float* x, const float* w, const float* bias, float* y, const ConvGeometry& g,
                 const Conv2dParams& p, std::vector<float>& patches) {
  const int64_t k = static_cast<int64_t>(p.kh) * p.kw * g.c;
  const int64_t pixels = static_cast<int64_t>(g.n) * g.oh * g.ow;
  const int64_t block = std::max<int64_t>(64, (int64_t{1} << 20) / k);  // about 4 MiB of patches
  patches.resize(static_cast<size_t>(std::min(block, pixels) * k));
  for (int64_t start = 0; start < pixels; start += block) {
    const int64_t count = std::min(block, pixels - start);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < count; ++i) {
      const int64_t pix = start + i;
      const int ox = static_cast<int>(pix % g.ow), oy = static_cast<int>(pix / g.ow % g.oh);
      const int n = static_cast<int>(pix / (static_cast<int64_t>(g.ow) * g.oh));
      float* row = patches.data() + i * k;
      for (int ky = 0; ky < p.kh; ++ky) {
        const int iy = oy * p.stride_h - g.pad_top + ky * p.dilation_h;
        for (int kx = 0; kx < p.kw; ++kx, row += g.c) {
          const int ix = ox * p.stride_w - g.pad_left + kx * p.dilation_w;
          if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) {
            std::fill(row, row + g.c, 0.0f);
            continue;
          }
          const float* px = x + ((static_cast<int64_t>(n) * g.h + iy) * g.w + ix) * g.c;
          std::copy(px, px + g.c, row);
        }
      }
    }
    float* out = y + start * g.o;
    cpu::gemm_xwt(patches.data(), w, out, count, static_cast<int>(k), g.o);
    cpu::bias_activation(out, count, g.o, bias, p.act);
  }
}

// weight packed as [groups][kh][kw][in/groups][out/groups].
void direct(const float* x, const float* w, const float* bias, float* y, const ConvGeometry& g, const Conv2dParams& p) {
  const int G = p.groups, cin = g.c / G, cout = g.o / G;
#pragma omp parallel
  {
    std::vector<float> acc(g.o);
#pragma omp for collapse(2) schedule(static)
    for (int n = 0; n < g.n; ++n)
      for (int oy = 0; oy < g.oh; ++oy)
        for (int ox = 0; ox < g.ow; ++ox) {
          for (int c = 0; c < g.o; ++c) acc[c] = bias ? bias[c] : 0.0f;
          for (int grp = 0; grp < G; ++grp)
            for (int ky = 0; ky < p.kh; ++ky) {
              const int iy = oy * p.stride_h - g.pad_top + ky * p.dilation_h;
              if (iy < 0 || iy >= g.h) continue;
              for (int kx = 0; kx < p.kw; ++kx) {
                const int ix = ox * p.stride_w - g.pad_left + kx * p.dilation_w;
                if (ix < 0 || ix >= g.w) continue;
                const float* px = x + ((static_cast<int64_t>(n) * g.h + iy) * g.w + ix) * g.c + grp * cin;
                const float* pw = w + (((static_cast<int64_t>(grp) * p.kh + ky) * p.kw + kx) * cin) * cout;
                float* pa = acc.data() + grp * cout;
                for (int ci = 0; ci < cin; ++ci) {
                  const float v = px[ci];
                  for (int co = 0; co < cout; ++co) pa[co] += v * pw[ci * cout + co];
                }
              }
            }
          float* py = y + ((static_cast<int64_t>(n) * g.oh + oy) * g.ow + ox) * g.o;
          for (int c = 0; c < g.o; ++c) py[c] = cpu::apply_activation(acc[c], p.act);
        }
  }
}

class Conv2dKernel : public CpuKernel {
 public:
  Conv2dKernel(const Graph& graph, int node, const ConstantLookup& constants) {
    const Node& n = graph.nodes()[node];
    const Value& wv = graph.values()[n.inputs[Weight]];
    KILN_CHECK(wv.kind == ValueKind::Constant, "[cpu] {}: conv2d weights must be constants", n.name);
    w_shape_ = resolve(wv.shape, {});
    const Shape& w_shape = w_shape_;
    p_ = conv2d_params(n, w_shape);
    x_is_e4m3_ = graph.values()[n.inputs[X]].dtype == DType::F8E4M3;
    out_is_e4m3_ = graph.values()[n.outputs[0]].dtype == DType::F8E4M3;
    std::vector<float> w = constants(wv.name).to_f32();
    if (n.input(WeightScale) >= 0)
      apply_channel_scales(w, constants(graph.values()[n.inputs[WeightScale]].name).to_f32());
    const int out = static_cast<int>(w_shape[0]), kk = p_.kh * p_.kw, cin_g = static_cast<int>(w_shape[3]);
    if (is_pointwise(p_)) {
      kind_ = Kind::Pointwise;
      weight_ = std::move(w);  // [out, in]
    } else if (is_depthwise(p_, w_shape)) {
      kind_ = Kind::Depthwise;  // [C, kh, kw, 1] -> [kh, kw, C]
      weight_.resize(w.size());
      for (int c = 0; c < out; ++c)
        for (int t = 0; t < kk; ++t) weight_[static_cast<size_t>(t) * out + c] = w[static_cast<size_t>(c) * kk + t];
    } else if (p_.groups == 1) {
      kind_ = Kind::Patches;
      weight_ = std::move(w);  // OHWI: [out, kh * kw * in], a patch row's layout
    } else {
      kind_ = Kind::Direct;  // [out, kh, kw, in/g] -> [g][kh][kw][in/g][out/g]
      const int G = p_.groups, cout_g = out / G;
      weight_.resize(w.size());
      for (int o = 0; o < out; ++o)
        for (int t = 0; t < kk; ++t)
          for (int ci = 0; ci < cin_g; ++ci) {
            const int grp = o / cout_g, oo = o % cout_g;
            weight_[((static_cast<int64_t>(grp) * kk + t) * cin_g + ci) * cout_g + oo] =
                w[(static_cast<int64_t>(o) * kk + t) * cin_g + ci];
          }
    }
    if (n.input(Bias) >= 0) bias_ = constants(graph.values()[n.inputs[Bias]].name).to_f32();
  }

  bool packs_input(int slot) const override { return slot == Weight || slot == Bias || slot == WeightScale; }

  void run(const KernelArgs& a, int) override {
    const TensorRef& xt = a.inputs[X];
    const ConvGeometry g = conv2d_geometry(p_, xt.shape, w_shape_, *a.node);
    const int64_t x_count = static_cast<int64_t>(g.n) * g.h * g.w * g.c;
    const float* x = xt.as<const float>();
    if (p_.nchw_input || has(a, Gate) || p_.fp8_input()) {
      x_.resize(x_count);
      for (int n = 0; n < g.n; ++n)
        for (int64_t pix = 0; pix < static_cast<int64_t>(g.h) * g.w; ++pix)
          for (int c = 0; c < g.c; ++c) {
            const int64_t src = p_.nchw_input ? (static_cast<int64_t>(n) * g.c + c) * g.h * g.w + pix
                                              : (static_cast<int64_t>(n) * g.h * g.w + pix) * g.c + c;
            x_[(static_cast<int64_t>(n) * g.h * g.w + pix) * g.c + c] = x[src];
          }
      if (has(a, Gate)) {
        const float* gate = a.inputs[Gate].as<const float>();
        for (int64_t e = 0; e < x_count; ++e)
          x_[e] *= gate[e / (static_cast<int64_t>(g.h) * g.w * g.c) * g.c + e % g.c];
      }
      if (p_.fp8_input()) quantize_input(x_count);
      x = x_.data();
    }
    float* y = a.outputs[0].as<float>();
    const float* bias = bias_.empty() ? nullptr : bias_.data();
    if (kind_ == Kind::Pointwise) {
      const int64_t rows = static_cast<int64_t>(g.n) * g.h * g.w;
      cpu::gemm_xwt(x, weight_.data(), y, rows, g.c, g.o);
      cpu::bias_activation(y, rows, g.o, bias, p_.act);
    } else if (kind_ == Kind::Depthwise) {
      depthwise(x, weight_.data(), bias, y, g, p_);
    } else if (kind_ == Kind::Patches) {
      im2col_gemm(x, weight_.data(), bias, y, g, p_, patches_);
    } else {
      direct(x, weight_.data(), bias, y, g, p_);
    }
    const int64_t y_count = static_cast<int64_t>(g.n) * g.oh * g.ow * g.o;
    if (has(a, Residual)) {
      const float* r = a.inputs[Residual].as<const float>();
      for (int64_t e = 0; e < y_count; ++e) y[e] += r[e];
    }
    if (p_.mean_output) {  // per image, pixel by pixel: each channel's sum in double, in pixel order
      float* mean = a.outputs[1].as<float>();
      const int64_t pixels = static_cast<int64_t>(g.oh) * g.ow;
#pragma omp parallel for schedule(static)
      for (int n = 0; n < g.n; ++n) {
        std::vector<double> sum(g.o, 0.0);
        for (int64_t pix = 0; pix < pixels; ++pix) {
          const float* row = y + (n * pixels + pix) * g.o;
          for (int c = 0; c < g.o; ++c) sum[c] += row[c];
        }
        for (int c = 0; c < g.o; ++c) mean[static_cast<int64_t>(n) * g.o + c] = static_cast<float>(sum[c] / pixels);
      }
    }
    if (out_is_e4m3_)
      for (int64_t e = 0; e < y_count; ++e) y[e] /= p_.output_scale;
  }

 private:
  enum class Kind { Pointwise, Depthwise, Patches, Direct };
  static bool has(const KernelArgs& a, int slot) {
    return slot < static_cast<int>(a.inputs.size()) && a.inputs[slot].data;
  }

  // The FP8 layer's input: the fp16 tensor layers exchange, as E4M3 at the input scale (an
  // f8e4m3 input holds those values already).
  void quantize_input(int64_t count) {
    float* q = x_.data();
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < count; ++e) q[e] = fp8_layer_input(q[e], p_.input_scale, x_is_e4m3_);
  }

  Conv2dParams p_;
  Shape w_shape_;
  Kind kind_ = Kind::Direct;
  bool x_is_e4m3_ = false, out_is_e4m3_ = false;
  std::vector<float> weight_, bias_, x_, patches_;
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(conv2d) { registry.add("conv2d", make_cpu_kernel<Conv2dKernel>); }

}  // namespace kiln

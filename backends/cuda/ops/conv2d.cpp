// conv2d on the GPU. Three fast kernels take the forms image networks are made of, with their
// neighbours fused in by the rewrites: a 1x1 conv is a tensor-core GEMM (gemm.cu, gemm_mma.cu:
// tile variants timed per layer and batch; squeeze-excite gate on the input, residual, f32 or
// E4M3 output, FP8), a depthwise conv its own kernels (depthwise_conv.cu: strip and
// shared-memory tile variants, timed the same way; SE mean on the side, FP8 input), the first
// conv on the f32 NCHW input the stem kernel (stem_conv.cu), a dense k x k conv the same
// tensor-core GEMM reading its input through an im2col view (an implicit GEMM: gemm_mma.cu). Any
// other conv runs the direct kernel (conv_direct.cu), which takes every form in f32 and f16.
// Where cuDNN is present, dense convs also get cuDNN's fused plans as variants (cudnn_conv.h),
// timed against kiln's tiles like any other variant.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "backends/cuda/conv_direct.cuh"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/cudnn_conv.h"
#include "backends/cuda/kernels.cuh"
#include "core/dtype.h"
#include "core/error.h"
#include "graph/ops/conv2d.h"

namespace kiln {

namespace {

using namespace conv2d_input;

enum class ConvPath { Gemm, Depthwise, Stem, ImplicitGemm, Direct };

// What chooses the kernel, read from the graph alone.
struct ConvFacts {
  Conv2dParams p;
  Shape w;
  DType x = DType::F32, out = DType::F32;
  bool gate = false, residual = false, fp8_weight = false;
};

ConvFacts facts(const Graph& g, const Node& n) {
  ConvFacts f;
  f.w = constant_shape(g, n, Weight);
  if (f.w.empty()) return f;
  f.p = conv2d_params(n, f.w);
  f.x = input_dtype(g, n, X);
  f.out = output_dtypes(g, n)[0];
  f.gate = n.input(Gate) >= 0;
  f.residual = n.input(Residual) >= 0;
  f.fp8_weight = input_dtype(g, n, Weight) == DType::F8E4M3;
  return f;
}

ConvPath choose(const ConvFacts& f) {
  const Conv2dParams& p = f.p;
  const int64_t c = f.w[3] * p.groups, o = f.w[0];
  const bool plain_geometry = p.dilation_h == 1 && p.dilation_w == 1 && p.kh == p.kw && p.stride_h == p.stride_w;
  // FP8 GEMMs need both an FP8 input and FP8 weights (the planner never made the other kind).
  const bool gemm_types =
      f.x == DType::F16 && (f.fp8_weight == p.fp8_input()) && (!f.fp8_weight || compute_capability() >= 89) &&
      (f.out == DType::F16 || ((f.out == DType::F32 || f.out == DType::F8E4M3) && !f.gate && !f.residual));
  if (is_pointwise(p) && gemm_types && c % 8 == 0 && o % 8 == 0 && !p.mean_output) return ConvPath::Gemm;
  const bool dw_input = f.x == DType::F16 || (f.x == DType::F8E4M3 && p.fp8_input());
  if (is_depthwise(p, f.w) && plain_geometry && !p.nchw_input && dw_input && f.out == DType::F16 && !f.gate &&
      !f.residual && cuda::depthwise_supported(p.kh, p.stride_h, static_cast<int>(c)) &&
      (!p.fp8_input() || compute_capability() >= 89))
    return ConvPath::Depthwise;
  if (p.nchw_input && f.x == DType::F32 && f.out == DType::F16 && p.groups == 1 && o % 8 == 0 && plain_geometry &&
      !f.gate && !f.residual && !p.mean_output && !p.fp8_input() && !f.fp8_weight &&
      p.kh * p.kw * c * o * 4 <= 48 * 1024)
    return ConvPath::Stem;
  if (p.groups == 1 && !p.nchw_input && f.x == DType::F16 &&
      (f.out == DType::F16 || (f.out == DType::F32 && !f.residual)) && !f.gate && !f.fp8_weight && !p.fp8_input() &&
      !p.mean_output && c % 8 == 0 && o % 8 == 0)
    return ConvPath::ImplicitGemm;
  return ConvPath::Direct;
}

bool supports_conv2d(const Graph& g, const Node& n) {
  const ConvFacts f = facts(g, n);
  if (f.w.empty()) return false;  // weights must be constants: they are packed for the kernel
  return cuda::conv_direct_supported(f.x, f.out) || choose(f) != ConvPath::Direct;
}

bool fast_conv2d(const Graph& g, const Node& n) {
  const ConvFacts f = facts(g, n);
  return !f.w.empty() && choose(f) != ConvPath::Direct;
}

cuda::Act to_cuda(Activation a) { return static_cast<cuda::Act>(static_cast<int>(a)); }

std::optional<cuda::CudnnAct> cudnn_act(Activation a) {
  switch (a) {
    case Activation::None:
      return cuda::CudnnAct::None;
    case Activation::ReLU:
      return cuda::CudnnAct::ReLU;
    case Activation::SiLU:
      return cuda::CudnnAct::SiLU;
    case Activation::Sigmoid:
      return cuda::CudnnAct::Sigmoid;
    default:
      return std::nullopt;
  }
}

// Whether cuDNN's plans may stand in for the implicit GEMM of a dense k x k conv: fp16 in and
// out, the epilogue cuDNN's pointwise ops express (bias, activation, residual), no FP8, gate or
// mean. Pointwise convs stay on kiln's GEMM: offering cuDNN's plans for them too made a detector
// measured on 2026-12-03 4-10% faster but its build 73 s instead of 11 s (each plan compiles).
bool cudnn_takes(const ConvFacts& f, ConvPath path) {
  return path == ConvPath::ImplicitGemm && f.x == DType::F16 && f.out == DType::F16 && !f.gate && !f.fp8_weight &&
         !f.p.fp8_input() && !f.p.mean_output && f.p.groups == 1 && cudnn_act(f.p.act).has_value() &&
         cuda::cudnn_conv::available();
}

// The largest power of two up to 16 that divides every address.
int64_t common_alignment(std::initializer_list<const void*> ptrs) {
  uint64_t bits = 16;
  for (const void* p : ptrs) bits |= reinterpret_cast<uintptr_t>(p);
  return static_cast<int64_t>(bits & (~bits + 1));
}

class Conv2dKernel : public Kernel {
 public:
  explicit Conv2dKernel(CudaKernelContext& c) : weights_(c.weights), node_(c.node.name) {
    const Graph& g = c.graph;
    const Node& n = c.node;
    f_ = facts(g, n);
    path_ = choose(f_);
    cudnn_ = cudnn_takes(f_, path_);
    std::vector<float> w = c.constants(g.values()[n.inputs[Weight]].name).to_f32();
    std::vector<float> weight_scale;
    if (n.input(WeightScale) >= 0) weight_scale = c.constants(g.values()[n.inputs[WeightScale]].name).to_f32();
    if (n.input(Bias) >= 0) {
      bias_ = c.weights.add_f32(c.constants(g.values()[n.inputs[Bias]].name).to_f32());
      has_bias_ = true;
    }
    const int o = static_cast<int>(f_.w[0]), kk = f_.p.kh * f_.p.kw, cin_g = static_cast<int>(f_.w[3]);
    if (path_ == ConvPath::Gemm && f_.fp8_weight) {
      // E4M3 codes as stored; the GEMM scales each output column by input scale x weight scale.
      weight_ = c.weights.add_e4m3(w);
      std::vector<float> col(weight_scale);
      for (float& s : col) s *= f_.p.input_scale;
      col_scale_ = c.weights.add_f32(col);
      return;
    }
    if (!weight_scale.empty()) {  // the other kernels take the weights' values
      const size_t per_out = w.size() / weight_scale.size();
      for (size_t i = 0; i < w.size(); ++i) w[i] *= weight_scale[i / per_out];
    }
    switch (path_) {
      case ConvPath::Gemm:
        weight_ = c.weights.add_f16(w);  // [o, c]
        break;
      case ConvPath::ImplicitGemm:
        weight_ = c.weights.add_f16(w);  // OHWI: [o, kh * kw * c], the im2col column order
        break;
      case ConvPath::Depthwise: {
        std::vector<float> t(w.size());  // [c, kh, kw, 1] -> [kh * kw, c]
        for (int ch = 0; ch < o; ++ch)
          for (int p = 0; p < kk; ++p) t[static_cast<size_t>(p) * o + ch] = w[static_cast<size_t>(ch) * kk + p];
        weight_ = c.weights.add_f32(t);
        break;
      }
      case ConvPath::Stem: {
        std::vector<float> t(w.size());  // [o, k, k, c] -> [k, k, c, o]
        for (int oc = 0; oc < o; ++oc)
          for (int p = 0; p < kk; ++p)
            for (int ci = 0; ci < cin_g; ++ci)
              t[(static_cast<size_t>(p) * cin_g + ci) * o + oc] = w[(static_cast<size_t>(oc) * kk + p) * cin_g + ci];
        weight_ = c.weights.add_f32(t);
        break;
      }
      case ConvPath::Direct:
        weight_ = c.weights.add_f32(w);  // OHWI, as conv_direct.cuh takes it
        break;
    }
  }

  // GEMM-path variants: kiln's tiles, then (dense convs, with cuDNN) its plans, "cudnn_0" the
  // heuristic's first.
  int variants() const override {
    if (gemm()) return cuda::kGemmVariants + (cudnn_ ? cuda::cudnn_conv::kMaxPlans : 0);
    return path_ == ConvPath::Depthwise ? cuda::kDepthwiseVariants : 1;
  }
  std::string variant_name(int v) const override {
    if (gemm()) return v < cuda::kGemmVariants ? cuda::gemm_variant_name(v) : "cudnn_" + std::to_string(cudnn_plan(v));
    return path_ == ConvPath::Depthwise ? cuda::depthwise_variant_name(v) : "default";
  }
  bool variant_runs(const KernelArgs& a, int v) const override {
    if (gemm() && v >= cuda::kGemmVariants) return cuda::cudnn_conv::has_plan(cudnn_shape(a), cudnn_plan(v));
    if (gemm()) return cuda::gemm_variant_supports(gemm_args(a), v);
    return path_ != ConvPath::Depthwise || cuda::depthwise_variant_supports(depthwise_args(a), v);
  }
  int default_variant(const KernelArgs& a) const override {
    return gemm() ? cuda::gemm_default_variant(gemm_args(a)) : 0;
  }
  size_t workspace_bytes(const KernelArgs& a, int v) const override {
    if (gemm() && v >= cuda::kGemmVariants) {
      return cuda::cudnn_conv::workspace_bytes(cudnn_shape(a), cudnn_plan(v));
    }
    return gemm() ? cuda::gemm_workspace_bytes(gemm_args(a), v) : 0;
  }
  bool packs_input(int slot) const override { return slot == Weight || slot == Bias || slot == WeightScale; }
  bool zeroed_output(int slot) const override { return slot == 1; }  // the mean is accumulated
  std::string describe() const override {
    static const char* paths[] = {"gemm", "depthwise", "stem", "implicit gemm", "direct"};
    std::string d = paths[static_cast<int>(path_)];
    if (f_.gate) d += " +gate";
    if (f_.residual) d += " +residual";
    if (f_.p.mean_output) d += " +mean";
    if (f_.p.fp8_input()) d += " fp8";
    if (f_.out == DType::F8E4M3) d += " ->e4m3";
    return d;
  }

  void run(const KernelArgs& a, int variant) override {
    const ConvGeometry geo = conv2d_geometry(f_.p, a.inputs[X].shape, f_.w, *a.node);
    const cudaStream_t s = stream_of(a);
    switch (path_) {
      case ConvPath::Gemm:
      case ConvPath::ImplicitGemm:
        if (variant >= cuda::kGemmVariants) {
          cuda::CudnnConvTensors t;
          t.x = a.inputs[X].data;
          t.w = weights_.at(weight_);
          t.bias = bias();
          t.residual = f_.residual ? a.inputs[Residual].data : nullptr;
          t.y = a.outputs[0].data;
          t.workspace = a.workspace;
          cuda::cudnn_conv::run(cudnn_shape(a), cudnn_plan(variant), t, s);
          return;
        }
        cuda::launch_gemm(gemm_args(a), variant, s);
        return;
      case ConvPath::Depthwise:
        cuda::launch_depthwise(depthwise_args(a), variant, s);
        return;
      case ConvPath::Stem: {
        cuda::StemArgs st;
        fill_geometry(st, geo);
        st.x = a.inputs[X].as<const float>();
        st.w = weights_.get<float>(weight_);
        st.bias = bias();
        st.y = a.outputs[0].as<__half>();
        st.c_in = geo.c;
        st.c_out = geo.o;
        cuda::launch_stem(st, s);
        return;
      }
      case ConvPath::Direct: {
        cuda::ConvDirectArgs d;
        d.x = a.inputs[X].data;
        d.x_type = f_.x;
        d.nchw_input = f_.p.nchw_input;
        d.w = weights_.get<float>(weight_);
        d.bias = bias();
        if (a.inputs.size() > Gate) d.gate = {a.inputs[Gate].data, a.inputs[Gate].dtype};
        if (a.inputs.size() > Residual) d.residual = {a.inputs[Residual].data, a.inputs[Residual].dtype};
        d.y = a.outputs[0].data;
        d.y_type = f_.out;
        d.mean = f_.p.mean_output ? a.outputs[1].as<float>() : nullptr;
        d.n = geo.n;
        d.h = geo.h;
        d.w_in = geo.w;
        d.c = geo.c;
        d.oh = geo.oh;
        d.ow = geo.ow;
        d.o = geo.o;
        d.kh = f_.p.kh;
        d.kw = f_.p.kw;
        d.stride_h = f_.p.stride_h;
        d.stride_w = f_.p.stride_w;
        d.dilation_h = f_.p.dilation_h;
        d.dilation_w = f_.p.dilation_w;
        d.pad_top = geo.pad_top;
        d.pad_left = geo.pad_left;
        d.groups = f_.p.groups;
        d.act = to_cuda(f_.p.act);
        d.input_scale = f_.p.input_scale;
        d.output_scale = f_.p.output_scale;
        cuda::launch_conv_direct(d, s);
        return;
      }
    }
  }

 private:
  bool gemm() const { return path_ == ConvPath::Gemm || path_ == ConvPath::ImplicitGemm; }
  static int cudnn_plan(int variant) { return variant - cuda::kGemmVariants; }

  // The conv as cuDNN describes it: conv2d_geometry's padding gives the output size by cuDNN's
  // own formula, (in + pads - span) / stride + 1.
  cuda::CudnnConvShape cudnn_shape(const KernelArgs& a) const {
    const ConvGeometry geo = conv2d_geometry(f_.p, a.inputs[X].shape, f_.w, *a.node);
    cuda::CudnnConvShape s;
    s.n = geo.n;
    s.h = geo.h;
    s.w = geo.w;
    s.c = geo.c;
    s.o = geo.o;
    s.oh = geo.oh;
    s.ow = geo.ow;
    s.kh = f_.p.kh;
    s.kw = f_.p.kw;
    s.stride_h = f_.p.stride_h;
    s.stride_w = f_.p.stride_w;
    s.dilation_h = f_.p.dilation_h;
    s.dilation_w = f_.p.dilation_w;
    s.pad_top = geo.pad_top;
    s.pad_left = geo.pad_left;
    s.pad_bottom = geo.pad_bottom;
    s.pad_right = geo.pad_right;
    s.act = *cudnn_act(f_.p.act);
    s.bias = has_bias_;
    s.residual = f_.residual;
    s.align = common_alignment(
        {a.inputs[X].data, weights_.at(weight_), a.outputs[0].data, f_.residual ? a.inputs[Residual].data : nullptr});
    return s;
  }
  const float* bias() const { return has_bias_ ? weights_.get<float>(bias_) : nullptr; }

  template <typename A>
  void fill_geometry(A& d, const ConvGeometry& g) const {
    d.batch = g.n;
    d.h = g.h;
    d.w_in = g.w;
    d.oh = g.oh;
    d.ow = g.ow;
    d.kernel = f_.p.kh;
    d.stride = f_.p.stride_h;
    d.pad_top = g.pad_top;
    d.pad_left = g.pad_left;
    d.act = to_cuda(f_.p.act);
  }

  cuda::DepthwiseArgs depthwise_args(const KernelArgs& a) const {
    const ConvGeometry geo = conv2d_geometry(f_.p, a.inputs[X].shape, f_.w, *a.node);
    cuda::DepthwiseArgs d;
    fill_geometry(d, geo);
    d.x = a.inputs[X].data;
    if (f_.p.fp8_input()) {
      d.x_mode = f_.x == DType::F8E4M3 ? cuda::DepthwiseInput::E4M3 : cuda::DepthwiseInput::F16ToE4M3;
      d.x_scale = f_.p.input_scale;
      d.x_inv_scale = 1.0f / f_.p.input_scale;  // as the CPU backend rounds x * (1 / scale)
    }
    d.w = weights_.get<float>(weight_);
    d.bias = bias();
    d.y = a.outputs[0].as<__half>();
    if (f_.p.mean_output) {
      d.pool = a.outputs[1].as<float>();
      d.pool_scale = 1.0f / (static_cast<float>(geo.oh) * geo.ow);
    }
    d.c = geo.c;
    return d;
  }

  cuda::GemmArgs gemm_args(const KernelArgs& a) const {
    const Shape& x = a.inputs[X].shape;
    cuda::GemmArgs g;
    g.a = a.inputs[X].as<const __half>();
    g.w = weights_.at(weight_);
    g.bias = bias();
    g.gate = f_.gate ? a.inputs[Gate].as<const __half>() : nullptr;
    g.residual = f_.residual ? a.inputs[Residual].as<const __half>() : nullptr;
    g.out = a.outputs[0].data;
    g.out_f32 = f_.out == DType::F32;
    g.m = static_cast<int>(x[0] * x[1] * x[2]);
    g.n = static_cast<int>(f_.w[0]);
    g.k = static_cast<int>(f_.w[3]);
    g.rows_per_image = static_cast<int>(x[1] * x[2]);
    g.act = to_cuda(f_.p.act);
    if (path_ == ConvPath::ImplicitGemm) {
      const ConvGeometry geo = conv2d_geometry(f_.p, x, f_.w, *a.node);
      g.m = geo.n * geo.oh * geo.ow;
      g.k = static_cast<int>(f_.p.kh * f_.p.kw * f_.w[3]);
      g.rows_per_image = geo.oh * geo.ow;
      cuda::Im2col& v = g.im2col;
      v.h = geo.h;
      v.w = geo.w;
      v.c = geo.c;
      v.oh = geo.oh;
      v.ow = geo.ow;
      v.kh = f_.p.kh;
      v.kw = f_.p.kw;
      v.stride_h = f_.p.stride_h;
      v.stride_w = f_.p.stride_w;
      v.dilation_h = f_.p.dilation_h;
      v.dilation_w = f_.p.dilation_w;
      v.pad_top = geo.pad_top;
      v.pad_left = geo.pad_left;
    }
    g.workspace = static_cast<float*>(a.workspace);
    g.fp8 = f_.fp8_weight;
    g.col_scale = f_.fp8_weight ? weights_.get<float>(col_scale_) : nullptr;
    g.a_inv_scale = f_.p.fp8_input() ? 1.0f / f_.p.input_scale : 1.0f;  // as the CPU backend rounds x * (1 / scale)
    g.out_e4m3 = f_.out == DType::F8E4M3;
    g.out_inv_scale = g.out_e4m3 ? 1.0f / f_.p.output_scale : 1.0f;
    return g;
  }

  CudaWeights& weights_;
  std::string node_;
  ConvFacts f_;
  ConvPath path_ = ConvPath::Direct;
  size_t weight_ = 0, bias_ = 0, col_scale_ = 0;
  bool has_bias_ = false;
  bool cudnn_ = false;  // cuDNN's plans are variants too (cudnn_conv.h)
};

}  // namespace

KILN_REGISTER_CUDA_KERNELS(conv2d) {
  registry.add("conv2d", {supports_conv2d, make_cuda_kernel<Conv2dKernel>, fast_conv2d});
}

}  // namespace kiln

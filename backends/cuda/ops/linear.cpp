// linear, norm_linear and mlp on the GPU. An fp16 layer whose input size is a multiple of 8 is a
// tensor-core GEMM (gemm.cu: tile variants timed per layer; residual and f32 output in the
// epilogue); an output size that is not (a vocabulary of 58101) is padded to one with zero
// weights, the epilogue storing only the valid columns (out_cols). Any other layer runs the
// small dense kernel (one thread per output).
//
// cuBLASLt's heuristic's first choices are more variants where its epilogue can do the layer
// (bias, ReLU, the residual as its C; not SiLU or kiln's exact GELU): at a decoder step's few
// rows its split-K kernels can beat the tiles. A layer whose outputs are padded has one more:
// cuBLASLt over the padded outputs into the workspace, then the valid columns copied out. Rows
// of 58101 halves start at any even address, and cuBLAS's kernels for such rows are slow: on an
// H100, a vocabulary projection of 128 rows took it 101 us into rows of 58101 and 32 us into
// rows of 58104 (the tiles took 87 us).
//
// An FP8 linear runs only on the GEMM's FP8 paths (the tiles of gemm_mma.cu, the few-rows
// kernel of gemv.cu: E4M3 weights, the input rounded as it is loaded), sm_89 and newer. An mlp
// (two layers on few rows: squeeze-excite) is one kernel (mlp.cu). A norm_linear is the linear
// with its input's layer norm: at a few rows in the few-rows kernel, else layer_norm's kernel
// first.
#include <algorithm>
#include <memory>
#include <optional>

#include "backends/cuda/cublaslt_gemm.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/gemv.cuh"
#include "backends/cuda/kernels.cuh"
#include "backends/cuda/norm.cuh"
#include "core/error.h"
#include "graph/ops/activation.h"
#include "graph/ops/linear.h"

namespace kiln {

namespace {

cuda::Act to_cuda(Activation a) { return static_cast<cuda::Act>(static_cast<int>(a)); }

bool f16_or_f32(DType t) { return t == DType::F16 || t == DType::F32; }

// The GEMM takes fp16 x and weights with K and N multiples of 8 (N is padded when the layer has
// no residual); an f32 output has no residual.
bool gemm_fits(const Graph& g, const Node& n) {
  using namespace linear_input;
  const Shape w = constant_shape(g, n, Weight);
  const DType out = output_dtypes(g, n)[0];
  return !w.empty() && input_dtype(g, n, X) == DType::F16 && w[1] % 8 == 0 &&
         (w[0] % 8 == 0 || n.input(Residual) < 0) &&
         (out == DType::F16 || (out == DType::F32 && n.input(Residual) < 0));
}

int64_t round_up_8(int64_t n) { return (n + 7) / 8 * 8; }

bool supports_linear(const Graph& g, const Node& n) {
  using namespace linear_input;
  const DType out = output_dtypes(g, n)[0];
  const bool residual_ok = n.input(Residual) < 0 || input_dtype(g, n, Residual) == out;
  const bool fp8_ok = input_dtype(g, n, Weight) != DType::F8E4M3 || (gemm_fits(g, n) && compute_capability() >= 89);
  return !constant_shape(g, n, Weight).empty() && f16_or_f32(input_dtype(g, n, X)) && f16_or_f32(out) && residual_ok &&
         fp8_ok;
}

class LinearKernel : public Kernel {
 public:
  explicit LinearKernel(CudaKernelContext& c) : weights_(c.weights) {
    using namespace linear_input;
    const Graph& g = c.graph;
    const Node& n = c.node;
    gemm_ = gemm_fits(g, n);
    residual_ = n.input(Residual) >= 0;
    w_shape_ = constant_shape(g, n, Weight);
    act_ = to_cuda(parse_activation(n.attrs.get_string("act")));
    out_ = output_dtypes(g, n)[0];
    x_ = input_dtype(g, n, X);
    n_ = gemm_ ? round_up_8(w_shape_[0]) : w_shape_[0];
    fp8_ = input_dtype(g, n, Weight) == DType::F8E4M3;
    lt_fits_ = gemm_ && !fp8_ && (act_ == cuda::Act::None || act_ == cuda::Act::ReLU) && CublasLtGemm::available();
    const ConstantView weight = c.constants(g.values()[n.inputs[Weight]].name);
    const size_t padded = static_cast<size_t>(n_ * w_shape_[1]);  // padded outputs: zero weights
    if (fp8_) {
      // E4M3 codes as stored; the GEMM scales each output column by input scale x weight scale.
      std::vector<float> w = weight.to_f32();
      w.resize(padded, 0.0f);
      weight_ = c.weights.add_e4m3(w);
      input_scale_ = static_cast<float>(n.attrs.get_float("input_scale"));
      std::vector<float> col = c.constants(g.values()[n.inputs[WeightScale]].name).to_f32();
      for (float& s : col) s *= input_scale_;
      col.resize(static_cast<size_t>(n_), 0.0f);
      col_scale_ = c.weights.add_f32(col);
    } else {
      weight_ = gemm_ ? c.weights.add_f16(weight, padded) : c.weights.add_f32(weight.to_f32());
    }
    if (n.input(Bias) >= 0) {
      std::vector<float> b = c.constants(g.values()[n.inputs[Bias]].name).to_f32();
      b.resize(static_cast<size_t>(n_), 0.0f);
      bias_ = c.weights.add_f32(b);
      has_bias_ = true;
      // cuBLASLt's bias has the output's type.
      if (lt_fits_ && out_ == DType::F16) lt_bias_ = c.weights.add_f16(b);
    }
  }

  int variants() const override { return gemm_ ? kPaddedVariant + 1 : 1; }
  std::string variant_name(int v) const override {
    if (!gemm_) return "default";
    if (v == kLtVariant) return "cublaslt";
    if (v == kPaddedVariant) return "cublaslt_padded";
    return v > kLtVariant ? fmt::format("cublaslt_{}", v - kLtVariant + 1) : cuda::gemm_variant_name(v);
  }
  bool variant_runs(const KernelArgs& a, int v) const override {
    if (v == kPaddedVariant) {
      if (!padded_fits()) return false;
      return lt().algorithms(padded_shape(a), a.inputs[linear_input::X].data, weights_.at(weight_), a.workspace,
                             padded_extras(a)) > 0;
    }
    if (v >= kLtVariant) {
      if (!lt_fits_) return false;
      return v - kLtVariant < lt().algorithms(lt_shape(a), a.inputs[linear_input::X].data, weights_.at(weight_),
                                              a.outputs[0].data, lt_extras(a));
    }
    return !gemm_ || cuda::gemm_variant_supports(gemm_args(a), v);
  }
  int default_variant(const KernelArgs& a) const override {
    return gemm_ ? cuda::gemm_default_variant(gemm_args(a)) : 0;
  }
  size_t workspace_bytes(const KernelArgs& a, int v) const override {
    if (v == kPaddedVariant) return padded_fits() ? padded_bytes(a) : 0;
    if (v >= kLtVariant) return lt_fits_ ? kLtWorkspace : 0;
    return gemm_ ? cuda::gemm_workspace_bytes(gemm_args(a), v) : 0;
  }
  bool packs_input(int slot) const override {
    using namespace linear_input;
    return slot == Weight || slot == Bias || slot == WeightScale;
  }
  std::string describe() const override {
    std::string d = gemm_ ? "gemm" : "small";
    if (fp8_) d += " fp8";
    if (residual_) d += " +residual";
    return d;
  }

  // The GEMM's arguments (norm_linear's kernel passes them to the few-rows kernel with its norm).
  cuda::GemmArgs gemm_args(const KernelArgs& a) const {
    using namespace linear_input;
    cuda::GemmArgs g;
    g.a = a.inputs[X].as<const __half>();
    g.w = weights_.at(weight_);
    g.bias = bias();
    g.residual =
        a.inputs.size() > Residual && a.inputs[Residual].data ? a.inputs[Residual].as<const __half>() : nullptr;
    g.out = a.outputs[0].data;
    g.out_f32 = out_ == DType::F32;
    g.k = static_cast<int>(w_shape_[1]);
    g.n = static_cast<int>(n_);
    if (n_ != w_shape_[0]) g.out_cols = static_cast<int>(w_shape_[0]);
    g.m = static_cast<int>(a.inputs[X].numel() / g.k);
    g.rows_per_image = 1;
    g.act = act_;
    g.workspace = static_cast<float*>(a.workspace);
    if (fp8_) {
      g.fp8 = true;
      g.col_scale = weights_.get<float>(col_scale_);
      g.a_inv_scale = 1.0f / input_scale_;  // as the CPU backend rounds x * (1 / scale)
    }
    return g;
  }

  void run(const KernelArgs& a, int variant) override {
    using namespace linear_input;
    if (gemm_ && variant == kPaddedVariant) return run_cublaslt_padded(a);
    if (gemm_ && variant >= kLtVariant) return run_cublaslt(a, variant - kLtVariant);
    if (gemm_) {
      cuda::launch_gemm(gemm_args(a), variant, stream_of(a));
      return;
    }
    cuda::LinearSmallArgs s;
    s.x = a.inputs[X].data;
    s.x_f32 = x_ == DType::F32;
    s.w = weights_.get<float>(weight_);
    s.bias = bias();
    s.residual = a.inputs.size() > Residual ? a.inputs[Residual].data : nullptr;
    s.y = a.outputs[0].data;
    s.y_f32 = out_ == DType::F32;
    s.in = static_cast<int>(w_shape_[1]);
    s.out = static_cast<int>(w_shape_[0]);
    s.rows = a.inputs[X].numel() / s.in;
    s.act = act_;
    cuda::launch_linear_small(s, stream_of(a));
  }

 private:
  static constexpr int kLtVariant = cuda::kGemmVariants;
  static constexpr int kPaddedVariant = kLtVariant + CublasLtGemm::kMaxAlgorithms;
  static constexpr size_t kLtWorkspace = size_t{4} << 20;  // enough for split-K at a few hundred rows

  size_t out_size() const { return out_ == DType::F32 ? 4 : 2; }
  // The padded output [rows, n_] (the whole workspace: cuBLASLt gets none of it).
  size_t padded_bytes(const KernelArgs& a) const {
    return static_cast<size_t>(a.inputs[linear_input::X].numel() / w_shape_[1] * n_) * out_size();
  }

  const float* bias() const { return has_bias_ ? weights_.get<float>(bias_) : nullptr; }

  // Made when the planner first asks about cuBLASLt; the engine's workspace serves it.
  CublasLtGemm& lt() const {
    if (!lt_) lt_ = std::make_unique<CublasLtGemm>(0);
    return *lt_;
  }

  GemmShape lt_shape(const KernelArgs& a) const {
    using namespace linear_input;
    GemmShape s;
    s.dtype = DType::F16;
    s.k = w_shape_[1];
    s.n = w_shape_[0];
    s.m = a.inputs[X].numel() / s.k;
    s.trans_b = true;
    s.lda = s.ldb = s.k;
    s.ldc = s.n;
    s.out_f32 = out_ == DType::F32;
    s.bias = has_bias_;
    s.relu = act_ == cuda::Act::ReLU;
    if (a.inputs.size() > Residual && a.inputs[Residual].data) s.beta = 1.0f;
    return s;
  }

  GemmExtras lt_extras(const KernelArgs& a) const {
    using namespace linear_input;
    GemmExtras e;
    if (has_bias_) e.bias = out_ == DType::F32 ? static_cast<const void*>(bias()) : weights_.at(lt_bias_);
    if (a.inputs.size() > Residual && a.inputs[Residual].data) e.c_in = a.inputs[Residual].data;
    e.workspace = a.workspace;
    e.workspace_bytes = kLtWorkspace;
    return e;
  }

  void run_cublaslt(const KernelArgs& a, int algorithm) {
    GemmExtras e = lt_extras(a);
    e.algorithm = algorithm;
    lt().gemm(lt_shape(a), a.inputs[linear_input::X].data, weights_.at(weight_), a.outputs[0].data, stream_of(a), e);
  }

  // The padded variant: a layer whose outputs were padded (no residual then), cuBLASLt's epilogue.
  bool padded_fits() const { return lt_fits_ && n_ != w_shape_[0]; }
  GemmShape padded_shape(const KernelArgs& a) const {
    GemmShape s = lt_shape(a);
    s.n = s.ldc = n_;
    return s;
  }
  GemmExtras padded_extras(const KernelArgs& a) const {
    GemmExtras e = lt_extras(a);
    e.workspace = nullptr;  // the instance's: none (the output fills the engine's)
    e.workspace_bytes = 0;
    return e;
  }

  void run_cublaslt_padded(const KernelArgs& a) {
    const GemmShape s = padded_shape(a);
    if (s.m == 0) return;
    lt().gemm(s, a.inputs[linear_input::X].data, weights_.at(weight_), a.workspace, stream_of(a), padded_extras(a));
    const size_t row = static_cast<size_t>(w_shape_[0]) * out_size();
    KILN_CUDA_CHECK(cudaMemcpy2DAsync(a.outputs[0].data, row, a.workspace, static_cast<size_t>(n_) * out_size(), row,
                                      static_cast<size_t>(s.m), cudaMemcpyDeviceToDevice, stream_of(a)));
  }

  CudaWeights& weights_;
  bool gemm_ = false, has_bias_ = false, residual_ = false, lt_fits_ = false, fp8_ = false;
  float input_scale_ = 0;
  size_t col_scale_ = 0;                      // FP8: input scale x weight scale per output column
  size_t lt_bias_ = 0;                        // the bias as fp16, for cuBLASLt's fp16 outputs
  mutable std::unique_ptr<CublasLtGemm> lt_;  // see lt()
  Shape w_shape_;
  int64_t n_ = 0;  // outputs the GEMM computes: w_shape_[0] rounded up to 8
  cuda::Act act_ = cuda::Act::None;
  DType x_ = DType::F32, out_ = DType::F32;
  size_t weight_ = 0, bias_ = 0;
};

// norm_linear: layer_norm's kernel, then any of linear's variants, which the planner times as
// for a linear. A layer on the GEMM path with fp16 weights has one variant more, "gemv_norm":
// the few-rows kernel doing both (gemv.cu), the default at up to 16 rows. Fusion makes a
// norm_linear only where that variant exists (fast_norm_linear).
bool supports_norm_linear(const Graph& g, const Node& n) {
  using namespace linear_input;
  const auto constant_or_absent = [&](int slot) { return n.input(slot) < 0 || !constant_shape(g, n, slot).empty(); };
  return supports_linear(g, n) && constant_or_absent(Gamma) && constant_or_absent(Beta);
}

bool one_kernel_norm_linear(const Graph& g, const Node& n) {
  return gemm_fits(g, n) && input_dtype(g, n, linear_input::Weight) != DType::F8E4M3;
}

bool fast_norm_linear(const Graph& g, const Node& n) {
  return supports_norm_linear(g, n) && one_kernel_norm_linear(g, n);
}

class NormLinearKernel : public Kernel {
 public:
  explicit NormLinearKernel(CudaKernelContext& c)
      : linear_(c),
        weights_(c.weights),
        eps_(static_cast<float>(c.node.attrs.get_float("eps"))),
        fused_(linear_.variants()),
        one_kernel_(one_kernel_norm_linear(c.graph, c.node)) {
    using namespace linear_input;
    const Graph& g = c.graph;
    const Node& n = c.node;
    if (n.input(Gamma) >= 0) gamma_ = c.weights.add_f32(c.constants(g.values()[n.inputs[Gamma]].name).to_f32());
    if (n.input(Beta) >= 0) beta_ = c.weights.add_f32(c.constants(g.values()[n.inputs[Beta]].name).to_f32());
  }

  int variants() const override { return fused_ + (one_kernel_ ? 1 : 0); }
  std::string variant_name(int v) const override { return v == fused_ ? "gemv_norm" : linear_.variant_name(v); }
  bool variant_runs(const KernelArgs& a, int v) const override {
    const cuda::GemmArgs g = linear_.gemm_args(a);
    const bool one = one_kernel_ && cuda::gemv_supports(g);
    if (v == fused_) return one;
    // At up to kFusedOnlyRows rows (a decoder step's beams of one source) and kFusedOnlyWidth
    // outputs, only the one kernel. Timed alone, the planner often picks the unfused pair there
    // (25 of 37 such layers of a 1024-wide decoder at one row), but in a whole step the fused one
    // was faster: the pair is one launch and one dependency wait more, which the isolated timing
    // does not see, and a plan with cached states gets no whole-plan settlement of close calls.
    // Wider outputs (a vocabulary projection) stay with the planner, and so do more rows: the
    // few-rows kernel's time grows with them, and at 12 (an encoder's short source) a 1024 x 4096
    // layer took 61 us in it against 25 for a GEMM at twice the rows.
    if (one && cuda::gemv_by_default(g) && g.m <= kFusedOnlyRows && g.n <= kFusedOnlyWidth) return false;
    return linear_.variant_runs(linear_args(a), v);
  }
  int default_variant(const KernelArgs& a) const override {
    if (one_kernel_ && cuda::gemv_by_default(linear_.gemm_args(a))) return fused_;
    return linear_.default_variant(linear_args(a));
  }
  size_t workspace_bytes(const KernelArgs& a, int v) const override {
    return v == fused_ ? 0 : linear_.workspace_bytes(linear_args(a), v);
  }
  bool packs_input(int slot) const override {
    return linear_.packs_input(slot) || slot == linear_input::Gamma || slot == linear_input::Beta;
  }
  std::string describe() const override { return "norm + " + linear_.describe(); }

  void run(const KernelArgs& a, int variant) override {
    if (variant == fused_) {
      const cuda::GemvNorm norm{gamma(), beta(), eps_, a.outputs[1].as<__half>()};
      return cuda::launch_gemv(linear_.gemm_args(a), stream_of(a), &norm);
    }
    const TensorRef& x = a.inputs[linear_input::X];
    cuda::NormArgs p = cuda::norm_rows(x.data, a.outputs[1].data, x.dtype, x.numel(), x.shape.back(), eps_);
    p.gamma = gamma();
    p.beta = beta();
    p.params_settled = true;  // this kernel's own packed weights
    cuda::launch_layer_norm(p, stream_of(a));
    linear_.run(linear_args(a), variant);
  }

 private:
  const float* gamma() const { return gamma_ ? weights_.get<float>(*gamma_) : nullptr; }
  const float* beta() const { return beta_ ? weights_.get<float>(*beta_) : nullptr; }

  // The linear reading the normalised rows (output 1).
  static KernelArgs linear_args(const KernelArgs& a) {
    KernelArgs l = a;
    l.inputs[linear_input::X] = a.outputs[1];
    l.outputs.resize(1);
    return l;
  }

  static constexpr int kFusedOnlyRows = 4, kFusedOnlyWidth = 16384;

  LinearKernel linear_;
  CudaWeights& weights_;
  float eps_;
  int fused_;                // the one-kernel variant's number, after linear's
  bool one_kernel_ = false;  // whether it exists (one_kernel_norm_linear)
  std::optional<size_t> gamma_, beta_;
};

bool supports_mlp(const Graph& g, const Node& n) {
  using namespace mlp_input;
  const Shape w1 = constant_shape(g, n, W1), w2 = constant_shape(g, n, W2);
  const DType out = output_dtypes(g, n)[0];
  return !w1.empty() && !w2.empty() && cuda::mlp_supported(static_cast<int>(w1[1]), static_cast<int>(w1[0])) &&
         f16_or_f32(input_dtype(g, n, X)) && f16_or_f32(out) &&
         (n.input(Residual) < 0 || input_dtype(g, n, Residual) == out);
}

class MlpKernel : public Kernel {
 public:
  explicit MlpKernel(CudaKernelContext& c) : weights_(c.weights) {
    using namespace mlp_input;
    const Graph& g = c.graph;
    const Node& n = c.node;
    const Shape w1 = constant_shape(g, n, W1), w2 = constant_shape(g, n, W2);
    args_.k = static_cast<int>(w1[1]);
    args_.h = static_cast<int>(w1[0]);
    args_.n = static_cast<int>(w2[0]);
    args_.act1 = to_cuda(parse_activation(n.attrs.get_string("act1")));
    args_.act2 = to_cuda(parse_activation(n.attrs.get_string("act2")));
    args_.x_f32 = input_dtype(g, n, X) == DType::F32;
    args_.y_f32 = output_dtypes(g, n)[0] == DType::F32;
    auto constant = [&](int slot) { return c.constants(g.values()[n.inputs[slot]].name).to_f32(); };
    w1_ = c.weights.add_f32(padded_rows(constant(W1), args_.h, args_.k));
    w2_ = c.weights.add_f32(padded_rows(constant(W2), args_.n, args_.h));
    if (n.input(B1) >= 0) b1_ = c.weights.add_f32(constant(B1));
    if (n.input(B2) >= 0) b2_ = c.weights.add_f32(constant(B2));
  }
  bool packs_input(int slot) const override { return slot != mlp_input::X && slot != mlp_input::Residual; }
  int variants() const override { return cuda::kMlpVariants; }
  std::string variant_name(int v) const override { return cuda::mlp_variant_name(v); }
  bool variant_runs(const KernelArgs& a, int v) const override { return cuda::mlp_variant_supports(args(a), v); }
  size_t workspace_bytes(const KernelArgs& a, int v) const override { return cuda::mlp_workspace_bytes(args(a), v); }
  void run(const KernelArgs& a, int variant) override { cuda::launch_mlp(args(a), variant, stream_of(a)); }

 private:
  // [rows, cols] -> [rows, cols rounded up to 4], zero-filled: the kernel's 16-byte loads.
  static std::vector<float> padded_rows(const std::vector<float>& w, int rows, int cols) {
    const int stride = cuda::mlp_padded(cols);
    std::vector<float> out(static_cast<size_t>(rows) * stride, 0.0f);
    for (int r = 0; r < rows; ++r)
      std::copy_n(w.begin() + static_cast<ptrdiff_t>(r) * cols, cols, out.begin() + static_cast<ptrdiff_t>(r) * stride);
    return out;
  }

  cuda::MlpArgs args(const KernelArgs& a) const {
    using namespace mlp_input;
    cuda::MlpArgs m = args_;
    m.x = a.inputs[X].data;
    m.w1 = weights_.get<float>(w1_);
    m.w2 = weights_.get<float>(w2_);
    m.b1 = b1_ ? weights_.get<float>(*b1_) : nullptr;
    m.b2 = b2_ ? weights_.get<float>(*b2_) : nullptr;
    m.residual = a.inputs.size() > Residual ? a.inputs[Residual].data : nullptr;
    m.y = a.outputs[0].data;
    m.rows = static_cast<int>(a.inputs[X].numel() / m.k);
    m.workspace = static_cast<float*>(a.workspace);
    return m;
  }

  CudaWeights& weights_;
  cuda::MlpArgs args_;
  size_t w1_ = 0, w2_ = 0;
  std::optional<size_t> b1_, b2_;
};

}  // namespace

KILN_REGISTER_CUDA_KERNELS(linear) {
  registry.add("linear", {supports_linear, make_cuda_kernel<LinearKernel>, supports_linear});
  registry.add("norm_linear", {supports_norm_linear, make_cuda_kernel<NormLinearKernel>, fast_norm_linear});
  registry.add("mlp", {supports_mlp, make_cuda_kernel<MlpKernel>, supports_mlp});
}

}  // namespace kiln

// linear, norm_linear and mlp on the CPU (graph/ops/linear.h): OpenBLAS GEMMs with bias,
// activation and residual applied after each; norm_linear is layer_norm, then linear. An FP8
// linear is emulated exactly: its input rounded as core/fp8.h's fp8_layer_input says, its
// weights the stored E4M3 values times their row's scale.
#include <vector>

#include "backends/cpu/activation.h"
#include "backends/cpu/cpu_kernel.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/layer_norm.h"
#include "core/error.h"
#include "core/fp8.h"
#include "graph/ops/linear.h"

namespace kiln {

namespace {

// A weight or bias input: packed when it is a constant, else read from the run's tensors.
class Operand {
 public:
  Operand(const Graph& g, const Node& n, int slot, const ConstantLookup& constants) : slot_(slot) {
    const int v = n.input(slot);
    if (v >= 0 && g.values()[v].kind == ValueKind::Constant) packed_ = constants(g.values()[v].name).to_f32();
    present_ = v >= 0;
  }
  const float* get(const KernelArgs& a) const {
    if (!present_) return nullptr;
    return packed_.empty() ? a.inputs[slot_].as<const float>() : packed_.data();
  }
  bool packed() const { return !packed_.empty(); }
  std::vector<float>& packed_values() { return packed_; }

 private:
  int slot_;
  bool present_ = false;
  std::vector<float> packed_;
};

void add_residual(const KernelArgs& a, int slot, float* y, int64_t count) {
  if (slot >= static_cast<int>(a.inputs.size()) || !a.inputs[slot].data) return;
  const float* r = a.inputs[slot].as<const float>();
  for (int64_t e = 0; e < count; ++e) y[e] += r[e];
}

class LinearKernel : public CpuKernel {
 public:
  LinearKernel(const Graph& g, int node, const ConstantLookup& c)
      : w_(g, g.nodes()[node], linear_input::Weight, c),
        b_(g, g.nodes()[node], linear_input::Bias, c),
        act_(parse_activation(g.nodes()[node].attrs.get_string("act"))),
        input_scale_(static_cast<float>(g.nodes()[node].attrs.get_float("input_scale"))) {
    const Node& n = g.nodes()[node];
    if (n.input(linear_input::WeightScale) >= 0) {
      KILN_CHECK(w_.packed(), "[linear] {}: FP8 weights must be constants", n.name);
      apply_channel_scales(w_.packed_values(), c(g.values()[n.inputs[linear_input::WeightScale]].name).to_f32());
    }
  }
  bool packs_input(int slot) const override {
    return (slot == linear_input::Weight && w_.packed()) || (slot == linear_input::Bias && b_.packed()) ||
           slot == linear_input::WeightScale;
  }
  void run(const KernelArgs& a, int) override {
    const TensorRef& x = a.inputs[linear_input::X];
    const int k = static_cast<int>(x.shape.back()), n = static_cast<int>(a.outputs[0].shape.back());
    const int64_t rows = k ? x.numel() / k : 0;
    float* y = a.outputs[0].as<float>();
    const float* in = x.as<const float>();
    if (input_scale_ > 0) {
      rounded_.assign(in, in + rows * k);
      for (float& v : rounded_) v = fp8_layer_input(v, input_scale_, false);
      in = rounded_.data();
    }
    cpu::gemm_xwt(in, w_.get(a), y, rows, k, n);
    cpu::bias_activation(y, rows, n, b_.get(a), act_);
    add_residual(a, linear_input::Residual, y, rows * n);
  }

 private:
  Operand w_, b_;
  Activation act_;
  float input_scale_ = 0;
  std::vector<float> rounded_;  // an FP8 layer's input on the E4M3 grid
};

class NormLinearKernel : public CpuKernel {
 public:
  NormLinearKernel(const Graph& g, int node, const ConstantLookup& c)
      : linear_(g, node, c),
        gamma_(g, g.nodes()[node], linear_input::Gamma, c),
        beta_(g, g.nodes()[node], linear_input::Beta, c),
        eps_(g.nodes()[node].attrs.get_float("eps")) {}
  bool packs_input(int slot) const override {
    return linear_.packs_input(slot) || (slot == linear_input::Gamma && gamma_.packed()) ||
           (slot == linear_input::Beta && beta_.packed());
  }
  void run(const KernelArgs& a, int) override {
    const TensorRef& x = a.inputs[linear_input::X];
    const TensorRef& normed = a.outputs[1];
    const int64_t d = x.shape.back(), rows = d ? x.numel() / d : 0;
    cpu::layer_norm_rows(x.as<const float>(), gamma_.get(a), beta_.get(a), rows, d, eps_, normed.as<float>());
    KernelArgs inner = a;
    inner.inputs[linear_input::X] = normed;
    inner.outputs.resize(1);
    linear_.run(inner, 0);
  }

 private:
  LinearKernel linear_;
  Operand gamma_, beta_;
  double eps_;
};

class MlpKernel : public CpuKernel {
 public:
  MlpKernel(const Graph& g, int node, const ConstantLookup& c)
      : w1_(g, g.nodes()[node], mlp_input::W1, c),
        b1_(g, g.nodes()[node], mlp_input::B1, c),
        w2_(g, g.nodes()[node], mlp_input::W2, c),
        b2_(g, g.nodes()[node], mlp_input::B2, c),
        act1_(parse_activation(g.nodes()[node].attrs.get_string("act1"))),
        act2_(parse_activation(g.nodes()[node].attrs.get_string("act2"))) {}
  bool packs_input(int slot) const override {
    using namespace mlp_input;
    return (slot == W1 && w1_.packed()) || (slot == B1 && b1_.packed()) || (slot == W2 && w2_.packed()) ||
           (slot == B2 && b2_.packed());
  }
  void run(const KernelArgs& a, int) override {
    using namespace mlp_input;
    const TensorRef& x = a.inputs[X];
    const int k = static_cast<int>(x.shape.back()), n = static_cast<int>(a.outputs[0].shape.back());
    const int hidden = static_cast<int>(a.inputs[W1].shape[0]);  // shapes are set for packed inputs too
    const int64_t rows = k ? x.numel() / k : 0;
    hidden_buf_.resize(static_cast<size_t>(rows) * hidden);
    cpu::gemm_xwt(x.as<const float>(), w1_.get(a), hidden_buf_.data(), rows, k, hidden);
    cpu::bias_activation(hidden_buf_.data(), rows, hidden, b1_.get(a), act1_);
    float* y = a.outputs[0].as<float>();
    cpu::gemm_xwt(hidden_buf_.data(), w2_.get(a), y, rows, hidden, n);
    cpu::bias_activation(y, rows, n, b2_.get(a), act2_);
    add_residual(a, Residual, y, rows * n);
  }

 private:
  Operand w1_, b1_, w2_, b2_;
  Activation act1_, act2_;
  std::vector<float> hidden_buf_;
};

}  // namespace

KILN_REGISTER_CPU_KERNELS(linear) {
  registry.add("linear", make_cpu_kernel<LinearKernel>);
  registry.add("norm_linear", make_cpu_kernel<NormLinearKernel>);
  registry.add("mlp", make_cpu_kernel<MlpKernel>);
}

}  // namespace kiln

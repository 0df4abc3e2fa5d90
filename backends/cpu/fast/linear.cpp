// linear and mlp on oneDNN matmuls (graph/ops/linear.h): x [..., K] as rows times the weights,
// bias, activation and residual fused as post-ops; one primitive per row count. Up to 8 rows (a
// decoder step) kiln's own matrix-vector loop (cpu/gemv.h) streams the weights as stored faster
// (f16 weights as f16).
// More rows (beams, an encoder) take a copy of the weights reordered once into the blocked layout
// oneDNN's matmul picks: on opus-mt-en-de's shapes up to 256 rows, on a Xeon at 2 and 16
// threads, it was as fast as the matmul on the weights as stored or faster (up to 2x), and
// OpenBLAS's sgemm was slower than both (bench/cpu/dense_shapes.cpp,
// bench/results/2026-12-03-cpu-transformer/). Weights that are not constants decline (the
// reference kernel takes them). The reference's OpenBLAS calls from many threads at once were its
// problem: on 16 cores squeeze-excite's tiny mlps took 2 ms each. An FP8 linear computes what
// the reference's emulation computes: its input rounded the same way (cpu/fp8_input.h), its E4M3
// weights widened to f32 with their scales once.
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/cpu/activation.h"
#include "backends/cpu/constant_floats.h"
#include "backends/cpu/cpu_kernel.h"
#include "backends/cpu/fp8_input.h"
#include "backends/cpu/gemv.h"
#include "backends/cpu/onednn.h"
#include "core/fp8.h"
#include "graph/ops/linear.h"

namespace kiln {

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using dt = memory::data_type;

bool constant(const Graph& g, const Node& n, int slot) {
  const int v = n.input(slot);
  return v < 0 || g.values()[v].kind == ValueKind::Constant;
}

// One dense layer: y[rows, out] = act(x[rows, in] W^T + b) (+ residual).
class Dense {
 public:
  Dense(const Graph& g, const Node& n, int weight_slot, int bias_slot, Activation act, const ConstantLookup& constants,
        int scale_slot = -1)
      : act_(act) {
    const Value& w = g.values()[n.inputs[weight_slot]];
    const Shape shape = resolve(w.shape, {});
    out_ = shape[0];
    in_ = shape[1];
    weight_view_ = constants(w.name);
    const bool scaled = scale_slot >= 0 && n.input(scale_slot) >= 0;  // FP8: scaled f32 weights
    if (!scaled && weight_view_.dtype == DType::F16 && reinterpret_cast<uintptr_t>(weight_view_.bytes.data()) % 2 == 0)
      half_ = reinterpret_cast<const uint16_t*>(weight_view_.bytes.data());
    else
      weight_ = cpu::ConstantFloats(weight_view_);
    if (n.input(bias_slot) >= 0) bias_ = cpu::ConstantFloats(constants(g.values()[n.inputs[bias_slot]].name));
    if (scaled) {
      apply_channel_scales(weight_.owned(), constants(g.values()[n.inputs[scale_slot]].name).to_f32());
      input_scale_ = static_cast<float>(n.attrs.get_float("input_scale"));
    }
  }

  int64_t in() const { return in_; }
  int64_t out() const { return out_; }
  bool half() const { return half_ != nullptr; }  // reads f16 weights where they are stored

  void run(const float* x, float* y, int64_t rows, const float* residual) {
    if (input_scale_ > 0) {
      rounded_.assign(x, x + rows * in_);
      cpu::round_fp8_inputs(rounded_.data(), rows * in_, input_scale_, false);
      x = rounded_.data();
    }
    if (rows <= cpu::kGemvMaxRows) {  // a decoder step: stream the weights once (cpu/gemv.h)
      if (half_)
        cpu::gemv_rows_f16(x, half_, y, rows, in_, out_);
      else
        cpu::gemv_rows(x, weight_.data(), y, rows, in_, out_);
      for (int64_t r = 0; r < rows; ++r) {
        float* row = y + r * out_;
        cpu::bias_activation_row(row, static_cast<int>(out_), bias_.empty() ? nullptr : bias_.data(), act_);
        if (residual)
          for (int64_t n = 0; n < out_; ++n) row[n] += residual[r * out_ + n];
      }
      return;
    }
    Primitive& p = primitive_for(rows, residual != nullptr);
    dnnl::engine& engine = cpu::onednn_engine();
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, memory(p.pd.src_desc(), engine, const_cast<float*>(x))},
        {DNNL_ARG_WEIGHTS,
         p.packed ? packed_->memory() : memory(stored_md(), engine, const_cast<float*>(floats().data()))},
        {DNNL_ARG_DST, memory(p.pd.dst_desc(), engine, y)},
        {DNNL_ARG_SCRATCHPAD, cpu::onednn_scratchpad(p.pd.scratchpad_desc())},
    };
    if (!bias_.empty()) args.emplace(DNNL_ARG_BIAS, memory(bias_md(), engine, const_cast<float*>(bias_.data())));
    if (residual)
      args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(p.residual_post_op) | DNNL_ARG_SRC_1,
                   memory(p.pd.dst_desc(), engine, const_cast<float*>(residual)));
    p.matmul.execute(cpu::onednn_stream(), args);
    cpu::onednn_stream().wait();
  }

 private:
  struct Primitive {
    dnnl::matmul::primitive_desc pd;
    dnnl::matmul matmul;
    bool packed = false;  // on packed_, else on the weights as stored
    int residual_post_op = -1;
  };

  // The weights as f32 for oneDNN: half weights are widened when a batch of more than
  // kGemvMaxRows rows first comes (a greedy decoder never makes the copy).
  const cpu::ConstantFloats& floats() {
    if (weight_.empty()) weight_ = cpu::ConstantFloats(weight_view_);
    return weight_;
  }

  // W^T as a [K, N] matrix: the stored [N, K] rows read column by column ("ba").
  memory::desc stored_md() const { return memory::desc({in_, out_}, dt::f32, Tag::ba); }
  memory::desc bias_md() const { return memory::desc({1, out_}, dt::f32, Tag::ab); }

  // The first row count over kGemvMaxRows lets oneDNN pick the weights' layout and packs them
  // into it (a second copy, made only by models that see such batches); later row counts use
  // that copy where a matmul for them takes its layout (they usually do: the layout follows K
  // and N), else the weights as stored.
  Primitive& primitive_for(int64_t rows, bool residual) {
    const auto key = std::make_pair(rows, residual);
    auto it = primitives_.find(key);
    if (it != primitives_.end()) return it->second;
    const memory::desc src({rows, in_}, dt::f32, Tag::ab), dst({rows, out_}, dt::f32, Tag::ab);
    dnnl::post_ops ops;
    cpu::append_activation(ops, act_);
    Primitive p;
    if (residual) {
      p.residual_post_op = ops.len();
      ops.append_binary(dnnl::algorithm::binary_add, dst);
    }
    const dnnl::primitive_attr attr = cpu::onednn_attr(ops);
    const memory::desc bias = bias_.empty() ? memory::desc() : bias_md();
    const auto make = [&](const memory::desc& weights) {
      return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights, bias, dst), attr, cpu::onednn_engine());
    };
    if (!layout_) {
      layout_ = make(memory::desc({in_, out_}, dt::f32, Tag::any)).weights_desc();
      if (*layout_ != stored_md()) packed_.emplace(stored_md(), floats().data(), *layout_);
    }
    if (packed_) {
      try {
        p.pd = make(*layout_);
        // oneDNN falls back to its slow reference code where no fast matmul takes a layout.
        p.packed = std::string(p.pd.impl_info_str()).rfind("ref", 0) != 0;
      } catch (const dnnl::error&) {  // no matmul for this row count on that layout
      }
    }
    if (!p.packed) p.pd = make(stored_md());
    // Half weights widened only to be packed are let go (floats() widens them again for a row
    // count whose matmul takes them as stored).
    if (half_ && p.packed) weight_ = cpu::ConstantFloats();
    p.matmul = dnnl::matmul(p.pd);
    return primitives_.emplace(key, std::move(p)).first->second;
  }

  Activation act_;
  int64_t in_ = 0, out_ = 0;
  float input_scale_ = 0;                     // > 0: an FP8 layer
  std::vector<float> rounded_;                // its input on the E4M3 grid
  ConstantView weight_view_;                  // [N, K] as stored
  const uint16_t* half_ = nullptr;            // its bytes where they are f16, for gemv_rows_f16
  cpu::ConstantFloats weight_, bias_;         // weight_: as f32, for gemv_rows and as the source of packed_
  std::optional<memory::desc> layout_;        // what oneDNN picked for the first row count
  std::optional<cpu::PackedWeights> packed_;  // the weights in layout_, where that is not as stored
  std::map<std::pair<int64_t, bool>, Primitive> primitives_;
};

const float* optional_input(const KernelArgs& a, int slot) {
  return slot < static_cast<int>(a.inputs.size()) && a.inputs[slot].data ? a.inputs[slot].as<const float>() : nullptr;
}

bool supported(Activation act) {
  dnnl::post_ops probe;
  return cpu::append_activation(probe, act);
}

class OnednnLinearKernel : public CpuKernel {
 public:
  static std::unique_ptr<CpuKernel> make(const Graph& g, int node, const ConstantLookup& c) {
    using namespace linear_input;
    const Node& n = g.nodes()[node];
    const Activation act = parse_activation(n.attrs.get_string("act"));
    if (!constant(g, n, Weight) || !constant(g, n, Bias) || !constant(g, n, WeightScale) || !supported(act))
      return nullptr;
    return std::make_unique<OnednnLinearKernel>(Dense(g, n, Weight, Bias, act, c, WeightScale));
  }
  explicit OnednnLinearKernel(Dense dense) : dense_(std::move(dense)) {}

  bool packs_input(int slot) const override {
    using namespace linear_input;
    return slot == Weight || slot == Bias || slot == WeightScale;
  }
  std::string describe() const override { return dense_.half() ? "onednn f16-weights" : "onednn"; }
  void run(const KernelArgs& a, int) override {
    const TensorRef& x = a.inputs[linear_input::X];
    const int64_t rows = dense_.in() ? x.numel() / dense_.in() : 0;
    if (rows == 0) return;
    dense_.run(x.as<const float>(), a.outputs[0].as<float>(), rows, optional_input(a, linear_input::Residual));
  }

 private:
  Dense dense_;
};

class OnednnMlpKernel : public CpuKernel {
 public:
  static std::unique_ptr<CpuKernel> make(const Graph& g, int node, const ConstantLookup& c) {
    using namespace mlp_input;
    const Node& n = g.nodes()[node];
    const Activation act1 = parse_activation(n.attrs.get_string("act1"));
    const Activation act2 = parse_activation(n.attrs.get_string("act2"));
    for (int slot : {W1, B1, W2, B2})
      if (!constant(g, n, slot)) return nullptr;
    if (!supported(act1) || !supported(act2)) return nullptr;
    return std::make_unique<OnednnMlpKernel>(Dense(g, n, W1, B1, act1, c), Dense(g, n, W2, B2, act2, c));
  }
  OnednnMlpKernel(Dense first, Dense second) : first_(std::move(first)), second_(std::move(second)) {}

  bool packs_input(int slot) const override {
    using namespace mlp_input;
    return slot == W1 || slot == B1 || slot == W2 || slot == B2;
  }
  std::string describe() const override { return "onednn"; }
  void run(const KernelArgs& a, int) override {
    const TensorRef& x = a.inputs[mlp_input::X];
    const int64_t rows = first_.in() ? x.numel() / first_.in() : 0;
    if (rows == 0) return;
    hidden_.resize(static_cast<size_t>(rows * first_.out()));
    first_.run(x.as<const float>(), hidden_.data(), rows, nullptr);
    second_.run(hidden_.data(), a.outputs[0].as<float>(), rows, optional_input(a, mlp_input::Residual));
  }

 private:
  Dense first_, second_;
  std::vector<float> hidden_;
};

}  // namespace

KILN_REGISTER_CPU_FAST_KERNELS(linear) {
  registry.add_fast("linear", OnednnLinearKernel::make);
  registry.add_fast("mlp", OnednnMlpKernel::make);
}

}  // namespace kiln

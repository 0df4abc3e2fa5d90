// conv2d on oneDNN (graph/ops/conv2d.h): the convolution, its bias, activation and residual in
// one JIT-compiled primitive per input size (weights reordered once into the layout it picks);
// NHWC in and out like the rest of the engine. What oneDNN cannot fuse is done around it: the
// squeeze-excite gate multiplies the input into scratch memory the kernels share (an NCHW input
// is transposed into it), the fused average pool is a pass over the output. An FP8 layer
// computes what the reference's emulation computes: its input rounded to E4M3 the same way
// (cpu/fp8_input.h), its E4M3 weights widened to f32 with their scales once; an E4M3 output
// declines.
#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "backends/cpu/activation.h"
#include "backends/cpu/constant_floats.h"
#include "backends/cpu/cpu_kernel.h"
#include "backends/cpu/fp8_input.h"
#include "backends/cpu/onednn.h"
#include "backends/cpu/scratch.h"
#include "backends/cpu/threads.h"
#include "core/error.h"
#include "core/fp8.h"
#include "graph/ops/conv2d.h"

namespace kiln {

namespace {

using namespace conv2d_input;
using dnnl::memory;
using Tag = memory::format_tag;

// [N, C, H, W] -> [N, H, W, C]: oneDNN's NCHW-input convolutions fall back to its slow reference
// implementation, so the stem's input is transposed first (a small tensor: 3 channels).
void nchw_to_nhwc(const float* x, float* out, int n, int64_t pixels, int c) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int img = 0; img < n; ++img)
    for (int64_t pix = 0; pix < pixels; ++pix)
      for (int ch = 0; ch < c; ++ch)
        out[(static_cast<int64_t>(img) * pixels + pix) * c + ch] =
            x[(static_cast<int64_t>(img) * c + ch) * pixels + pix];
}

// The per-pixel loops below in AVX-512 or AVX2 where the CPU has them (the build targets the
// baseline x86-64): at batch 1 on 2 threads these passes took 7% of an image classifier's time with
// SSE2 (perf, bench/results/2026-12-04-cpu-passes/).

// out[p, c] = x[p, c] * gate[c] for `pixels` rows of C.
__attribute__((target_clones("avx512f", "avx2", "default"))) void gate_rows(const float* __restrict x,
                                                                            const float* __restrict gate,
                                                                            float* __restrict out, int64_t pixels,
                                                                            int c) {
  for (int64_t pix = 0; pix < pixels; ++pix)
#pragma omp simd
    for (int ch = 0; ch < c; ++ch) out[pix * c + ch] = x[pix * c + ch] * gate[ch];
}

// sum[c] += y[p, c] over `pixels` rows of C, in double, pixel by pixel (the order of the scalar
// loop: vectors run across channels); with an activation, y = act(y) first, in place.
__attribute__((target_clones("avx512f", "avx2", "default"))) void add_rows(float* __restrict y, double* __restrict sum,
                                                                           int64_t pixels, int c, Activation act) {
  for (int64_t pix = 0; pix < pixels; ++pix) {
    if (act != Activation::None) cpu::bias_activation_row(y + pix * c, c, nullptr, act);
#pragma omp simd
    for (int ch = 0; ch < c; ++ch) sum[ch] += y[pix * c + ch];
  }
}

// out = w * gate[channel of the run] for runs [first, end) of `run` weights each; 0 for runs of
// the layout's padding alone (channel -1), whatever the gate holds.
__attribute__((target_clones("avx512f", "avx2", "default"))) void scale_weight_runs(
    const float* __restrict w, float* __restrict out, const int32_t* __restrict channel, const float* __restrict gate,
    int64_t first, int64_t end, int64_t run) {
  for (int64_t r = first; r < end; ++r) {
    const float s = channel[r] < 0 ? 0.0f : gate[channel[r]];
#pragma omp simd
    for (int64_t j = r * run; j < (r + 1) * run; ++j) out[j] = w[j] * s;
  }
}

// x * gate[n, c] for every pixel: chunks of pixels over the threads.
void apply_gate(const float* x, const float* gate, float* out, int n, int64_t pixels, int c) {
  constexpr int64_t kChunk = 64;
  const int64_t chunks = (pixels + kChunk - 1) / kChunk;
#pragma omp parallel for collapse(2) schedule(static)
  for (int img = 0; img < n; ++img)
    for (int64_t k = 0; k < chunks; ++k) {
      const int64_t first = static_cast<int64_t>(img) * pixels + k * kChunk;
      gate_rows(x + first * c, gate + static_cast<int64_t>(img) * c, out + first * c,
                std::min(kChunk, pixels - k * kChunk), c);
    }
}

// mean[n, c] from sums[n, part, c] over an image's parts (chunks of its pixels, or its rows),
// added in order, over `pixels` pixels; images over the threads (one image stays on the calling
// thread: an OpenMP region costs more than its few thousand additions).
void mean_of_parts(const double* sums, float* mean, int n, int64_t parts, int c, int64_t pixels) {
#pragma omp parallel for schedule(static) if (n > 1)
  for (int img = 0; img < n; ++img)
    for (int ch = 0; ch < c; ++ch) {
      double total = 0;
      for (int64_t k = 0; k < parts; ++k) total += sums[(img * parts + k) * c + ch];
      mean[static_cast<int64_t>(img) * c + ch] = static_cast<float>(total / static_cast<double>(pixels));
    }
}

// mean[n, c] = y[n, :, c] averaged over the pixels, in double like the reference (float sums
// over 112 x 112 pixels moved an image classifier's logits by 1.6e-4): each image's pixels in
// chunks over the threads (at batch 1 images alone would leave all but one thread idle), then
// the chunks' sums added in order, so the result does not depend on the thread count.
void channel_mean(float* y, float* mean, int n, int64_t pixels, int c, Activation act, std::vector<double>& partial) {
  constexpr int64_t kChunk = 256;
  const int64_t chunks = (pixels + kChunk - 1) / kChunk;
  partial.assign(static_cast<size_t>(n * chunks * c), 0.0);
#pragma omp parallel for collapse(2) schedule(static)
  for (int img = 0; img < n; ++img)
    for (int64_t k = 0; k < chunks; ++k)
      add_rows(y + (static_cast<int64_t>(img) * pixels + k * kChunk) * c, partial.data() + (img * chunks + k) * c,
               std::min(kChunk, pixels - k * kChunk), c, act);
  mean_of_parts(partial.data(), mean, n, chunks, c, pixels);
}

class OnednnConv2dKernel : public CpuKernel {
 public:
  static std::unique_ptr<CpuKernel> make(const Graph& graph, int node, const ConstantLookup& constants) {
    const Node& n = graph.nodes()[node];
    const Value& wv = graph.values()[n.inputs[Weight]];
    if (wv.kind != ValueKind::Constant) return nullptr;
    const Shape w_shape = resolve(wv.shape, {});
    const Conv2dParams p = conv2d_params(n, w_shape);
    if (graph.values()[n.outputs[0]].dtype == DType::F8E4M3 || (p.nchw_input && (n.input(Gate) >= 0 || p.fp8_input())))
      return nullptr;
    dnnl::post_ops probe;
    if (!cpu::append_activation(probe, p.act)) return nullptr;
    return std::unique_ptr<CpuKernel>(new OnednnConv2dKernel(graph, n, w_shape, p, constants));
  }

  bool packs_input(int slot) const override { return slot == Weight || slot == Bias || slot == WeightScale; }
  // The activation too: with another post-op oneDNN may offer other implementations, so the
  // engine must not reuse a choice timed for one on the other.
  std::string describe() const override { return fmt::format("onednn {}", activation_name(p_.act)); }

  // Variant 0 is the implementation oneDNN picks for the convolution; the others name one of
  // its implementations for the same instruction set (jit, jit_1x1, brgconv, ...). Its pick is
  // not the fastest everywhere: on 2 Zen 4 cores at batch 8 an image classifier's first 1x1
  // expand conv took 1.81 ms with brgconv_1x1, its pick, and 0.95 ms with jit
  // (bench/results/2026-12-05-cpu-conv-implementations.md). `kiln build` times them and saves the
  // choice in the bundle, so that every engine on the bundle computes alike. Named, not numbered:
  // oneDNN's list of implementations changes order once some of them are in its primitive cache.
  // Only convs of at least kTimedMacs multiply-adds offer more than one: smaller ones were as
  // fast with oneDNN's pick, and timing them only lengthens the build. The last two, offered at
  // any size, run a conv in parts of its output rows (run_in_row_parts) and a gated conv with
  // the gate in its weights (run_with_gated_weights).
  int variants() const override { return kGatedWeights + 1; }
  std::string variant_name(int variant) const override {
    if (variant == kRowParts) return "onednn_row_parts";
    if (variant == kGatedWeights) return "onednn_gated_weights";
    return variant == 0 ? "onednn" : fmt::format("onednn_{}", kImplementations[variant - 1]);
  }
  bool variant_runs(const KernelArgs& a, int variant) const override {
    if (variant == 0) return true;
    const ConvGeometry g = conv2d_geometry(p_, a.inputs[X].shape, w_shape_, *a.node);
    if (variant == kRowParts) return !has(a, Residual) && g.n * row_parts(g) > 1 && rows_read(g);
    if (variant == kGatedWeights) return has(a, Gate) && p_.groups == 1 && !p_.fp8_input();
    const int64_t macs = static_cast<int64_t>(g.n) * g.oh * g.ow * g.o * (g.c / p_.groups) * p_.kh * p_.kw;
    if (macs < kTimedMacs) return false;
    const Implementations& offered = implementations(g, has(a, Residual));
    const std::string name = implementation_name(offered.preferred, variant);
    return name != offered.preferred && offered.names.count(name);
  }

  void run(const KernelArgs& a, int variant) override {
    const TensorRef& xt = a.inputs[X];
    const ConvGeometry g = conv2d_geometry(p_, xt.shape, w_shape_, *a.node);
    const bool residual = has(a, Residual);
    const float* x = xt.as<const float>();
    const int64_t pixels = static_cast<int64_t>(g.h) * g.w;
    const bool gate_in_weights = variant == kGatedWeights;
    if (p_.nchw_input || (has(a, Gate) && !gate_in_weights) || p_.fp8_input()) {
      const int64_t count = g.n * pixels * g.c;
      float* input = static_cast<float*>(cpu::scratch(cpu::Scratch::Input, static_cast<size_t>(count) * sizeof(float)));
      if (p_.nchw_input)
        nchw_to_nhwc(x, input, g.n, pixels, g.c);
      else if (has(a, Gate))
        apply_gate(x, a.inputs[Gate].as<const float>(), input, g.n, pixels, g.c);
      else
        std::copy(x, x + count, input);
      if (p_.fp8_input()) cpu::round_fp8_inputs(input, count, p_.input_scale, x_is_e4m3_);
      x = input;
    }
    float* y = a.outputs[0].as<float>();
    if (variant == kRowParts) return run_in_row_parts(g, x, y, p_.mean_output ? a.outputs[1].as<float>() : nullptr);
    const float* skip = residual ? a.inputs[Residual].as<const float>() : nullptr;
    if (gate_in_weights)
      run_with_gated_weights(g, x, a.inputs[Gate].as<const float>(), skip, y);
    else
      execute(primitive_for(g, residual, variant), x, skip, y);
    if (p_.mean_output)
      channel_mean(y, a.outputs[1].as<float>(), g.n, static_cast<int64_t>(g.oh) * g.ow, g.o,
                   deferred_activation(residual), partial_);
    else if (deferred_activation(residual) != Activation::None)
      cpu::bias_activation(y, static_cast<int64_t>(g.n) * g.oh * g.ow, g.o, nullptr, deferred_activation(residual));
  }

 private:
  // oneDNN's implementations offered as variants, by name without the instruction set.
  static constexpr std::array<const char*, 6> kImplementations = {"brgconv_1x1", "brgconv", "brdgmm_dw",
                                                                  "jit_1x1",     "jit",     "jit_dw"};
  static constexpr int64_t kTimedMacs = int64_t{1} << 25;                          // the smallest conv that offers them
  static constexpr int kRowParts = 1 + static_cast<int>(kImplementations.size());  // its variant number
  static constexpr int kGatedWeights = kRowParts + 1;                              // its variant number

  // What oneDNN offers for one input size: its pick, and every implementation's name.
  struct Implementations {
    std::string preferred;
    std::set<std::string> names;
  };

  struct Primitive {
    dnnl::convolution_forward::primitive_desc pd;
    dnnl::convolution_forward conv;
    const memory* weights = nullptr;  // in pd's layout, shared by primitives that pick the same one
    int residual_post_op = -1;
  };

  // One part of run_in_row_parts: output rows [first_row, end_row) of an image, its primitive
  // over the input rows they read (from input row `first_input`), with the padding of its place.
  struct RowPart {
    Primitive prim;
    int first_row = 0, end_row = 0, first_input = 0;
  };

  OnednnConv2dKernel(const Graph& graph, const Node& n, Shape w_shape, const Conv2dParams& p,
                     const ConstantLookup& constants)
      : p_(p), w_shape_(std::move(w_shape)) {
    weight_ = cpu::ConstantFloats(constants(graph.values()[n.inputs[Weight]].name));
    x_is_e4m3_ = graph.values()[n.inputs[X]].dtype == DType::F8E4M3;
    if (n.input(WeightScale) >= 0)
      apply_channel_scales(weight_.owned(), constants(graph.values()[n.inputs[WeightScale]].name).to_f32());
    if (n.input(Bias) >= 0) bias_ = cpu::ConstantFloats(constants(graph.values()[n.inputs[Bias]].name));
  }

  // The activation kiln applies in a pass of its own after the primitive, the mean's where there
  // is one, instead of as oneDNN's post-op (None: oneDNN applies it). Why: oneDNN's SiLU post-op
  // took as long as the depthwise convolution it follows, twice a pass of kiln's own over the
  // output (and the mean reads that output anyway); after the 1x1 convs too, kiln's pass made an
  // image classifier up to 7% faster on 2 cores (bench/results/2026-12-05-cpu-silu-pass.md).
  // Before a residual add the activation stays inside the primitive.
  Activation deferred_activation(bool residual) const {
    return !residual && (p_.mean_output || p_.act == Activation::SiLU) ? p_.act : Activation::None;
  }

  static bool has(const KernelArgs& a, int slot) {
    return slot < static_cast<int>(a.inputs.size()) && a.inputs[slot].data;
  }

  memory::desc bias_md() const { return memory::desc({w_shape_[0]}, memory::data_type::f32, Tag::a); }

  // A primitive's arguments for input x and output y: the weights, the bias where there is one,
  // and a scratchpad of the calling thread's own.
  std::unordered_map<int, memory> primitive_args(const Primitive& prim, const float* x, float* y) const {
    dnnl::engine& engine = cpu::onednn_engine();
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, memory(prim.pd.src_desc(), engine, const_cast<float*>(x))},
        {DNNL_ARG_WEIGHTS, *prim.weights},
        {DNNL_ARG_DST, memory(prim.pd.dst_desc(), engine, y)},
        {DNNL_ARG_SCRATCHPAD, cpu::onednn_scratchpad(prim.pd.scratchpad_desc())},
    };
    if (!bias_.empty()) args.emplace(DNNL_ARG_BIAS, memory(bias_md(), engine, const_cast<float*>(bias_.data())));
    return args;
  }

  // The primitive on input x and output y, with the residual `skip` added where it has one;
  // `weights` in place of its own where given (in its layout).
  void execute(const Primitive& prim, const float* x, const float* skip, float* y,
               const memory* weights = nullptr) const {
    std::unordered_map<int, memory> args = primitive_args(prim, x, y);
    if (weights) args[DNNL_ARG_WEIGHTS] = *weights;
    if (skip)
      args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(prim.residual_post_op) | DNNL_ARG_SRC_1,
                   memory(prim.pd.dst_desc(), cpu::onednn_engine(), const_cast<float*>(skip)));
    prim.conv.execute(cpu::onednn_stream(), args);
    cpu::onednn_stream().wait();
  }

  // A gated conv computed as conv(x, W * gate) instead of conv(x * gate, W), image by image:
  // the primitive's packed weights scaled per input channel into a copy (scale_weight_runs).
  // Why: a squeeze-excite block's gate pass reads and writes the whole gated map before the conv
  // reads it again; at batch 1 on 2 threads the passes took 8-10% of an image classifier's time.
  // Where a layer's weights are smaller than its input (early layers: many pixels, few output
  // channels) scaling them costs less; `kiln build` times both ways. (oneDNN's own way, a reorder
  // with runtime scales per input channel, moved only about 1.5 floats a nanosecond.)
  void run_with_gated_weights(const ConvGeometry& g, const float* x, const float* gate, const float* skip, float* y) {
    ConvGeometry one = g;
    one.n = 1;
    const Primitive& prim = primitive_for(one, skip != nullptr, 0);
    GatedWeights& gated = gated_weights_for(prim);
    const float* packed = static_cast<const float*>(prim.weights->get_data_handle());
    float* scaled = static_cast<float*>(gated.weights.get_data_handle());
    const int64_t in_image = int64_t{g.h} * g.w * g.c, out_image = int64_t{g.oh} * g.ow * g.o;
    const int64_t runs = static_cast<int64_t>(gated.run_channel.size());
    for (int64_t img = 0; img < g.n; ++img) {
      const float* image_gate = gate + img * g.c;
#pragma omp parallel for schedule(static) if (runs * gated.run >= kParallelScaling)
      for (int64_t r = 0; r < runs; r += kRunsPerTask)
        scale_weight_runs(packed, scaled, gated.run_channel.data(), image_gate, r, std::min(runs, r + kRunsPerTask),
                          gated.run);
      execute(prim, x + img * in_image, skip ? skip + img * out_image : nullptr, y + img * out_image, &gated.weights);
    }
  }

  // The gated copy of a primitive's weights, and the input channel of each run of `run`
  // consecutive weights in its layout (blocked layouts keep a block of output channels of one
  // input channel together: 16 or 48 in oneDNN's 1x1 convs), -1 for a run of padding alone.
  struct GatedWeights {
    memory weights;
    std::vector<int32_t> run_channel;
    int64_t run = 1;
  };
  static constexpr int64_t kParallelScaling = int64_t{1} << 15;  // weights scaled on one thread below this
  static constexpr int64_t kRunsPerTask = 64;

  // Made once per layout: the input channel of every weight in the primitive's layout, found by
  // reordering a tensor of channel numbers (+1: the layout's padding reads 0) as the weights were.
  GatedWeights& gated_weights_for(const Primitive& prim) {
    const memory::desc& layout = prim.weights->get_desc();
    if (gated_ && gated_->weights.get_desc() == layout) return *gated_;
    const int64_t in = w_shape_[3], stored = static_cast<int64_t>(weight_.size());
    std::vector<float> numbers(static_cast<size_t>(stored));
    for (int64_t k = 0; k < stored; ++k) numbers[k] = static_cast<float>(k % in + 1);  // OHWI: input innermost
    memory numbered(layout, cpu::onednn_engine());
    memory from(user_weights_md(), cpu::onednn_engine(), numbers.data());
    dnnl::reorder(from, numbered).execute(cpu::onednn_stream(), from, numbered);
    cpu::onednn_stream().wait();
    const float* channel = static_cast<const float*>(numbered.get_data_handle());
    const int64_t size = static_cast<int64_t>(layout.get_size() / sizeof(float));
    GatedWeights gated{memory(layout, cpu::onednn_engine()), {}, 1};
    // The longest run over which every weight (padding aside) has one input channel.
    for (const int64_t run : {64, 48, 32, 16, 8, 4, 2, 1}) {
      if (size % run) continue;
      std::vector<int32_t> runs(static_cast<size_t>(size / run));
      bool uniform = true;
      for (int64_t r = 0; r < size / run && uniform; ++r) {
        float c = 0;  // 0: padding alone so far
        for (int64_t j = 0; j < run && uniform; ++j) {
          const float v = channel[r * run + j];
          uniform = v == 0 || c == 0 || v == c;
          if (v != 0) c = v;
        }
        runs[r] = static_cast<int32_t>(c) - 1;
      }
      if (!uniform) continue;
      gated.run = run;
      gated.run_channel = std::move(runs);
      break;
    }
    gated_ = std::move(gated);
    return *gated_;
  }

  // Input rows one output row reads.
  int reach() const { return (p_.kh - 1) * p_.dilation_h + 1; }
  // Whether every output row reads an input row (padding narrower than the kernel's reach):
  // else a part could lie wholly in the padding, which a primitive of its own cannot express.
  bool rows_read(const ConvGeometry& g) const { return g.pad_top < reach() && g.pad_bottom < reach(); }

  // Parts per image: one per thread where the images alone leave threads idle, at most a row
  // each; else one (each image a part).
  static int row_parts(const ConvGeometry& g) {
    const int threads = cpu::threads();
    return g.n >= threads ? 1 : std::min(g.oh, (threads + g.n - 1) / g.n);
  }

  // A conv in parts of its output rows: each part of each image is a work item over
  // the threads, which runs the part's own primitive (single-threaded: oneDNN inside an OpenMP
  // region runs on the calling thread, in its OpenMP build) and then, on the rows it just wrote,
  // the deferred activation and each row's channel sums. The mean adds the rows' sums in row
  // order, whatever the parts (oneDNN may pick another implementation for a part's shape than
  // for the whole, which may round differently). Why: at batch 1 on 2 threads, the depthwise
  // convs of 14x14 and 7x7 maps and kiln's pass after them took as long as on one thread, each
  // thread in the pass reading what the other thread's share of the primitive had written; in
  // row parts an image classifier's depthwise convs took 9-12% less, the call 1.5-7%
  // (bench/results/2026-12-07-cpu-depthwise-scaling.md); the stem conv (3 input channels, a
  // 112 x 112 output) 12% less. oneDNN gives strided channel slices only its reference
  // implementation, hence rows. Offered for any conv without a residual whose images and parts
  // make more than one work item; `kiln build` times it (the 1x1 convs kept oneDNN's threading).
  void run_in_row_parts(const ConvGeometry& g, const float* x, float* y, float* mean) {
    const std::vector<RowPart>& parts = row_parts_for(g);
    const int64_t count = static_cast<int64_t>(parts.size());
    if (mean) partial_.assign(static_cast<size_t>(g.n) * g.oh * g.o, 0.0);
#pragma omp parallel for schedule(static)
    for (int64_t item = 0; item < int64_t{g.n} * count; ++item)
      run_part(g, parts[item % count], item / count, x, y, mean != nullptr);
    if (mean) mean_of_parts(partial_.data(), mean, g.n, g.oh, g.o, int64_t{g.oh} * g.ow);
  }

  // One part of one image, on the calling thread (its own oneDNN stream and scratchpad).
  void run_part(const ConvGeometry& g, const RowPart& part, int64_t img, const float* x, float* y, bool mean) {
    const Activation act = deferred_activation(false);
    const int64_t row = int64_t{g.ow} * g.o;
    float* out = y + (img * g.oh + part.first_row) * row;
    part.prim.conv.execute(cpu::onednn_stream(),
                           primitive_args(part.prim, x + (img * g.h + part.first_input) * g.w * g.c, out));
    cpu::onednn_stream().wait();
    for (int r = part.first_row; r < part.end_row; ++r, out += row) {
      if (mean)
        add_rows(out, partial_.data() + (img * g.oh + r) * g.o, g.ow, g.o, act);
      else if (act != Activation::None)
        cpu::bias_activation_row(out, static_cast<int>(row), nullptr, act);
    }
  }

  // The parts of an input size at the current thread count (made once).
  std::vector<RowPart>& row_parts_for(const ConvGeometry& g) {
    const int count = row_parts(g);
    const auto key = std::make_tuple(g.n, g.h, g.w, count);
    auto it = row_parts_.find(key);
    if (it != row_parts_.end()) return it->second;
    std::vector<RowPart> parts(count);
    const int reach = this->reach();
    for (int k = 0; k < count; ++k) {
      RowPart& part = parts[k];
      part.first_row = static_cast<int>(int64_t{k} * g.oh / count);
      part.end_row = static_cast<int>(int64_t{k + 1} * g.oh / count);
      const int top = part.first_row * p_.stride_h - g.pad_top;  // first input row read, padding counted
      part.first_input = std::max(0, top);
      const int end_input = std::min(g.h, (part.end_row - 1) * p_.stride_h - g.pad_top + reach);
      ConvGeometry pg = g;
      pg.n = 1;
      pg.h = end_input - part.first_input;
      pg.oh = part.end_row - part.first_row;
      pg.pad_top = part.first_input - top;
      pg.pad_bottom = (pg.oh - 1) * p_.stride_h + reach - pg.h - pg.pad_top;
      KILN_CHECK(pg.h >= 1 && pg.pad_bottom >= 0, "[cpu] conv2d: output rows {}..{} read no input row", part.first_row,
                 part.end_row);                       // rows_read excludes it
      part.prim.pd = *implementation(pg, false, "");  // oneDNN's pick, which throws where there is none
      part.prim.conv = dnnl::convolution_forward(part.prim.pd);
      part.prim.weights = &weights_for(part.prim.pd.weights_desc());
    }
    return row_parts_[key] = std::move(parts);
  }

  // The weights as stored (OHWI; [G, O/G, I/G, kh, kw] with groups) for the primitive's dims.
  memory::desc user_weights_md() const {
    const memory::dim out = w_shape_[0], kh = p_.kh, kw = p_.kw, in_g = w_shape_[3];
    if (p_.groups == 1) return memory::desc({out, in_g, kh, kw}, memory::data_type::f32, Tag::ohwi);
    return memory::desc({p_.groups, out / p_.groups, in_g, kh, kw}, memory::data_type::f32, Tag::gohwi);
  }

  // The full name ("jit:avx512_core") of a variant's implementation, in the instruction set of
  // oneDNN's pick ("brgconv_1x1:avx512_core"); variant 0 is the pick itself.
  static std::string implementation_name(const std::string& preferred, int variant) {
    if (variant == 0) return preferred;
    const size_t colon = preferred.find(':');
    return fmt::format("{}{}", kImplementations[variant - 1],
                       colon == std::string::npos ? "" : preferred.substr(colon));
  }

  // Walks oneDNN's implementations for an input size, its pick first, until `stop(name)` says so,
  // and returns the descriptor it stopped at (none where it never did). The op description lives
  // here with the descriptor, whose iterator (next_impl) reads it in place; the one returned is a
  // copy.
  template <typename Stop>
  std::optional<dnnl::convolution_forward::primitive_desc> walk_implementations(const ConvGeometry& g, bool residual,
                                                                                Stop stop) const {
    using dt = memory::data_type;
    const memory::desc src({g.n, g.c, g.h, g.w}, dt::f32, Tag::nhwc);
    const memory::desc dst({g.n, g.o, g.oh, g.ow}, dt::f32, Tag::nhwc);
    memory::desc weights = user_weights_md();
    weights = memory::desc(weights.dims(), dt::f32, Tag::any);
    dnnl::post_ops ops;
    cpu::append_activation(ops, deferred_activation(residual) == Activation::None ? p_.act : Activation::None);
    if (residual) ops.append_binary(dnnl::algorithm::binary_add, dst);  // added after the activation
    const dnnl::primitive_attr attr = cpu::onednn_attr(ops);
    const dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                               src, weights, bias_.empty() ? memory::desc() : bias_md(), dst,
                                               {p_.stride_h, p_.stride_w}, {p_.dilation_h - 1, p_.dilation_w - 1},
                                               {g.pad_top, g.pad_left}, {g.pad_bottom, g.pad_right});
    dnnl::convolution_forward::primitive_desc pd(desc, attr, cpu::onednn_engine());  // throws where none
    do {
      if (stop(pd.impl_info_str())) return dnnl::convolution_forward::primitive_desc(pd.get());
    } while (pd.next_impl());
    return std::nullopt;
  }

  // The descriptor of the implementation named `name` for an input size (empty: oneDNN's pick).
  std::optional<dnnl::convolution_forward::primitive_desc> implementation(const ConvGeometry& g, bool residual,
                                                                          const std::string& name) const {
    return walk_implementations(g, residual, [&](const std::string& n) { return name.empty() || n == name; });
  }

  // What oneDNN offers for an input size (listed once).
  const Implementations& implementations(const ConvGeometry& g, bool residual) const {
    const auto key = std::make_tuple(g.n, g.h, g.w, residual);
    auto it = implementations_.find(key);
    if (it != implementations_.end()) return it->second;
    Implementations offered;
    walk_implementations(g, residual, [&](const std::string& n) {
      if (offered.names.empty()) offered.preferred = n;
      offered.names.insert(n);
      return false;
    });
    return implementations_[key] = std::move(offered);
  }

  Primitive& primitive_for(const ConvGeometry& g, bool residual, int variant) {
    const auto key = std::make_tuple(g.n, g.h, g.w, residual, variant);
    auto it = primitives_.find(key);
    if (it != primitives_.end()) return it->second;
    const std::string name = variant == 0 ? "" : implementation_name(implementations(g, residual).preferred, variant);
    auto pd = implementation(g, residual, name);
    KILN_CHECK(pd, "[cpu] conv2d: oneDNN has no implementation {} for this size", name);
    Primitive prim;
    prim.pd = *pd;
    prim.conv = dnnl::convolution_forward(prim.pd);
    prim.weights = &weights_for(prim.pd.weights_desc());
    prim.residual_post_op = residual ? prim.pd.get_primitive_attr().get_post_ops().len() - 1 : -1;
    return primitives_.emplace(key, std::move(prim)).first->second;
  }

  // The weights reordered into `layout` once; primitives for other sizes usually pick the same.
  const memory& weights_for(const memory::desc& layout) {
    for (const auto& [md, packed] : packed_)
      if (md == layout) return packed.memory();
    packed_.emplace_back(std::piecewise_construct, std::forward_as_tuple(layout),
                         std::forward_as_tuple(user_weights_md(), weight_.data(), layout));
    return packed_.back().second.memory();
  }

  Conv2dParams p_;
  Shape w_shape_;
  bool x_is_e4m3_ = false;
  cpu::ConstantFloats weight_, bias_;  // weight_: the source of packed_
  std::vector<double> partial_;        // the mean's sums per chunk of pixels (channel_mean) or per row (row parts)
  std::deque<std::pair<memory::desc, cpu::PackedWeights>> packed_;        // a deque: primitives keep pointers into it
  std::map<std::tuple<int, int, int, bool, int>, Primitive> primitives_;  // by size, residual and variant
  std::map<std::tuple<int, int, int, int>, std::vector<RowPart>> row_parts_;  // by size and part count
  std::optional<GatedWeights> gated_;  // run_with_gated_weights' (a layer's primitives mostly pick one layout)
  // Filled by the const variant_runs: an engine runs one plan's kernels at a time.
  mutable std::map<std::tuple<int, int, int, bool>, Implementations> implementations_;
};

}  // namespace

KILN_REGISTER_CPU_FAST_KERNELS(conv2d) { registry.add_fast("conv2d", OnednnConv2dKernel::make); }

}  // namespace kiln

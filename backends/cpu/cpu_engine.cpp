#include "backends/cpu/cpu_engine.h"

#include <cstring>

#include "backends/cpu/kernels.h"
#include "core/error.h"
#include "core/fp8.h"
#include "core/half.h"

namespace kiln {

namespace {

std::vector<float> copy(const WeightView& w) { return {w.data.begin(), w.data.end()}; }

}  // namespace

CpuEngine::CpuEngine(const Graph& graph, const WeightLookup& weights) : graph_(graph) {
  for (const auto& n : graph_.nodes()) {
    Layer l{};
    switch (n.op) {
      case Op::Conv2d: {
        WeightView w = weights(n.weight);
        int out = static_cast<int>(w.shape[0]), k = n.kernel, cin_g = static_cast<int>(w.shape[3]);
        int in = graph_.values()[n.inputs[0]].channels;
        std::vector<float> dequantized;
        if (n.fp8_weights()) {
          dequantized = dequantize_per_channel(w, weights(n.weight_scale));
          w.data = dequantized;
        }
        if (k == 1 && n.stride == 1 && n.groups == 1 &&
            (n.pad.same || (n.pad.top == 0 && n.pad.left == 0 && n.pad.bottom == 0 &&
                            n.pad.right == 0))) {  // "same" padding of a 1x1 stride-1 conv is zero
          l.kind = Layer::Pointwise;
          l.weight = copy(w);
        } else if (n.groups == in && n.groups == out && cin_g == 1) {
          l.kind = Layer::Depthwise;  // [C, k, k, 1] -> [k, k, C]
          l.weight.resize(w.data.size());
          for (int c = 0; c < out; ++c)
            for (int t = 0; t < k * k; ++t) l.weight[t * out + c] = w.data[c * k * k + t];
        } else {
          l.kind = Layer::Direct;  // [out, k, k, in/g] -> [g][k][k][in/g][out/g]
          int g = n.groups, cout_g = out / g;
          l.weight.resize(w.data.size());
          for (int o = 0; o < out; ++o)
            for (int t = 0; t < k * k; ++t)
              for (int ci = 0; ci < cin_g; ++ci) {
                int grp = o / cout_g, oo = o % cout_g;
                l.weight[((static_cast<int64_t>(grp) * k * k + t) * cin_g + ci) * cout_g + oo] =
                    w.data[(static_cast<int64_t>(o) * k * k + t) * cin_g + ci];
              }
        }
        if (!n.bias.empty()) l.bias = copy(weights(n.bias));
        break;
      }
      case Op::Linear:
        l.kind = Layer::Linear;
        l.weight = copy(weights(n.weight));
        if (!n.bias.empty()) l.bias = copy(weights(n.bias));
        break;
      case Op::GlobalAvgPool:
        l.kind = Layer::Pool;
        break;
      case Op::ScaleChannels:
        l.kind = Layer::Scale;
        break;
      case Op::Add:
        l.kind = Layer::Add;
        break;
    }
    layers_.push_back(std::move(l));
  }
}

int CpuEngine::output_elements(int height, int width) const {
  return static_cast<int>(graph_.infer_dims(height, width)[graph_.output()].size());
}

void CpuEngine::prepare(int batch, int height, int width, const std::set<int>& keep) {
  if (batch == planned_batch_ && height == planned_h_ && width == planned_w_ && keep == planned_keep_) return;
  plan_ = plan_memory(graph_, node_steps(graph_), batch, height, width, keep);
  arena_.assign(plan_.arena_elements, 0.0f);
  planned_batch_ = batch;
  planned_h_ = height;
  planned_w_ = width;
  planned_keep_ = keep;
}

void CpuEngine::run(const float* input, int batch, int height, int width, float* output) {
  run_with_taps(input, batch, height, width, output, {});
}

std::map<std::string, Tensor> CpuEngine::run_with_taps(const float* input, int batch, int height, int width,
                                                       float* output, const std::vector<std::string>& taps) {
  KILN_CHECK(batch >= 1, "[cpu] batch must be at least 1");
  std::set<int> keep = {graph_.output()};
  for (const auto& t : taps) {
    auto v = graph_.find_value(t);
    KILN_CHECK(v.has_value(), "[cpu] the graph has no value named '{}'", t);
    keep.insert(*v);
  }
  prepare(batch, height, width, keep);

  // NCHW input -> NHWC arena slot.
  const Dims& in = plan_.dims[graph_.input()];
  float* x = arena_.data() + plan_.offset[graph_.input()];
  for (int n = 0; n < batch; ++n)
    for (int c = 0; c < in.c; ++c)
      for (int p = 0; p < in.h * in.w; ++p)
        x[(static_cast<int64_t>(n) * in.h * in.w + p) * in.c + c] =
            input[(static_cast<int64_t>(n) * in.c + c) * in.h * in.w + p];
  execute(batch, output);

  std::map<std::string, Tensor> out;
  for (const auto& t : taps) {
    int v = *graph_.find_value(t);
    const Dims& d = plan_.dims[v];
    Tensor tensor({batch, d.c, d.h, d.w});
    const float* src = arena_.data() + plan_.offset[v];
    for (int n = 0; n < batch; ++n)
      for (int c = 0; c < d.c; ++c)
        for (int p = 0; p < d.h * d.w; ++p)
          tensor.data[(static_cast<int64_t>(n) * d.c + c) * d.h * d.w + p] =
              src[(static_cast<int64_t>(n) * d.h * d.w + p) * d.c + c];
    out[t] = std::move(tensor);
  }
  return out;
}

void CpuEngine::execute(int batch, float* output) {
  const auto& nodes = graph_.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    const Layer& l = layers_[i];
    const Dims& xd = plan_.dims[n.inputs[0]];
    const Dims& yd = plan_.dims[n.output];
    const float* x = arena_.data() + plan_.offset[n.inputs[0]];
    float* y = arena_.data() + plan_.offset[n.output];
    const int64_t x_count = static_cast<int64_t>(batch) * xd.size();
    if (observer_) observer_(static_cast<int>(i), x, x_count);
    if (n.fp8_input()) {  // emulate the FP8 layer: its fp16 input rounded to E4M3 at the calibrated scale
      fp8_input_.resize(x_count);
      const float inv = 1.0f / n.input_scale;
      float* q = fp8_input_.data();
#pragma omp parallel for schedule(static)
      for (int64_t e = 0; e < x_count; ++e)
        q[e] = round_to_e4m3(half_to_float(float_to_half(x[e])) * inv) * n.input_scale;
      x = fp8_input_.data();
    }
    const float* bias = l.bias.empty() ? nullptr : l.bias.data();
    switch (l.kind) {
      case Layer::Pointwise:
      case Layer::Depthwise:
      case Layer::Direct: {
        cpu::ConvShape s{batch,
                         xd.h,
                         xd.w,
                         xd.c,
                         yd.h,
                         yd.w,
                         yd.c,
                         n.kernel,
                         n.stride,
                         n.groups,
                         Graph::resolve_padding(n, xd.h, xd.w)};
        if (l.kind == Layer::Pointwise)
          cpu::pointwise_conv(x, l.weight.data(), bias, y, s, n.act);
        else if (l.kind == Layer::Depthwise)
          cpu::depthwise_conv(x, l.weight.data(), bias, y, s, n.act);
        else
          cpu::direct_conv(x, l.weight.data(), bias, y, s, n.act);
        break;
      }
      case Layer::Pool:
        cpu::global_avg_pool(x, y, batch, xd.h * xd.w, xd.c);
        break;
      case Layer::Linear:
        cpu::linear(x, l.weight.data(), bias, y, batch, xd.c, yd.c, n.act);
        break;
      case Layer::Scale:
        cpu::scale_channels(x, arena_.data() + plan_.offset[n.inputs[1]], y, batch, xd.h * xd.w, xd.c);
        break;
      case Layer::Add:
        cpu::add(x, arena_.data() + plan_.offset[n.inputs[1]], y, static_cast<int64_t>(batch) * xd.size());
        break;
    }
  }
  // Output: a 1x1 value's NHWC and NCHW layouts coincide; larger outputs are transposed.
  const Dims& od = plan_.dims[graph_.output()];
  const float* src = arena_.data() + plan_.offset[graph_.output()];
  for (int n = 0; n < batch; ++n)
    for (int c = 0; c < od.c; ++c)
      for (int p = 0; p < od.h * od.w; ++p)
        output[(static_cast<int64_t>(n) * od.c + c) * od.h * od.w + p] =
            src[(static_cast<int64_t>(n) * od.h * od.w + p) * od.c + c];
}

}  // namespace kiln

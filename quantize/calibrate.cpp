#include "quantize/calibrate.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "backends/engine.h"
#include "core/error.h"
#include "core/fp8.h"
#include "core/progress.h"
#include "datasets/image_dataset.h"
#include "graph/ops/conv2d.h"
#include "graph/ops/linear.h"

namespace kiln {

namespace {

float bin_value(size_t b) {  // the centre of a bin: its 13 top bits plus half of the rest
  uint32_t bits = (static_cast<uint32_t>(b) << 18) | (1u << 17);
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

}  // namespace

void AbsHistogram::add(const float* x, int64_t n) {
  seen += static_cast<uint64_t>(n);
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, x + i, 4);
    bits &= 0x7fffffffu;
    if (bits >= 0x7f800000u) continue;  // inf / NaN carry no range information
    ++bins[bits >> 18];
    float a;
    std::memcpy(&a, &bits, 4);
    max = std::max(max, a);
  }
}

float AbsHistogram::clip(const std::string& method, double percentile) const {
  if (max == 0.0f || method == "max") return max;
  uint64_t total = 0;
  for (auto c : bins) total += c;
  if (method == "percentile") {
    const double want = total * percentile / 100.0;
    uint64_t seen = 0;
    for (size_t b = 0; b < bins.size(); ++b) {
      seen += bins[b];
      if (seen >= want) return std::min(max, bin_value(b));
    }
    return max;
  }
  KILN_CHECK(method == "mse", "[calibrate] unknown method '{}'", method);
  // The clip, among 96 candidates from max / 64 to max, with the least squared E4M3 error.
  float best = max;
  double best_err = INFINITY;
  for (int i = 0; i <= 96; ++i) {
    const float c = max * std::exp2(-6.0f * i / 96.0f);
    const float scale = c / kE4M3Max;
    double err = 0;
    for (size_t b = 0; b < bins.size(); ++b) {
      if (!bins[b]) continue;
      const float v = bin_value(b);
      const float q = round_to_e4m3(v / scale) * scale;
      err += static_cast<double>(bins[b]) * (v - q) * (v - q);
    }
    if (err < best_err) {
      best_err = err;
      best = c;
    }
  }
  return best;
}

Fp8Clips clips_of(const std::map<std::string, AbsHistogram>& hist, const QuantRecipe& recipe,
                  const CalibrationOptions& o) {
  const std::string method = o.method.empty() ? recipe.calib_method : o.method;
  Fp8Clips clips;
  for (const auto& [layer, h] : hist) clips[layer] = h.clip(method, recipe.percentile);
  return clips;
}

void observe_layer_inputs(Engine& engine, const std::vector<Fp8Layer>& layers, const std::string& graph,
                          std::map<std::string, AbsHistogram>& hist) {
  std::map<int, AbsHistogram*> by_node;
  for (const auto& l : layers) {
    KILN_CHECK(l.graph == graph, "[calibrate] layer {} is not in the model's graph {}", l.weight, graph);
    by_node[l.node] = &hist[l.weight];
  }
  engine.set_observer([by_node](int node, const float* x, int64_t count) {
    auto it = by_node.find(node);
    if (it != by_node.end()) it->second->add(x, count);
  });
}

Fp8Clips calibrate_activations(const ModelDefinition& def, const std::vector<Fp8Layer>& layers,
                               const classification::PreprocessConfig& pre, const QuantRecipe& recipe,
                               const CalibrationOptions& o) {
  KILN_CHECK(o.samples > 0, "[calibrate] --calib-samples must be at least 1");
  // The CPU reference engine runs the graph as built (no rewrites), so its node indices are the
  // graph's and every node's input is observed as the graph computes it (the fast kernels would
  // see a conv's input before its fused squeeze-excite gate).
  Engine engine(def.graph(), def.constants(), EngineOptions{"cpu-reference"});
  std::map<std::string, AbsHistogram> hist;
  observe_layer_inputs(engine, layers, "main", hist);
  auto dataset = open_image_dataset(o.data);
  const size_t per = static_cast<size_t>(pre.channels) * pre.height * pre.width;
  ProgressBar bar("calibrate", o.samples);
  size_t done = 0;
  LabeledImage item;
  while (done < o.samples) {
    std::vector<LabeledImage> items;
    while (items.size() < static_cast<size_t>(o.batch) && done + items.size() < o.samples && dataset->next(item))
      items.push_back(std::move(item));
    if (items.empty()) break;
    const int64_t batch = static_cast<int64_t>(items.size());
    HostTensor pixels = HostTensor::zeros("pixels", DType::F32, {batch, pre.channels, pre.height, pre.width});
    float* input = pixels.as<float>();
    std::vector<std::string> errors(items.size());
#pragma omp parallel for schedule(dynamic)
    for (int i = 0; i < static_cast<int>(items.size()); ++i) {
      try {
        classification::preprocess(decode_image(items[i].bytes, items[i].key), pre, input + i * per);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    }
    for (const auto& e : errors) KILN_CHECK(e.empty(), "{}", e);
    engine.run({pixels});
    done += items.size();
    bar.update(done);
  }
  bar.finish();
  KILN_CHECK(done > 0, "[calibrate] {} holds no images", o.data);
  return clips_of(hist, recipe, o);
}

namespace {

// Per-output-channel E4M3: w becomes its E4M3 values, the result its scales amax / 448.
Tensor quantize_weight(Tensor& w) {
  const int64_t out = w.dim(0), per_out = w.numel() / out;
  Tensor scale({out});
  for (int64_t o = 0; o < out; ++o) {
    float amax = 0;
    for (int64_t k = 0; k < per_out; ++k) amax = std::max(amax, std::fabs(w.data[o * per_out + k]));
    scale.data[o] = amax > 0 ? amax / kE4M3Max : 1.0f;
    for (int64_t k = 0; k < per_out; ++k)
      w.data[o * per_out + k] = round_to_e4m3(w.data[o * per_out + k] / scale.data[o]);
  }
  return scale;
}

}  // namespace

void apply_fp8(ModelDefinition& def, const std::vector<Fp8Layer>& layers, const Fp8Clips& clips) {
  // A weight the recipe turns into E4M3 must not be read by a node that stays in higher precision.
  std::set<std::pair<std::string, int>> fp8_nodes;
  std::set<std::string> fp8_weights;
  for (const auto& l : layers)
    if (l.weights) {
      fp8_nodes.insert({l.graph, l.node});
      fp8_weights.insert(l.weight);
    }
  for (const auto& [name, g] : def.graphs)
    for (int i = 0; i < static_cast<int>(g.nodes().size()); ++i)
      if (!fp8_nodes.count({name, i}))
        for (int v : g.nodes()[i].inputs)
          KILN_CHECK(v < 0 || g.values()[v].kind != ValueKind::Constant || !fp8_weights.count(g.values()[v].name),
                     "[quantize] weight {} is also read by {} of graph {}, which the recipe leaves unquantised",
                     g.values()[v].name, g.nodes()[i].name, name);
  std::set<std::string> quantized;
  for (const auto& layer : layers) {
    Graph& g = def.graph(layer.graph);
    const int i = layer.node;
    const Node& n = g.node(i);
    KILN_CHECK(n.op == "conv2d" || n.op == "linear", "[quantize] {} is neither a conv nor a linear", n.name);
    static_assert(int{conv2d_input::Weight} == int{linear_input::Weight});
    const auto clip_it = clips.find(layer.weight);
    KILN_CHECK(clip_it != clips.end(), "[quantize] {}: no calibrated range", n.name);
    const float clip = clip_it->second;
    g.node(i).attrs.set("input_scale", static_cast<double>(clip > 0 ? clip / kE4M3Max : 1.0f));
    if (layer.weights) {
      const std::string scale_name = layer.weight + "_scale";
      if (quantized.insert(layer.weight).second)
        def.weights[scale_name] = quantize_weight(def.weights.at(layer.weight));
      const int s = g.add_constant(scale_name, DType::F32, {def.weights.at(scale_name).dim(0)});
      Node& node = g.node(i);  // add_constant may have moved the values, not the nodes
      g.value(node.inputs[conv2d_input::Weight]).dtype = DType::F8E4M3;
      const int slot = node.op == "conv2d" ? int{conv2d_input::WeightScale} : int{linear_input::WeightScale};
      if (static_cast<int>(node.inputs.size()) <= slot) node.inputs.resize(slot + 1, -1);
      node.inputs[slot] = s;
    }
    g.refresh_dtypes(i);
  }
  def.validate();
}

}  // namespace kiln

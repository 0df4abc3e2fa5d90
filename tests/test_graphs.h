// Test graphs (image networks built layer by layer with random weights), their random inputs, the
// CPU-vs-CUDA comparison, engines with one kernel variant forced on every node that has variants
// (GPU and CPU variants alike), and the skip for machines without a usable GPU.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/engine.h"
#include "graph/builder.h"
#include "graph/model_definition.h"
#include "tests/test_support.h"

// Skips the test where no GPU can run it (CI); run the gpu-labelled tests on a GPU machine.
#define REQUIRE_GPU() \
  if (!::kiln::cuda_available()) GTEST_SKIP() << "no usable CUDA GPU here"

namespace kiln::test {

// Every GEMM variant's name, for tests that force each one through a saved plan; the few-rows
// kernel (gemv) takes at most 64 rows and no squeeze-excite gate, the streaming ones K up to 128
// and neither a gate nor a residual.
inline const std::vector<std::string> kGemmVariantNames = {
    "wmma_64x64",    "wmma_128x64",   "wmma_64x32",   "wmma_32x64",   "wmma_128x64_w8", "wmma_64x128_w8",
    "wmma_32x64_k4", "wmma_32x64_k8", "mma_128x64",   "mma_64x64",    "mma_64x128",     "mma_32x64",
    "mma_128x32",    "gemv",          "mma_64x64_k4", "mma_32x64_k8", "stream_n32",     "stream_n64"};

// Every depthwise variant's name: the strip kernel, the shared-memory tiles, the tensor-core tiles.
inline const std::vector<std::string> kDepthwiseVariantNames = {"dw_strip",    "dw_tile_16x16", "dw_tile_8x16",
                                                                "dw_tile_8x8", "dw_tile_4x8",   "dw_mma_8x16",
                                                                "dw_mma_8x32", "dw_mma_4x16",   "dw_mma_16x32"};

// The CPU conv's variants (backends/cpu/fast/conv2d.cpp): oneDNN's pick, then its implementations
// by name; which of them a conv offers depends on the CPU and the conv.
inline const std::vector<std::string> kCpuConvVariantNames = {
    "onednn",         "onednn_brgconv_1x1", "onednn_brgconv", "onednn_brdgmm_dw",
    "onednn_jit_1x1", "onednn_jit",         "onednn_jit_dw"};

// Builds image graphs ("pixels" [batch, C, height, width] NCHW -> NHWC layers -> "logits") with
// random weights.
class GraphMaker {
 public:
  explicit GraphMaker(uint32_t seed) : rng_(seed), b_(def) {}
  ModelDefinition def;

  // The input, already transposed to NHWC, as the network's layers read it.
  int input(int c) {
    const int x = b_.input("pixels", DType::F32, {{0, "batch"}, {c, ""}, {0, "height"}, {0, "width"}});
    b_.graph().set_symbol("height", {32, 4096});
    b_.graph().set_symbol("width", {32, 4096});
    channels_[x] = c;
    return channel(b_.op("transpose", name(), {x}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}}), c);
  }
  int conv(int x, int out, int k, int stride, bool depthwise, Activation act, bool same = false) {
    const int in = channels_.at(x);
    ConvOptions o;
    o.stride = stride;
    o.groups = depthwise ? in : 1;
    o.same = same;
    o.pad = (k - 1) / 2;
    o.act = act;
    const float scale = 1.0f / std::sqrt(static_cast<float>(k * k * (depthwise ? 1 : in)));
    return channel(b_.conv2d(x, name(), random({out, k, k, depthwise ? 1 : in}, scale), random({out}, 0.5f), o), out);
  }
  int linear(int x, int out, Activation act) {
    const int in = channels_.at(x);
    return channel(
        b_.linear(x, name(), random({out, in}, 1.0f / std::sqrt(static_cast<float>(in))), random({out}, 0.5f), act),
        out);
  }
  int pool(int x) { return channel(b_.global_avg_pool(x, name()), channels_.at(x)); }
  int flatten(int x) {
    return channel(b_.op("reshape", name(), {x}, {{"shape", std::vector<int64_t>{0, -1}}}), channels_.at(x));
  }
  int op(const std::string& op, std::vector<int> inputs) {
    const int c = channels_.at(inputs[0]);
    return channel(b_.op(op, name(), std::move(inputs)), c);
  }
  int squeeze_excite(int x, int rd) {
    const int c = channels_.at(x);
    const int p = pool(x);
    const int r = linear(p, rd, Activation::SiLU);
    const int g = linear(r, c, Activation::Sigmoid);
    return op("mul", {x, g});
  }
  void finish(int out) {
    b_.output("logits", out);
    def.task_config = {{"graph", "main"}};
    def.validate();
  }

 private:
  std::string name() { return "n" + std::to_string(counter_++); }
  int channel(int v, int c) {
    channels_[v] = c;
    return v;
  }
  Tensor random(std::vector<int64_t> shape, float scale) {
    std::normal_distribution<float> d(0.0f, scale);
    Tensor t(std::move(shape));
    for (auto& v : t.data) v = d(rng_);
    return t;
  }
  std::mt19937 rng_;
  GraphBuilder b_;
  std::map<int, int> channels_;
  int counter_ = 0;
};

inline Bindings image_sizes(int batch, int h, int w) { return {{"batch", batch}, {"height", h}, {"width", w}}; }

// Standard-normal NCHW input for `batch` images of h x w, the same for the same seed.
inline Tensor random_input(const ModelDefinition& def, int batch, int h, int w, uint32_t seed) {
  const Graph& g = def.graph();
  const int channels = static_cast<int>(g.values()[*g.find_value("pixels")].shape[1].value);
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  Tensor input({batch, channels, h, w});
  for (auto& v : input.data) v = d(rng);
  return input;
}

// The input compare() uses for a batch size and height.
inline uint32_t compare_seed(int batch, int h) { return static_cast<uint32_t>(batch * 131 + h); }

inline std::unique_ptr<Engine> engine(const ModelDefinition& def, const std::string& device,
                                      const nlohmann::json& saved = nlohmann::json::object(),
                                      const std::string& graph = "main") {
  EngineOptions o{device, device == "cpu" ? "fp32" : "fp16", saved};
  return std::make_unique<Engine>(def.graph(graph), def.constants(), o);
}

// Runs the CPU and the CUDA engine (fp16) on the same random input; returns the relative L2
// error of CUDA against the CPU. Every node must run on the GPU.
inline double compare(const ModelDefinition& def, int batch, int h, int w, double* max_abs = nullptr) {
  auto cpu = engine(def, "cpu"), gpu = engine(def, "cuda");
  EXPECT_EQ(gpu->cpu_fallback_nodes(), 0) << "a node fell back to the CPU";
  const Tensor input = random_input(def, batch, h, w, compare_seed(batch, h));
  const std::vector<float> a = logits(*cpu, input), b = logits(*gpu, input);
  const auto nonfinite = std::count_if(b.begin(), b.end(), [](float v) { return !std::isfinite(v); });
  EXPECT_EQ(nonfinite, 0) << "non-finite CUDA outputs; first: CPU " << a[0] << " CUDA " << b[0];
  if (max_abs) *max_abs = max_abs_diff(a.data(), b.data(), a.size());
  return rel_l2(b.data(), a.data(), a.size());
}

// Engines (CUDA and the main graph unless told) with one variant forced on every node that has
// variants: the saved plan of a probe engine prepared for these sizes, with its choices replaced.
class ForcedVariants {
 public:
  ForcedVariants(const ModelDefinition& def, const Bindings& sizes, std::string device = "cuda",
                 std::string graph = "main")
      : def_(def), key_(to_string(sizes)), device_(std::move(device)), graph_(std::move(graph)) {
    auto probe = engine(def, device_, nlohmann::json::object(), graph_);
    probe->prepare(sizes);
    plans_ = probe->export_plans();
  }
  size_t choices() const { return plans_.at(device_).at("plans").at(key_).size(); }
  std::unique_ptr<Engine> forced(const std::string& variant) const {
    nlohmann::json plans = plans_;
    for (auto& [node, v] : plans[device_]["plans"][key_].items()) v = variant;
    return engine(def_, device_, plans, graph_);
  }
  // How many nodes of a forced engine run `variant` (the others cannot take it).
  static int taken(Engine& e, const Bindings& sizes, const std::string& variant, const std::string& device = "cuda") {
    const nlohmann::json choices = e.export_plans().at(device).at("plans").at(to_string(sizes));
    int count = 0;
    for (const auto& [node, v] : choices.items()) count += v == variant;
    return count;
  }

 private:
  const ModelDefinition& def_;
  std::string key_, device_, graph_;
  nlohmann::json plans_;
};

// stem -> expand -> depthwise + SE -> project (+ residual) -> head conv -> pool -> classifier:
// the fused path, as in an MBConv network.
inline ModelDefinition mbconv_graph(int classes, int k, int stride, bool same) {
  GraphMaker g(7);
  int x = g.input(3);
  x = g.conv(x, 16, 3, 2, false, Activation::SiLU, same);
  int skip = x;
  int y = g.conv(x, 48, 1, 1, false, Activation::SiLU);
  y = g.conv(y, 48, k, 1, true, Activation::SiLU, same);
  y = g.squeeze_excite(y, 12);
  y = g.conv(y, 16, 1, 1, false, Activation::None);
  x = g.op("add", {y, skip});
  y = g.conv(x, 64, 1, 1, false, Activation::SiLU);
  y = g.conv(y, 64, k, stride, true, Activation::SiLU, same);
  y = g.squeeze_excite(y, 4);
  x = g.conv(y, 24, 1, 1, false, Activation::None);
  x = g.conv(x, 40, 1, 1, false, Activation::SiLU);
  x = g.flatten(g.pool(x));
  x = g.linear(x, classes, Activation::None);
  g.finish(x);
  return g.def;
}

}  // namespace kiln::test
